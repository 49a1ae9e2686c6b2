"""f-DP tradeoff curves, their membership-inference reading, and Gaussian DP of a composition.

Tradeoff function of a pair ``(P, Q)`` (Dong, Roth & Su 2019, Def. 2.1): the smallest type-II
error ``beta`` of a test of ``P`` against ``Q`` whose type-I error is at most ``alpha``,
``T(P, Q)(alpha) = inf{1 - E_Q[phi] : E_P[phi] <= alpha}``. It is the convex conjugate of the
privacy profile ``delta(eps) = E_P[(1 - e^(eps - L))_+]`` (ibid., Prop. 2.12):

    T(alpha) = max(0, sup_{eps in R} e^-eps (1 - alpha - delta(eps))).

Under add/remove a mechanism is ``f``-DP for ``f = conv(min(T_remove, T_add))``, the largest
tradeoff function below both ordered pairs (the same symmetrization as the subsampling operator
``C_q`` of Dong, Roth & Su 2019, Sec. 4.2; Zhu, Dong & Wang 2022). When the add pair is the
remove pair reversed (every plda mechanism, Poisson-sampled ones included) ``T_add`` is the
inverse function of ``T_remove`` and ``f`` is symmetric, so (ibid., Prop. 2.12)

    f(alpha) = max(0, sup_{eps >= 0} max(1 - delta(eps) - e^eps alpha,
                                         e^-eps (1 - delta(eps) - alpha)))

with ``delta = max(delta_remove, delta_add)``, the profile the accountant reports.

On a grid law ``delta`` is ``A_j - e^eps B_j`` between grid losses, so the supremum is attained at
the grid losses (where the curve has its vertices ``(P(L <= l_j), Q(L > l_j))``) and, for two
directions, where the two profiles cross. Every ``eps`` with a certified upper bound on
``delta(eps)`` gives a line below ``f`` (a certified lower bound, from the pessimistic grid law
with its error terms, plus its Chernoff tail); the optimistic grid law gives an upper bound once
*every* candidate ``eps`` is included. The envelope of these lines is built once per
discretization and evaluated by binary search.

Membership inference: an attacker testing "record out" against "record in" has, at false-positive
rate ``alpha``, true-positive rate at most ``1 - f(alpha)``; the largest advantage
``TPR - FPR`` is ``delta(0)`` (total variation).

Gaussian DP: ``mu``-GDP means ``f >= G_mu``, ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)``, which
is ``delta(eps) <= Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` for all ``eps >= 0``
(ibid., Cor. 2.13).
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import erfcx, ndtr, ndtri

from plda._internal import validation as check
from plda._internal.chernoff import CHERNOFF_ORDERS
from plda._internal.floats import UNIT_ROUNDOFF, round_down, round_up
from plda.grid import DiscreteLoss
from plda.mechanisms.gaussian import Gaussian
from plda.pld import Bounds, PrivacyLossDistribution

__all__ = [
    "GaussianComparison",
    "GaussianDPSummary",
    "gaussian_delta",
    "gaussian_dp",
    "gaussian_tradeoff",
    "gdp_comparison",
    "gdp_mu",
    "log_gaussian_delta",
    "max_advantage",
    "max_true_positive_rate",
    "tradeoff",
    "tradeoff_bounds",
    "true_positive_rate_bounds",
]

_U = 2.0**-53
#: largest eps used for a line (e^eps stays finite)
_MAX_EPSILON = 700.0
#: delta below which the Chernoff tail is not followed and Gaussian DP is not compared: far below
#: any delta in use, and above the engine's far-tail truncation (1e-300 per factor)
DELTA_FLOOR = 1e-250
#: eps samples on which the best Chernoff order is located before it is used at every grid loss
_CHERNOFF_SAMPLES = 512
#: extra eps points past the grid, on the Chernoff tail
_TAIL_POINTS = 1024
#: lines kept for the certified lower bound on a tradeoff curve (the upper bound keeps them all)
_LOWER_BOUND_LINES = 8192
#: relative safety margin on envelope values (rounding in products, sums and the pruning)
_MARGIN = 1e-12


# ------------------------------------------------------------------ envelope
#: pruning passes when an envelope is built (pruning only speeds up the queries)
_PRUNING_PASSES = 8


@dataclass(frozen=True, eq=False)
class LowerEnvelope:
    """Pointwise minimum ``min_j (intercepts[j] + slopes[j] * x)`` of a family of lines.

    ``slopes`` ascend strictly. Queries take the exact minimum over all stored lines by the
    monotone-minima recursion (the minimizing line's slope does not increase with ``x``), in
    ``O((lines + queries) log queries)`` array work; building drops lines that are nowhere below
    both neighbours, which shortens the queries but never changes their result.
    """

    slopes: np.ndarray
    intercepts: np.ndarray

    @classmethod
    def from_lines(cls, slopes, intercepts) -> LowerEnvelope:
        """Envelope of arbitrary lines (non-finite ones are ignored)."""
        s = np.asarray(slopes, dtype=float)
        a = np.asarray(intercepts, dtype=float)
        keep = np.isfinite(s) & np.isfinite(a)
        s, a = s[keep], a[keep]
        if len(s) == 0:
            raise ValueError("an envelope needs at least one finite line")
        order = np.lexsort((a, s))
        s, a = s[order], a[order]
        first = np.concatenate([[True], s[1:] != s[:-1]])  # equal slopes: the lowest line only
        s, a = s[first], a[first]
        for _ in range(_PRUNING_PASSES):
            if len(s) <= 2:
                break
            crossing = (a[:-1] - a[1:]) / (s[1:] - s[:-1])
            # a middle line that crosses its steeper neighbour at or right of where it crosses
            # its flatter one is nowhere strictly below both of them
            bad = np.zeros(len(s), dtype=bool)
            bad[1:-1] = crossing[1:] >= crossing[:-1]
            if not bad.any():
                break
            s, a = s[~bad], a[~bad]
        return cls(s, a)

    def __call__(self, x) -> np.ndarray:
        """``min_j (intercepts[j] + slopes[j] * x)`` for every entry of ``x``."""
        x = np.asarray(x, dtype=float)
        flat = np.ravel(x)
        order = np.argsort(flat, kind="stable")
        xs = flat[order]
        m, n = len(xs), len(self.slopes)
        best = np.empty(m)
        # intervals of queries [q_lo, q_hi] whose minimizing lines lie in [j_lo, j_hi]
        q_lo, q_hi = np.array([0]), np.array([m - 1])
        j_lo, j_hi = np.array([0]), np.array([n - 1])
        while len(q_lo):
            mid = (q_lo + q_hi) // 2
            width = j_hi - j_lo + 1
            seg = np.repeat(np.arange(len(mid)), width)
            starts = np.concatenate([[0], np.cumsum(width)[:-1]])
            lines = j_lo[seg] + np.arange(len(seg)) - starts[seg]
            values = self.intercepts[lines] + self.slopes[lines] * xs[mid[seg]]
            minima = np.minimum.reduceat(values, starts)
            # first minimizing line of each interval
            hit = np.where(values <= minima[seg], np.arange(len(seg)), len(seg))
            arg = lines[np.minimum.reduceat(hit, starts)]
            best[mid] = minima
            # smaller x: minimizers at or after arg; larger x: at or before arg
            left = mid > q_lo
            right = mid < q_hi
            q_lo, q_hi, j_lo, j_hi = (
                np.concatenate([q_lo[left], mid[right] + 1]),
                np.concatenate([mid[left] - 1, q_hi[right]]),
                np.concatenate([arg[left], j_lo[right]]),
                np.concatenate([j_hi[left], arg[right]]),
            )
        out = np.empty(m)
        out[order] = best
        return out.reshape(x.shape)


# ------------------------------------------------------------ profile samples
@dataclass(frozen=True, eq=False)
class ProfileSamples:
    """Certified samples ``(eps_j, delta_j)`` of a privacy profile, ``eps`` ascending.

    ``upper``: every ``delta_j`` bounds the true ``delta(eps_j)`` from above. Otherwise from
    below, and the samples contain every point where the optimistic profile can attain a
    conjugate supremum (grid losses and direction crossings), so suprema over them are exact
    suprema over all ``eps`` in the sampled range.
    ``exp_epsilon`` is the ``e^eps`` the sample was computed with (the lines use it as is).
    """

    epsilon: np.ndarray
    exp_epsilon: np.ndarray
    delta: np.ndarray
    upper: bool


def _segment_values(law: DiscreteLoss, k: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``A_k - x B_k`` of segment ``k`` with its rounding bound added (upper) or taken off."""
    a, b, _ = law._segments()
    value = a[k] - x * b[k]
    # rounding of the product and the difference, relative to the terms
    error = 4 * _U * (np.abs(a[k]) + x * b[k])
    return value + error if law.upper else value - error


def _cut_values(law: DiscreteLoss, m: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Profile of one grid law at the grid losses ``m * step``: both segments that meet there are
    valid, the smaller value is taken (tighter for an upper law; for a lower law it keeps the
    line above both segments' lines, as the exact-supremum argument needs)."""
    n = len(law.probs)
    j = m - law.offset
    first = _segment_values(law, np.clip(j, 0, n), x)
    second = _segment_values(law, np.clip(j + 1, 0, n), x)
    return np.minimum(first, second)


def _chernoff_terms(law: DiscreteLoss):
    t = CHERNOFF_ORDERS
    return t, law.log_mgf + t * np.log(t) - (t + 1) * np.log1p(t)


def _chernoff_full(law: DiscreteLoss, eps: np.ndarray) -> np.ndarray:
    """The Chernoff bound of an upper grid law, best order per point (see DiscreteLoss.delta)."""
    t, base = _chernoff_terms(law)
    out = np.empty(len(eps))
    for start in range(0, len(eps), 4096):  # chunks keep the (points x orders) array small
        e = eps[start : start + 4096]
        out[start : start + 4096] = np.min(base[None, :] - np.multiply.outer(e, t), axis=1)
    return law.chernoff_infinity_mass + np.exp(out) * (1 + 1e-9)


def _chernoff_at(law: DiscreteLoss, eps: np.ndarray) -> np.ndarray:
    """Chernoff bound at many points: the best order is found on a coarse sample, then each
    point uses the best orders of the two samples around it (any order gives a valid bound)."""
    t, base = _chernoff_terms(law)
    samples = np.linspace(eps[0], eps[-1], _CHERNOFF_SAMPLES)
    best = np.argmin(base[None, :] - np.multiply.outer(samples, t), axis=1)
    p = np.clip(np.searchsorted(samples, eps, side="right") - 1, 0, len(samples) - 1)
    lo, hi = best[p], best[np.minimum(p + 1, len(samples) - 1)]
    exponent = np.minimum(base[lo] - t[lo] * eps, base[hi] - t[hi] * eps)
    return law.chernoff_infinity_mass + np.exp(exponent) * (1 + 1e-9)


def _chernoff_end(law: DiscreteLoss) -> float:
    """Smallest eps at which the Chernoff bound reaches ``DELTA_FLOOR`` (``inf`` if never)."""
    room = DELTA_FLOOR - law.chernoff_infinity_mass
    if law.log_mgf is None or room <= 0:
        return math.inf
    t, base = _chernoff_terms(law)
    return float(np.min((base + 1e-9 - math.log(room)) / t))


def _crossings(laws: list[DiscreteLoss], m: np.ndarray):
    """Points inside grid segments where the profiles of two directions cross."""
    first, second = laws
    x_left, x_right = np.exp((m - 1) * first.step), np.exp(m * first.step)
    a1, b1, _ = first._segments()
    a2, b2, _ = second._segments()
    k1 = np.clip(m - first.offset, 0, len(first.probs))
    k2 = np.clip(m - second.offset, 0, len(second.probs))
    with np.errstate(divide="ignore", invalid="ignore"):
        x = (a1[k1] - a2[k2]) / (b1[k1] - b2[k2])
    inside = np.isfinite(x) & (x > x_left) & (x < x_right)
    x = x[inside]
    delta = np.maximum(
        _segment_values(first, k1[inside], x), _segment_values(second, k2[inside], x)
    )
    return np.log(x), x, delta


def _samples(laws: list[DiscreteLoss], m_lo: int, m_hi: int, stride: int = 1) -> ProfileSamples:
    """Profile ``max_d delta_d`` of the grid laws ``laws`` (one per direction, same step) at the
    grid losses ``m * step``, ``m_lo <= m <= m_hi`` (every ``stride``-th, for an upper version
    only: any subset of certified samples is certified); an upper version adds the Chernoff
    tail (inside the grid and beyond it), a lower one the direction crossings."""
    if stride != 1 and not laws[0].upper:
        raise ValueError("only samples of an upper (pessimistic) law may skip grid losses")
    step = laws[0].step
    upper = laws[0].upper
    m_lo = max(m_lo, int(math.ceil(-_MAX_EPSILON / step)))
    m_hi = max(min(m_hi, int(_MAX_EPSILON / step)), m_lo)
    m = np.arange(m_lo, m_hi + 1, stride)
    if m[-1] != m_hi:
        m = np.append(m, m_hi)
    eps = m * step
    x = np.exp(eps)
    inside = eps >= 0
    values = []
    for law in laws:
        value = _cut_values(law, m, x)
        if upper and law.log_mgf is not None and inside.any():
            value[inside] = np.minimum(value[inside], _chernoff_at(law, eps[inside]))
        values.append(value)
    parts = [(eps, x, np.max(values, axis=0))]
    if upper:
        end = min(max(_chernoff_end(law) for law in laws), _MAX_EPSILON)
        if eps[-1] < end:
            tail = np.linspace(eps[-1], end, _TAIL_POINTS + 1)[1:]
            tail_x = np.exp(tail)
            values = []
            for law in laws:
                beyond = np.full(len(tail), law.offset + len(law.probs))
                value = _cut_values(law, beyond, tail_x)
                if law.log_mgf is not None:
                    value = np.minimum(value, _chernoff_full(law, tail))
                values.append(value)
            parts.append((tail, tail_x, np.max(values, axis=0)))
    elif len(laws) == 2:
        parts.append(_crossings(laws, np.arange(max(m_lo, 0) + 1, m_hi + 2)))
    eps = np.concatenate([p[0] for p in parts])
    order = np.argsort(eps, kind="stable")
    return ProfileSamples(
        eps[order],
        np.concatenate([p[1] for p in parts])[order],
        np.clip(np.concatenate([p[2] for p in parts])[order], -np.inf, 1.0),
        upper,
    )


# -------------------------------------------------------------------- caches
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _cached(laws: list[DiscreteLoss], key: str, build):
    """Memoize per set of grid laws (they are immutable; the cache dies with them)."""
    store = _CACHE.setdefault(laws[0], {})
    full_key = (key, tuple(id(law) for law in laws))
    if full_key not in store:
        store[full_key] = build()
    return store[full_key]


def _grid_laws(pld: PrivacyLossDistribution, bound: str, direction: str | None):
    if not isinstance(pld, PrivacyLossDistribution):
        raise TypeError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
    laws = pld.discrete(bound)
    if direction is None:
        return [laws[d] for d in ("remove", "add") if d in laws]
    if direction not in ("remove", "add"):
        raise ValueError(f"direction must be None, 'remove' or 'add', got {direction!r}")
    # a symmetric composition has one law for both directions
    return [laws.get(direction, laws["remove"])]


def symmetric_profile(pld: PrivacyLossDistribution, bound: str = "upper") -> ProfileSamples:
    """Samples of ``max(delta_remove, delta_add)`` on ``eps >= 0`` from the ``bound`` grid law
    (``"upper"``: certified upper bounds with the Chernoff tail; ``"lower"``: certified lower
    bounds at every grid loss and crossing)."""
    laws = _grid_laws(pld, bound, None)
    top = max(law.offset + len(law.probs) for law in laws)
    return _cached(laws, "profile", lambda: _samples(laws, 0, max(top, 0)))


def _symmetric_envelopes(laws: list[DiscreteLoss]):
    """Envelopes of the steep lines (in ``1 - f``) and of the flat lines (in ``-f``) of the
    symmetric curve, and an ``alpha`` left of which the flat lines cannot matter and right of
    which the steep ones cannot (``None`` if the samples do not show one)."""

    def build():
        top = max(max(law.offset + len(law.probs) for law in laws), 0)
        # every line from an upper law is a valid lower bound on f: evenly spaced eps lose
        # only to second order in the spacing (about 1e-6 of 1 - f on B2), keep queries fast
        stride = max(1, top // _LOWER_BOUND_LINES) if laws[0].upper else 1
        s = _samples(laws, 0, top, stride)
        eps, x, delta = s.epsilon, s.exp_epsilon, s.delta
        # steep part, in 1 - f:  1 - f(alpha) <= delta + e^eps alpha
        steep = LowerEnvelope.from_lines(x, delta)
        # flat part, in -f:  -f(alpha) <= -(1 - delta) e^-eps + e^-eps alpha
        inverse = 1.0 / x
        flat = LowerEnvelope.from_lines(inverse, -(1.0 - delta) * inverse)
        # the eps = 0 line (slope -1) is in both families; a steep line is below it right of
        # their crossing and a flat one left of theirs, so any alpha between the last steep
        # crossing and the first flat crossing splits the work between the two envelopes
        zero = eps == 0
        positive = eps > 0
        split = None
        if zero.any() and positive.any():
            d0 = float(delta[zero][0])
            x, d = x[positive], delta[positive]
            with np.errstate(divide="ignore", invalid="ignore"):
                last_steep = np.max((d0 - d) / (x - 1.0))
                first_flat = np.min(((1.0 - d0) - (1.0 - d) / x) / (1.0 - 1.0 / x))
            if np.isfinite(last_steep) and np.isfinite(first_flat) and last_steep <= first_flat:
                split = float(first_flat)
        return steep, flat, split

    return _cached(laws, "symmetric", build)


def _symmetric_parts(laws: list[DiscreteLoss], alpha: np.ndarray):
    """``(steep, flat)`` envelope values at ``alpha``; ``+inf`` where a family cannot matter."""
    steep, flat, split = _symmetric_envelopes(laws)
    one_minus = np.full(alpha.shape, np.inf)
    minus = np.full(alpha.shape, np.inf)
    use_steep = np.ones(alpha.shape, bool) if split is None else alpha <= split
    use_flat = np.ones(alpha.shape, bool) if split is None else alpha > split
    if use_steep.any():
        one_minus[use_steep] = steep(alpha[use_steep])
    if use_flat.any():
        minus[use_flat] = flat(alpha[use_flat])
    return one_minus, minus


def _direction_envelope(law: DiscreteLoss):
    def build():
        s = _samples([law], law.offset - 1, law.offset + len(law.probs))
        inverse = 1.0 / s.exp_epsilon
        a, _, _ = law._segments()
        # below the support delta = A_0 - e^eps B_0: for alpha < 1 - A_0 the line grows without
        # bound as eps -> -inf (only possible for an optimistic law whose mass is short of 1)
        return LowerEnvelope.from_lines(inverse, -(1.0 - s.delta) * inverse), float(a[0])

    return _cached([law], "direction", build)


# ------------------------------------------------------------- tradeoff API
def _alpha(name: str, value) -> np.ndarray:
    return check.array_in(name, value, 0.0, 1.0)


def _one_minus_upper(laws, alpha):
    """Certified upper bound on ``1 - f(alpha)`` (symmetric curve) from an upper grid law."""
    one_minus, minus = _symmetric_parts(laws, alpha)
    one_minus = np.minimum(one_minus * (1 + _MARGIN), 1.0 + minus + 4 * _U)
    return np.clip(one_minus, alpha, 1.0)


def _tradeoff_pair(pld, alpha, direction):
    upper_laws = _grid_laws(pld, "upper", direction)
    lower_laws = _grid_laws(pld, "lower", direction)
    if direction is None:
        one_minus = _one_minus_upper(upper_laws, alpha)
        lower = np.nextafter(1.0 - one_minus, -np.inf)
        one_minus, minus = _symmetric_parts(lower_laws, alpha)
        upper = np.maximum(1.0 - one_minus * (1 - _MARGIN), -minus + 4 * _U)
        upper = np.nextafter(upper, np.inf)
    else:
        envelope, _ = _direction_envelope(upper_laws[0])
        lower = np.nextafter(-envelope(alpha) - 4 * _U, -np.inf)
        envelope, a0 = _direction_envelope(lower_laws[0])
        upper = np.nextafter(-envelope(alpha) + 4 * _U, np.inf)
        upper = np.where(alpha < 1.0 - a0, 1.0 - alpha, upper)
    # lines beyond |eps| = _MAX_EPSILON are not formed; they only matter below alpha ~ e^-700,
    # where the upper bound falls back to the trivial 1 - alpha
    reach = lower_laws[0].step * max(
        max(abs(law.offset), abs(law.offset + len(law.probs))) for law in lower_laws
    )
    if reach > _MAX_EPSILON:
        upper = np.where(alpha < 1e-290, 1.0 - alpha, upper)
    # every tradeoff function lies in [0, 1 - alpha]
    lower = np.clip(lower, 0.0, 1.0 - alpha)
    upper = np.clip(np.maximum(upper, lower), 0.0, 1.0 - alpha)
    return lower, upper


def _scalar(value, like):
    return float(value) if np.ndim(like) == 0 else value


def tradeoff(pld: PrivacyLossDistribution, alpha, *, direction: str | None = None):
    """Certified lower bound on the tradeoff function ``f(alpha)`` (smallest type-II error at
    type-I error ``alpha``) of the composition: it is ``f``-DP for this curve.

    Parameters
    ----------
    pld
        The composition.
    alpha
        Type-I error(s) in ``[0, 1]`` (float or array).
    direction
        ``None`` (default): the add/remove curve ``conv(min(T_remove, T_add))``, symmetric.
        ``"remove"`` or ``"add"``: the tradeoff ``T(P, Q)`` of that ordered pair alone.

    Returns
    -------
    ``beta`` with ``beta <= f(alpha)``: convex, non-increasing, at most ``1 - alpha``.
    """
    return tradeoff_bounds(pld, alpha, direction=direction).lower


def tradeoff_bounds(pld: PrivacyLossDistribution, alpha, *, direction: str | None = None):
    """``(lower, upper)`` bounds on the tradeoff function at ``alpha`` (see :func:`tradeoff`);
    the upper one comes from the optimistic grid law: the true curve lies between."""
    a = _alpha("alpha", alpha)
    lower, upper = _tradeoff_pair(pld, a, direction)
    return Bounds(_scalar(lower, alpha), _scalar(upper, alpha))


def max_true_positive_rate(pld: PrivacyLossDistribution, false_positive_rate):
    """Certified upper bound on the true-positive rate of any membership-inference test at
    ``false_positive_rate``: ``TPR <= 1 - f(FPR)`` (computed without forming ``1 - (1 - x)``,
    so small rates keep their relative accuracy)."""
    return true_positive_rate_bounds(pld, false_positive_rate).upper


def true_positive_rate_bounds(pld: PrivacyLossDistribution, false_positive_rate) -> Bounds:
    """``(lower, upper)``: the best membership-inference test at ``false_positive_rate`` has a
    true-positive rate between the two (the lower one is achieved by the optimistic pair)."""
    a = _alpha("false_positive_rate", false_positive_rate)
    upper = np.nextafter(_one_minus_upper(_grid_laws(pld, "upper", None), a), np.inf)
    _, t_upper = _tradeoff_pair(pld, a, None)
    lower = np.clip(1.0 - t_upper, a, upper)
    upper = np.clip(upper, a, 1.0)
    return Bounds(_scalar(lower, false_positive_rate), _scalar(upper, false_positive_rate))


def max_advantage(pld: PrivacyLossDistribution) -> Bounds:
    """``(lower, upper)`` bounds on the membership-inference advantage
    ``max_alpha (1 - alpha - f(alpha)) = max(TPR - FPR) = delta(0)`` (total variation)."""
    lower, upper = pld.delta_bounds(0.0)
    return Bounds(float(lower), float(upper))


# --------------------------------------------------------------- Gaussian DP
def gaussian_tradeoff(alpha, mu: float):
    """``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)``, the tradeoff function of ``mu``-GDP."""
    mu = check.nonnegative_float("mu", mu, upper=math.inf)
    a = _alpha("alpha", alpha)
    with np.errstate(divide="ignore"):
        value = ndtr(-ndtri(a) - mu)
    return _scalar(np.where(a >= 1, 0.0, np.where(a <= 0, 1.0, value)), alpha)


def log_gaussian_delta(epsilon, mu: float) -> np.ndarray:
    """``log delta_mu(eps)`` for the privacy profile of ``mu``-GDP,
    ``delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, accurate far into the
    tail: with ``a = -eps/mu + mu/2`` and ``e^eps phi(a - mu) = phi(a)``,
    ``delta = phi(a) (m(-a) - m(mu - a))`` where ``m(x) = Phi(-x)/phi(x) =
    sqrt(pi/2) erfcx(x/sqrt2)`` is the Mills ratio."""
    eps = np.asarray(epsilon, dtype=float)
    if mu <= 0:
        return np.where(eps >= 0, -np.inf, np.log(-np.expm1(eps)))
    a = -eps / mu + mu / 2
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        near = np.log(np.maximum(ndtr(a) - np.exp(eps) * ndtr(a - mu), 0.0))
        mills = erfcx(-a / math.sqrt(2)) - erfcx((mu - a) / math.sqrt(2))
        far = -0.5 * a * a - 0.5 * math.log(2 * math.pi) + 0.5 * math.log(math.pi / 2)
        far = far + np.log(np.maximum(mills, 0.0))
    # the direct form cancels once delta is far below Phi(a); the Mills form needs a < 0
    return np.where(a < -1.0, far, near)


def gaussian_delta(epsilon, mu: float):
    """Privacy profile of ``mu``-GDP (Dong, Roth & Su 2019, Cor. 2.13)."""
    mu = check.nonnegative_float("mu", mu, upper=math.inf)
    e = check.array_in("epsilon", epsilon, 0.0, np.inf)
    return _scalar(np.exp(log_gaussian_delta(e, mu)), epsilon)


@dataclass(frozen=True)
class GaussianDPSummary:
    """Gaussian-DP reading of a composition.

    Attributes
    ----------
    mu
        Certified: the composition is ``(eps, max(delta_mu(eps), delta_floor))``-DP for every
        ``eps >= 0`` — ``mu``-GDP wherever the GDP profile is above ``delta_floor`` (``inf`` if
        no ``mu`` is certified).
    mu_lower
        No ``mu`` below this satisfies that: the optimistic profile already exceeds it.
    best_fit
        ``mu`` whose ``G_mu`` is closest to the composition's tradeoff curve in the sup norm —
        an approximation, not a guarantee.
    max_deviation
        That sup-norm distance ``max_alpha |f(alpha) - G_best_fit(alpha)|``.
    delta_floor
        The profile level below which the comparison stops.
    """

    mu: float
    mu_lower: float
    best_fit: float
    max_deviation: float
    delta_floor: float = DELTA_FLOOR


def _threshold_mu(holds) -> tuple[float, float]:
    """``(lo, hi)`` around the threshold of a predicate that is monotone in ``mu``: ``holds`` was
    false at ``lo`` and true at ``hi``, ``hi / lo <= 1 + 1e-10`` (bisection in log scale);
    ``(inf, inf)`` if it holds for no ``mu <= 1e12``, ``(0, hi)`` if it holds down to 1e-12."""
    hi = 1.0
    while not holds(hi):
        hi *= 4.0
        if hi > 1e12:
            return math.inf, math.inf
    lo = hi / 4.0
    while holds(lo):
        hi, lo = lo, lo / 4.0
        if lo < 1e-12:
            return 0.0, hi
    while hi / lo > 1 + 1e-10:
        mid = math.sqrt(lo * hi)
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return lo, hi


def _gdp_refutation(samples: ProfileSamples, delta_floor: float):
    """``mu -> (optimistic profile <= max(delta_mu, floor) at every sample)``: where it fails,
    the true profile (above the optimistic one) exceeds ``delta_mu`` too."""
    keep = (samples.epsilon >= 0) & (samples.delta > delta_floor)
    eps, log_delta = samples.epsilon[keep], np.log(samples.delta[keep])

    def holds(mu: float) -> bool:
        return bool(np.all(log_delta <= log_gaussian_delta(eps, mu)))

    return holds


def _gdp_certificate(pld: PrivacyLossDistribution, delta_floor: float):
    """``mu -> (certified profile <= max(delta_mu, floor) for every eps >= 0)``, or ``None`` when
    the certified profile never gets below the floor.

    On each grid segment ``[eps_0, eps_1]`` a direction's profile is at most ``A - x B``
    (``x = e^eps``) while ``delta_mu`` is convex in ``x`` with slope ``-Phi(-eps/mu - mu/2)``, so
    ``delta_mu - (A - x B)`` is at least its tangent at ``x_0``: the segment is certified when
    ``delta_mu(eps_0) >= A - x_0 B + max(0, Phi(-eps_0/mu - mu/2) - B) (x_1 - x_0)``, or when
    the Chernoff bound at ``eps_0`` is below ``delta_mu(eps_1)`` (both profiles decrease), or
    when ``A - x_0 B`` is below the floor. Past the grid, consecutive Chernoff-tail samples are
    compared the same way, and the last one must be below the floor.
    """
    laws = _grid_laws(pld, "upper", None)
    step = laws[0].step
    top = max(law.offset + len(law.probs) for law in laws)
    m = np.arange(1, max(top, 0) + 2)
    m = m[(m - 1) * step <= _MAX_EPSILON]
    eps0, eps1 = (m - 1) * step, m * step
    x0, x1 = np.exp(eps0), np.exp(eps1)
    checks = []
    for law in laws:
        a, b, _ = law._segments()
        k = np.clip(m - law.offset, 0, len(law.probs))
        value = _segment_values(law, k, x0)
        chernoff = _chernoff_at(law, eps0) if law.log_mgf is not None else np.full(len(m), np.inf)
        active = (value > delta_floor) & (chernoff > delta_floor)
        checks.append((eps0[active], eps1[active], value[active], b[k][active],
                       np.log(chernoff[active]), x1[active] - x0[active]))
    tail = symmetric_profile(pld, "upper")
    beyond = tail.epsilon >= eps1[-1] if len(eps1) else tail.epsilon >= 0
    t_eps, t_delta = tail.epsilon[beyond], tail.delta[beyond]
    if len(t_delta) and t_delta[-1] > delta_floor:
        return None
    t_active = t_delta[:-1] > delta_floor
    t_at, t_log = t_eps[1:][t_active], np.log(t_delta[:-1][t_active])

    def holds(mu: float) -> bool:
        for e0, e1, value, slope_b, log_chernoff, dx in checks:
            log_mu0 = log_gaussian_delta(e0, mu)
            q_tail = ndtr(-e0 / mu - mu / 2)
            need = value + np.maximum(0.0, q_tail - slope_b) * dx
            tangent = np.log(np.maximum(need, 1e-320)) <= log_mu0
            sandwich = log_chernoff <= log_gaussian_delta(e1, mu)
            if not np.all(tangent | sandwich):
                return False
        return bool(np.all(t_log <= log_gaussian_delta(t_at, mu)))

    return holds


def _floor(delta_floor) -> float:
    value = check.positive_float("delta_floor", delta_floor)
    if not DELTA_FLOOR <= value < 1:
        raise ValueError(f"delta_floor must be in [{DELTA_FLOOR:g}, 1), got {delta_floor!r}")
    return value


def gdp_mu(pld: PrivacyLossDistribution, *, delta_floor: float = DELTA_FLOOR) -> float:
    """Smallest ``mu`` such that the composition is certified ``mu``-GDP, ``f >= G_mu``.

    Certified through the profile: the pessimistic profile (grid losses and Chernoff tail) stays
    below ``delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` for all
    ``eps >= 0`` (Dong, Roth & Su 2019, Cor. 2.13), down to ``delta_floor``. ``inf`` when no
    ``mu`` is (a mass at infinite loss, or a certified profile that stays above the floor).

    The certified profile cannot resolve ``delta`` below the FFT's error bound (about
    ``1e-10`` for long compositions) except through its Chernoff tail, which is loose; with the
    default floor the certified ``mu`` then reflects that resolution. A larger ``delta_floor``
    (e.g. ``1e-9``) certifies GDP on the range that matters in practice.
    """
    floor = _floor(delta_floor)
    exact = _gaussian_mu(pld, upper=True)
    if exact is not None:
        return exact
    holds = _gdp_certificate(pld, floor)
    return math.inf if holds is None else _threshold_mu(holds)[1]


def _gaussian_mu(pld: PrivacyLossDistribution, *, upper: bool) -> float | None:
    """``sqrt(sum_f k_f mu_f^2)`` when every factor is a plain Gaussian (exactly GDP, Dong, Roth &
    Su 2019, Cor. 3.3), else ``None``; rounded up (``upper``) or down.

    ``mu_f = sensitivity / sigma`` and its square are correctly rounded (2u), the sum of ``N``
    non-negative terms adds ``N u`` and the square root halves the relative error and adds
    ``u``: the float is within ``(N + 4) u`` of the exact value, and is widened by twice that."""
    if not isinstance(pld, PrivacyLossDistribution):
        raise TypeError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
    total = 0.0
    for mechanism, count in pld.components:
        if pld.relation == "replace_one":
            mechanism = mechanism.under_replace_one()
        if type(mechanism) is not Gaussian:
            return None
        total += count * mechanism.mu**2
    if not pld.components:
        return None
    error = 2 * (len(pld.components) + 4) * UNIT_ROUNDOFF
    value = math.sqrt(total)
    return round_up(value, error) if upper else round_down(value, error)


def gaussian_dp(
    pld: PrivacyLossDistribution, *, delta_floor: float = DELTA_FLOOR
) -> GaussianDPSummary:
    """Certified ``mu``, the ``mu`` below which GDP is refuted, and the best-fit ``mu`` (see
    :class:`GaussianDPSummary` and :func:`gdp_mu`)."""
    floor = _floor(delta_floor)
    mu = gdp_mu(pld, delta_floor=floor)
    below = _gaussian_mu(pld, upper=False)
    if below is not None:
        return GaussianDPSummary(mu, below, mu, 0.0, floor)
    mu_lower = min(_threshold_mu(_gdp_refutation(symmetric_profile(pld, "lower"), floor))[0], mu)
    # sup-norm fit on a grid dense at both ends of [0, 1]
    alpha = ndtr(np.linspace(-9, 9, 801))
    lower, upper = tradeoff_bounds(pld, alpha)
    middle = 0.5 * (lower + upper)

    def distance(m):
        return float(np.max(np.abs(middle - ndtr(-ndtri(alpha) - m))))

    hi = max(mu_lower, 1e-3) * 4 if math.isfinite(mu_lower) else 1e3
    fit = minimize_scalar(distance, bounds=(0.0, hi), method="bounded", options={"xatol": 1e-10})
    return GaussianDPSummary(mu, mu_lower, float(fit.x), float(fit.fun), floor)


@dataclass(frozen=True)
class GaussianComparison:
    """A composition's tradeoff bounds next to ``G_mu`` on the same ``alpha``."""

    alpha: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    gaussian: np.ndarray
    mu: float


def gdp_comparison(pld: PrivacyLossDistribution, alpha=None, mu: float | None = None):
    """The composition's tradeoff bounds and ``G_mu`` at ``alpha`` (default: 400 points dense at
    both ends); ``mu`` defaults to the certified :func:`gdp_mu`."""
    a = ndtr(np.linspace(-8, 8, 400)) if alpha is None else _alpha("alpha", alpha)
    a = np.atleast_1d(a)
    if mu is None:
        mu = gdp_mu(pld)
    lower, upper = tradeoff_bounds(pld, a)
    if math.isfinite(mu):
        reference = gaussian_tradeoff(a, mu)
    else:
        reference = np.zeros_like(a)
    return GaussianComparison(a, lower, upper, np.asarray(reference), float(mu))
