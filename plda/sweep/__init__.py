"""Sweeps: certified bounds (or calibrations) for many DP-SGD configurations, on any executor.

:func:`sweep` takes an iterable of configurations (dicts) and returns one record (a dict) per
configuration, in order. Each configuration is computed independently from scratch (results
never depend on caches), so the records are identical whether the sweep runs serially, on a
``concurrent.futures.ProcessPoolExecutor`` / ``ThreadPoolExecutor``, or on a Dask cluster through
``distributed.Client(...).get_executor()``. Dask is an optional extra (``pip install
"plda[sweep]"``), never a dependency.
"""

from __future__ import annotations

import concurrent.futures
import importlib
import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from plda._internal.errors import (
    AccuracyWarning,
    inaccurate,
    one_warning_per_call,
    quiet_accuracy,
    warn,
)
from plda.accounting.accountant import PLDAccountant
from plda.calibration import (
    calibrate_noise_multiplier_detailed,
    calibrate_sample_rate_detailed,
    calibrate_steps_detailed,
)
from plda.calibration.evaluator import epsilon_bounds_of
from plda.calibration.targets import RISK_ACCURACY
from plda.mechanisms import Gaussian, SampledWithoutReplacement, TruncatedPoisson
from plda.pld import DEFAULT_ACCURACY
from plda.samplers import EPOCH_SAMPLERS, SamplerStep
from plda.samplers import SAMPLERS as REGISTRY
from plda.sweep import config_checks
from plda.sweep.config_checks import (
    PARAMETERS,
    TARGETS,
    calibration_target,
    config_delta,
    validate_config,
)

__all__ = [
    "SAMPLERS",
    "TruncatedPoissonSampler",
    "WithoutReplacementSampler",
    "evaluate_config",
    "sweep",
    "sweep_to_dataframe",
]

#: sampler names a configuration may give: every sampler of the registry
#: (:data:`plda.samplers.SAMPLERS`; the spellings with ``_`` for ``-`` are accepted too), with
#: the keys each needs besides the rate (``"without-replacement"`` takes ``batch_size`` too; the
#: epoch samplers, whose configurations are evaluated but not calibrated, ``num_selected``)
SAMPLERS = config_checks.SAMPLERS


def _deprecated(name: str, sampler: str) -> None:
    warnings.warn(
        f"plda.sweep.{name} is deprecated and will be removed in plda 0.2.0: use "
        f"plda.samplers.SamplerStep({sampler!r}, {{...sizes}}) (the sampler registry's step)",
        DeprecationWarning,
        stacklevel=3,
    )


@dataclass(frozen=True)
class WithoutReplacementSampler:
    """Deprecated (removed in 0.2.0): ``plda.samplers.SamplerStep("without-replacement", ...)``.

    Use ``SamplerStep("without-replacement", {"dataset_size": n})``. A picklable DP-SGD step on
    a batch of ``round(sample_rate * dataset_size)`` records drawn without replacement
    (:class:`~plda.SampledWithoutReplacement`).

    Attributes
    ----------
    dataset_size : int
        Records in the dataset.

    Warns
    -----
    DeprecationWarning
        When built.
    """

    dataset_size: int

    def __post_init__(self):
        _deprecated("WithoutReplacementSampler", "without-replacement")

    def __call__(self, noise_multiplier: float, sample_rate: float):
        batch = max(1, round(sample_rate * self.dataset_size))
        return SampledWithoutReplacement(
            Gaussian.from_noise_multiplier(noise_multiplier), batch_size=batch,
            dataset_size=self.dataset_size,
        )


@dataclass(frozen=True)
class TruncatedPoissonSampler:
    """Deprecated (removed in 0.2.0): ``plda.samplers.SamplerStep("truncated-poisson", ...)``.

    Use ``SamplerStep("truncated-poisson", {"dataset_size": n, "max_batch_size": b})``. A
    picklable DP-SGD step on a Poisson sample cut to ``max_batch_size`` records
    (:class:`~plda.TruncatedPoisson`).

    Attributes
    ----------
    dataset_size : int
        Records in the dataset.
    max_batch_size : int
        The cap of a batch.

    Warns
    -----
    DeprecationWarning
        When built.
    """

    dataset_size: int
    max_batch_size: int

    def __post_init__(self):
        _deprecated("TruncatedPoissonSampler", "truncated-poisson")

    def __call__(self, noise_multiplier: float, sample_rate: float):
        return TruncatedPoisson(
            Gaussian.from_noise_multiplier(noise_multiplier),
            sample_rate,
            max_batch_size=self.max_batch_size,
            dataset_size=self.dataset_size,
        )


def _step_sampler(config: dict):
    """The sampler callable of a (validated) configuration; None for Poisson sampling."""
    sampler = config.get("sampler")
    if sampler is None or sampler == "poisson" or sampler in EPOCH_SAMPLERS:
        return None  # the accountant's own step (evaluate_config)
    if isinstance(sampler, str):
        return SamplerStep(sampler, {key: config[key] for key in SAMPLERS[sampler]})
    return sampler


@one_warning_per_call
def evaluate_config(config: dict) -> dict:
    """One record of :func:`sweep` for one (validated) configuration.

    A module-level function, so that process pools and Dask workers can pickle it.

    Parameters
    ----------
    config : dict
        A configuration as :func:`sweep` checked it.

    Returns
    -------
    dict
        The configuration's keys and the results, with ``accuracy_met`` and ``relative_gap``
        (see :func:`sweep`). It does not warn when the accuracy is missed: :func:`sweep` does,
        once for all its records.

    Raises
    ------
    CalibrationError
        For a calibration target that cannot be met.
    """
    record = dict(config)
    relation = config["relation"]
    sampler = _step_sampler(config)
    # quiet: the record says whether the accuracy was met, and sweep() warns once for all the
    # records (a worker process's or a Dask worker's warnings would never reach the user)
    with quiet_accuracy():
        target = [key for key in TARGETS if config.get(key) is not None]
        if not target:
            accuracy = _accuracy_of(config)
            sigma, steps = config["noise_multiplier"], config["steps"]
            if sampler is None:  # Poisson sampling, or an epoch sampler: the accountant's step
                name = config.get("sampler") or "poisson"
                sizes = {k: config[k] for k in REGISTRY[name].takes if config.get(k) is not None}
                accountant = PLDAccountant(relation=relation, accuracy=accuracy)
                accountant.step(sigma, count=steps, sampler=name, **sizes)
                lower, upper = accountant.epsilon_bounds(config_delta(config))
            else:
                mechanism = sampler(sigma, config["sample_rate"])
                lower, upper = epsilon_bounds_of(
                    mechanism, steps, relation, accuracy, config_delta(config)
                )
            record.update(epsilon_lower=float(lower), epsilon_upper=float(upper))
            return _judge(record, lower, upper, accuracy)
        # accuracy None: the calibration's default for its target (1e-3 epsilon, 1e-4 risk)
        kwargs = dict(
            calibration_target(config),
            relation=relation,
            accuracy=config.get("accuracy"),
            sampler=sampler,
        )
        missing = next(key for key in PARAMETERS if config.get(key) is None)
        if missing == "noise_multiplier":
            result = calibrate_noise_multiplier_detailed(
                sample_rate=config["sample_rate"], steps=config["steps"], **kwargs
            )
        elif missing == "sample_rate":
            result = calibrate_sample_rate_detailed(
                noise_multiplier=config["noise_multiplier"], steps=config["steps"], **kwargs
            )
        else:
            result = calibrate_steps_detailed(
                noise_multiplier=config["noise_multiplier"],
                sample_rate=config["sample_rate"],
                **kwargs,
            )
    record[missing] = int(result.value) if missing == "steps" else float(result.value)
    record.update(
        calibrated=missing,
        objective=result.objective,
        lower=result.lower,
        upper=result.upper,
        within_tolerance=result.within_tolerance,
    )
    if result.objective == "epsilon":
        record.update(epsilon_lower=result.epsilon_lower, epsilon_upper=result.epsilon_upper)
    return _judge(record, result.lower, result.upper, _accuracy_of(record))


def _accuracy_of(record: dict) -> float:
    """The accuracy a configuration asked, or the default of what it computes: the PLD's for
    epsilon bounds and epsilon targets, the calibration's for the risk targets."""
    if record.get("accuracy") is not None:
        return record["accuracy"]
    return DEFAULT_ACCURACY if record.get("objective", "epsilon") == "epsilon" else RISK_ACCURACY


def _judge(record: dict, lower, upper, accuracy: float) -> dict:
    """The record with ``accuracy_met`` and ``relative_gap`` of its bracket, judged as an
    :class:`~plda.AccuracyWarning` judges (with the rounding slack of the accountant and the
    calibrations). The sweep computes quietly and warns once for all its configurations
    (:func:`sweep`): a warning in a worker process or a Dask worker never reaches the user."""
    lower, upper = float(lower), float(upper)
    if math.isinf(upper):
        gap = 0.0 if math.isinf(lower) else math.inf
    else:
        gap = (upper - lower) / upper if upper > 0 else 0.0
    record.update(accuracy_met=not bool(inaccurate(lower, upper, accuracy)), relative_gap=gap)
    return record


def _warn_missed(records: list) -> None:
    """One :class:`~plda.AccuracyWarning` naming the configurations whose bounds are further
    apart than their accuracy asked."""
    missed = [i for i, record in enumerate(records) if not record["accuracy_met"]]
    if not missed:
        return
    shown = ", ".join(f"configs[{i}] (relative gap {records[i]['relative_gap']:.3g} > "
                      f"accuracy {_accuracy_of(records[i]):g})" for i in missed[:5])
    more = f" and {len(missed) - 5} more" if len(missed) > 5 else ""
    warn(f"sweep: {len(missed)} of {len(records)} configuration(s) missed the requested "
         f"accuracy: {shown}{more}. Their bounds still hold, only further apart than asked (the "
         "grid reached its size cap, the delta lies below what the composition resolves, or a "
         "sampler's pair only dominates, so the gap includes its analysis's: see "
         "NotTightWarning); their records say accuracy_met=False. Pass a larger accuracy to "
         "silence this.", AccuracyWarning)


@one_warning_per_call
def sweep(
    configs: Iterable[dict],
    executor: concurrent.futures.Executor | None = None,
    progress: Callable[[float, str], None] | None = None,
) -> list[dict]:
    """Certified epsilon bounds, or a calibration, for each DP-SGD configuration.

    Parameters
    ----------
    configs
        Dicts with keys ``noise_multiplier``, ``sample_rate``, ``steps``, ``delta`` (or
        ``target_delta``, as the calibration spells it; all four: the record gets
        ``epsilon_lower`` and ``epsilon_upper``, as :meth:`plda.PLDAccountant.epsilon_bounds`),
        optionally ``relation`` and ``accuracy``, and a ``sampler`` named and sized as
        :meth:`plda.PLDAccountant.step` takes it: ``"poisson"`` (the default),
        ``"without-replacement"`` (with ``dataset_size`` and ``batch_size``, or a
        ``sample_rate`` of ``batch_size / dataset_size``), ``"truncated-poisson"`` (with
        ``dataset_size`` and ``max_batch_size``), the epoch samplers ``"shuffled"`` and
        ``"random-allocation"`` (with ``num_steps``, and ``num_selected``; no ``sample_rate``,
        ``steps`` a multiple of ``num_steps``; evaluated, not calibrated), or a picklable
        callable ``(noise_multiplier, sample_rate) -> Mechanism`` (one step). A size the
        sampler does not take is refused. For a sampler whose own pair only dominates, the
        lower bound is that of its realized pair.
        With a calibration target -- ``target_epsilon`` (with ``delta``),
        ``target_true_positive_rate`` (with ``at_false_positive_rate``) or ``target_advantage``
        -- exactly one of the three parameters is left out and calibrated (see
        :func:`plda.calibrate_noise_multiplier`); the record gets its value, ``calibrated`` (its
        name), ``objective``, the certified ``lower`` and ``upper`` bounds of the objective and
        ``within_tolerance`` (plus ``epsilon_lower``/``epsilon_upper`` for epsilon targets).
        ``accuracy`` (in ``(0, 1)``) is the relative gap ``(upper - lower) / upper`` asked of
        the bounds (default ``1e-3``; a calibration's default for its objective, ``1e-4`` for
        the risk targets): every record gets ``relative_gap``, that of its bounds (of
        ``epsilon_lower``/``epsilon_upper``, or of a calibration's ``lower``/``upper``), and
        ``accuracy_met``, whether it is within the accuracy (with the accountant's slack for
        rounding).
    executor
        Any ``concurrent.futures.Executor`` (a process or thread pool, or
        ``distributed.Client(...).get_executor()`` for a Dask cluster); None runs serially.
    progress
        Called as ``progress(fraction_done, message)`` after each configuration finishes.

    Returns
    -------
    list of dict
        One record per configuration, in order (the configuration's keys and the results);
        identical whatever the executor. ``pandas.DataFrame(records)`` (or
        :func:`sweep_to_dataframe`) makes a table of them.

    Warns
    -----
    AccuracyWarning
        Once, after all configurations ran, naming those whose bounds missed their accuracy
        (``accuracy_met`` False); the bounds still hold. The same on every executor.

    Raises
    ------
    ValueError
        Before anything runs, naming the configuration index and key and the allowed range,
        for an invalid configuration (among them the sizes and noise that only the sampler's
        mechanism checks, built up front when the configuration gives its noise and rate:
        :class:`~plda.UncoveredParametersError` for a noise its analysis does not cover).
    TypeError
        For a configuration that is not a dict, or an ``executor`` or ``progress`` of another
        type.
    CalibrationError
        For an unreachable calibration target.

    Examples
    --------
    >>> import plda
    >>> records = plda.sweep(
    ...     [{"noise_multiplier": s, "sample_rate": 0.01, "steps": 100, "delta": 1e-5}
    ...      for s in (1.0, 2.0)])
    >>> [round(r["epsilon_upper"], 2) for r in records]
    [0.72, 0.19]
    """
    if progress is not None and not callable(progress):
        raise TypeError(
            f"progress must be a callable (fraction, message) or None, got {progress!r}"
        )
    if executor is not None and not hasattr(executor, "submit"):
        raise TypeError(f"executor must be a concurrent.futures.Executor or None, got {executor!r}")
    checked = [validate_config(index, config) for index, config in enumerate(configs)]
    total = len(checked)
    records: list = [None] * total
    if executor is None:
        for index, config in enumerate(checked):
            records[index] = evaluate_config(config)
            if progress is not None:
                progress((index + 1) / total, f"config {index + 1}/{total} done")
        _warn_missed(records)
        return records
    futures = {executor.submit(evaluate_config, config): i for i, config in enumerate(checked)}
    for done, future in enumerate(concurrent.futures.as_completed(futures), start=1):
        records[futures[future]] = future.result()
        if progress is not None:
            progress(done / total, f"config {futures[future] + 1} done ({done}/{total})")
    _warn_missed(records)
    return records


def sweep_to_dataframe(records: list[dict]):
    """The records of :func:`sweep` as a ``pandas.DataFrame``.

    Parameters
    ----------
    records : list of dict
        What :func:`sweep` returned.

    Returns
    -------
    pandas.DataFrame
        One row per configuration.

    Raises
    ------
    ImportError
        When pandas is not installed (it is optional).
    """
    try:
        pandas = importlib.import_module("pandas")
    except ImportError as error:
        raise ImportError("sweep_to_dataframe needs pandas: pip install pandas") from error
    return pandas.DataFrame.from_records(list(records))
