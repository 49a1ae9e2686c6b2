"""Certified samples of a composition's privacy profile ``delta(eps) = max_d delta_d(eps)``.

On a grid law ``delta`` is ``A_j - e^eps B_j`` between grid losses, so conjugate suprema over
``eps`` are attained at the grid losses and where two laws' profiles cross: a pessimistic
law gives certified upper samples (improved by its Chernoff tail), an optimistic one certified
lower samples at every such point.
"""

from __future__ import annotations

import itertools
import math
import threading
import weakref
from dataclasses import dataclass

import numpy as np

from plda._internal.caches import register
from plda._internal.chernoff import CHERNOFF_LOG_C, CHERNOFF_ORDERS
from plda._internal.floats import UNIT_ROUNDOFF
from plda.conversions.composed import ComposedLaws, steps_of
from plda.grid.chernoff import chernoff_delta, chernoff_epsilon
from plda.grid.discrete import DiscreteLoss

#: largest eps used for a line (e^eps stays finite)
MAX_EPSILON = 700.0
#: delta below which the Chernoff tail is not followed and Gaussian DP is not compared: far below
#: any delta in use, and above the engine's far-tail truncation (1e-300 per factor)
DELTA_FLOOR = 1e-250
#: eps samples on which the best Chernoff order is located before it is used at every grid loss
_CHERNOFF_SAMPLES = 512
#: extra eps points past the grid, on the Chernoff tail
_TAIL_POINTS = 1024
#: samples (and certificate segments) kept below every law's lowest grid loss, where each law's
#: profile is one line ``A_0 - e^eps B_0``: there conjugate suprema sit at the ends and at the
#: crossings, so evenly spread samples lose nothing of them. One per grid loss cost 700 / step:
#: ``ApproximateDP(1000)`` x 10^6 (losses from 1e9 on, step 2.5e-5) took 20 minutes in ``gdp_mu``
LINE_SAMPLES = 4096


@dataclass(frozen=True, eq=False)
class ProfileSamples:
    """Certified samples ``(eps_j, delta_j)`` of a privacy profile, ``eps`` ascending.

    Attributes
    ----------
    epsilon : numpy.ndarray
        The sample points ``eps_j``, ascending.
    exp_epsilon : numpy.ndarray
        The ``e^eps_j`` each sample was computed with (the lines use it as is).
    delta : numpy.ndarray
        The samples ``delta_j``.
    upper : bool
        True: every ``delta_j`` bounds ``delta(eps_j)`` from above. False: from below, and,
        when the laws sampled share one grid, the samples contain every point where the
        optimistic profile (the maximum over the laws) can attain a conjugate supremum, so
        suprema over them are exact suprema over the sampled range. Samples of laws on
        several grids are the union of each grid's: still lower bounds one by one.
    """

    epsilon: np.ndarray
    exp_epsilon: np.ndarray
    delta: np.ndarray
    upper: bool


def segment_values(law: DiscreteLoss, k: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The profile ``A_k - x B_k`` of a grid law on its segments ``k``, rounded outward.

    Parameters
    ----------
    law : DiscreteLoss
        The grid law (its ``upper`` flag says which way to round).
    k : numpy.ndarray
        Segment indices.
    x : numpy.ndarray
        ``e^eps`` at each point.

    Returns
    -------
    numpy.ndarray
        The values, with their rounding bound added (upper law) or taken off (lower law).
    """
    a, b, _ = law.segments()
    with np.errstate(invalid="ignore", over="ignore"):
        value = a[k] - x * b[k]
        # rounding of the product and the difference, relative to the terms
        error = 4 * UNIT_ROUNDOFF * (np.abs(a[k]) + x * b[k])
        value = value + error if law.upper else value - error
    # inf - inf (a composition whose FFT overflowed) says nothing: 1 above, 0 below
    return np.where(np.isnan(value), 1.0 if law.upper else 0.0, value)


def _cut_values(law: DiscreteLoss, m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Profile of one grid law at the grid losses ``m * step``: both segments that meet there are
    valid, the smaller value is taken (tighter for an upper law; for a lower law it keeps the
    line above both segments' lines, as the exact-supremum argument needs)."""
    n = len(law.probs)
    j = m - law.offset
    first = segment_values(law, np.clip(j, 0, n), x)
    second = segment_values(law, np.clip(j + 1, 0, n), x)
    return np.minimum(first, second)


def _chernoff_terms(law: DiscreteLoss):
    log_mgf, infinity = law.chernoff()
    return CHERNOFF_ORDERS, log_mgf + CHERNOFF_LOG_C, infinity


def chernoff_at(law: DiscreteLoss, eps: np.ndarray) -> np.ndarray:
    """The Chernoff bound of a pessimistic grid law on ``delta`` at many points.

    The best order is found on a coarse sample; each point then uses the best orders of the two
    samples around it (any order gives a valid bound).

    Parameters
    ----------
    law : DiscreteLoss
        A pessimistic grid law with Chernoff moments (``law.chernoff()``).
    eps : numpy.ndarray
        Ascending points.

    Returns
    -------
    numpy.ndarray
        Upper bounds on ``delta(eps)``.
    """
    t, base, infinity = _chernoff_terms(law)
    samples = np.linspace(eps[0], eps[-1], _CHERNOFF_SAMPLES)
    best = np.argmin(base[None, :] - np.multiply.outer(samples, t), axis=1)
    p = np.clip(np.searchsorted(samples, eps, side="right") - 1, 0, len(samples) - 1)
    lo, hi = best[p], best[np.minimum(p + 1, len(samples) - 1)]
    exponent = np.minimum(base[lo] - t[lo] * eps, base[hi] - t[hi] * eps)
    with np.errstate(over="ignore"):  # a bound above 1 (inf) says nothing: the callers clip it
        return infinity + np.exp(exponent) * (1 + 1e-9)


def _chernoff_end(law: DiscreteLoss) -> float:
    """Smallest eps at which the Chernoff bound reaches ``DELTA_FLOOR / 2`` (``inf`` if never).

    Half the floor, not the floor: the bound evaluated there carries its ``1 + 1e-9`` margin
    and rounding, which put it a few ulps *above* a target of exactly ``DELTA_FLOOR``
    (1.0000000000000114e-250 for DP-SGD), so a last sample meant to close the profile at the
    floor did not, and :meth:`~plda.PrivacyLossDistribution.gdp_mu` found no certified ``mu``
    at the default floor."""
    return float(chernoff_epsilon(law.chernoff(), np.array(DELTA_FLOOR / 2)))


def spread_indices(first: int, last: int) -> np.ndarray:
    """At most ``LINE_SAMPLES + 1`` grid indices from ``first`` to ``last``, evenly spread.

    Both ends are included; all the indices if there are no more.

    Parameters
    ----------
    first, last : int
        The ends, ``first <= last``.

    Returns
    -------
    numpy.ndarray
        The indices, ascending, as int64.
    """
    if last - first <= LINE_SAMPLES:
        return np.arange(first, last + 1)
    return np.unique(np.rint(np.linspace(first, last, LINE_SAMPLES + 1)).astype(np.int64))


def grid_segments(laws: list[DiscreteLoss]) -> tuple[np.ndarray, np.ndarray]:
    """The stretches ``[left h, right h]`` of eps ``>= 0`` on which each law's profile is a line.

    They are the grid segments starting at eps <= MAX_EPSILON; those below every law's lowest
    grid loss (one line each) are merged into at most ``LINE_SAMPLES``.

    Parameters
    ----------
    laws : list of DiscreteLoss
        Grid laws on one step ``h``.

    Returns
    -------
    tuple of numpy.ndarray
        ``(left, right)`` grid indices; a law's line on a stretch is its segment ``right -
        offset`` (clipped to its segments).
    """
    step = laws[0].step
    top = max(law.offset + len(law.probs) for law in laws)
    # cap the index range before building it (a long composition of large losses has its grid
    # far beyond MAX_EPSILON, offsets of billions of steps)
    top = min(top, math.floor(MAX_EPSILON / step) + 1)
    right = np.arange(1, max(top, 0) + 2)
    right = right[(right - 1) * step <= MAX_EPSILON]
    left = right - 1
    lines = int(np.count_nonzero(right <= min(law.offset for law in laws)))
    if lines > LINE_SAMPLES:
        ends = spread_indices(0, int(right[lines - 1]))
        left = np.concatenate([ends[:-1], left[lines:]])
        right = np.concatenate([ends[1:], right[lines:]])
    return left, right


def _crossings(laws: list[DiscreteLoss], m: np.ndarray, left: np.ndarray | None = None):
    """Points inside the grid segments ``m`` (from grid loss ``left``, by default ``m - 1``, to
    ``m``) where the profiles of two of ``laws`` cross.

    On a segment every law's profile is a line in ``x = e^eps``, so their maximum has its
    vertices where two of them cross: every pair is crossed, not only the two directions of
    one composition (the realized compositions of a factor that is not tight share a grid when
    their largest losses agree, as PermuteAndFlip's leads -2, -3 and -4 do, and with their
    crossings missing the supremum over the samples fell short of the optimistic curve's: the
    tradeoff's upper bound of 10 PermuteAndFlip(0.01) steps read 3.8e-8 below it). Each point
    gets the maximum over all the laws, so points where the crossing lines are not the top
    ones are still samples of the profile.
    """
    step = laws[0].step
    x_left, x_right = np.exp((m - 1 if left is None else left) * step), np.exp(m * step)
    segments = []
    for law in laws:
        a, b, _ = law.segments()
        k = np.clip(m - law.offset, 0, len(law.probs))
        segments.append((k, a[k], b[k]))
    found = []
    for (_, a1, b1), (_, a2, b2) in itertools.combinations(segments, 2):
        # parallel lines (0 / 0, x / 0) and crossings past e^709 (overflow) are not inside
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            x = (a1 - a2) / (b1 - b2)
        inside = np.flatnonzero(np.isfinite(x) & (x > x_left) & (x < x_right))
        found.append((inside, x[inside]))
    where = np.concatenate([f[0] for f in found])
    x = np.concatenate([f[1] for f in found])
    delta = np.max([segment_values(law, k[where], x)
                    for law, (k, _, _) in zip(laws, segments, strict=True)], axis=0)
    return np.log(x), x, delta


def by_grid(laws: list[DiscreteLoss]) -> list[list[DiscreteLoss]]:
    """The laws grouped by grid step, in first-seen order.

    The realized compositions of a factor that is not ``tight`` sit on grids of their own:
    a grid loss ``m`` means ``m`` times *its* step, so samples and envelopes are formed one
    grid at a time.

    Parameters
    ----------
    laws : list of DiscreteLoss
        Grid laws.

    Returns
    -------
    list of list of DiscreteLoss
        One list per distinct step.
    """
    groups: dict = {}
    for law in laws:
        groups.setdefault(law.step, []).append(law)
    return list(groups.values())


def samples(laws: list[DiscreteLoss], m_lo: int, m_hi: int, stride: int = 1) -> ProfileSamples:
    """Samples of the profile ``max_d delta_d`` of grid laws at the grid losses.

    An upper version adds the Chernoff tail (inside the grid and beyond it), a lower one the
    points where the profiles of any two of the laws cross.

    Parameters
    ----------
    laws : list of DiscreteLoss
        Grid laws, all upper (one step) or all lower (optimistic laws on several grids, the
        realized compositions', are sampled grid by grid, :func:`by_grid`).
    m_lo, m_hi : int
        The grid losses ``m * step`` sampled, ``m_lo <= m <= m_hi``.
    stride : int, optional
        Take every ``stride``-th grid loss (upper laws only: any subset of certified upper
        samples is certified).

    Returns
    -------
    ProfileSamples
        The samples.

    Raises
    ------
    ValueError
        If ``stride`` is not 1 for lower laws, or upper laws lie on different steps.
    """
    if stride != 1 and not laws[0].upper:
        raise ValueError("only samples of an upper (pessimistic) law may skip grid losses")
    step = laws[0].step
    grids = by_grid(laws)
    if len(grids) > 1 and laws[0].upper:
        # an upper sample must bound every direction at once: one grid only
        raise ValueError("upper grid laws on different steps have no common samples")
    if len(grids) > 1:
        # each grid's samples are certified lower bounds on the same profile, so their union
        # is (read on laws[0]'s step, a lattice pair on a finer grid put its samples up to 4%
        # off in epsilon, enough to push PermuteAndFlip(0.01)'s tradeoff upper bound 1e-8
        # below its lower one)
        groups = [samples(grid, math.floor(m_lo * step / grid[0].step),
                          max(math.ceil(m_hi * step / grid[0].step),
                              max(law.offset + len(law.probs) for law in grid)), stride)
                  for grid in grids]
        eps = np.concatenate([g.epsilon for g in groups])
        order = np.argsort(eps, kind="stable")
        return ProfileSamples(
            epsilon=eps[order],
            exp_epsilon=np.concatenate([g.exp_epsilon for g in groups])[order],
            delta=np.concatenate([g.delta for g in groups])[order],
            upper=False,
        )
    upper = laws[0].upper
    # the range asked for is cut to |eps| <= MAX_EPSILON at both ends: a law whose support lies
    # wholly beyond it (3 runs of ApproximateDP(300), losses 803 to 900 on the grid) asked for
    # samples from its support's foot only, at e^eps = inf, and one direction's tradeoff curve
    # found no finite line (ValueError). Below the support the profile is a single line, so
    # its sample at MAX_EPSILON stands for the ones beyond, to within e^-MAX_EPSILON
    m_lo = min(max(m_lo, int(math.ceil(-MAX_EPSILON / step))), int(MAX_EPSILON / step))
    m_hi = max(min(m_hi, int(MAX_EPSILON / step)), m_lo)
    # below every law's lowest grid loss each profile is one line: LINE_SAMPLES spread there
    line_end = min(min(law.offset for law in laws) - 1, m_hi)
    if line_end - m_lo > LINE_SAMPLES * stride:
        m = np.concatenate([spread_indices(m_lo, line_end),
                            np.arange(line_end + 1, m_hi + 1, stride)])
    else:
        m = np.arange(m_lo, m_hi + 1, stride)
    if m[-1] != m_hi:
        m = np.append(m, m_hi)
    eps = m * step
    x = np.exp(eps)
    inside = eps >= 0
    values = []
    for law in laws:
        value = _cut_values(law, m, x)
        if upper and law.chernoff() is not None and inside.any():
            value[inside] = np.minimum(value[inside], chernoff_at(law, eps[inside]))
        values.append(value)
    parts = [(eps, x, np.max(values, axis=0))]
    if upper:
        end = min(max(_chernoff_end(law) for law in laws), MAX_EPSILON)
        if eps[-1] < end:
            tail = np.linspace(eps[-1], end, _TAIL_POINTS + 1)[1:]
            tail_x = np.exp(tail)
            values = []
            for law in laws:
                beyond = np.full(len(tail), law.offset + len(law.probs))
                value = _cut_values(law, beyond, tail_x)
                if law.chernoff() is not None:
                    value = np.minimum(value, chernoff_delta(law.chernoff(), tail))
                values.append(value)
            parts.append((tail, tail_x, np.max(values, axis=0)))
    elif len(laws) > 1:
        segment = np.arange(max(m_lo, 0) + 1, m_hi + 2)
        left = segment - 1
        # the segments up to the lowest grid loss carry the same lines: one wide segment
        lines = int(np.count_nonzero(segment <= line_end + 1))
        if lines > LINE_SAMPLES:
            segment, left = segment[lines - 1:], np.concatenate([[left[0]], left[lines:]])
        parts.append(_crossings(laws, segment, left))
    eps = np.concatenate([p[0] for p in parts])
    order = np.argsort(eps, kind="stable")
    return ProfileSamples(
        epsilon=eps[order],
        exp_epsilon=np.concatenate([p[1] for p in parts])[order],
        delta=np.clip(np.concatenate([p[2] for p in parts])[order], -np.inf, 1.0),
        upper=upper,
    )


# -------------------------------------------------------------------- caches
#: envelopes and profile samples per set of grid laws; the entries die with the laws
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_CACHE_LOCK = threading.Lock()


def _clear_cache() -> None:
    with _CACHE_LOCK:
        _CACHE.clear()


register("plda.conversions.profile.cached_for", _clear_cache)


def cached_for(laws: list[DiscreteLoss], key: str, build):
    """A value built once per set of grid laws (immutable; the cache dies with them).

    Parameters
    ----------
    laws : list of DiscreteLoss
        The grid laws the value depends on.
    key : str
        What the value is.
    build : callable
        ``build()`` makes the value on a miss.

    Returns
    -------
    object
        The cached value.
    """
    full_key = (key, tuple(id(law) for law in laws))
    with _CACHE_LOCK:
        hit = _CACHE.get(laws[0], {}).get(full_key)
    if hit is not None:
        return hit
    value = build()  # outside the lock: two threads may both build, either result is valid
    with _CACHE_LOCK:
        return _CACHE.setdefault(laws[0], {}).setdefault(full_key, value)


def select_laws(composed: ComposedLaws, bound: str, direction: str | None) -> list[DiscreteLoss]:
    """The grid laws of one bound and direction of a composition.

    A composition with factors that are not ``tight`` has several realized compositions on its
    optimistic side (keys ``"remove/1"``, ...): all of them are returned, as a lower bound of
    each is a lower bound of the composition.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    bound : str
        ``"upper"`` (pessimistic) or ``"lower"`` (optimistic) laws.
    direction : str or None
        ``"remove"`` or ``"add"`` (a symmetric composition's single law serves both), or None
        for every direction the composition has, remove first.

    Returns
    -------
    list of DiscreteLoss
        The grid laws.

    Raises
    ------
    ValueError
        For an unknown ``direction``.
    TypeError
        If ``composed`` is not :class:`~plda.conversions.composed.ComposedLaws`.
    """
    steps_of(composed)  # a TypeError for anything else
    if direction not in (None, "remove", "add"):
        raise ValueError(f"direction must be None, 'remove' or 'add', got {direction!r}")
    laws = composed.laws(bound)
    keys = sorted(laws, key=lambda key: (key.partition("/")[2], key != "remove"))
    if direction is None:
        return [laws[key] for key in keys]
    # per composition (the key's suffix): its law of that direction; a symmetric composition
    # has one law for both, its "remove" one (taking it only when no composition had the
    # direction left a symmetric realized pair out of the other direction's bounds)
    compositions: dict = {}
    for key in keys:
        side, _, which = key.partition("/")
        compositions.setdefault(which, {})[side] = laws[key]
    return [found.get(direction, found.get("remove")) for found in compositions.values()
            if direction in found or "remove" in found]


def symmetric_profile(composed: ComposedLaws, bound: str = "upper") -> ProfileSamples:
    """Samples of the privacy profile ``max(delta_remove, delta_add)`` on ``eps >= 0``.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    bound : {"upper", "lower"}, optional
        ``"upper"``: certified upper bounds, with the Chernoff tail; ``"lower"``: certified
        lower bounds at every grid loss and crossing.

    Returns
    -------
    ProfileSamples
        The samples (cached with the grid laws).
    """
    laws = select_laws(composed, bound, None)
    top = max(law.offset + len(law.probs) for law in laws)
    return cached_for(laws, "profile", lambda: samples(laws, 0, max(top, 0)))
