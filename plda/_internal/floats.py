"""Floating-point arithmetic whose rounding plda accounts for.

Certified bounds need every computed probability rounded the safe way: up on the pessimistic
side, down on the optimistic one. ``u = 2^-53`` is the unit roundoff of float64. Here: the
directed roundings, the chance of a union of independent events, products of arrays on the
calling thread (:func:`dot`) and discounted tail sums (:func:`discounted_tails`), each with the
rounding its callers charge; and the relative gap of a bracket (:func:`relative_gap`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

#: unit roundoff of float64
UNIT_ROUNDOFF = 2.0**-53
#: the smallest positive float64: a bound on any mass that rounds to 0
TINY = float(np.nextafter(0.0, 1.0))


def round_up(value: float, relative_error: float) -> float:
    """``value`` widened upward by a relative error bound (and one ulp), for value >= 0."""
    return math.nextafter(value * (1.0 + relative_error), math.inf)


def round_down(value: float, relative_error: float) -> float:
    """``value`` narrowed downward by a relative error bound (and one ulp), never below 0."""
    return max(0.0, math.nextafter(value * (1.0 - relative_error), -math.inf))


def union_probability(masses: Iterable[tuple[float, int]], *, upper: bool) -> float:
    """``1 - prod_i (1 - m_i)^{k_i}``: the chance that at least one of independent events of
    probabilities ``m_i`` (each repeated ``k_i`` times) happens, rounded up (``upper``) or down.

    Computed as ``-expm1(sum_i k_i log1p(-m_i))``, which keeps full relative accuracy when the
    result is tiny (``1 - (1 - 1e-17)^2`` would round to 0 in the direct form). Each ``log1p``,
    product and ``expm1`` is correct to within ``2u`` relative, and a sum of ``N`` same-signed
    terms within ``N u``, so the result is within ``(2N + 6) u`` relative of the exact value;
    the rounding widens by twice that.
    """
    log_keep, terms = 0.0, 0
    for m, k in masses:
        if m <= 0.0 or k <= 0:
            continue
        if m >= 1.0:
            return 1.0
        log_keep += k * math.log1p(-m)
        terms += 1
    if terms == 0:
        return 0.0
    if log_keep == -math.inf:
        return 1.0
    value = -math.expm1(log_keep)
    error = 2.0 * (2 * terms + 6) * UNIT_ROUNDOFF
    if upper:  # round_up, written out: this runs in every composition
        return min(1.0, math.nextafter(value * (1.0 + error), math.inf))
    return round_down(value, error)


# ------------------------------------------------------------------ products and tail sums
# numpy hands ``a @ b`` and ``np.dot`` to a threaded BLAS. On a machine whose cores are busy (two
# cores, a training job, other processes) a threaded level-1/level-2 call waits for its worker
# threads: measured here, a dot product of 73,697 entries took 7.7 ms threaded against 17 us on
# one thread, and a 12 x 73,697 matrix-vector product 7 ms against 0.8 ms by einsum. The
# accountant calls such products thousands of times per query, so plda uses ``einsum``, which
# runs on the calling thread. The rounding is that of any summation order (at most ``n u``
# relative to the sum of magnitudes), which is what the callers' error bounds assume.
def dot(a: np.ndarray, b: np.ndarray) -> np.ndarray | float:
    """``a @ b`` for a 1-D or 2-D ``a`` and a 1-D ``b`` (or a 1-D ``a`` and a 2-D ``b``),
    on the calling thread."""
    a = np.asarray(a)
    b = np.asarray(b)
    if a.ndim == 1 and b.ndim == 1:
        return float(np.einsum("i,i->", a, b))
    if b.ndim == 1:
        return np.einsum("...i,i->...", a, b)
    if a.ndim == 1:
        return np.einsum("i,i...->...", a, b)
    raise ValueError(f"dot takes a 1-D operand, got shapes {a.shape} and {b.shape}")


#: block length of :func:`discounted_tails`
_TAIL_BLOCK = 64
#: at most this many values spanning at most ``_SHORT_SPAN`` of decay (``ratio^n >= e^-8``) take
#: the short form of :func:`discounted_tails`: one power per entry, no underflow of the powers
_SHORT, _SHORT_SPAN = 1024, 8.0


def error_sum_bound(entry_error: float, l2_error: float, weights, squares=None, root=None):
    """A bound on ``sum_i w_i |e_i|`` for an error vector with ``|e_i| <= entry_error`` and
    ``||e||_2 <= l2_error``: ``min(entry_error W, l2_error sqrt(W2))`` (Hoelder and
    Cauchy-Schwarz), with ``W = sum w_i`` (``weights``: a count for unit weights) and
    ``W2 = sum w_i^2`` (``squares``; default ``weights``, as for unit weights), or its root
    given (``root``: tiny weights, whose squares would underflow). Scalars are bounded in
    scalar arithmetic (Python's ``min``), arrays elementwise (``np.minimum``)."""
    if root is None:
        squares = weights if squares is None else squares
        root = math.sqrt(squares) if np.ndim(squares) == 0 else np.sqrt(squares)
    if np.ndim(weights) == 0 and np.ndim(root) == 0:
        # an empty sum (weight 0) has no error, even where the error terms overflowed to inf
        # (inf * 0 is NaN, which would poison every bound read from it)
        if weights == 0 or root == 0:
            return 0.0
        return min(entry_error * weights, l2_error * root)
    with np.errstate(invalid="ignore"):
        by_entry, by_norm = entry_error * weights, l2_error * root
    return np.where((np.asarray(weights) == 0) | (np.asarray(root) == 0), 0.0,
                    np.minimum(by_entry, by_norm))


def tail_rounding(n: int) -> float:
    """Relative rounding bound of :func:`discounted_tails` on ``n`` non-negative values, in
    units of ``u``: ``3 ceil(log2 min(n, 64))`` for the scan, and beyond one block
    ``3 ceil(n / 64) + 3`` for the carries; ``n + 3`` for the short form; at most ``3 n`` (what a
    sequential recurrence whose powers are repeated products is charged) for every ``n``."""
    if n <= 1:
        return 0.0
    scan = 3.0 * math.ceil(math.log2(min(n, _TAIL_BLOCK)))
    if n > _TAIL_BLOCK:
        scan += 3.0 * (-(-n // _TAIL_BLOCK)) + 3.0
    return max(scan, n + 3.0) if n <= _SHORT else scan


def discounted_tails(values: np.ndarray, ratio: float) -> np.ndarray:
    """``S_j = sum_{i >= j} values_i ratio^(i - j)`` for ``0 <= ratio <= 1``: the recurrence
    ``S_j = values_j + ratio S_{j+1}`` from the end, without a sequential loop over the entries
    (``scipy.signal.lfilter`` would run it in C, but importing ``scipy.signal`` costs ~27 MB of
    memory, as it imports ``scipy.stats``).

    In blocks of 64: within a block, a doubling scan (``y_a += ratio^s y_{a+s}`` for
    ``s = 1, 2, 4, ..., 32``); then the blocks' first entries from the last block back,
    ``S_{jB} = y_{jB} + ratio^B S_{(j+1)B}``, and ``S_{jB+a} = y_{jB+a} + ratio^(B - a)
    S_{(j+1)B}``.

    Rounding, for non-negative ``values``: each power is one ``pow`` (``u``), each step of the
    scan, of the carry and the last one a product and a sum (``2 u``): :func:`tail_rounding`.
    Up to 1,024 values that decay by at most ``e^-8`` take a short form with ``n + 3`` roundings
    (a quarter of the time of the scan for an epsilon solve's blocks of 256 cuts)."""
    values = np.asarray(values, dtype=float)
    n = len(values)
    if n == 0:
        return np.zeros(0)
    if n <= _SHORT and ratio > 0 and n * -math.log(ratio) <= _SHORT_SPAN:
        # short form (an epsilon solve's blocks of 256 cuts): S_j = (sum_{i>=j} v_i r^i) / r^j,
        # the powers at least e^-8 (no underflow); a power, a product, the sum and the quotient
        # round: (n + 3) u
        powers = ratio ** np.arange(n, dtype=float)
        return np.cumsum((values * powers)[::-1])[::-1] / powers
    width = min(_TAIL_BLOCK, 1 << (n - 1).bit_length())
    blocks = -(-n // width)
    padded = np.zeros(blocks * width)
    padded[:n] = values
    y = padded.reshape(blocks, width)
    shift = 1
    while shift < width:
        # the right-hand side is formed before the sum is stored: every step reads the old y
        y[:, : width - shift] += ratio**shift * y[:, shift:]
        shift *= 2
    if blocks > 1:
        first = y[:, 0].tolist()
        step = ratio**width
        starts = [0.0] * (blocks + 1)
        for j in range(blocks - 1, -1, -1):
            starts[j] = first[j] + step * starts[j + 1]
        k = np.arange(width, dtype=float)
        y += np.multiply.outer(np.array(starts[1:]), ratio ** (width - k))
    return padded[:n]


def relative_gap(lower, upper) -> np.ndarray:
    """``(upper - lower) / upper`` elementwise.

    Parameters
    ----------
    lower
        Lower bounds.
    upper
        Upper bounds.

    Returns
    -------
    numpy.ndarray
        The gaps: 0 where ``upper`` is 0 or infinite, inf where only ``lower`` is infinite.
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(
            np.isfinite(upper) & (upper > 0), (upper - lower) / np.maximum(upper, 1e-300), 0.0
        )
    return np.where(np.isfinite(lower) | ~np.isfinite(upper), gap, np.inf)


def log_mixture(q: float, z):
    """``log(1 - q + q e^z)`` to a few ulps for every ``z``, with no overflow.

    ``log1p(q expm1(z))``, except where ``q expm1(z) < -1/2`` (``q`` near 1, ``z`` very
    negative), where ``1 + q expm1(z)`` cancels (1e-7 of the value lost at ``q = 1 - 1e-9``)
    and the two terms are added in log space instead, and above ``z = 30``, where it is
    ``z + log q + log1p((1 - q) e^{-z} / q)`` (``e^z`` overflows beyond 709).

    Parameters
    ----------
    q
        A probability in ``(0, 1]``.
    z
        Exponents, any shape.

    Returns
    -------
    numpy.ndarray
        The logarithms, shaped like ``z``.
    """
    z = np.asarray(z, dtype=float)
    big = z > 30
    with np.errstate(divide="ignore", over="ignore"):
        terms = q * np.expm1(np.where(big, 0.0, z))
        out = np.log1p(terms)
        cancels = terms < -0.5
        if np.any(cancels):
            floor = math.log1p(-q) if q < 1 else -np.inf
            out = np.where(cancels, np.logaddexp(floor, math.log(q) + z), out)
        if np.any(big):
            large = z + math.log(q) + np.log1p((1 - q) * np.exp(-np.where(big, z, 30.0)) / q)
            out = np.where(big, large, out)
    return out


def q_masses(probs: np.ndarray, losses: np.ndarray) -> np.ndarray:
    """``Q``-masses ``p e^{-l}`` of loss atoms with ``P``-masses ``p``; 0 where ``p`` is 0.

    An atom's ``Q``-mass is its ``P``-mass times ``e^{-l}`` by definition, so an atom of no
    ``P``-mass has none: ``e^{-l}`` overflows below ``l = -709``, and ``0 * inf`` would be NaN.

    Parameters
    ----------
    probs
        The atoms' ``P``-masses.
    losses
        Their losses.

    Returns
    -------
    numpy.ndarray
        The ``Q``-masses.
    """
    probs = np.asarray(probs, dtype=float)
    with np.errstate(over="ignore", invalid="ignore"):
        masses = probs * np.exp(-np.asarray(losses, dtype=float))
    return np.where(probs > 0, masses, 0.0)
