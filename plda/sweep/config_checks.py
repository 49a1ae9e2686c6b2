"""The configurations of :func:`plda.sweep.sweep`: their keys, and their checks before anything
runs (every error names the configuration's index and key, and the allowed range)."""

from __future__ import annotations

import re

from plda._internal import validation as check
from plda._internal.errors import UncoveredParametersError
from plda.bounds import RELATIONS
from plda.mechanisms import Gaussian
from plda.samplers import (
    EPOCH_SAMPLERS,
    SIZES,
    STEP_SAMPLERS,
    SamplerStep,
    fixed_batch_size,
    sampled_mechanism,
)
from plda.samplers import SAMPLERS as REGISTRY

PARAMETERS = ("noise_multiplier", "sample_rate", "steps")
TARGETS = ("target_epsilon", "target_true_positive_rate", "target_advantage")
#: sampler names a configuration may give: every sampler of the registry
#: (:data:`plda.samplers.SAMPLERS`; the spellings with ``_`` for ``-`` are accepted too), with
#: the keys each needs besides the rate (``"without-replacement"`` takes ``batch_size`` too; the
#: epoch samplers, whose configurations are evaluated but not calibrated, ``num_selected``)
SAMPLERS = {
    name: SamplerStep.needed(name) if name in STEP_SAMPLERS else tuple(g[0] for g in spec.needs)
    for name, spec in REGISTRY.items()
}
SAMPLER_KEYS = ("sampler", *(s for s in SIZES if s != "sample_rate"
                             and any(s in spec.takes for spec in REGISTRY.values())))
#: ``target_delta`` is ``delta`` as the calibration functions spell it (either may be given)
KEYS = frozenset(
    (*PARAMETERS, *TARGETS, *SAMPLER_KEYS, "delta", "target_delta", "at_false_positive_rate")
    + ("relation", "accuracy")
)


def validate_config(index: int, config) -> dict:
    """The configuration checked and normalized, before anything runs.

    Parameters
    ----------
    index : int
        Its position in the sweep (named by every error).
    config : dict
        The configuration as given.

    Returns
    -------
    dict
        A copy with the values normalized (``relation`` set, a sampler's name spelled with
        ``-``, the ``sample_rate`` of a fixed-size batch given by ``batch_size``).

    Raises
    ------
    ValueError
        Naming ``configs[index][key]`` and the allowed range (an
        :class:`~plda.UncoveredParametersError` for a noise the sampler's analysis does not
        cover).
    TypeError
        If ``config`` is not a dict.
    """
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
    checked("target_delta", check.probability, open_low=True)
    if None not in (out.get("delta"), out.get("target_delta")) and (
            out["delta"] != out["target_delta"]):
        raise ValueError(f"configs[{index}]['target_delta']: differs from 'delta' (give one)")
    checked("accuracy", check.fraction)  # what the accountant and the calibrations take
    relation = out.setdefault("relation", "add_remove")
    if relation not in RELATIONS:
        raise ValueError(f"configs[{index}]['relation']: must be one of {RELATIONS}")
    for key in SAMPLER_KEYS[1:]:
        checked(key, check.count, minimum=1)
    _check_sampler(index, out)
    _check_mechanism(index, out)
    targets = [key for key in TARGETS if config.get(key) is not None]
    epoch = out.get("sampler") in EPOCH_SAMPLERS  # no sample rate: num_steps / num_selected
    missing = [k for k in PARAMETERS if out.get(k) is None and not (epoch and k == "sample_rate")]
    if not targets:
        for key in (*missing, "delta"):
            if config_delta(out) is None if key == "delta" else out.get(key) is None:
                raise ValueError(
                    f"configs[{index}][{key!r}]: missing (give noise_multiplier, sample_rate, "
                    "steps and delta, or a calibration target and all but one of the three)"
                )
        return out
    if len(targets) > 1:
        raise ValueError(f"configs[{index}][{targets[1]!r}]: give one target, got {targets}")
    if out.get("sampler") in EPOCH_SAMPLERS:
        raise ValueError(
            f"configs[{index}][{targets[0]!r}]: sampler {out['sampler']!r} draws whole epochs; "
            "the calibration functions take the samplers drawn at a sample rate (calibrate it "
            f"with plda calibrate --sampler {out['sampler']})"
        )
    if len(missing) != 1:
        key = missing[1] if missing else targets[0]
        raise ValueError(
            f"configs[{index}][{key!r}]: with a calibration target exactly one of "
            f"{PARAMETERS} must be missing (it is calibrated); missing: {missing or 'none'}"
        )
    try:  # the target's own checks, without running anything
        calibration_target(out)
    except (TypeError, ValueError) as error:
        raise ValueError(f"configs[{index}][{targets[0]!r}]: {error}") from None
    return out


def _check_sampler(index: int, config: dict) -> None:
    """The configuration's sampler: a name of :data:`SAMPLERS` with the keys it needs and none it
    does not take (no name: ``"poisson"``), or a callable ``(noise_multiplier, sample_rate) ->
    Mechanism``; fixed-size batches given by ``batch_size`` get their ``sample_rate``."""
    sampler = config.get("sampler")
    if isinstance(sampler, str):
        sampler = config["sampler"] = sampler.replace("_", "-")
    if callable(sampler):
        return
    if sampler is not None and (not isinstance(sampler, str) or sampler not in SAMPLERS):
        raise ValueError(
            f"configs[{index}]['sampler']: must be one of {sorted(SAMPLERS)} or a callable "
            f"(noise_multiplier, sample_rate) -> plda mechanism, got {sampler!r}"
        )
    name = sampler or "poisson"
    for key in (*SAMPLER_KEYS[1:], "sample_rate"):
        if config.get(key) is not None and key not in REGISTRY[name].takes:
            raise ValueError(f"configs[{index}][{key!r}]: does not apply to sampler {name!r} "
                             f"(it takes {', '.join(REGISTRY[name].takes)})")
    for key in SAMPLERS[name]:
        if config.get(key) is None:
            raise ValueError(
                f"configs[{index}][{key!r}]: missing (sampler {name!r} needs "
                f"{', '.join(SAMPLERS[name])})"
            )
    if name in EPOCH_SAMPLERS and config.get("steps") is not None:
        if config["steps"] % config["num_steps"]:
            raise ValueError(f"configs[{index}]['steps']: must be a multiple of num_steps="
                             f"{config['num_steps']} (sampler {name!r} draws whole epochs)")
    if name == "without-replacement":
        rate, batch = config.get("sample_rate"), config.get("batch_size")
        if rate is None and batch is None:
            raise ValueError(
                f"configs[{index}]['sample_rate']: missing (with fixed-size batches the rate is "
                "batch_size / dataset_size: give batch_size or sample_rate, and calibrate "
                "noise_multiplier or steps)"
            )
        try:  # the registry's reading of a rate as a batch size
            size = fixed_batch_size(rate, batch, config["dataset_size"])
        except ValueError as error:
            if batch is not None:
                raise ValueError(f"configs[{index}]['batch_size']: {error}") from None
            raise ValueError(
                f"configs[{index}]['sample_rate']: sample_rate * dataset_size must be a whole "
                f"batch size for sampler 'without-replacement', got "
                f"{rate * config['dataset_size']:.6g}"
            ) from None
        if size > config["dataset_size"]:  # only a given batch_size (a rate is at most 1)
            raise ValueError(f"configs[{index}]['batch_size']: must be an integer in [1, "
                             f"dataset_size={config['dataset_size']}], got {size}")
        if rate is None:
            config["sample_rate"] = size / config["dataset_size"]


def _check_mechanism(index: int, config: dict) -> None:
    """Build the step (or epoch) mechanism of a named sampler when the configuration gives its
    noise and rate, so that what only the mechanism checks (``batch_size <= dataset_size``,
    ``num_selected <= num_steps``, a noise its analysis does not cover) is refused before
    anything runs, naming the key its message names first."""
    name = config.get("sampler") or "poisson"
    if callable(name) or config.get("noise_multiplier") is None or (
            name not in EPOCH_SAMPLERS and config.get("sample_rate") is None):
        return  # a user's step factory, or a parameter left to the calibration
    sizes = {k: config[k] for k in REGISTRY[name].takes if config.get(k) is not None}
    try:
        sampled_mechanism(
            Gaussian.from_noise_multiplier(config["noise_multiplier"], config["relation"]),
            name, relation=config["relation"], **sizes)
    except (TypeError, ValueError) as error:
        # the message names its argument first (the Gaussian's as sigma)
        named = {k: k for k in (*sizes, "relation", "sampler", "noise_multiplier")} | {
            "sigma": "noise_multiplier"}
        found = {k: m.start() for k in named if (m := re.search(rf"\b{k}\b", str(error)))}
        key = named[min(found, key=found.get)] if found else "noise_multiplier"
        kind = UncoveredParametersError if isinstance(error, UncoveredParametersError) else (
            ValueError)
        raise kind(f"configs[{index}][{key!r}]: {error}") from None


def config_delta(config: dict):
    """The configuration's delta, spelled ``delta`` or ``target_delta``.

    Parameters
    ----------
    config : dict
        A configuration.

    Returns
    -------
    float or None
        Its delta; None if it gives neither.
    """
    return config["delta"] if config.get("delta") is not None else config.get("target_delta")


def calibration_target(config: dict) -> dict:
    """Keyword arguments of the calibration functions for the configuration's target.

    Parameters
    ----------
    config : dict
        A configuration with one calibration target.

    Returns
    -------
    dict
        The target's keywords (``target_epsilon`` and ``target_delta``, ...).

    Raises
    ------
    ValueError, TypeError
        If the target or what it needs is missing or out of range (unprefixed: the caller
        names the configuration).
    """
    if config.get("target_epsilon") is not None:
        check.positive_float("target_epsilon", config["target_epsilon"])
        if config_delta(config) is None:
            raise ValueError("target_epsilon needs 'delta' (or 'target_delta')")
        return {"target_epsilon": config["target_epsilon"], "target_delta": config_delta(config)}
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
