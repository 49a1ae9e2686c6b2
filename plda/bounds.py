"""The pair every certified answer comes as: a lower and an upper bound."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Bounds:
    """Certified ``(lower, upper)`` pair; unpacks like a tuple."""

    lower: float | np.ndarray
    upper: float | np.ndarray

    def __iter__(self):
        return iter((self.lower, self.upper))

    def __getitem__(self, i):
        return (self.lower, self.upper)[i]

    def __len__(self):
        return 2
