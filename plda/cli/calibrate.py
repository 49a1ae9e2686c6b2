"""``plda calibrate``: the missing DP-SGD parameter for a privacy or attack-risk target."""

from __future__ import annotations

import re

from plda import calibration
from plda._internal.errors import CalibrationError
from plda.calibration.dpsgd import DEFAULT_MAX_STEPS
from plda.cli.checks import UsageError, check_accuracy, check_steps, require
from plda.cli.commands import strict_json
from plda.cli.progress import progress_printer
from plda.cli.sampler_calibration import calibrate_sampler
from plda.cli.samplers import (
    DEFAULT_SAMPLER,
    SAMPLERS,
    SIZE_FLAGS,
    check_unused,
    sampler_run,
)
from plda.cli.targets import calibration_target, describe_target

__all__ = ["calibrate_command"]

#: what the human-readable output calls each objective
OBJECTIVES = {
    "epsilon": "epsilon",
    "true_positive_rate": "true-positive rate",
    "advantage": "advantage",
}


def _calibrated(args) -> str:
    """The one parameter left out (it is calibrated); a one-line error otherwise."""
    sampler = check_unused(args)
    if sampler == DEFAULT_SAMPLER:
        candidates = ("--noise-multiplier", "--sample-rate", "--steps")
        advice = "give exactly two of the three"
    else:
        # the sampler's sizes are never calibrated: a missing one is reported as such
        require([f for f in SAMPLERS[sampler] if getattr(args, SIZE_FLAGS[f], None) is None])
        candidates = ("--noise-multiplier", "--steps")
        advice = (
            f"with --sampler {sampler} give {' '.join(SAMPLERS[sampler])} and exactly one of "
            "the two"
        )
    missing = [f for f in candidates if getattr(args, f[2:].replace("-", "_")) is None]
    if len(missing) != 1:
        raise UsageError(
            f"argument {'/'.join(candidates)}: {advice} (the missing one is calibrated); "
            f"missing: {', '.join(missing) or 'none'}"
        )
    return missing[0]


def calibrate_command(args) -> str:
    """``plda calibrate``: the one DP-SGD parameter left out, for one target.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    str
        The calibrated value and the certified bounds it achieves, as text or strict JSON.

    Raises
    ------
    UsageError
        For not exactly one target, not exactly one parameter left out, a flag out of range,
        or the sample rate left out with ``--group-size`` or ``--accumulation-steps``.
    CalibrationError
        If the target cannot be met (the message names the command line's flags).
    """
    keywords = calibration_target(args)
    accuracy = check_accuracy(args.accuracy)
    flag = _calibrated(args)
    run = sampler_run(args, calibrated=flag)
    parameter = SIZE_FLAGS.get(flag) or flag[2:].replace("-", "_")
    # progress on stderr only when it is a terminal (None otherwise: nothing printed)
    printer = progress_printer()
    options = {"relation": args.relation, "accuracy": accuracy, "progress": printer}
    max_steps = _max_steps(args, parameter)
    sigma, sizes = args.noise_multiplier, run.sizes
    if run.draws and parameter == "sample_rate":
        raise UsageError(
            f"argument {' / '.join('--' + k.replace('_', '-') for k in run.draws)}: the sample "
            "rate of a group is not calibrated; calibrate --noise-multiplier or --steps"
        )
    try:
        if run.sampler != DEFAULT_SAMPLER or run.draws:
            value, result = calibrate_sampler(
                run, keywords, parameter, sigma, {**options, "max_steps": max_steps}
            )
        elif parameter == "noise_multiplier":
            result = calibration.calibrate_noise_multiplier_detailed(
                sample_rate=sizes["sample_rate"], steps=run.steps, **keywords, **options
            )
        elif parameter == "sample_rate":
            result = calibration.calibrate_sample_rate_detailed(
                noise_multiplier=sigma, steps=run.steps, **keywords, **options
            )
        else:
            result = calibration.calibrate_steps_detailed(
                noise_multiplier=sigma, sample_rate=sizes["sample_rate"], max_steps=max_steps,
                **keywords, **options,
            )
    except CalibrationError as exc:
        # the library names its arguments; the command line's flags are what to change here
        raise CalibrationError(_flags(str(exc))) from None
    finally:
        if printer is not None:
            printer.close()
    if run.sampler == DEFAULT_SAMPLER:
        value = int(result.value) if parameter == "steps" else result.value
    record = run.described(sigma, **{parameter: value})
    if args.json:
        return strict_json(_json_record(record, parameter, keywords, result, args.relation))
    shown = f"{value}" if parameter == "steps" else f"{value:.6g}"
    name = OBJECTIVES[result.objective]
    via = "" if run.sampler == DEFAULT_SAMPLER else f", --sampler {run.sampler}"
    return (
        f"{parameter.replace('_', ' ')} = {shown}   (for {describe_target(keywords)}{via})\n"
        f"achieved: {result.lower:.6g} <= {name} <= {result.upper:.6g}   (certified bounds)"
    )


def _max_steps(args, parameter: str) -> int:
    """``--max-steps``, checked: only when the steps are calibrated."""
    if args.max_steps is None:
        return DEFAULT_MAX_STEPS
    if parameter != "steps":
        raise UsageError(
            "argument --max-steps: only when calibrating the number of steps (leave --steps "
            "out and give --noise-multiplier)"
        )
    return check_steps("--max-steps", args.max_steps)


def _flags(message: str) -> str:
    """A calibration message with the library's argument names as the command line's flags."""
    for name in ("max_steps", "noise_multiplier", "sample_rate"):
        message = re.sub(rf"\b{name}\b", "--" + name.replace("_", "-"), message)
    return message


def _json_record(record: dict, parameter: str, keywords: dict, result, relation: str) -> dict:
    """The ``--json`` record: the run, the relation it was calibrated under (keyed as in ``plda
    epsilon``'s record), what was calibrated, the target and the certified bounds reached."""
    out = {**record, "relation": relation, "calibrated": parameter, "objective": result.objective}
    if result.objective == "epsilon":
        out.update(target_epsilon=keywords["target_epsilon"], delta=keywords["target_delta"],
                   epsilon_lower=result.lower, epsilon_upper=result.upper)
    elif result.objective == "true_positive_rate":
        out.update(target_true_positive_rate=result.target,
                   at_false_positive_rate=result.false_positive_rate,
                   true_positive_rate_lower=result.lower, true_positive_rate_upper=result.upper)
    else:
        out.update(target_advantage=result.target, advantage_lower=result.lower,
                   advantage_upper=result.upper)
    out["within_tolerance"] = result.within_tolerance
    return out
