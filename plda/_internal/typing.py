"""Shared type aliases for the public queries (float in -> float out, array in -> array out).

Use with :func:`typing.overload`, e.g.::

    @overload
    def epsilon(self, delta: float) -> float: ...
    @overload
    def epsilon(self, delta: ArrayLike) -> FloatArray: ...
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: anything numpy turns into an array of floats (lists, tuples, arrays)
ArrayLike = npt.ArrayLike
#: the array a vectorised query returns
FloatArray = npt.NDArray[np.float64]
#: a scalar query's result or a vectorised one
FloatOrArray = float | FloatArray

__all__ = ["ArrayLike", "FloatArray", "FloatOrArray"]
