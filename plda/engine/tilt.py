"""Tilted composition: the FFT's resolution moved to the tiny deltas of large epsilons
(:func:`compose_tilted`), at the Chernoff-optimal tilts (:func:`chernoff_tilts`) and their
neighbours (:func:`tilt_attempts`), on laws kept to the tail that the deltas need
(:func:`law_tail`, :func:`law_tails`)."""

from __future__ import annotations

import math

import numpy as np

from plda._internal.chernoff import CHERNOFF_LOG_C, CHERNOFF_ORDERS
from plda._internal.floats import UNIT_ROUNDOFF, union_probability
from plda.discretization.discretize import UPPER_TAIL
from plda.engine.composer import compose
from plda.grid.discrete import DiscreteLoss
from plda.grid.moments import composed_tail, power_support

_SMALLEST_NORMAL = float(np.finfo(float).tiny)
#: a tilted mass below this exponent is subnormal or 0 (2 above log(tiny) = -708.4)
_LOG_SMALLEST_NORMAL = math.log(_SMALLEST_NORMAL) + 2.0


def compose_tilted(
    factors: list,
    tilt: float,
    tail: float = 1e-20,
    max_size: int = 1 << 23,
) -> DiscreteLoss:
    """Composition computed under the exponential tilt ``p_i -> p_i e^{t l_i} / M(t)``.

    Tilting commutes with convolution, and it moves the FFT's resolution to the losses near the
    Chernoff point of ``t``: the composed law is recovered as ``y_i = y~_i exp(C - t l_i)`` with
    ``C = sum_f k_f log M_f(t)``, and the absolute FFT error of ``y~`` becomes an error relative
    to the (tiny) deltas found there. Losses where the weight ``exp(C - t l_i)`` would overflow
    are left out (``valid_from``). ``+inf`` masses are carried untilted. The tilt's own rounding
    is charged (:func:`_tilt_rounding`); one law composed once is returned as it is (exact, and
    tilting it back would lose the masses whose tilted values underflow).

    Parameters
    ----------
    factors
        ``[(law, count), ...]`` on a common grid.
    tilt
        The order ``t > 0``.
    tail
        Composed (tilted) mass allowed outside the window on each side.
    max_size
        The longest FFT allowed.

    Returns
    -------
    DiscreteLoss
        The composed law, untilted, with its ``tilt``, ``log_scale`` and ``valid_from`` (the
        factor itself for one law composed once).

    Raises
    ------
    ValueError
        If ``tilt`` is not positive.
    """
    if tilt <= 0:
        raise ValueError("tilt must be positive")
    if len(factors) == 1 and factors[0][1] == 1:
        # one law once is exact as it is (no FFT error to move), where tilting it back would
        # lose the masses whose tilted values underflow (Gaussian mu = 3.33 at 1e-250, t = 90.5:
        # delta 1.7e-257 against 9.9e-251)
        return factors[0][0]
    tilted, log_scale = [], 0.0
    # rounding of the tilt (see _tilt_rounding): relative on every tilted mass, absolute on
    # those below the smallest normal float
    relative, absolute = 0.0, 0.0
    for f, k in factors:
        c = float(f.finite_log_mgf(np.array([tilt]))[0])
        log_scale += k * c
        log_p = np.log(np.maximum(f.probs, 1e-320))
        exponent = log_p + tilt * f.losses - c
        probs = np.exp(exponent) * (f.probs > 0)
        eta, lost = _tilt_rounding(f, log_p, exponent, tilt, c)
        relative, absolute = relative + k * eta, absolute + k * lost
        tilted.append(
            (
                DiscreteLoss(
                    step=f.step, offset=f.offset, probs=probs, upper=f.upper,
                    loss_error=f.loss_error,
                ),
                k,
            )
        )
    inner = compose(tilted, tail=tail, max_size=max_size)
    first = factors[0][0]
    upper = first.upper
    infinity = union_probability(((f.infinity_mass, k) for f, k in factors), upper=upper)
    losses = inner.losses
    exponent = log_scale - tilt * losses
    keep = exponent < 340.0  # weights and their squares stay finite
    if not keep.any():  # nothing resolved: the trivial bounds (delta <= 1, and >= 0)
        return DiscreteLoss(
            first.step, inner.offset + len(losses), np.zeros(1), float(first.upper), first.upper
        )
    start = int(np.argmax(keep))
    weights = np.exp(exponent[start:])
    # the tilted-back masses carry the factors' tilt rounding and the weights' own (their
    # exponent rounded by a few u of its terms): a factor 1 +- 2R covers e^(+-R)
    largest = abs(log_scale) + tilt * float(np.max(np.abs(losses)))
    relative += 4 * UNIT_ROUNDOFF * (largest + 1)
    scale = 1 + 2 * relative if upper else max(0.0, 1 - 2 * relative)
    probs = inner.probs[start:] * weights * scale
    above_weight = math.exp(min(log_scale - tilt * (losses[-1] + first.step), 690.0))
    infinity_total = infinity + (inner.infinity_mass * above_weight * scale if upper else 0.0)
    # the tilted window drops the tilted mass below it (it wraps onto the window's top, where
    # untilting shrinks it by e^(-tilt * width)): an upper version then knows nothing below
    # its first loss. (Laplace(0.0298) x 10 at eps 1e-3 under its top: the tilted upper delta was
    # 8e-38, the exact one 3.3e-14.) The lower version may drop mass: only the kept range counts
    dropped = inner.offset > power_support(tilted)[0]
    valid_from = float(losses[start]) if start > 0 or (upper and dropped) else -np.inf
    # the error terms are tilted masses: an upper version's scale with them, and each composed
    # entry may be off by the masses lost below the smallest normal (in L1, so in L2 too)
    error_scale = scale if upper else 1.0
    out = DiscreteLoss(
        first.step,
        inner.offset + start,
        probs,
        min(1.0, infinity_total),
        upper,
        (inner.entry_error + absolute) * error_scale,
        inner.spurious_mass,
        None,
        0.0,
        (inner.l2_error + absolute) * error_scale,
        tilt,
        log_scale,
        valid_from,
        loss_error=inner.loss_error,
    )
    if upper:  # the factors' Chernoff moments, summed when first asked
        object.__setattr__(out, "far_tail", composed_tail(factors))
    return out


def _tilt_rounding(factor: DiscreteLoss, log_p: np.ndarray, exponent: np.ndarray, tilt: float,
                   c: float):
    """``(eta, lost)``: ``exp(exponent)`` (``exponent = log_p + t l - c``), a factor's tilted
    masses, are within ``e^(+-eta)`` of the exact ones where normal, and each below the smallest
    normal float is off by less than it (``lost`` sums that over the factor).

    The exponent ``log p_i + t l_i - c`` is rounded by a few ``u`` of its terms' magnitudes
    (``log`` and ``exp`` add an ulp each): at ``t l_i`` near 1e4 that is 1e-12 relative, and a
    thousand factors make it 1e-9 of delta, which the composition alone does not see."""
    positive = factor.probs > 0
    if not positive.any():
        return 0.0, 0.0
    # (the largest |loss| is at an end of the grid)
    largest = factor.step * max(abs(factor.offset), abs(factor.offset + len(factor.probs) - 1))
    size = float(np.max(np.abs(log_p[positive]))) + tilt * largest + abs(c)
    lost = _SMALLEST_NORMAL * int(np.count_nonzero(positive & (exponent < _LOG_SMALLEST_NORMAL)))
    return 4 * UNIT_ROUNDOFF * size + 4 * UNIT_ROUNDOFF, lost


def chernoff_tilts(versions: dict, targets: np.ndarray, kind: str) -> np.ndarray:
    """The Chernoff-optimal tilt for each target, at most three distinct ones.

    Parameters
    ----------
    versions
        ``{direction: pair}`` of the untilted composition (their upper versions' moments).
    targets
        Deltas (``kind="epsilon"``) or epsilons (``kind="delta"``).
    kind
        ``"epsilon"`` or ``"delta"``: the query.

    Returns
    -------
    numpy.ndarray
        One order per target, rounded to a power of sqrt(2) (so that compositions are reused);
        all ones where no upper version has moments.
    """
    t, log_c = CHERNOFF_ORDERS, CHERNOFF_LOG_C
    found = [v.upper.chernoff() for v in versions.values()]
    moments = [m[0] for m in found if m is not None]
    if not moments:
        return np.ones(len(targets))
    log_mgf = np.max(moments, axis=0)
    if kind == "epsilon":
        objective = (log_mgf + log_c)[None, :] - np.log(targets)[:, None]
        best = t[np.argmin(objective / t[None, :], axis=1)]
    else:
        objective = (log_mgf + log_c)[None, :] - np.outer(targets, t)
        best = t[np.argmin(objective, axis=1)]
    rounded = 2.0 ** (np.round(2 * np.log2(best)) / 2)
    distinct = np.unique(rounded)
    if len(distinct) > 3:  # at most three extra compositions per call: nearest of three
        keep = distinct[np.linspace(0, len(distinct) - 1, 3).round().astype(int)]
        rounded = keep[np.argmin(np.abs(np.log(rounded)[:, None] - np.log(keep)), axis=1)]
    return rounded


def tilt_attempts(tilt: float) -> tuple:
    """The tilts tried for a target, in order: its Chernoff-optimal one, then smaller, then larger.

    Smaller tilts resolve an optimistic side whose error terms swamp it at the optimal one
    (1e3 steps at q = 0.01, sigma = 2.29, delta = 1e-12: [0.926, 0.999] at t = 32, [0.999013,
    0.999018] at t = 16). Larger ones resolve a sampled step whose rare large losses hold the
    tilted mass (20 steps at q = 1e-3, sigma = 3, delta = 1e-20: [0.0124, 0.0340] at t = 90.5,
    [0.019102, 0.019118] at t = 1448); the caller stops climbing once a tilt does not narrow
    its own gap, or does not fit.

    Parameters
    ----------
    tilt
        The Chernoff-optimal tilt, positive.

    Returns
    -------
    tuple of float
        ``t, t / sqrt 2, t / 2, sqrt 2 t, 2 t, 4 t, 8 t, 16 t``.
    """
    root = math.sqrt(2)
    return (tilt, tilt / root, tilt / 2, root * tilt, 2 * tilt, 4 * tilt, 8 * tilt, 16 * tilt)


#: where the laws' own mass at +inf exceeds this fraction of (accuracy x delta), a tilted query
#: keeps them further out (:func:`law_tail`)
INFINITY_SHARE = 0.1
#: the deepest tail kept (cells below the smallest normal float, 2.2e-308, go to +inf as twice
#: their mass anyway)
DEEPEST_LAW_TAIL = 1e-310


def law_tail(infinity: float | None, delta: float, accuracy: float) -> float:
    """The continuous tail each law leaves out (to ``+inf``) for a tilted query at ``delta``.

    Every step's pessimistic version moves the mass above its grid to ``+inf``, where the
    composition holds the steps' sum of it whatever the tilt, and an upper bound on delta is
    never below that: laws kept to :data:`~plda.discretization.discretize.UPPER_TAIL` put
    1e-29 there after 1000 steps of a sampled Gaussian (q = 0.01, sigma = 1: [9.34, 12.53] at
    delta = 1e-30). Where that mass is over :data:`INFINITY_SHARE` of ``accuracy * delta``,
    the laws are kept further out by the factor it misses, to a tail in steps of ten decades
    (one discretization serves a range of deltas), at most :data:`DEEPEST_LAW_TAIL`.

    Parameters
    ----------
    infinity
        The laws' mass at ``+inf``, kept to ``UPPER_TAIL`` and composed, or None (unknown).
    delta
        The smallest delta the tilted composition is to resolve.
    accuracy
        The query's relative accuracy.

    Returns
    -------
    float
        ``UPPER_TAIL``, or a smaller power of ten where the mass at ``+inf`` is too large.
    """
    allowed = INFINITY_SHARE * accuracy * delta
    if infinity is None or not infinity > allowed:
        return UPPER_TAIL
    need = max(UPPER_TAIL * allowed / infinity, DEEPEST_LAW_TAIL)
    return max(10.0 ** -(10 * math.ceil(-math.log10(need) / 10)), DEEPEST_LAW_TAIL)


def law_tails(versions: dict, tilts: np.ndarray, deltas: np.ndarray, accuracy: float
              ) -> np.ndarray:
    """:func:`law_tail` for targets under ``tilts``: per tilt, the deepest its targets need.

    The laws' own mass at ``+inf`` comes from the leading direction's untilted pair (its
    ``law_infinity``; the default tail is kept where a pair has none). A deeper tail serves
    every target of its tilt, and one tail per tilt composes each tilt once: a delta query over
    eps in [0, 40] had composed one tilt on nine tails, 12 s for 400 points.

    Parameters
    ----------
    versions
        ``{direction: pair}`` of the untilted composition, the leading direction first.
    tilts
        The tilt of each target.
    deltas
        The smallest delta to resolve, per target.
    accuracy
        The query's relative accuracy.

    Returns
    -------
    numpy.ndarray
        One tail per target, equal across the targets of a tilt.
    """
    known = getattr(next(iter(versions.values())), "law_infinity", None)  # (a GridPair's)
    infinity = known() if known else None
    tails = np.array([law_tail(infinity, float(d), accuracy) for d in deltas])
    return np.array([tails[tilts == t].min() for t in tilts])
