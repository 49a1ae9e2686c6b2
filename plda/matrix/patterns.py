"""Participation patterns: at most ``k`` steps of ``0..n-1``, pairwise at least ``s`` apart.

Three tools over them, each exact for what it computes: the best separated sum of weights (a
dynamic program), the enumeration of every pattern, and the per-row bound of
``docs/howto/dp-ftrl.md`` (section *Sensitivity*).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterator

import numpy as np

from plda.matrix.gram import BandedGram

__all__ = [
    "best_separated_sum",
    "count_patterns",
    "enumerate_maximum",
    "max_participations",
    "row_bounds",
]


def max_participations(steps: int, min_separation: int) -> int:
    """The most steps of ``0..n-1`` that can be pairwise ``min_separation`` apart.

    Parameters
    ----------
    steps : int
        The number of steps ``n >= 1``.
    min_separation : int
        The separation ``s >= 1``.

    Returns
    -------
    int
        ``floor((n - 1) / s) + 1`` (the pattern ``0, s, 2s, ...``).

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If an argument is below 1.
    """
    for name, value in (("steps", steps), ("min_separation", min_separation)):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise TypeError(f"{name} must be an integer >= 1, got {value!r}")
        if value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return (int(steps) - 1) // int(min_separation) + 1


def count_patterns(steps: int, participations: int, min_separation: int) -> int:
    """How many non-empty patterns there are: ``sum_{j=1}^{k} binom(n - (j - 1)(s - 1), j)``.

    Parameters
    ----------
    steps, participations, min_separation : int
        ``n``, ``k`` and ``s``, each at least 1.

    Returns
    -------
    int
        The number of sets of 1 to ``k`` steps pairwise at least ``s`` apart (a set of ``j``
        such steps is a set of ``j`` steps among ``n - (j - 1)(s - 1)`` once the gaps are
        shrunk by ``s - 1``).
    """
    total = 0
    for j in range(1, participations + 1):
        free = steps - (j - 1) * (min_separation - 1)
        if free < j:
            break
        total += math.comb(free, j)
    return total


def best_separated_sum(
    weights: np.ndarray, participations: int, min_separation: int
) -> tuple[float, tuple[int, ...]]:
    """The largest sum of at most ``k`` weights at indices pairwise ``>= s`` apart.

    Dynamic program ``f_p(j) = max(f_{p+1}(j), w_p + f_{p+s}(j - 1))`` over positions from the
    last, in ``O(n k)``; negative weights are never taken.

    Parameters
    ----------
    weights : numpy.ndarray
        One weight per step.
    participations : int
        ``k``, the most indices taken.
    min_separation : int
        ``s``, the least distance between two indices taken.

    Returns
    -------
    tuple of (float, tuple of int)
        The best sum and indices attaining it (empty, with sum 0, if every weight is <= 0).
    """
    n = weights.size
    k, s = participations, min_separation
    best = np.zeros((n + s, k + 1))  # best[p, j]: j picks at most, positions >= p
    take = np.zeros((n, k + 1), dtype=bool)
    for p in range(n - 1, -1, -1):
        skip = best[p + 1]
        pick = np.empty(k + 1)
        pick[0] = -np.inf
        pick[1:] = weights[p] + best[p + s, :-1]
        take[p] = pick > skip
        best[p] = np.where(take[p], pick, skip)
    pattern = []
    p, j = 0, k
    while p < n and j > 0:
        if take[p, j]:
            pattern.append(p)
            p, j = p + s, j - 1
        else:
            p += 1
    return float(best[0, k]), tuple(pattern)


def _patterns(n: int, k: int, s: int, start: int = 0) -> Iterator[tuple[int, ...]]:
    for first in range(start, n):
        yield (first,)
        if k > 1:
            for rest in _patterns(n, k - 1, s, first + s):
                yield (first, *rest)


def enumerate_maximum(
    gram: BandedGram, participations: int, min_separation: int, *, signs: bool
) -> tuple[float, tuple[int, ...]]:
    """The largest ``u^T G u`` over every pattern, by enumeration.

    Over ``u`` in ``{-1, 1}^S`` (``signs``) or ``u = 1_S`` (not ``signs``: the maximum when
    ``G >= 0``).

    A quadratic form with ``G_ii >= 0`` is convex in each coordinate, so on the box
    ``[-1, 1]^S`` its maximum is at a vertex; ``u`` and ``-u`` give the same value, so the first
    sign is fixed to ``+1``.

    Parameters
    ----------
    gram : BandedGram
        ``G = C^T C``.
    participations, min_separation : int
        ``k`` and ``s``.
    signs : bool
        Enumerate the sign vectors too.

    Returns
    -------
    tuple of (float, tuple of int)
        The maximum of ``u^T G u`` and a pattern attaining it.
    """
    by_size: dict[int, list[tuple[int, ...]]] = {}
    for pattern in _patterns(gram.steps, participations, min_separation):
        by_size.setdefault(len(pattern), []).append(pattern)
    best, best_pattern = -np.inf, ()
    for size, patterns in by_size.items():
        idx = np.array(patterns)  # (N, size)
        block = gram.entries(idx[:, :, None], idx[:, None, :])  # (N, size, size)
        if signs and size > 1:
            tails = np.array(np.meshgrid(*[[-1.0, 1.0]] * (size - 1), indexing="ij"))
            u = np.concatenate([np.ones((1, 2 ** (size - 1))),
                                tails.reshape(size - 1, -1)])  # (size, 2^(size-1))
            values = np.einsum("nab,as,bs->ns", block, u, u).max(axis=1)
        else:
            values = block.sum(axis=(1, 2))
        i = int(np.argmax(values))
        if values[i] > best:
            best, best_pattern = float(values[i]), patterns[i]
    return best, best_pattern


#: above this many operations (offsets x steps x participations) the per-row dynamic program
#: gives way to the sum of the row's k - 1 largest entries (a looser bound, in O(n width))
ROW_PROGRAM_BUDGET = 10**8


def _top_entries(gram: BandedGram, picks: int, s: int) -> np.ndarray:
    """Per row: the sum of its ``picks`` largest ``|G_ij|`` with ``|i - j| >= s`` (separation
    among them ignored, so at least the separated maximum)."""
    n, w = gram.steps, gram.width
    offsets = np.arange(-(w - 1), w)
    out = np.zeros(n)
    for start in range(0, n, 256):
        rows = np.arange(start, min(n, start + 256))[:, None]
        cols = rows + offsets[None, :]
        valid = (cols >= 0) & (cols < n) & (np.abs(offsets) >= s)[None, :]
        weight = np.where(valid, np.abs(gram.entries(rows, np.clip(cols, 0, n - 1))), 0.0)
        take = min(picks, weight.shape[1])
        out[rows[:, 0]] = -np.partition(-weight, take - 1, axis=1)[:, :take].sum(axis=1)
    return out


def row_bounds(gram: BandedGram, participations: int, min_separation: int) -> np.ndarray:
    """The per-row bounds ``R_i`` whose best separated sum bounds the squared sensitivity.

    Per step ``i``: ``R_i = G_ii + max sum_{j in S'} |G_ij|`` over ``S'`` of at most
    ``k - 1`` steps, each ``>= s`` from ``i`` and from each other.

    For any pattern ``S`` and ``u`` in ``[-1, 1]^S``,
    ``u^T G u <= sum_{i in S} sum_{j in S} |G_ij| <= sum_{i in S} R_i``, so the best separated
    sum of the ``R_i`` bounds the squared sensitivity. One dynamic program per row, all rows at
    once, over the offsets ``d = j - i`` inside the band: ``O(width n k)``; above
    :data:`ROW_PROGRAM_BUDGET` operations the maximum is replaced by the sum of the row's
    ``k - 1`` largest ``|G_ij|`` with ``|i - j| >= s`` (larger, so still a bound).

    Parameters
    ----------
    gram : BandedGram
        ``G = C^T C``.
    participations, min_separation : int
        ``k`` and ``s``.

    Returns
    -------
    numpy.ndarray
        ``R_i`` for every step.
    """
    n, w = gram.steps, gram.width
    k, s = participations, min_separation
    rows = np.arange(n)
    if k == 1 or w <= s:
        return gram.diagonal.copy()
    if (2 * w - 1) * n * k > ROW_PROGRAM_BUDGET:
        return gram.diagonal + _top_entries(gram, k - 1, s)
    span = range(w - 1, -w, -1)  # offsets d from the right end of the band to the left
    # best[d][:, j]: at most j picks among offsets >= d (kept for the last s offsets)
    zero = np.zeros((n, k))
    history: dict[int, np.ndarray] = {}
    previous = zero
    for d in span:
        cols = rows + d
        valid = (cols >= 0) & (cols < n) & (abs(d) >= s)
        weight = np.where(valid, np.abs(gram.entries(rows, np.clip(cols, 0, n - 1))), 0.0)
        after = history.get(d + s, zero)
        pick = np.empty((n, k))
        pick[:, 0] = -np.inf
        pick[:, 1:] = weight[:, None] + after[:, :-1]
        current = np.maximum(previous, pick)
        history[d] = current
        history.pop(d + s, None)  # offsets left of d need d' + s < d + s
        previous = current
    return gram.diagonal + previous[:, k - 1]
