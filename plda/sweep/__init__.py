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
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from plda._internal.errors import one_warning_per_call, quiet_accuracy
from plda.accounting.accountant import PLDAccountant
from plda.calibration import (
    calibrate_noise_multiplier_detailed,
    calibrate_sample_rate_detailed,
    calibrate_steps_detailed,
)
from plda.calibration.evaluator import epsilon_bounds_of
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
            Gaussian(sigma=noise_multiplier), batch_size=batch, dataset_size=self.dataset_size
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
            Gaussian(sigma=noise_multiplier),
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
        The configuration's keys and the results (see :func:`sweep`).

    Raises
    ------
    CalibrationError
        For a calibration target that cannot be met.
    """
    record = dict(config)
    relation = config["relation"]
    sampler = _step_sampler(config)
    with quiet_accuracy():  # the record carries both bounds: the gap is there to read
        target = [key for key in TARGETS if config.get(key) is not None]
        if not target:
            accuracy = config.get("accuracy", DEFAULT_ACCURACY)
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
            return record
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
    return record


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
        return records
    futures = {executor.submit(evaluate_config, config): i for i, config in enumerate(checked)}
    for done, future in enumerate(concurrent.futures.as_completed(futures), start=1):
        records[futures[future]] = future.result()
        if progress is not None:
            progress(done / total, f"config {futures[future] + 1} done ({done}/{total})")
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
