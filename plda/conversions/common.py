"""Small helpers shared by the conversion modules."""

from __future__ import annotations

import numpy as np

from plda._internal import validation as check


def scalar_like(value, like):
    """A result shaped like the query's argument: a float for a scalar, else unchanged.

    Parameters
    ----------
    value : float or numpy.ndarray
        The result.
    like : float or array_like
        The argument the query was given.

    Returns
    -------
    float or numpy.ndarray
        ``float(value)`` when ``like`` is a scalar, else ``value``.
    """
    return float(value) if np.ndim(like) == 0 else value


def unit_interval(name: str, value) -> np.ndarray:
    """An argument checked to lie in ``[0, 1]``, as an array.

    Parameters
    ----------
    name : str
        The argument's name, for the error message.
    value : float or array_like
        The argument.

    Returns
    -------
    numpy.ndarray
        The values, as floats.

    Raises
    ------
    ValueError
        If a value lies outside ``[0, 1]`` or is NaN.
    TypeError
        If ``value`` is not numeric.
    """
    return check.array_in(name, value, 0.0, 1.0)
