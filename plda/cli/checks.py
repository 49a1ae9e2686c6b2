"""Argument checks of the command line: each failure is a :class:`UsageError` naming the flag."""

from __future__ import annotations

import argparse
import math

from plda._internal.validation import MAX_COUNT

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
    """The ``argparse`` type of a count: ``--steps 1e6`` is accepted, ``1.5`` refused.

    Parameters
    ----------
    text : str
        The flag's value.

    Returns
    -------
    int
        The integer it denotes.

    Raises
    ------
    argparse.ArgumentTypeError
        If it is not a finite integer value.
    """
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if not math.isfinite(value) or value != math.floor(value):
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}")
    return int(value)


def check_positive(flag: str, value) -> float:
    """``value`` if it is a finite number > 0.

    Parameters
    ----------
    flag : str
        The flag, for the message.
    value : float or None
        Its value (None: not given).

    Returns
    -------
    float
        ``value``.

    Raises
    ------
    UsageError
        Naming ``flag``, otherwise.
    """
    if value is None or not (value > 0) or not math.isfinite(value):
        raise UsageError(f"argument {flag}: must be a finite number > 0, got {value!r}")
    return value


def check_rate(flag: str, value) -> float:
    """``value`` if it is in ``(0, 1]``.

    Parameters
    ----------
    flag : str
        The flag, for the message.
    value : float or None
        Its value (None: not given).

    Returns
    -------
    float
        ``value``.

    Raises
    ------
    UsageError
        Naming ``flag``, otherwise.
    """
    if value is None or not (0 < value <= 1):
        raise UsageError(f"argument {flag}: must be in (0, 1], got {value!r}")
    return value


def check_steps(flag: str, value) -> int:
    """``value`` if it is a count in ``[1, MAX_COUNT]`` (the range plda certifies).

    Parameters
    ----------
    flag : str
        The flag, for the message.
    value : int or None
        Its value (None: not given).

    Returns
    -------
    int
        ``value``.

    Raises
    ------
    UsageError
        Naming ``flag``, otherwise.
    """
    if value is None or value < 1:
        raise UsageError(f"argument {flag}: must be an integer >= 1, got {value!r}")
    if value > MAX_COUNT:  # (the library's own message names its count argument)
        raise UsageError(f"argument {flag}: must be an integer in [1, {MAX_COUNT:.0e}] (the "
                         f"range plda certifies), got {value!r}")
    return value


def check_delta(flag: str, value) -> float:
    """``value`` if it is in ``[0, 1]``.

    Parameters
    ----------
    flag : str
        The flag, for the message.
    value : float or None
        Its value (None: not given).

    Returns
    -------
    float
        ``value``.

    Raises
    ------
    UsageError
        Naming ``flag``, otherwise.
    """
    if value is None or not (0 <= value <= 1):
        raise UsageError(f"argument {flag}: must be in [0, 1], got {value!r}")
    return value


def require(missing: list[str]) -> None:
    """Refuse a command line with required flags missing, naming them all in one line.

    Parameters
    ----------
    missing : list of str
        The missing flags (empty: nothing to refuse).

    Raises
    ------
    UsageError
        If ``missing`` is not empty (no silent defaults).
    """
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)}")


def check_accuracy(value) -> float:
    """``--accuracy`` if it is in ``(0, 1)``.

    Parameters
    ----------
    value : float
        Its value.

    Returns
    -------
    float
        ``value``.

    Raises
    ------
    UsageError
        Naming ``--accuracy``, otherwise.
    """
    if not (0 < value < 1):
        raise UsageError(f"argument --accuracy: must be in (0, 1), got {value!r}")
    return value
