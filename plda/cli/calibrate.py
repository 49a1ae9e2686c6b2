"""``plda calibrate``: the missing DP-SGD parameter for a target."""

from __future__ import annotations

from plda import calibration
from plda.cli.checks import (
    UsageError,
    check_accuracy,
    check_positive,
    check_rate,
    check_steps,
)
from plda.cli.commands import strict_json
from plda.cli.progress import progress_printer

__all__ = ["calibrate_command"]


def calibrate_command(args) -> str:
    """``plda calibrate``: exactly one of noise multiplier, sample rate, steps is missing."""
    target = check_positive("--epsilon", args.epsilon)
    delta = args.delta
    if delta is None or not (0 < delta < 1):
        raise UsageError(f"argument --delta: must be in (0, 1), got {delta!r}")
    accuracy = check_accuracy(args.accuracy)
    given = {
        "noise_multiplier": args.noise_multiplier,
        "sample_rate": args.sample_rate,
        "steps": args.steps,
    }
    missing = [k for k, v in given.items() if v is None]
    if len(missing) != 1:
        raise UsageError(
            "argument --noise-multiplier/--sample-rate/--steps: give exactly two of the three "
            f"(the missing one is calibrated); missing: {', '.join(missing) or 'none'}"
        )
    # progress on stderr only when it is a terminal (None otherwise: nothing printed)
    options = {"relation": args.relation, "accuracy": accuracy, "progress": progress_printer()}
    if missing == ["noise_multiplier"]:
        rate = check_rate("--sample-rate", args.sample_rate)
        steps = check_steps("--steps", args.steps)
        result = calibration.calibrate_noise_multiplier_detailed(
            target, delta, rate, steps, **options
        )
    elif missing == ["sample_rate"]:
        sigma = check_positive("--noise-multiplier", args.noise_multiplier)
        steps = check_steps("--steps", args.steps)
        result = calibration.calibrate_sample_rate_detailed(target, delta, sigma, steps, **options)
    else:
        sigma = check_positive("--noise-multiplier", args.noise_multiplier)
        rate = check_rate("--sample-rate", args.sample_rate)
        result = calibration.calibrate_steps_detailed(target, delta, sigma, rate, **options)
    parameter = missing[0]
    value = int(result.value) if parameter == "steps" else result.value
    given[parameter] = value
    if args.json:
        return strict_json(
            {
                **given,
                "calibrated": parameter,
                "target_epsilon": target,
                "delta": delta,
                "epsilon_lower": result.epsilon_lower,
                "epsilon_upper": result.epsilon_upper,
                "within_tolerance": result.within_tolerance,
            }
        )
    shown = f"{value}" if parameter == "steps" else f"{value:.6g}"
    return (
        f"{parameter.replace('_', ' ')} = {shown}   (for epsilon {target:g}, delta {delta:g})\n"
        f"achieved: {result.epsilon_lower:.6f} <= epsilon <= {result.epsilon_upper:.6f}   "
        f"(certified bounds)"
    )
