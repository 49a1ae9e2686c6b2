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

from plda._internal import validation as check
from plda._internal.errors import one_warning_per_call, quiet_accuracy
from plda.accounting.accountant import PLDAccountant
from plda.bounds import RELATIONS
from plda.calibration import (
    calibrate_noise_multiplier_detailed,
    calibrate_sample_rate_detailed,
    calibrate_steps_detailed,
)
from plda.calibration.evaluator import epsilon_bounds_of
from plda.mechanisms import Gaussian, SampledWithoutReplacement, TruncatedPoisson
from plda.pld import DEFAULT_ACCURACY
from plda.samplers import SIZES, STEP_SAMPLERS, SamplerStep, fixed_batch_size

__all__ = [
    "SAMPLERS",
    "TruncatedPoissonSampler",
    "WithoutReplacementSampler",
    "evaluate_config",
    "sweep",
    "sweep_to_dataframe",
]

PARAMETERS = ("noise_multiplier", "sample_rate", "steps")
TARGETS = ("target_epsilon", "target_true_positive_rate", "target_advantage")
#: sampler names a configuration may give: the samplers drawn at a sample rate of the registry
#: (:data:`plda.samplers.STEP_SAMPLERS`; the spellings with ``_`` for ``-`` are accepted too),
#: with the keys each needs besides the rate
SAMPLERS = {name: SamplerStep.needed(name) for name in STEP_SAMPLERS}
SAMPLER_KEYS = ("sampler", *(s for s in SIZES if any(s in keys for keys in SAMPLERS.values())))
KEYS = frozenset(
    (*PARAMETERS, *TARGETS, *SAMPLER_KEYS, "delta", "at_false_positive_rate", "relation")
    + ("accuracy",)
)


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


def _validate(index: int, config) -> dict:
    """The configuration checked and normalized; ``ValueError`` naming its index and key."""
    if not isinstance(config, dict):
        raise TypeError(f"configs[{index}] must be a dict, got {type(config).__name__}")
    unknown = sorted(set(config) - KEYS)
    if unknown:
        raise ValueError(
            f"configs[{index}]: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(KEYS))})"
        )
    out = dict(config)

    def checked(key, function, *args, **kwargs):
        if config.get(key) is None:
            return
        try:
            out[key] = function(key, config[key], *args, **kwargs)
        except (TypeError, ValueError) as error:
            raise ValueError(f"configs[{index}][{key!r}]: {error}") from None

    checked("noise_multiplier", check.positive_float)
    checked("sample_rate", check.probability, open_low=True)
    checked("steps", check.count, minimum=1)
    checked("delta", check.probability, open_low=True)
    checked("accuracy", check.positive_float)
    relation = out.setdefault("relation", "add_remove")
    if relation not in RELATIONS:
        raise ValueError(f"configs[{index}]['relation']: must be one of {RELATIONS}")
    checked("dataset_size", check.count, minimum=1)
    checked("max_batch_size", check.count, minimum=1)
    _check_sampler(index, out)
    targets = [key for key in TARGETS if config.get(key) is not None]
    missing = [key for key in PARAMETERS if config.get(key) is None]
    if not targets:
        for key in (*missing, "delta"):
            if config.get(key) is None:
                raise ValueError(
                    f"configs[{index}][{key!r}]: missing (give noise_multiplier, sample_rate, "
                    "steps and delta, or a calibration target and all but one of the three)"
                )
        return out
    if len(targets) > 1:
        raise ValueError(f"configs[{index}][{targets[1]!r}]: give one target, got {targets}")
    if len(missing) != 1:
        key = missing[1] if missing else targets[0]
        raise ValueError(
            f"configs[{index}][{key!r}]: with a calibration target exactly one of "
            f"{PARAMETERS} must be missing (it is calibrated); missing: {missing or 'none'}"
        )
    try:  # the target's own checks, without running anything
        _calibration_target(out)
    except (TypeError, ValueError) as error:
        raise ValueError(f"configs[{index}][{targets[0]!r}]: {error}") from None
    return out


def _check_sampler(index: int, config: dict) -> None:
    """The configuration's sampler: a name of :data:`SAMPLERS` with the keys it needs, or a
    callable ``(noise_multiplier, sample_rate) -> Mechanism``."""
    sampler = config.get("sampler")
    if sampler is None or callable(sampler):
        return
    if isinstance(sampler, str):
        sampler = config["sampler"] = sampler.replace("_", "-")
    if not isinstance(sampler, str) or sampler not in SAMPLERS:
        raise ValueError(
            f"configs[{index}]['sampler']: must be one of {sorted(SAMPLERS)} or a callable "
            f"(noise_multiplier, sample_rate) -> plda mechanism, got {sampler!r}"
        )
    for key in SAMPLERS[sampler]:
        if config.get(key) is None:
            raise ValueError(
                f"configs[{index}][{key!r}]: missing (sampler {sampler!r} needs "
                f"{', '.join(SAMPLERS[sampler])})"
            )
    if sampler == "without-replacement":
        rate = config.get("sample_rate")
        if rate is None:
            raise ValueError(
                f"configs[{index}]['sample_rate']: missing (with fixed-size batches the rate is "
                "batch_size / dataset_size; calibrate noise_multiplier or steps instead)"
            )
        try:  # the registry's reading of a rate as a batch size
            fixed_batch_size(rate, None, config["dataset_size"])
        except ValueError:
            raise ValueError(
                f"configs[{index}]['sample_rate']: sample_rate * dataset_size must be a whole "
                f"batch size for sampler 'without-replacement', got "
                f"{rate * config['dataset_size']:.6g}"
            ) from None


def _step_sampler(config: dict):
    """The sampler callable of a (validated) configuration; None for Poisson sampling."""
    sampler = config.get("sampler")
    if sampler is None or sampler == "poisson":
        return None
    if isinstance(sampler, str):
        return SamplerStep(sampler, {key: config[key] for key in SAMPLERS[sampler]})
    return sampler


def _calibration_target(config: dict) -> dict:
    """Keyword arguments of the calibration functions for the configuration's target."""
    if config.get("target_epsilon") is not None:
        check.positive_float("target_epsilon", config["target_epsilon"])
        if config.get("delta") is None:
            raise ValueError("target_epsilon needs 'delta'")
        return {"target_epsilon": config["target_epsilon"], "target_delta": config["delta"]}
    if config.get("target_true_positive_rate") is not None:
        alpha = config.get("at_false_positive_rate")
        if alpha is None:
            raise ValueError("target_true_positive_rate needs 'at_false_positive_rate'")
        check.probability("at_false_positive_rate", alpha, open_low=True)
        tpr = check.probability("target_true_positive_rate", config["target_true_positive_rate"])
        if not alpha < tpr < 1:
            raise ValueError("target_true_positive_rate must be in (at_false_positive_rate, 1)")
        return {"target_true_positive_rate": tpr, "at_false_positive_rate": alpha}
    advantage = check.probability("target_advantage", config["target_advantage"], open_low=True)
    if not advantage < 1:
        raise ValueError("target_advantage must be in (0, 1)")
    return {"target_advantage": advantage}


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
            sigma, rate, steps = (config[key] for key in PARAMETERS)
            if sampler is None:
                accountant = PLDAccountant(relation=relation, accuracy=accuracy)
                accountant.step(sigma, rate, steps)
                lower, upper = accountant.epsilon_bounds(config["delta"])
            else:
                mechanism = sampler(sigma, rate)
                lower, upper = epsilon_bounds_of(
                    mechanism, steps, relation, accuracy, config["delta"]
                )
            record.update(epsilon_lower=float(lower), epsilon_upper=float(upper))
            return record
        # accuracy None: the calibration's default for its target (1e-3 epsilon, 1e-4 risk)
        kwargs = dict(
            _calibration_target(config),
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
        Dicts with keys ``noise_multiplier``, ``sample_rate``, ``steps``, ``delta`` (all four:
        the record gets ``epsilon_lower`` and ``epsilon_upper``, as
        :meth:`plda.PLDAccountant.epsilon_bounds`), optionally ``relation`` and ``accuracy``,
        and a ``sampler``: ``"poisson"`` (the default), ``"without-replacement"`` (with
        ``dataset_size``; fixed batches of ``sample_rate * dataset_size`` records),
        ``"truncated-poisson"`` (with ``dataset_size`` and ``max_batch_size``), or a picklable
        callable ``(noise_multiplier, sample_rate) -> Mechanism`` (one step). For a sampler
        whose own pair only dominates, the lower bound is that of its realized pair.
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
        Before anything runs, naming the configuration index and key, for an invalid
        configuration.
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
    checked = [_validate(index, config) for index, config in enumerate(configs)]
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
