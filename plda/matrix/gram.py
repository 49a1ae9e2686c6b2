"""The Gram matrix ``G = C^T C`` of a strategy, stored by its diagonals.

``band[d, j] = G[j, j + d]`` for ``0 <= d < width`` (0 where ``j + d >= n``), ``G[i, j] = 0``
for ``|i - j| >= width``. A ``b``-banded lower-triangular ``C`` has a Gram of width at most
``b``, computed in ``O(n b^2)``; a Toeplitz strategy in ``O(n b)``; a dense one with BLAS.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from plda.matrix.strategies import Checked

__all__ = ["BandedGram", "banded_gram"]

#: above this many bands a dense strategy's Gram is computed by one matrix product (BLAS)
DENSE_PRODUCT_BANDS = 128


@dataclass(frozen=True, eq=False)
class BandedGram:
    """``G = C^T C`` by diagonals: ``band[d, j] = G[j, j + d]``, zero beyond ``width``.

    Attributes
    ----------
    band : numpy.ndarray
        Shape ``(width, n)``.
    """

    band: np.ndarray

    @property
    def width(self) -> int:
        """The number of stored diagonals: ``G[i, j] = 0`` when ``|i - j| >= width``."""
        return self.band.shape[0]

    @property
    def steps(self) -> int:
        """The number of steps ``n``."""
        return self.band.shape[1]

    @property
    def diagonal(self) -> np.ndarray:
        """``G[j, j]``, the squared column norms."""
        return self.band[0]

    @property
    def nonnegative(self) -> bool:
        """Whether every entry of ``G`` is ``>= 0``."""
        return bool(np.all(self.band >= 0))

    def entries(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """``G[i, j]`` for index arrays of one shape (0 beyond the band).

        Parameters
        ----------
        i, j : numpy.ndarray
            Step indices in ``[0, n)``.

        Returns
        -------
        numpy.ndarray
            The entries, in the shape of ``i``.
        """
        d = np.abs(i - j)
        low = np.minimum(i, j)
        inside = d < self.width
        return np.where(inside, self.band[np.minimum(d, self.width - 1), low], 0.0)


def _trim(band: np.ndarray) -> np.ndarray:
    """Drop trailing all-zero diagonals (keep the main one)."""
    nonzero = np.flatnonzero(np.any(band != 0, axis=1))
    width = int(nonzero[-1]) + 1 if nonzero.size else 1
    return band[:width]


def _from_dense_gram(gram: np.ndarray) -> np.ndarray:
    n = gram.shape[0]
    band = np.zeros((n, n))
    for d in range(n):
        band[d, : n - d] = np.diagonal(gram, d)
    return _trim(band)


def banded_gram(checked: Checked) -> BandedGram:
    """The Gram matrix of a checked strategy, by diagonals.

    Parameters
    ----------
    checked : Checked
        A strategy from :func:`plda.matrix.strategies.check_strategy`.

    Returns
    -------
    BandedGram
        ``G = C^T C``; for a Toeplitz strategy with first column ``c``,
        ``G[j, j + d] = sum_{t=0}^{n-1-j-d} c_t c_{t+d}``.
    """
    n = checked.steps
    if checked.is_toeplitz:
        c = checked.column
        width = checked.bands
        band = np.zeros((width, n))
        for d in range(width):
            prefix = np.cumsum(c[: n - d] * c[d:])  # prefix[L] = sum_{t<=L} c_t c_{t+d}
            band[d, : n - d] = prefix[::-1]  # j = 0 keeps n - 1 - d + 1 terms
        return BandedGram(_trim(band))
    matrix = checked.matrix
    if checked.bands is None or checked.bands > DENSE_PRODUCT_BANDS:
        return BandedGram(_from_dense_gram(matrix.T @ matrix))
    width = checked.bands
    # columns stored by offset: cols[t, j] = C[j + t, j]
    cols = np.zeros((width, n))
    for t in range(width):
        cols[t, : n - t] = np.diagonal(matrix, -t)
    band = np.zeros((width, n))
    for d in range(width):
        # G[j, j + d] = sum_t C[j + t, j] C[j + t, j + d]
        #             = sum_{t >= d} cols[t, j] cols[t - d, j + d]
        band[d, : n - d] = np.einsum("tj,tj->j", cols[d:, : n - d], cols[: width - d, d:])
    return BandedGram(_trim(band))
