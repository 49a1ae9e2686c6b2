"""Strategy matrices: a dense array, or lower-triangular Toeplitz coefficients, checked once.

A matrix mechanism releases ``C x + z`` for a strategy ``C`` whose columns index the steps of
training. Accepted forms and what each structure allows: ``docs/howto/dp-ftrl.md``.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

__all__ = ["ToeplitzStrategy", "column_norms", "toeplitz_strategy", "tree_strategy"]

#: largest number of steps a strategy may have (a dense strategy of this size is 800 MB)
MAX_STEPS = 10_000


@dataclass(frozen=True, eq=False)
class ToeplitzStrategy:
    """A lower-triangular Toeplitz strategy, stored by its first column.

    ``C[i, j] = coefficients[i - j]`` for ``i >= j`` (0 above the diagonal, and 0 where
    ``i - j >= len(coefficients)``): BLT, banded Toeplitz and square-root strategies have this
    form. Build it with :func:`toeplitz_strategy`.

    Attributes
    ----------
    coefficients : numpy.ndarray
        The first column's leading entries (read-only, float64, at most ``steps`` of them).
    steps : int
        The number of steps ``n`` (the matrix is ``n x n``).
    """

    coefficients: np.ndarray
    steps: int

    @property
    def padded(self) -> np.ndarray:
        """The first column, padded with zeros to ``steps`` entries."""
        out = np.zeros(self.steps)
        out[: self.coefficients.size] = self.coefficients
        return out

    @property
    def bands(self) -> int:
        """The number of non-zero diagonals: ``C[i, j] = 0`` when ``i - j >= bands``."""
        nonzero = np.flatnonzero(self.coefficients)
        return int(nonzero[-1]) + 1 if nonzero.size else 1

    def dense(self) -> np.ndarray:
        """The strategy as an ``n x n`` array.

        Returns
        -------
        numpy.ndarray
            ``C`` with ``C[i, j] = coefficients[i - j]`` on and below the diagonal.
        """
        column = self.padded
        offsets = np.subtract.outer(np.arange(self.steps), np.arange(self.steps))
        return np.where(offsets >= 0, column[np.clip(offsets, 0, None)], 0.0)


def _finite_array(name: str, value, ndim: tuple[int, ...]) -> np.ndarray:
    if isinstance(value, (str, bytes, bool)) or value is None:
        raise TypeError(f"{name} must be an array of real numbers, got {type(value).__name__}")
    array = np.asarray(value)
    if array.dtype == bool or not (
        np.issubdtype(array.dtype, np.integer) or np.issubdtype(array.dtype, np.floating)
    ):
        raise TypeError(f"{name} must be an array of real numbers, got dtype {array.dtype}")
    if array.ndim not in ndim:
        raise ValueError(
            f"{name} must be {' or '.join(f'{d}-D' for d in ndim)}, got a {array.ndim}-D array"
        )
    array = array.astype(float)
    if array.size == 0:
        raise ValueError(f"{name} must not be empty")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must hold finite numbers (no NaN or infinity)")
    return array


def _steps(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer in [1, {MAX_STEPS}], got {value!r}")
    if not 1 <= int(value) <= MAX_STEPS:
        raise ValueError(f"{name} must be an integer in [1, {MAX_STEPS}], got {value!r}")
    return int(value)


def toeplitz_strategy(coefficients, steps: int | None = None) -> ToeplitzStrategy:
    """The lower-triangular Toeplitz strategy with first column ``coefficients``.

    ``C[i, j] = coefficients[i - j]`` for ``0 <= i - j < len(coefficients)``, else 0; fewer
    coefficients than steps make a banded strategy, more are cut at ``steps``.

    Parameters
    ----------
    coefficients : array_like
        The first column's leading entries, finite real numbers, at least one.
    steps : int, optional
        The number of steps ``n``, in ``[1, 10000]``; by default ``len(coefficients)``.

    Returns
    -------
    ToeplitzStrategy
        The strategy, stored by its coefficients (``O(n)`` memory).

    Raises
    ------
    TypeError
        If ``coefficients`` is not an array of real numbers or ``steps`` not an integer.
    ValueError
        If ``coefficients`` is empty, not 1-D or holds NaN or infinities, or ``steps`` is
        outside ``[1, 10000]``.
    """
    column = _finite_array("coefficients", coefficients, (1,))
    n = _steps("steps", column.size if steps is None else steps)
    column = column[:n].copy()
    column.flags.writeable = False
    return ToeplitzStrategy(coefficients=column, steps=n)


def tree_strategy(steps: int) -> np.ndarray:
    """The binary-tree strategy of tree aggregation (Kairouz et al. 2021) as a 0/1 matrix.

    One row per dyadic interval ``[j 2^h, (j + 1) 2^h)`` of steps that ends by step ``n``
    (``h = 0, ..., floor(log2 n)``), one column per step; the row holds 1 on the steps of its
    interval. Each step lies in ``floor(log2 n) + 1`` complete intervals when it is step 0.

    Parameters
    ----------
    steps : int
        The number of steps ``n``, in ``[1, 10000]``.

    Returns
    -------
    numpy.ndarray
        The ``m x n`` matrix (``m < 2 n`` rows), not square: pass ``causal=False`` to
        :func:`plda.matrix.sensitivity`.

    Raises
    ------
    TypeError
        If ``steps`` is not an integer.
    ValueError
        If ``steps`` is outside ``[1, 10000]``.
    """
    n = _steps("steps", steps)
    rows = []
    width = 1
    while width <= n:
        for start in range(0, n - width + 1, width):
            row = np.zeros(n)
            row[start : start + width] = 1.0
            rows.append(row)
        width *= 2
    return np.array(rows)


@dataclass(frozen=True, eq=False)
class Checked:
    """A validated strategy: dense ``matrix`` (``m x n``) or Toeplitz ``column`` (``n``)."""

    steps: int
    matrix: np.ndarray | None = None
    column: np.ndarray | None = None
    bands: int | None = None  # C[i, j] = 0 for i - j >= bands (lower-triangular only)

    @property
    def is_toeplitz(self) -> bool:
        return self.column is not None


def _lower_bands(matrix: np.ndarray) -> int:
    """The bands of a lower-triangular matrix: 1 + the largest ``i - j`` with C[i, j] != 0."""
    rows, cols = np.nonzero(matrix)
    return int(np.max(rows - cols)) + 1 if rows.size else 1


def check_strategy(strategy, *, causal: bool = True) -> Checked:
    """``strategy`` validated: a :class:`ToeplitzStrategy`, a 1-D array of Toeplitz coefficients
    (``n = len``) or a 2-D array (square and lower-triangular when ``causal``)."""
    if isinstance(strategy, ToeplitzStrategy):
        return Checked(steps=strategy.steps, column=strategy.padded, bands=strategy.bands)
    array = _finite_array("strategy", strategy, (1, 2))
    if array.ndim == 1:
        toeplitz = toeplitz_strategy(array)
        return Checked(steps=toeplitz.steps, column=toeplitz.padded, bands=toeplitz.bands)
    m, n = array.shape
    _steps("strategy's number of columns (steps)", n)
    if causal:
        if m != n:
            raise ValueError(
                f"strategy must be square (n x n, one column per step) where causality is "
                f"required, got shape {array.shape}; pass causal=False for other shapes"
            )
        if np.any(np.triu(array, 1)):
            raise ValueError(
                "strategy must be lower-triangular (row i depends on steps 0..i only) where "
                "causality is required; pass causal=False to skip the check"
            )
        return Checked(steps=n, matrix=array, bands=_lower_bands(array))
    if m > 4 * MAX_STEPS:
        raise ValueError(f"strategy must have at most {4 * MAX_STEPS} rows, got {m}")
    return Checked(steps=n, matrix=array)


def column_norms(strategy, *, causal: bool = True) -> np.ndarray:
    """The L2 norm of each column of the strategy (one per step).

    Parameters
    ----------
    strategy : array_like or ToeplitzStrategy
        A 2-D array, Toeplitz coefficients (1-D) or a :class:`ToeplitzStrategy`.
    causal : bool, optional
        Require a square lower-triangular matrix (default True).

    Returns
    -------
    numpy.ndarray
        ``||C e_j||_2`` for ``j = 0, ..., n - 1``; for Toeplitz coefficients ``c`` it is
        ``sqrt(c_0^2 + ... + c_{n-1-j}^2)``.

    Raises
    ------
    TypeError
        If ``strategy`` is not an array of real numbers.
    ValueError
        If it is empty, holds NaN or infinities, or (``causal``) is not square
        lower-triangular.
    """
    return norms_of(check_strategy(strategy, causal=causal))


def norms_of(checked: Checked) -> np.ndarray:
    """The column norms of a checked strategy (``O(n)`` for Toeplitz, ``O(m n)`` dense)."""
    if checked.is_toeplitz:
        squares = np.cumsum(checked.column**2)[::-1]  # column j keeps n - j coefficients
        return np.sqrt(squares)
    return np.sqrt(np.einsum("ij,ij->j", checked.matrix, checked.matrix))


def dense_of(checked: Checked) -> np.ndarray:
    """A checked strategy as a dense array (Toeplitz coefficients laid out)."""
    if checked.is_toeplitz:
        return toeplitz_strategy(checked.column).dense()
    return checked.matrix
