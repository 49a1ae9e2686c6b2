"""Calibration targets on the command line: a privacy target or a membership-inference risk.

Exactly one of ``--epsilon E --delta D``, ``--target-true-positive-rate X
--at-false-positive-rate Y`` or ``--target-advantage A`` (:func:`calibration_target`); a flag of
another target is an error rather than silently ignored.
"""

from __future__ import annotations

import math

from plda.cli.checks import UsageError, check_positive, require

__all__ = ["TARGET_FLAGS", "add_target_flags", "calibration_target", "describe_target"]

#: target flag -> the flags it needs with it
TARGET_FLAGS = {
    "--epsilon": ("--delta",),
    "--target-true-positive-rate": ("--at-false-positive-rate",),
    "--target-advantage": (),
}
#: every flag of a target -> its namespace attribute
ATTRIBUTES = {
    "--epsilon": "epsilon",
    "--delta": "delta",
    "--target-true-positive-rate": "target_true_positive_rate",
    "--at-false-positive-rate": "at_false_positive_rate",
    "--target-advantage": "target_advantage",
}


def add_target_flags(parser) -> None:
    """Add the target flags of ``plda calibrate`` to its parser.

    None is required by ``argparse``: exactly one target is checked by
    :func:`calibration_target`, with a one-line error.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The ``calibrate`` subcommand's parser.
    """
    parser.add_argument("--epsilon", type=float, help="target epsilon (with --delta)")
    parser.add_argument("--delta", type=float, help="delta of the epsilon target")
    parser.add_argument(
        "--target-true-positive-rate",
        type=float,
        metavar="X",
        help="target: no membership-inference attack reaches a true-positive rate above X "
        "at the false-positive rate of --at-false-positive-rate",
    )
    parser.add_argument("--at-false-positive-rate", type=float, metavar="Y",
                        help="false-positive rate of --target-true-positive-rate")
    parser.add_argument(
        "--target-advantage",
        type=float,
        metavar="A",
        help="target: no membership-inference attack has an advantage TPR - FPR above A",
    )


def _open_unit(flag: str, value, low: float = 0.0) -> float:
    if value is None or not (low < value < 1):
        raise UsageError(f"argument {flag}: must be in ({low:g}, 1), got {value!r}")
    return value


def calibration_target(args) -> dict:
    """The keyword arguments of the :mod:`plda.calibration` functions for the one target.

    ``--epsilon E --delta D``: the certified epsilon at ``D`` is at most ``E``;
    ``--target-true-positive-rate X --at-false-positive-rate Y``: no membership-inference
    attack has a true-positive rate above ``X`` at false-positive rate ``Y`` (both neighbouring
    directions); ``--target-advantage A``: no attack has ``TPR - FPR`` above ``A``.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    dict
        ``target_epsilon`` and ``target_delta``, ``target_true_positive_rate`` and
        ``at_false_positive_rate``, or ``target_advantage``.

    Raises
    ------
    UsageError
        Naming the flag: not exactly one target, a flag of another target, a missing partner
        flag or a value out of range (a true-positive rate at or below its false-positive
        rate is unreachable).
    """
    given = [flag for flag in TARGET_FLAGS if getattr(args, ATTRIBUTES[flag], None) is not None]
    if len(given) != 1:
        raise UsageError(
            "give exactly one target: --epsilon with --delta, --target-true-positive-rate with "
            "--at-false-positive-rate, or --target-advantage; got "
            + (" and ".join(given) if given else "none")
        )
    target = given[0]
    for flag, attribute in ATTRIBUTES.items():
        if flag in TARGET_FLAGS or flag in TARGET_FLAGS[target]:
            continue
        if getattr(args, attribute, None) is not None:
            owner = next(t for t, needs in TARGET_FLAGS.items() if flag in needs)
            raise UsageError(f"argument {flag}: only used with {owner}, not with {target}")
    value = getattr(args, ATTRIBUTES[target])
    if target == "--epsilon":
        epsilon = check_positive("--epsilon", value)
        require([] if args.delta is not None else ["--delta"])
        return {"target_epsilon": epsilon, "target_delta": _open_unit("--delta", args.delta)}
    if target == "--target-advantage":
        return {"target_advantage": _open_unit("--target-advantage", value)}
    alpha = args.at_false_positive_rate
    if alpha is not None:
        alpha = _open_unit("--at-false-positive-rate", alpha)
    if not (value is not None and math.isfinite(value) and 0 < value < 1):
        raise UsageError(f"argument --target-true-positive-rate: must be in (0, 1), got {value!r}")
    require([] if alpha is not None else ["--at-false-positive-rate"])
    # every test reaches TPR = FPR (guess at random), so a target at or below it is impossible
    _open_unit("--target-true-positive-rate", value, low=alpha)
    return {"target_true_positive_rate": value, "at_false_positive_rate": alpha}


def describe_target(keywords: dict) -> str:
    """The target in words.

    Parameters
    ----------
    keywords : dict
        What :func:`calibration_target` returned.

    Returns
    -------
    str
        ``"epsilon 1, delta 1e-05"``, ``"true-positive rate 0.02 at false-positive rate
        0.001"`` or ``"advantage 0.1"``.
    """
    if "target_epsilon" in keywords:
        return f"epsilon {keywords['target_epsilon']:g}, delta {keywords['target_delta']:g}"
    if "target_advantage" in keywords:
        return f"advantage {keywords['target_advantage']:g}"
    return (
        f"true-positive rate {keywords['target_true_positive_rate']:g} at false-positive rate "
        f"{keywords['at_false_positive_rate']:g}"
    )
