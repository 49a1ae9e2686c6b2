"""The dominating mixture of each row of a Poisson-sampled matrix mechanism.

A row ``i`` is dominated by ``GaussianMixture`` of ``sum_j |C_ij| X_j`` with independent
``X_j ~ Bernoulli(p_j)`` (:class:`~plda.matrix.PoissonMatrixMechanism`). These helpers build
its shifts and weights and group rows into few laws, each step only making a shift or a
probability larger, so that every row stays dominated (``docs/howto/dp-ftrl.md``).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "merge_dominated",
    "realized_row_mixture",
    "round_up",
    "row_blocks",
    "row_key",
    "row_mixture",
]

#: rows with at most this many non-zero entries get their mixture by exact enumeration; longer
#: rows on a grid of GRID_CELLS cells, each entry rounded up to a whole cell
EXACT_ENTRIES = 12
GRID_CELLS = 1 << 16
#: most components of a row's mixture: more are merged by rounding shifts up to as many levels
#: (every discretization point evaluates every component)
MAX_COMPONENTS = 512
#: mass of a row's top components moved to its largest shift (moving mass up keeps the pair
#: dominating); it only trims components no query can see
TRIM_MASS = 1e-18
#: entries and posterior rates are rounded up to this many significant bits, so that rows
#: equal to the eye share one law (rounding up keeps the pair dominating)
SIGNIFICANT_BITS = 30
#: a row joins the law of a dominating row that stands for this many times more steps
MERGE_RATIO = 16
#: rows are grouped in blocks, this many per doubling of the step index
BLOCKS_PER_OCTAVE = 4


def row_blocks(steps: int) -> list[tuple[int, int]]:
    """Consecutive row blocks ``[start, end)``, about :data:`BLOCKS_PER_OCTAVE` per octave.

    Parameters
    ----------
    steps : int
        The number of rows, at least 1.

    Returns
    -------
    list of (int, int)
        Blocks covering ``0 .. steps - 1`` in order, their ends near ``2^(k / 4)``.
    """
    ends = {min(steps, max(1, int(round(2 ** (k / BLOCKS_PER_OCTAVE)))))
            for k in range(BLOCKS_PER_OCTAVE * (steps.bit_length() + 1) + 1)}
    ends = sorted(ends | {steps})
    return list(zip([0, *ends[:-1]], ends, strict=True))


def round_up(values: np.ndarray, bits: int = SIGNIFICANT_BITS) -> np.ndarray:
    """``values >= 0`` rounded up to ``bits`` significant bits (exact float arithmetic).

    Parameters
    ----------
    values : numpy.ndarray
        Non-negative finite floats.
    bits : int, optional
        Significant bits kept (default :data:`SIGNIFICANT_BITS`).

    Returns
    -------
    numpy.ndarray
        The smallest ``bits``-bit floats at least ``values`` (0 stays 0).
    """
    mantissa, exponent = np.frexp(values)
    return np.ldexp(np.ceil(np.ldexp(mantissa, bits)), exponent - bits)


def _subset_sums(entries: np.ndarray, rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The law of ``sum_j entries_j X_j``, ``X_j ~ Bernoulli(rates_j)``, by enumeration in
    floats: increasing sums and their probabilities (equal sums merged)."""
    law: dict[float, float] = {0.0: 1.0}
    for c, p in zip(entries.tolist(), rates.tolist(), strict=True):
        moved: dict[float, float] = {}
        for shift, w in law.items():
            moved[shift] = moved.get(shift, 0.0) + w * (1 - p)
            moved[shift + c] = moved.get(shift + c, 0.0) + w * p
        law = moved
    shifts = sorted(law)
    return np.array(shifts), np.array([law[s] for s in shifts])


def row_mixture(entries: np.ndarray, rates: np.ndarray) -> tuple[tuple, tuple]:
    """Shifts and weights of ``sum_j entries_j X_j``, ``X_j ~ Bernoulli(rates_j)`` independent.

    Exact for at most :data:`EXACT_ENTRIES` non-zero entries; otherwise every entry is
    rounded up to a whole cell of a grid over ``[0, sum entries]``; beyond
    :data:`MAX_COMPONENTS` components, shifts are rounded up to that many levels. Each step
    only makes the sum larger (a dominating pair).

    Parameters
    ----------
    entries : numpy.ndarray
        The row's ``|C_ij|``, non-negative (zeros are skipped).
    rates : numpy.ndarray
        The probability of each entry, in ``[0, 1]``.

    Returns
    -------
    tuple of (tuple of float, tuple of float)
        Increasing shifts and their probabilities (summing to 1), stochastically at least
        the sum's: every rounding moves mass up.
    """
    nonzero = entries > 0
    entries, rates = entries[nonzero], rates[nonzero]
    if entries.size <= EXACT_ENTRIES:
        shifts, weights = _subset_sums(entries, rates)
        # float sums of the entries may round down: lift every shift by a few ulps per entry
        shifts = shifts * (1 + 4 * entries.size * np.finfo(float).eps)
    else:
        cell = float(np.sum(entries)) / GRID_CELLS
        cells = np.ceil(entries / cell * (1 + 4 * np.finfo(float).eps)).astype(int)
        weights = np.zeros(int(cells.sum()) + 1)
        weights[0] = 1.0
        top = 0
        for k, p in zip(cells.tolist(), rates.tolist(), strict=True):
            weights[k : top + k + 1] = weights[: top + 1] * p + weights[k : top + k + 1] * (1 - p)
            weights[:k] *= 1 - p
            top += k
        shifts = np.arange(weights.size) * cell * (1 + 4 * np.finfo(float).eps)
    if shifts.size > MAX_COMPONENTS:  # round shifts up to MAX_COMPONENTS levels over [0, top]
        level = float(shifts[-1]) / (MAX_COMPONENTS - 1)
        index = np.minimum(np.ceil(shifts / level * (1 + 4 * np.finfo(float).eps)),
                           MAX_COMPONENTS - 1).astype(int)
        weights = np.bincount(index, weights=weights, minlength=MAX_COMPONENTS)
        shifts = np.maximum(np.arange(MAX_COMPONENTS) * level, np.where(
            np.arange(MAX_COMPONENTS) == MAX_COMPONENTS - 1, shifts[-1], 0.0))
    # the float products may misplace about (entries + 2) ulps of each tail's mass: move
    # more than that from the smallest shift to the largest, so every tail only grows
    weights = weights / math.fsum(weights)
    lift = min(float(weights[0]), 16 * (entries.size + 2) * np.finfo(float).eps)
    weights[0] -= lift
    weights[-1] += lift
    # trim: the largest components of total mass <= TRIM_MASS go to the largest shift
    tail = np.cumsum(weights[::-1])[::-1]
    keep = tail > TRIM_MASS
    keep[-1] = True
    moved = float(np.sum(weights[~keep]))
    shifts, weights = shifts[keep], weights[keep].copy()
    weights[-1] += moved
    positive = weights > 0
    return tuple(shifts[positive].tolist()), tuple(weights[positive].tolist())


def row_key(entries: np.ndarray, rates: np.ndarray) -> tuple:
    """A row's entries by offset and their rates, rounded up, as a hashable key.

    Parameters
    ----------
    entries, rates : numpy.ndarray
        Entries by offset ``i - j`` and their probabilities.

    Returns
    -------
    tuple
        ``(entries, rates)`` as tuples, rounded up by :func:`round_up`, trailing zeros
        dropped, a rate 0 where its entry is 0.
    """
    length = int(np.flatnonzero(entries)[-1]) + 1 if np.any(entries) else 1
    entries = round_up(entries[:length])
    rates = np.where(entries > 0, np.minimum(1.0, round_up(rates[:length])), 0.0)
    return tuple(entries.tolist()), tuple(rates.tolist())


def _dominates(big: tuple, small: tuple) -> bool:
    """Whether the row ``big`` has every entry and rate of ``small`` at least as large."""
    (be, br), (se, sr) = big, small
    n = len(se)
    return len(be) >= n and bool(np.all(np.array(be[:n]) >= se)) and bool(
        np.all(np.array(br[:n]) >= sr))


def merge_dominated(rows: dict[tuple, int]) -> dict[tuple, int]:
    """Rows counted with a dominating row of at least :data:`MERGE_RATIO` times their count.

    Fewer distinct laws (each costs a discretization) for a pessimism on few steps: a banded
    strategy's first rows join its interior row.

    Parameters
    ----------
    rows : dict
        Keys of :func:`row_key` and the steps each stands for.

    Returns
    -------
    dict
        The same steps, each row either kept or counted with a row whose entries and rates
        are all at least its own.
    """
    merged = dict(rows)
    for key in sorted(rows, key=rows.get):
        count = merged.get(key)
        if count is None:
            continue
        for other, total in merged.items():
            if other != key and total >= MERGE_RATIO * count and _dominates(other, key):
                merged[other] = total + merged.pop(key)
                break
    return merged


def realized_row_mixture(entries: np.ndarray, rate: float) -> tuple[tuple, tuple] | None:
    """Shifts and weights of ``sum_j entries_j X_j``, ``X_j ~ Bernoulli(rate)``, rounded down.

    For a lower bound: every shift is lowered by a few ulps per entry and the float error of
    the weights moved from the largest shift to the smallest, so the pair is dominated by the
    exact one.

    Parameters
    ----------
    entries : numpy.ndarray
        A row's entries, all of one sign (a negative row is the mirror image of its absolute
        values, a post-processing); at most :data:`EXACT_ENTRIES` non-zero.
    rate : float
        The Poisson rate, in ``(0, 1]``.

    Returns
    -------
    tuple of (tuple of float, tuple of float) or None
        Increasing shifts and their probabilities; None for a row of mixed signs, more
        entries, or no non-zero entry.
    """
    if np.any(entries > 0) and np.any(entries < 0):
        return None
    entries = np.abs(entries[entries != 0])
    if not 0 < entries.size <= EXACT_ENTRIES:
        return None
    shifts, weights = _subset_sums(entries, np.full(entries.size, rate))
    shifts = shifts * (1 - 4 * entries.size * np.finfo(float).eps)  # float sums: lowered
    weights = weights / math.fsum(weights)
    lift = min(float(weights[-1]), 16 * (entries.size + 2) * np.finfo(float).eps)
    weights[-1] -= lift
    weights[0] += lift
    positive = weights > 0
    return tuple(shifts[positive].tolist()), tuple(weights[positive].tolist())
