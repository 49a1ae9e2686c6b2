"""Small helpers shared by the conversion modules."""

from __future__ import annotations

import numpy as np

from plda._internal import validation as check


def scalar_like(value, like):
    """``value`` as a float when ``like`` is a scalar, else unchanged."""
    return float(value) if np.ndim(like) == 0 else value


def unit_interval(name: str, value) -> np.ndarray:
    """``value`` checked to lie in ``[0, 1]`` (an array; ValueError naming ``name`` if not)."""
    return check.array_in(name, value, 0.0, 1.0)
