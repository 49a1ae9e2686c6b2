"""Where a grid law's profile crosses one delta: a block bisection over the cuts, without the
full-length sequential scans of the whole profile (an accountant composes a fresh law for every
query, and a tilted law holds 1e5 entries or more). Used by
:meth:`plda.grid.discrete.DiscreteLoss.epsilon` for a few deltas.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from plda._internal.floats import discounted_tails, dot

__all__ = ["BLOCK", "crossing"]

#: block length of the search
BLOCK = 256


def crossing(probs: np.ndarray, step: float, d: float,
             tail_term: Callable[[int, float], float]) -> tuple[int, float, float]:
    """The cut where a grid law's profile crosses ``d``, with its tail sums.

    A cut ``j`` (``0..n``) with ``delta(l_j) <= d < delta(l_{j-1})`` (``n + 1`` if none), its
    tail mass ``sum_{i >= j} p_i`` and its discounted tail ``S_j``. ``delta`` at a cut is
    ``A_j - S_j``, with ``S_j = sum_{i >= j} p_i e^(l_j - l_i)`` and
    ``A_j = tail_term(j, tail_mass)`` (the tail mass plus the mass at infinity and the error
    terms, see :meth:`plda.grid.discrete.DiscreteLoss.segments`). Found by bisection: over the
    ``n / BLOCK`` block starts, then inside the crossing block (``O(n)`` vectorized sums,
    ``O(log n)`` scalar evaluations). Bisection keeps ``delta(l_{j-1}) > d``, which is all either
    version needs: an upper version may solve on any cut at or below ``d``; for a lower version
    the true ``delta`` exceeds ``d`` up to ``l_{j-1}`` (it is above the lower one, and
    non-increasing), so the epsilon solved on segment ``j`` stays below the true one.

    Parameters
    ----------
    probs
        The grid law's finite masses.
    step
        Its grid step ``h``.
    d
        The delta.
    tail_term
        ``A_j`` from the cut's index and its tail mass.

    Returns
    -------
    tuple
        ``(j, tail_mass, S_j)``; ``(n + 1, 0, 0)`` if no cut reaches ``d``.
    """
    n = len(probs)
    nb = -(-n // BLOCK)
    padded = np.zeros(nb * BLOCK)
    padded[:n] = probs
    blocks = padded.reshape(nb, BLOCK)
    # weights r^m, r = e^-h, within a block: each block's sum discounted to its start
    weights = np.exp(-step * np.arange(BLOCK))
    # tails at block starts, summed from the end (in the order of a loop) and discounted
    mass = np.cumsum(blocks.sum(axis=1)[::-1])[::-1].tolist() + [0.0]
    discounted = dot(blocks, weights).tolist()
    r_block = math.exp(-step * BLOCK)
    scaled = [0.0] * (nb + 1)
    for b in range(nb - 1, -1, -1):
        scaled[b] = discounted[b] + r_block * scaled[b + 1]
    starts = [*range(0, nb * BLOCK, BLOCK), n]
    k = _bisect(d, starts, mass, scaled, tail_term)
    if k > nb:
        return n + 1, 0.0, 0.0
    if k == 0:
        return 0, mass[0], scaled[0]
    lo, hi = starts[k - 1], starts[k]
    # tails at the cuts lo+1..hi from the block's own entries and the tail beyond it
    local = padded[lo + 1 : hi]
    r = math.exp(-step)
    local_mass = (np.cumsum(local[::-1])[::-1] + mass[k]).tolist() + [mass[k]]
    tail_from = discounted_tails(local, r)
    carry = scaled[k] * r ** np.arange(hi - lo - 1, 0, -1)  # S_hi discounted down to j
    local_scaled = (tail_from + carry).tolist() + [scaled[k]]
    cuts = list(range(lo + 1, hi + 1))
    first = _bisect(d, cuts, local_mass, local_scaled, tail_term)
    first = min(first, len(cuts) - 1)  # the block's last cut is its end, known to cross
    return cuts[first], local_mass[first], local_scaled[first]


def _bisect(d: float, cuts: list, mass: list, scaled: list, tail_term) -> int:
    """Smallest index ``i`` with ``delta(l_{cuts[i]}) <= d`` (``len(cuts)`` if none)."""
    lo, hi = 0, len(cuts)
    while lo < hi:
        mid = (lo + hi) // 2
        if tail_term(cuts[mid], mass[mid]) - scaled[mid] <= d:
            hi = mid
        else:
            lo = mid + 1
    return lo
