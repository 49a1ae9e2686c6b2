"""The pair every certified answer comes as: a lower and an upper bound."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bounds:
    """Certified ``(lower, upper)`` pair; unpacks like a tuple.

    The true value lies in ``[lower, upper]`` (elementwise for arrays).

    Attributes
    ----------
    lower : float or numpy.ndarray
        Certified lower bound (a float for a scalar query, an array for an array query).
    upper : float or numpy.ndarray
        Certified upper bound, of the same shape.

    Examples
    --------
    >>> from plda.bounds import Bounds
    >>> lower, upper = Bounds(lower=1.0, upper=1.5)
    >>> upper - lower
    0.5
    """

    lower: float | np.ndarray
    upper: float | np.ndarray

    def __iter__(self):
        return iter((self.lower, self.upper))

    def __getitem__(self, i):
        return (self.lower, self.upper)[i]

    def __len__(self):
        return 2
