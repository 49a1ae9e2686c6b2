"""The L2 sensitivity of a strategy under multiple participations, exact or certified.

The largest ``||C u||_2`` over participation patterns (at most ``k`` steps pairwise at least
``s`` apart, each participating coordinate in ``[-1, 1]``). Which cases are exact and why:
``docs/howto/dp-ftrl.md`` (section *Sensitivity*).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from plda._internal.floats import dot
from plda.matrix.gram import BandedGram, banded_gram
from plda.matrix.patterns import (
    best_separated_sum,
    count_patterns,
    enumerate_maximum,
    max_participations,
    row_bounds,
)
from plda.matrix.strategies import Checked, check_strategy, norms_of

__all__ = ["METHODS", "Sensitivity", "sensitivity"]

#: how a :class:`Sensitivity` was obtained, and whether that way is exact
METHODS = {
    "single": True,  # k = 1: the largest column norm
    "toeplitz": True,  # non-negative non-increasing Toeplitz: the earliest pattern 0, s, 2s, ...
    "separated": True,  # G_ij = 0 whenever |i - j| >= s: no cross terms, a dynamic program
    "enumeration": True,  # every pattern (and sign vector when G has negative entries)
    "row bound": False,  # the certified per-row bound
}
#: default largest number of (pattern, sign vector) pairs enumerated for an exact answer
EXHAUSTIVE_LIMIT = 200_000
#: a certified bound is rounded up by this relative amount per step (float64 sums of n terms)
_ROUNDING = 4 * 2.0**-53


@dataclass(frozen=True, kw_only=True)
class Sensitivity:
    """The multi-participation L2 sensitivity of a strategy.

    Attributes
    ----------
    value : float
        ``max ||C u||_2`` when ``exact`` (float64 arithmetic), else a certified upper bound
        on it (rounded up for the float64 sums).
    exact : bool
        True if ``value`` is the maximum itself, False if it is an upper bound.
    method : str
        How it was found, a key of :data:`METHODS`: ``"single"``, ``"toeplitz"``,
        ``"separated"``, ``"enumeration"`` (exact) or ``"row bound"`` (upper bound).
    participations : int
        ``k``, the most steps one record takes part in.
    min_separation : int
        ``s``, the least distance between two of them.
    lower : float
        ``||C u||_2`` of a realized pattern, a lower bound on the sensitivity: ``value``
        itself when ``exact``.
    pattern : tuple of int
        The steps of the pattern that realizes ``lower`` (``u`` is ``1`` on them unless the
        exact maximum needed signs).
    """

    value: float
    exact: bool
    method: str
    participations: int
    min_separation: int
    lower: float
    pattern: tuple[int, ...] = ()

    @property
    def squared(self) -> float:
        """``value ** 2``."""
        return self.value**2


def _integer(name: str, value, low: int, high: int | None = None, why: str = "") -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= {low}, got {value!r}")
    if value < low or (high is not None and value > high):
        where = f"in [{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {where}{why}, got {value!r}")
    return int(value)


def _exact_toeplitz(column: np.ndarray) -> bool:
    return bool(np.all(column >= 0) and np.all(np.diff(column) <= 0))


def _as_toeplitz(checked: Checked) -> Checked:
    """A dense lower-triangular strategy that is exactly Toeplitz, read by its first column."""
    if checked.is_toeplitz or checked.bands is None:
        return checked
    matrix, n = checked.matrix, checked.steps
    column = matrix[:, 0]
    for d in range(1, n):
        if not np.array_equal(np.diagonal(matrix, -d), np.full(n - d, column[d])):
            return checked
    if not np.array_equal(np.diagonal(matrix), np.full(n, column[0])):
        return checked
    return Checked(steps=n, column=column.copy(), bands=checked.bands)


def _toeplitz_earliest(column: np.ndarray, k: int, s: int) -> float:
    """``||sum_{m<k} C e_{ms}||^2``: ``v_r = sum_{m < k, ms <= r} c_{r - ms}`` in ``O(n)``."""
    n = column.size
    rows = -(-n // s)
    padded = np.zeros(rows * s)
    padded[:n] = column
    strided = np.cumsum(padded.reshape(rows, s), axis=0).reshape(-1)[:n]  # all m >= 0
    v = strided.copy()
    if k * s < n:
        v[k * s :] -= strided[: n - k * s]  # drop the terms m >= k
    return dot(v, v)


def _realized(gram: BandedGram, steps: tuple[int, ...]) -> float:
    """``max u^T G u`` over signs found by coordinate ascent from ``u = 1`` on ``steps``: the
    value of a realized pattern (each flip to ``sign(sum_{j != i} G_ij u_j)`` never lowers it)."""
    if not steps:
        return 0.0
    idx = np.array(steps, dtype=int)
    block = gram.entries(idx[:, None], idx[None, :])
    off = block - np.diag(np.diag(block))
    u = np.ones(idx.size)
    for _ in range(50):
        changed = False
        for i in range(idx.size):
            want = 1.0 if dot(off[i], u) >= 0 else -1.0
            if want != u[i]:
                u[i], changed = want, True
        if not changed:
            break
    return dot(u, dot(block, u))


def sensitivity(
    strategy,
    participations: int = 1,
    min_separation: int = 1,
    *,
    causal: bool = True,
    vectors: bool = False,
    exhaustive_limit: int = EXHAUSTIVE_LIMIT,
) -> Sensitivity:
    """The largest ``||C u||_2`` over participation patterns, exact or a certified bound.

    ``sens = max { ||C u||_2 : supp(u) = S, |S| <= k, |i - j| >= s for i != j in S,
    u_i in [-1, 1] }`` with ``k = participations`` and ``s = min_separation``, the columns of
    ``C`` indexing steps (Choquette-Choo et al. 2023, "Multi-epoch matrix factorization
    mechanisms for private machine learning"). Exact (``exact=True``) when

    - ``k = 1``: the largest column norm;
    - ``C`` is lower-triangular Toeplitz with non-negative, non-increasing coefficients: the
      earliest pattern ``0, s, ..., (k - 1) s`` with ``u = 1`` is optimal (Kalinin & Lampert
      2024, Theorem 2; proof in the docs);
    - ``G = C^T C`` has ``G_ij = 0`` for ``|i - j| >= s`` (a ``b``-banded ``C`` with
      ``s >= b``): no cross terms, ``sens^2 = max_S sum_{i in S} G_ii`` by dynamic program;
    - at most ``exhaustive_limit`` patterns (times sign vectors when ``G`` has a negative
      entry): enumeration, with ``u = 1_S`` when ``G >= 0`` entrywise (for ``u`` in
      ``[-1, 1]^S`` the maximum of the convex ``u^T G u`` is at a vertex, and
      ``u^T G u <= sum |G_ij| = 1_S^T G 1_S`` when ``G >= 0``).

    Otherwise ``value`` is the certified upper bound
    ``sens^2 <= max_S sum_{i in S} R_i``, ``R_i = G_ii + max_{S' : i} sum_{j in S'} |G_ij|``
    (``exact=False``).

    Parameters
    ----------
    strategy : array_like or ToeplitzStrategy
        A 2-D array ``C`` (``n x n`` lower-triangular; any ``m x n`` with ``causal=False``),
        a 1-D array of Toeplitz coefficients (the first column, ``n = len``) or a
        :class:`~plda.matrix.ToeplitzStrategy` (from :func:`~plda.matrix.toeplitz_strategy`).
    participations : int, optional
        ``k >= 1``, at most ``floor((n - 1) / s) + 1``.
    min_separation : int, optional
        ``s >= 1``: two participations of one record are at least ``s`` steps apart.
    causal : bool, optional
        Require a square lower-triangular ``C`` (default); False accepts any ``m x n``.
    vectors : bool, optional
        Each participation adds a vector of norm at most 1 (a clipped gradient in ``R^d``)
        instead of a scalar in ``[-1, 1]``: ``sum G_ij <u_i, u_j>`` can then exceed every sign
        vector's value when ``G`` has negative entries, so those are not enumerated (the
        certified row bound, valid for vectors, is reported). Identical when ``G >= 0``.
    exhaustive_limit : int, optional
        Enumerate the patterns for an exact answer when there are at most this many
        (default 200,000; 0 never enumerates).

    Returns
    -------
    Sensitivity
        ``value``, ``exact`` and ``method`` (and a maximizing ``pattern`` when exact).

    Raises
    ------
    TypeError
        If ``strategy`` is not an array of real numbers, or an integer argument is not an
        integer.
    ValueError
        If ``strategy`` is empty, holds NaN or infinities or (``causal``) is not square
        lower-triangular; if ``min_separation < 1``, ``participations < 1`` or more than the
        ``n`` steps allow, or ``exhaustive_limit < 0``.

    Examples
    --------
    >>> import numpy as np
    >>> import plda.matrix as pm
    >>> found = pm.sensitivity(np.diag([1.0, 2.0, 1.0, 2.0]), participations=2, min_separation=2)
    >>> found.value, found.exact, found.method, found.pattern
    (2.8284271247461903, True, 'separated', (1, 3))
    >>> pm.sensitivity([1.0, 0.5, 0.25], participations=2).pattern  # Toeplitz: 0, s, 2s, ...
    (0, 1)
    """
    checked = check_strategy(strategy, causal=causal)
    n = checked.steps
    s = _integer("min_separation", min_separation, 1)
    most = max_participations(n, s)
    k = _integer("participations", participations, 1, most,
                 f" (at most {most} of the {n} steps are {s} apart)")
    limit = _integer("exhaustive_limit", exhaustive_limit, 0)

    def result(squared: float, method: str, pattern=(), lower: float | None = None):
        exact = METHODS[method]
        value = math.sqrt(max(squared, 0.0))
        if not exact:
            value *= 1 + _ROUNDING * (n + 2)
        return Sensitivity(value=value, exact=exact, method=method, participations=k,
                           min_separation=s, lower=value if lower is None else lower,
                           pattern=tuple(int(i) for i in pattern))

    norms = norms_of(checked)
    if k == 1:
        j = int(np.argmax(norms))
        return result(float(norms[j]) ** 2, "single", (j,))
    checked = _as_toeplitz(checked)
    if checked.is_toeplitz and _exact_toeplitz(checked.column):
        return result(_toeplitz_earliest(checked.column, k, s), "toeplitz",
                      range(0, k * s, s))
    if checked.bands is not None and checked.bands <= s:
        # b-banded and s >= b: columns s apart touch disjoint rows (no Gram needed)
        squared, pattern = best_separated_sum(norms**2, k, s)
        return result(squared, "separated", pattern)
    gram = banded_gram(checked)
    if gram.width <= s:
        squared, pattern = best_separated_sum(gram.diagonal, k, s)
        return result(squared, "separated", pattern)
    nonnegative = gram.nonnegative
    patterns = count_patterns(n, k, s)
    if not nonnegative:
        patterns *= 2 ** (k - 1)
    if patterns <= limit and (nonnegative or not vectors):
        squared, pattern = enumerate_maximum(gram, k, s, signs=not nonnegative)
        return result(squared, "enumeration", pattern)
    squared, candidate = best_separated_sum(row_bounds(gram, k, s), k, s)
    # a lower bound: the best realized value among the largest column, the bound's pattern and
    # the best separated diagonal's, each with signs improved by coordinate ascent
    j = int(np.argmax(norms))
    lower, pattern = float(norms[j]) ** 2, (j,)
    for steps in (candidate, best_separated_sum(gram.diagonal, k, s)[1]):
        value = _realized(gram, steps)
        if value > lower:
            lower, pattern = value, steps
    return result(squared, "row bound", pattern, math.sqrt(lower))
