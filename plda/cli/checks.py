"""Argument checks of the command line: each failure is a :class:`UsageError` naming the flag."""

from __future__ import annotations

import argparse
import math

__all__ = [
    "UsageError",
    "check_accuracy",
    "check_delta",
    "check_positive",
    "check_rate",
    "check_steps",
    "integer",
    "require",
]


class UsageError(Exception):
    """A bad command line; the message names the argument."""


def integer(text: str) -> int:
    """``--steps 1e6`` is accepted (an integer value); ``1.5`` is refused with a clear message."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if not math.isfinite(value) or value != math.floor(value):
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}")
    return int(value)


def check_positive(flag: str, value) -> float:
    if value is None or not (value > 0) or not math.isfinite(value):
        raise UsageError(f"argument {flag}: must be a finite number > 0, got {value!r}")
    return value


def check_rate(flag: str, value) -> float:
    if value is None or not (0 < value <= 1):
        raise UsageError(f"argument {flag}: must be in (0, 1], got {value!r}")
    return value


def check_steps(flag: str, value) -> int:
    if value is None or value < 1:
        raise UsageError(f"argument {flag}: must be an integer >= 1, got {value!r}")
    return value


def check_delta(flag: str, value) -> float:
    if value is None or not (0 <= value <= 1):
        raise UsageError(f"argument {flag}: must be in [0, 1], got {value!r}")
    return value


def require(missing: list[str]) -> None:
    """One line naming every missing required flag (no silent defaults)."""
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)}")


def check_accuracy(value) -> float:
    if not (0 < value < 1):
        raise UsageError(f"argument --accuracy: must be in (0, 1), got {value!r}")
    return value
