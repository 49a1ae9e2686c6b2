"""Moments of grid laws: the exponential tables of the profile, the Chernoff moments at the
ladder orders ``t = 2^(j/2)`` (any order bounds a tail, so each law's are computed once per
order and reused by every composition it enters) and the composition window they give, and a
composition's moments at the orders of the tiny-delta bound (:mod:`plda.grid.chernoff`), summed
from its factors' when first asked (:class:`ComposedTail`).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from plda._internal.caches import register
from plda._internal.floats import UNIT_ROUNDOFF, dot, union_probability

# tables are never written after they are built, so a thread may keep using one that another
# thread has just evicted; the dict itself is only changed under the lock
_EXP_TABLES: dict = {}
_EXP_TABLES_LOCK = threading.Lock()
_EXP_TABLE_MAX = 1 << 20


def _clear_exp_tables() -> None:
    with _EXP_TABLES_LOCK:
        _EXP_TABLES.clear()


register("plda.grid.moments.exp_tables", _clear_exp_tables)


def exp_neg_grid(step: float, offset: int, n: int) -> np.ndarray:
    """``exp(-(offset + i) * step)`` for ``i < n``.

    A product of the cached table ``exp(-i * step)`` and ``exp(-offset * step)``: each factor is
    a correctly rounded exponential of a rounded loss, so the relative error (a few ``u`` per
    unit of ``|loss|``) is the one of evaluating ``exp`` at the rounded losses directly, which
    the callers' ``1e-12`` margins absorb. Direct evaluation where the table would under- or
    overflow.

    Parameters
    ----------
    step
        The grid step.
    offset
        The grid index of the first loss.
    n
        How many losses.

    Returns
    -------
    numpy.ndarray
        The ``n`` exponentials.
    """
    if not (abs(offset * step) < 600 and abs((offset + n) * step) < 600) or n > _EXP_TABLE_MAX:
        return np.exp(-(offset + np.arange(n)) * step)
    table = _EXP_TABLES.get(step)
    if table is None or len(table) < n:
        table = np.exp(-np.arange(max(n, 1 << 12)) * step)
        table.flags.writeable = False
        with _EXP_TABLES_LOCK:
            if len(_EXP_TABLES) >= 8:  # at most 8 tables of at most 8 MB
                _EXP_TABLES.clear()
            _EXP_TABLES[step] = table
    return table[:n] * math.exp(-offset * step)


#: half-width (in exponent units) of the blocks of :func:`log_mgf_ladder`: within a block
#: the factors ``e^{+-t (l_i - l_c)}`` lie in ``[e^-150, e^150]``, far from over- and underflow
_BLOCK_EXPONENT = 150.0
_BLOCK_TABLES: dict = {}
_BLOCK_TABLES_LOCK = threading.Lock()


def _clear_block_tables() -> None:
    with _BLOCK_TABLES_LOCK:
        _BLOCK_TABLES.clear()


register("plda.grid.moments.block_tables", _clear_block_tables)


def _block_table(t: float, step: float, length: int) -> np.ndarray:
    """``exp(t h (k - c))`` for ``k < B``, ``c = (B - 1) / 2``: ``B - 1`` the largest power of
    two with ``t h (B - 1) / 2 <= 150``, or the smallest one covering ``length`` entries if that
    is shorter (``B`` odd, so ``c`` is an integer and the reversed table is exactly
    ``exp(-t h (k - c))``). Shared by every law on grid ``h``: a longer table's middle is a
    shorter one, so one is kept per order and grid and replaced by a longer one when asked;
    never written after it is built."""
    # powers of two: neighbouring orders share the block length, hence one blocking
    ratio = min(_BLOCK_EXPONENT / (t * step), 1 << 16)
    cap = 1 << int(math.log2(ratio)) if ratio >= 1 else 0  # 0: every entry its own block
    half = min(cap, 1 << max(length // 2, 1).bit_length())
    key = (t, step)
    table = _BLOCK_TABLES.get(key)
    if table is None or len(table) < 2 * half + 1:
        # exp(a k) for -half <= k <= half (a = t h, a |k| <= 150); beyond 1024 entries on each
        # side as exp(64 a i) exp(a j) (k = 64 i + j, 0 <= j < 64): 2 half / 64 + 64
        # exponentials and one product per entry instead of an exponential per entry (a
        # one-shot query builds each table once, for one law of up to 10^5 entries, and the
        # exponentials were most of its ladder). Both exponents carry a relative error of 2u
        # and sum to at most 150 + 64 * 150 / 1024 < 160 in size; with the two exponentials'
        # and the product's rounding each entry is within e^{330 u} of the exact value, inside
        # the e^{600 u} that log_mgf_ladder charges for it
        a = t * step
        if half < 1024:
            table = np.exp(a * np.arange(-half, half + 1, dtype=float))
        else:
            coarse = np.exp((64 * a) * np.arange(-(half // 64), half // 64 + 1, dtype=float))
            fine = np.exp(a * np.arange(64, dtype=float))
            table = (coarse[:, None] * fine[None, :]).reshape(-1)[: 2 * half + 1]
        table.flags.writeable = False
        with _BLOCK_TABLES_LOCK:
            if len(_BLOCK_TABLES) >= 256:  # at most 256 tables of at most 1 MB
                _BLOCK_TABLES.clear()
            _BLOCK_TABLES[key] = table
    middle = len(table) // 2
    return table[middle - half : middle + half + 1]


def log_mgf_ladder(law, j0: int, j1: int) -> tuple[np.ndarray, np.ndarray]:
    """Upper bounds on ``log sum_i p_i e^{+-t l_i}`` at the ladder orders ``t = 2^(j/2)``.

    Chernoff bounds need upper bounds on the moments, any will do. The losses sit on the grid
    ``l_i = (offset + i) h``, so within a block of ``B`` consecutive entries ``e^{t l_i} =
    e^{t l_c} e^{t h (i - c)}`` (``l_c`` the block's centre) and the second factor comes from
    one table per order and grid step (:func:`_block_table`, shared by every law on the grid):
    each order costs one matrix-vector product instead of an ``exp`` per entry; blocks are summed
    in log space.

    Rounding (each term kept an upper bound): the table entries are ``exp`` of exponents of size
    at most 150 that carry a relative error of ``2u`` (or products of two such, see
    :func:`_block_table`), so each is within a factor ``e^{600 u}`` of its exact value; each block
    is divided by its largest mass (``u`` relative, and ``log`` of that mass adds ``u`` times
    its size); products and the block sums add ``(B + 1) u`` relative; a product that underflows
    loses at most ``2^-1074`` of the scaled block (added back per block); the block centres'
    exponents ``t l_c`` are off by at most ``4u t max|l|``; the log-sum-exp over blocks adds
    ``(nb + 4) u``. All of it is added to the logarithm.

    Parameters
    ----------
    law
        A :class:`~plda.grid.discrete.DiscreteLoss`.
    j0
        The lowest ladder index.
    j1
        The highest ladder index.

    Returns
    -------
    tuple of numpy.ndarray
        The bounds for ``+t`` and for ``-t``, one per order (``-inf`` without finite mass).
    """
    positive = law.probs > 0
    if not positive.any():
        empty = np.full(j1 - j0 + 1, -np.inf)
        return empty, empty.copy()
    probs, step, offset = law.probs, law.step, law.offset
    orders = 2.0 ** (np.arange(j0, j1 + 1) / 2)
    up, down = np.empty(len(orders)), np.empty(len(orders))
    # orders sharing a block length (all the small ones: one block holds the whole law) share
    # the blocked probabilities and one matrix product
    groups: dict = {}
    for row, t in enumerate(orders.tolist()):
        table = _block_table(t, step, len(probs))
        groups.setdefault(len(table), []).append((row, t, table))
    for width, members in groups.items():
        blocks = -(-len(probs) // width)
        if blocks == 1:  # one block holds the law (every small order): no padded copy, the
            # table's first len(probs) entries meet the masses (the padding added zeros only)
            padded, occupied = probs[None, :], np.ones(1, dtype=bool)
        else:
            padded = np.zeros(blocks * width)
            padded[: len(probs)] = probs
            padded = padded.reshape(blocks, width)
            occupied = padded.any(axis=1)
            padded = padded[occupied]
        # each block scaled by its largest mass: a block of masses near the smallest double
        # would otherwise underflow in its products, and the 2^-1074 added back for them, times
        # e^{t l_c}, swamped the true sum (an upper bound still, but 40 too high in the log at
        # order 16 for masses of 1e-300). Scaled, an underflow loses at most 2^-1074 of a sum
        # of at least e^-150
        scale = padded.max(axis=1)
        padded = padded / scale[:, None]
        log_scale = np.log(scale)
        # the centre of block b is at grid index offset + b * width + (width - 1) / 2; |l_c| is
        # at most the largest |loss| on the padded grid
        centres = (offset + np.nonzero(occupied)[0] * width + (width - 1) // 2) * step
        loss_max = step * max(abs(offset), abs(offset + blocks * width))
        rows = [row for row, _, _ in members]
        t = np.array([t for _, t, _ in members])
        sums = np.empty((2 * len(members), len(padded)))
        for i, (_, _, table) in enumerate(members):
            sums[i] = dot(padded, table[: padded.shape[1]])
            sums[len(members) + i] = dot(padded, table[::-1][: padded.shape[1]])
        sums += width * 2.0**-1074
        signed = np.concatenate([t, -t])
        exponents = np.log(sums) + log_scale[None, :] + signed[:, None] * centres[None, :]
        m = np.max(exponents, axis=1)
        values = m + np.log(np.sum(np.exp(exponents - m[:, None]), axis=1))
        values += (
            4 * UNIT_ROUNDOFF * np.abs(signed) * loss_max
            + 600 * UNIT_ROUNDOFF
            + (width + len(padded) + 8) * UNIT_ROUNDOFF
            # the division by the block's largest mass (u relative) and log(scale) (u times
            # its size)
            + (4 * float(np.max(np.abs(log_scale))) + 4) * UNIT_ROUNDOFF
        )
        up[rows], down[rows] = values[: len(rows)], values[len(rows) :]
    return up, down


def ladder_range(variance: float, order_range: tuple[float, float],
                 min_spread: float) -> tuple[int, int]:
    """The ladder indices ``j0 <= j <= j1`` (orders ``t = 2^(j/2)``) for a composition's cuts.

    Parameters
    ----------
    variance
        The composition's variance, ``sum_f k_f Var(law_f)``.
    order_range
        The orders used, in units of ``1 / spread`` (the composed standard deviation); the
        lowest is also at most ``order_range[0]`` itself.
    min_spread
        The smallest spread assumed.

    Returns
    -------
    tuple of int
        ``(j0, j1)``.
    """
    spread = math.sqrt(max(variance, min_spread * min_spread))
    # the lowest order is also at most order_range[0] itself: a composition whose spread is
    # small but whose tail is heavy (Poisson rate 1e-4 over 5000 steps: spread 0.045, losses up
    # to 18 per sampling) has its best cut near order 1, far below 0.5 / spread = 11, where the
    # moments of the rare large losses explode; cut at order 8 its window was 9000 wide, the
    # grid cap forced a step of 4e-3 and the bracket on epsilon(1e-5) was [0, 0.236]
    j0 = math.floor(2 * math.log2(min(order_range[0] / spread, order_range[0])))
    j1 = math.ceil(2 * math.log2(order_range[1] / spread))
    return j0, j1


def ladder_sums(factors, j0: int, j1: int, start=None, batch=None
                ) -> tuple[np.ndarray, np.ndarray]:
    """``sum_f k_f log E[e^{+-tL_f}]`` at the ladder orders, added factor by factor.

    In order, one factor at a time, so the sums of a list extended by more factors, started
    from the sums of the list (``start``), are bit for bit those of the whole: a composer that
    keeps them for a growing history adds only the new factors, and its answers still depend
    on the history alone.

    Parameters
    ----------
    factors
        ``[(law, count), ...]``.
    j0, j1
        The ladder indices.
    start
        ``(up, down)`` sums of the factors before these, or None.
    batch
        The orders a factor computes along with a missing one
        (:meth:`~plda.grid.discrete.DiscreteLoss.ladder_log_mgf`).

    Returns
    -------
    tuple of numpy.ndarray
        ``(up, down)``, one entry per order (new arrays).
    """
    up, down = (None, None) if start is None else start
    with np.errstate(invalid="ignore"):  # inf - inf: that order gives no bound (NaN, skipped)
        for f, k in factors:
            u, v = f.ladder_log_mgf(j0, j1, batch)
            up = k * u if up is None else up + k * u
            down = k * v if down is None else down + k * v
    if up is None:
        up, down = np.zeros(j1 - j0 + 1), np.zeros(j1 - j0 + 1)
    return up, down


def ladder_start(variance: float, tail: float, min_spread: float, j0: int, j1: int) -> int:
    """The ladder index where :func:`ladder_walk` starts.

    The order that cuts ``tail`` best for a Gaussian of the composition's variance,
    ``t = sqrt(2 log(1/tail)) / spread``, clipped to ``[j0, j1]``.

    Parameters
    ----------
    variance
        The composition's variance.
    tail
        The mass allowed beyond each cut.
    min_spread
        The smallest spread assumed.
    j0, j1
        The ladder indices (:func:`ladder_range`).

    Returns
    -------
    int
        The ladder index.
    """
    spread = math.sqrt(max(variance, min_spread * min_spread))
    guess = 2 * math.log2(math.sqrt(-2 * math.log(tail)) / spread)
    return min(max(round(guess), j0), j1)


def ladder_walk(sums_at, j0: int, j1: int, start: int, tail: float) -> tuple:
    """The Chernoff cuts of a composition from the ladder orders a downhill walk visits.

    A cut's exponent ``(log E[e^{tL}] + log(1/tail)) / t`` is quasi-convex in ``t`` (its
    derivative's numerator ``t Lambda'(t) - Lambda(t) - log(1/tail)`` grows with ``t``, as
    ``Lambda`` is convex), so walking downhill from a good start finds the best ladder order of
    each side after a few orders instead of all of them; a side whose walk meets only orders
    without a bound (overflowed moments) tries every order. Any order bounds the tail, so a
    walk stopped early by rounding still gives a valid cut.

    Parameters
    ----------
    sums_at
        ``sums_at(j) -> (up, down)``, floats: ``log E[e^{+-tL}]`` of the composition at
        ``t = 2^(j/2)``.
    j0, j1
        The ladder indices allowed.
    start
        The index where both walks start (:func:`ladder_start`).
    tail
        The mass allowed beyond each cut.

    Returns
    -------
    tuple
        ``(lo_loss, hi_loss, orders, log_up, log_down)``: all but ``tail`` of the composed mass
        lies above ``lo_loss`` and below ``hi_loss`` (infinite where no order bounds it, e.g.
        no finite mass), and the moments at the orders visited (for further tail bounds).
    """
    log_tail = math.log(tail)
    seen: dict = {}

    def exponent(j: int, side: int) -> float:
        if j not in seen:
            seen[j] = sums_at(j)
        value = seen[j][side]
        # orders whose moment overflowed (inf or NaN) give no bound
        return (value - log_tail) / 2.0 ** (j / 2) if value < math.inf else math.inf

    def walk(side: int) -> float:
        low = exponent(start, side)
        for direction in (1, -1):
            j = start + direction
            while j0 <= j <= j1 and (value := exponent(j, side)) < low:
                low, j = value, j + direction
            if j != start + direction:  # moved: the other way only climbs
                break
        if low == math.inf:
            low = min(exponent(j, side) for j in range(j0, j1 + 1))
        return low

    hi_loss, lo_loss = walk(0), -walk(1)
    orders = sorted(seen)
    return (lo_loss, hi_loss, [2.0 ** (j / 2) for j in orders],
            [float(seen[j][0]) for j in orders], [float(seen[j][1]) for j in orders])


def ladder_chernoff(factors, tail: float, order_range: tuple[float, float], min_spread: float):
    """Chernoff cuts of a composition at the ladder orders, from each factor's cached moments.

    :func:`ladder_range`, :func:`ladder_start`, :func:`ladder_sums` and :func:`ladder_walk` in
    one call.

    Parameters
    ----------
    factors
        ``[(law, count), ...]``.
    tail
        The mass allowed beyond each cut.
    order_range, min_spread
        As in :func:`ladder_range`.

    Returns
    -------
    tuple
        ``(lo_loss, hi_loss, orders, log_up, log_down)``: all but ``tail`` of the composed mass
        lies above ``lo_loss`` and below ``hi_loss`` (infinite where no order bounds it, e.g.
        no finite mass), and ``log E[e^{+-tL}]`` of the composition at ``orders`` for further
        tail bounds.
    """
    variance = composed_variance(factors)
    j0, j1 = ladder_range(variance, order_range, min_spread)
    start = ladder_start(variance, tail, min_spread, j0, j1)

    def sums_at(j: int) -> tuple[float, float]:
        up, down = ladder_sums(factors, j, j)
        return float(up[0]), float(down[0])

    return ladder_walk(sums_at, j0, j1, start, tail)


def composed_variance(factors, start: float = 0.0) -> float:
    """``start + sum_f k_f Var(law_f)``, added in order (so a prefix's sum extends exactly).

    Parameters
    ----------
    factors
        ``[(law, count), ...]`` of :class:`~plda.grid.discrete.DiscreteLoss`.
    start
        The sum over the factors before these.

    Returns
    -------
    float
        The variance of the composition.
    """
    for f, k in factors:
        start = start + k * f.spread()[1]
    return start


# ------------------------------------------- the Chernoff moments of a composition, for tiny deltas
@dataclass(frozen=True)
class ComposedTail:
    """The Chernoff moments of a composition, from its factors' when first asked.

    It holds what gives each factor's moments (the moments, or what computes them from the
    continuous law), not the factors' grid laws, which it would keep alive.

    Attributes
    ----------
    sources
        ``((source, count), ...)``: each source ``(log_mgf, infinity_mass)`` or a callable
        returning it (:meth:`~plda.grid.discrete.DiscreteLoss.chernoff_source`).
    """

    sources: tuple

    def __call__(self) -> tuple[np.ndarray, float]:
        """``(sum_f k_f log_mgf_f, mass at +inf of the union)``.

        Returns
        -------
        tuple
            The composed ``log E[e^{tL}; L finite]`` at ``CHERNOFF_ORDERS`` and the
            probability that some factor's loss is infinite.
        """
        moments = [(s if isinstance(s, tuple) else s(), k) for s, k in self.sources]
        return (
            sum(k * m[0] for m, k in moments),
            union_probability(((m[1], k) for m, k in moments), upper=True),
        )


def composed_tail(factors) -> ComposedTail | None:
    """The lazy Chernoff moments of a composition; None if a factor has none.

    Parameters
    ----------
    factors
        ``[(law, count), ...]`` of pessimistic grid laws.

    Returns
    -------
    ComposedTail or None
        What the composed law's :meth:`~plda.grid.discrete.DiscreteLoss.chernoff` calls.
    """
    sources = tuple((f.chernoff_source(), k) for f, k in factors)
    if all(s is not None for s, _ in sources):
        return ComposedTail(sources)
    return None


def power_support(factors: list) -> tuple[int, int]:
    """Index range of the exact composition of some factors.

    Parameters
    ----------
    factors
        ``[(law, count), ...]`` on a common grid.

    Returns
    -------
    tuple of int
        ``(lo, hi)``, the grid indices of its lowest and highest loss.
    """
    lo = sum(k * f.offset for f, k in factors)
    hi = sum(k * (f.offset + len(f.probs) - 1) for f, k in factors)
    return lo, hi
