"""One contract for every mechanism family: adding a mechanism is adding one entry to FAMILIES.

Each entry gives a mechanism at a few extreme parameters and counts, and an exact reference
``delta(eps)`` computed in mpmath (closed forms, exact enumerations, or one-dimensional
quadrature with the likelihood-ratio crossing as a breakpoint). Every entry is checked for:

- ``lower <= exact <= upper`` for ``delta(eps)``;
- ``epsilon_bounds(delta)`` bracketing the exact epsilon (the exact ``delta`` at the upper bound
  is at most ``delta``, at the lower bound at least ``delta``), down to ``delta = 1e-300``;
- monotonicity in ``eps``, in ``delta`` and in the count; no NaN; no warning (an
  ``AccuracyWarning`` is allowed only for ``delta <= 1e-10``, below the FFT's resolution, where
  the gap is documented to open).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import mpmath
import numpy as np
import pytest
from guarantee_reference import polyline_delta, profile_delta
from mixture_reference import (
    binomial_weights,
    double_mixture_delta,
    laplace_mixture_delta,
    mixture_delta,
)

import plda
from plda import testing
from plda.mechanisms.bounded_range import BoundedRangeLaw, BoundedRangePair
from plda.mechanisms.law import PIECE
from plda.mechanisms.noisy_max import TwoCandidatePair
from plda.mechanisms.symmetrized import SymmetrizedPoissonSampled

DPS = 60


def _quad_delta(log_ratio, p_pdf, q_pdf, eps, breaks) -> mpmath.mpf:
    """``int (p - e^eps q)_+`` for a pair whose log-likelihood ratio increases in ``x``: the
    positive part starts at the crossing, found by bisection and used as a breakpoint."""
    eps = mpmath.mpf(eps)
    lo, hi = mpmath.mpf(-60), mpmath.mpf(60)
    if log_ratio(hi) <= eps:
        return mpmath.mpf(0)
    if log_ratio(lo) > eps:
        start = -mpmath.inf
    else:
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if log_ratio(mid) <= eps else (lo, mid)
        start = hi
    # sorted: the add direction passes the reflected breakpoints in decreasing order, and an
    # unsorted path leaves kinks inside a segment (tanh-sinh then errs by ~1e-5)
    points = [start] + sorted(b for b in breaks if b > start) + [mpmath.inf]
    return mpmath.quad(lambda x: p_pdf(x) - mpmath.exp(eps) * q_pdf(x), points)


def _sampled_pair(base_p, base_q, q):
    """Remove direction: P = (1 - q) Q0 + q P0 against Q = Q0 (Poisson sampling)."""
    q = mpmath.mpf(q)

    def p(x):
        return (1 - q) * base_q(x) + q * base_p(x)

    return p, base_q, (lambda x: mpmath.log(p(x)) - mpmath.log(base_q(x)))


def _laplace(scale):
    b = mpmath.mpf(scale)
    return (lambda x: mpmath.exp(-abs(x - 1) / b) / (2 * b)), (
        lambda x: mpmath.exp(-abs(x) / b) / (2 * b)
    )


def _normal(sigma):
    s = mpmath.mpf(sigma)
    return (lambda x: mpmath.npdf(x, 1, s)), (lambda x: mpmath.npdf(x, 0, s))


def _worse_direction(p, q, ratio, eps, breaks):
    """max over remove (P vs Q) and add (Q vs P) of the hockey-stick divergence."""
    remove = _quad_delta(ratio, p, q, eps, breaks)
    add = _quad_delta(lambda x: -ratio(-x), lambda x: q(-x), lambda x: p(-x), eps,
                      [-b for b in breaks])
    return max(remove, add)


def gaussian_reference(sigma, count, eps):
    mu = mpmath.sqrt(count) / mpmath.mpf(sigma)
    eps = mpmath.mpf(eps)
    return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


def laplace_reference(scale, count, eps):
    assert count == 1
    e0 = 1 / mpmath.mpf(scale)
    return max(mpmath.mpf(0), 1 - mpmath.exp((mpmath.mpf(eps) - e0) / 2))


def approximate_dp_reference(params, count, eps):
    e0, d0 = (mpmath.mpf(v) for v in params)
    keep = mpmath.exp(count * mpmath.log1p(-d0))
    p = mpmath.exp(e0) / (1 + mpmath.exp(e0))
    total = -mpmath.expm1(count * mpmath.log1p(-d0))
    for i in range(count + 1):
        loss = (count - 2 * i) * e0
        if loss > eps:
            weight = mpmath.binomial(count, i) * p ** (count - i) * (1 - p) ** i
            total += keep * weight * (1 - mpmath.exp(mpmath.mpf(eps) - loss))
    return total


def sampled_gaussian_reference(params, count, eps):
    """One Poisson-sampled Gaussian step in closed form: the loss (x - 1/2) / s^2 of N(1, s)
    against N(0, s) is monotone, so each direction's optimal set is a half-line. (Quadrature on
    [-60, 60] missed the crossing at 179 of sigma = 5, q = 1, and erred by 1e-3 at 1e-280.)"""
    sigma, q = params
    assert count == 1
    s, q, eps = mpmath.mpf(sigma), mpmath.mpf(q), mpmath.mpf(eps)

    def above(x):  # P(N(0, s) > x)
        return mpmath.ncdf(-x / s)

    def below(x):  # P(N(0, s) < x), not 1 - above(x): that cancels far out
        return mpmath.ncdf(x / s)

    # remove: P = (1 - q) N(0, s) + q N(1, s) against N(0, s), ratio 1 - q + q e^((x - 1/2)/s^2)
    x = mpmath.mpf(1) / 2 + s**2 * mpmath.log((mpmath.expm1(eps) + q) / q)
    remove = (1 - q) * above(x) + q * above(x - 1) - mpmath.exp(eps) * above(x)
    # add: N(0, s) against that mixture, on {x < x_add}; empty unless e^-eps > 1 - q
    t = (mpmath.exp(-eps) - 1 + q) / q
    add = mpmath.mpf(0)
    if t > 0:
        x = mpmath.mpf(1) / 2 + s**2 * mpmath.log(t)
        add = below(x) - mpmath.exp(eps) * ((1 - q) * below(x) + q * below(x - 1))
    return max(remove, add)


def sampled_laplace_reference(params, count, eps):
    scale, q = params
    assert count == 1
    p, base_q, ratio = _sampled_pair(*_laplace(scale), q)
    return _worse_direction(p, base_q, ratio, eps, [0, 1])


def discrete_laplace_reference(parameter, count, eps):
    return mpmath.mpf(
        testing.discrete_laplace_composition_delta(eps, parameter=parameter, count=count,
                                                   precise=True, dps=DPS)
    )


def discrete_gaussian_reference(sigma, count, eps):
    if count > 1:
        return mpmath.mpf(
            testing.discrete_gaussian_composition_delta(eps, sigma=sigma, count=count, precise=True,
                                                        dps=DPS)
        )
    # one step by direct summation over a support wide enough for delta down to 1e-300:
    # P(x) ~ e^{-x^2/2s^2}, loss (1 - 2x)/(2 s^2) under P = N_Z(0) against Q = N_Z(1)
    s2 = 2 * mpmath.mpf(sigma) ** 2
    reach = int(40 * sigma + 60)
    weights = {x: mpmath.exp(-mpmath.mpf(x) ** 2 / s2) for x in range(-reach - 1, reach + 2)}
    norm = mpmath.fsum(weights.values())
    eps = mpmath.mpf(eps)
    total = mpmath.mpf(0)
    for x in range(-reach, reach + 1):
        loss = (1 - 2 * mpmath.mpf(x)) / s2
        if loss > eps:
            total += weights[x] / norm * -mpmath.expm1(eps - loss)
    return total


def gaussian_mixture_reference(params, count, eps):
    assert count == 1
    return mixture_delta(*params, eps)


def poisson_group_reference(params, count, eps):
    sigma, q, k = params
    assert count == 1
    return mixture_delta(sigma, range(k + 1), binomial_weights(k, q), eps)


def laplace_mixture_reference(params, count, eps):
    assert count == 1
    return laplace_mixture_delta(*params, eps)


def poisson_laplace_group_reference(params, count, eps):
    scale, q, k = params
    assert count == 1
    return laplace_mixture_delta(scale, range(k + 1), binomial_weights(k, q), eps)


def double_mixture_reference(params, count, eps):
    assert count == 1
    return double_mixture_delta(*params, eps)


def randomized_response_reference(params, count, eps):
    """k-ary randomized response under replace-one, ``count`` runs, by exact enumeration: ``i``
    runs at loss ``+L`` (P-mass a, Q-mass b), ``j`` at ``-L`` (b, a), the rest at 0."""
    p, k = mpmath.mpf(params[0]), params[1]
    a, b = 1 - p + p / k, p / k
    c, x = 1 - a - b, mpmath.mpf(eps)
    total = mpmath.mpf(0)
    for i in range(count + 1):
        for j in range(count - i + 1):
            ways = mpmath.factorial(count) / (mpmath.factorial(i) * mpmath.factorial(j)
                                              * mpmath.factorial(count - i - j))
            rest = c ** (count - i - j) if count - i - j else mpmath.mpf(1)
            pm, qm = ways * a**i * b**j * rest, ways * b**i * a**j * rest
            total += max(pm - mpmath.exp(x) * qm, 0)
    return total


def independent_records_reference(params, count, eps):
    sigma, rates = params
    assert count == 1
    weights = [mpmath.mpf(1)]
    for q in rates:
        q = mpmath.mpf(q)
        weights = [(weights[k] if k < len(weights) else 0) * (1 - q)
                   + (weights[k - 1] * q if k else 0) for k in range(len(weights) + 1)]
    return mixture_delta(sigma, range(len(rates) + 1), weights, eps)


def bounded_range_law_reference(epsilon, count, eps):
    """The least pair above every epsilon-BR pair, one step:
    ``e^eps' (e^((eps - eps')/2) - 1)^2 / (e^eps - 1)`` on ``[0, eps]``, 0 above."""
    assert count == 1
    e, x = mpmath.mpf(epsilon), mpmath.mpf(eps)
    if x >= e:
        return mpmath.mpf(0)
    # = (1 - e^(-(eps - eps')/2))^2 / (1 - e^-eps): no cancellation at large eps
    return mpmath.expm1(-(e - x) / 2) ** 2 / -mpmath.expm1(-e)


def bounded_range_pair_reference(params, count, eps):
    """``count`` runs of the two-point BR pair of split ``t``, the worse of its directions
    (split ``t`` and ``1 - t``), by the binomial sum over the runs that take the high loss."""
    epsilon, split = (mpmath.mpf(v) for v in params)
    x = mpmath.mpf(eps)
    worst = mpmath.mpf(0)
    for t in (split, 1 - split):
        high = -mpmath.expm1(-t * epsilon) / -mpmath.expm1(-epsilon)  # P(high loss)
        total = mpmath.mpf(0)
        for j in range(count + 1):
            loss = j * (1 - t) * epsilon - (count - j) * t * epsilon
            if loss > x:
                weight = mpmath.binomial(count, j) * high**j * (1 - high) ** (count - j)
                total += weight * -mpmath.expm1(x - loss)
        worst = max(worst, total)
    return worst


def two_candidate_reference(params, count, eps):
    """``count`` runs of a two-candidate selection (leads ``d`` against ``d + 2``), the worse
    direction: the trailing candidate, ``x`` noise scales behind, wins with probability
    ``e^-x / 2`` (exponential noise) or ``e^-x (1 + x/2) / 2`` (Laplace noise)."""
    epsilon, noise, lead = params
    e, x = mpmath.mpf(epsilon), mpmath.mpf(eps)

    def first_wins(d):
        gap = e * abs(mpmath.mpf(d)) / 2
        tail = mpmath.exp(-gap) / 2 * (1 + gap / 2 if noise == "laplace" else 1)
        return 1 - tail if d >= 0 else tail

    p, q = first_wins(lead + 2), first_wins(lead)
    worst = mpmath.mpf(0)
    for a, b in ((p, q), (q, p)):
        total = mpmath.mpf(0)
        for j in range(count + 1):  # j runs release the first candidate
            first = a**j * (1 - a) ** (count - j)
            second = b**j * (1 - b) ** (count - j)
            total += mpmath.binomial(count, j) * max(first - mpmath.exp(x) * second, 0)
        worst = max(worst, total)
    return worst


def repeat_and_select_reference(params, count, eps):
    """Random stopping over randomized response ``RR_eps0``: the best-of-``K`` output law is
    ``A(y) = f(F_<=(y)) - f(F_<(y))`` in score order, ``f(x) = E[x^K]``; the worst of both
    strict score orders, a score tying both outputs (then the first run, or any run, is
    released: the base's law) and both directions (``K = 0`` has the same mass on both sides
    and adds nothing at ``eps >= 0``)."""
    epsilon0, mean, law = params
    assert count == 1
    mu = mpmath.mpf(mean)
    if law == "poisson":
        def pgf(x):
            return mpmath.exp(mu * (x - 1))
    else:  # geometric: P(K = k) = gamma (1 - gamma)^(k - 1), mean 1 / gamma
        gamma = 1 / mu

        def pgf(x):
            return gamma * x / (1 - (1 - gamma) * x)
    high = mpmath.exp(mpmath.mpf(epsilon0)) / (1 + mpmath.exp(mpmath.mpf(epsilon0)))
    p, q = [high, 1 - high], [1 - high, high]
    e = mpmath.exp(mpmath.mpf(eps))
    worst = max(mpmath.fsum(max(x - e * z, 0) for x, z in zip(a, b, strict=True))
                for a, b in ((p, q), (q, p)))  # the tie: the base itself
    for order in ((0, 1), (1, 0)):
        laws = []
        for base in (p, q):
            out, below = [0, 0], mpmath.mpf(0)
            for y in order:
                out[y] = pgf(below + base[y]) - pgf(below)
                below += base[y]
            laws.append(out)
        for a, b in (laws, laws[::-1]):
            worst = max(worst, mpmath.fsum(max(x - e * z, 0) for x, z in zip(a, b, strict=True)))
    return worst


def _largest_coordinate(pdf, cdf, shift, steps):
    """Density of the largest of ``steps`` coordinates, one of them shifted by ``shift``."""

    def density(y):
        return (pdf(y - shift) * cdf(y) ** (steps - 1)
                + (steps - 1) * cdf(y - shift) * cdf(y) ** (steps - 2) * pdf(y))

    return density


def _shuffled_opposite_reference(pdf, cdf, params, count, eps):
    """The lower pair of a shuffled epoch with the other records at -C: the largest batch sum,
    one random batch shifted by 2C (P) or C (Q), in units of the noise scale; its loss
    increases in y (plda.epochs.max_shift_pair)."""
    scale, steps = params
    assert count == 1
    shift = 1 / mpmath.mpf(scale)
    p = _largest_coordinate(pdf, cdf, 2 * shift, steps)
    q = _largest_coordinate(pdf, cdf, shift, steps)
    ratio = lambda x: mpmath.log(p(x)) - mpmath.log(q(x))  # noqa: E731
    return _worse_direction(p, q, ratio, eps, [0, shift, 2 * shift])


def _laplace_unit_cdf(z):
    return mpmath.exp(z) / 2 if z < 0 else 1 - mpmath.exp(-z) / 2


def shuffled_opposite_gaussian_reference(params, count, eps):
    return _shuffled_opposite_reference(mpmath.npdf, mpmath.ncdf, params, count, eps)


def shuffled_opposite_laplace_reference(params, count, eps):
    return _shuffled_opposite_reference(lambda z: mpmath.exp(-abs(z)) / 2, _laplace_unit_cdf,
                                        params, count, eps)


def _shuffled_opposite(base):
    from plda.epochs.shuffled import ShuffledOppositeLowerBound

    return lambda p: ShuffledOppositeLowerBound(base(p[0]), p[1])


def _randomized_response_points(params):
    """Points on each linear piece of ``f_(eps, delta)``, and ``(1, 0)``."""
    e, d = params
    corner = (1 - d) / (1 + math.exp(e))
    alpha = np.array([0.0, corner / 2, corner, (corner + 1 - d) / 2, 1 - d, 1.0])
    beta = np.maximum.reduce([np.zeros(6), 1 - d - math.exp(e) * alpha,
                              math.exp(-e) * (1 - d - alpha)])
    return alpha, beta


def randomized_response_curve(params):
    """A one-way ``TradeoffCurve`` through points on each piece of ``f_(eps, delta)``: its
    pessimistic curve is ``f`` itself, the pair ``ApproximateDP(eps, delta)``'s, up to the
    rounding of the points."""
    alpha, beta = _randomized_response_points(params)
    return plda.TradeoffCurve(alpha=alpha[:-1], beta=beta[:-1], symmetric=False)


def curve_reference(params, count, eps):
    """The pair of the polyline through the float points, exactly: a convex curve through
    them, so the worst case is at least it (the realized lower pair is this one, raised)."""
    alpha, beta = _randomized_response_points(params)
    return max(polyline_delta(alpha, beta, count, eps),
               polyline_delta(alpha, beta, count, eps, reverse=True))


def profile_reference(params, count, eps):
    return profile_delta(*params, count, eps)


def zcdp_reference(rho, count, eps):
    """The worst rho-zCDP step plda can exhibit, the Gaussian: the upper bound must hold it,
    the lower bound is certified through it."""
    return gaussian_reference(1 / mpmath.sqrt(2 * mpmath.mpf(rho)), count, eps)


def renyi_reference(params, count, eps):
    """The largest Gaussian within the Rényi bounds (``mu^2 = min 2 eps_alpha / alpha``)."""
    mu2 = min(2 * mpmath.mpf(e) / a for a, e in zip(*params, strict=True))
    return gaussian_reference(1 / mpmath.sqrt(mu2), count, eps)


@dataclass(frozen=True)
class Family:
    name: str
    make: Callable  # parameter -> mechanism
    reference: Callable  # (parameter, count, eps) -> exact delta (mpmath)
    cases: tuple  # (parameter, count) pairs at the extremes of the supported ranges
    epsilons: tuple = (0.0, 0.5, 2.0, 8.0)


FAMILIES = [
    Family("gaussian", plda.Gaussian, gaussian_reference,
           ((0.05, 1), (1.0, 1000), (1.0, 10**9), (1e4, 1), (1.0, 1600)),
           (0.0, 1.0, 5.0, 700.0, 760.0, 1e5)),
    Family("laplace", lambda b: plda.Laplace(scale=b), laplace_reference,
           ((0.01, 1), (1.0, 1), (1 / 700, 1), (1e3, 1)), (0.0, 0.5, 99.0, 699.0)),
    Family("discrete_laplace", lambda t: plda.DiscreteLaplace(parameter=t),
           discrete_laplace_reference, ((0.5, 1), (2.0, 50), (0.01, 200))),
    Family("discrete_gaussian", lambda s: plda.DiscreteGaussian(sigma=s),
           discrete_gaussian_reference, ((0.5, 1), (3.0, 20), (50.0, 1))),
    Family("approximate_dp", lambda p: plda.ApproximateDP(*p), approximate_dp_reference,
           (((1.0, 1e-300), 2), ((0.1, 1e-12), 100), ((0.5, 0.1), 5), ((3.0, 0.0), 40)),
           (0.0, 0.3, 3.0, 200.0)),
    Family("poisson_gaussian", lambda p: plda.PoissonSampled(plda.Gaussian(p[0]), p[1]),
           sampled_gaussian_reference, (((1.0, 0.01), 1), ((0.5, 0.5), 1), ((5.0, 1.0), 1))),
    Family("gaussian_mixture", lambda p: plda.GaussianMixture(*p), gaussian_mixture_reference,
           (((0.8, (0, 1, 2, 3, 4), (0.81450625, 0.171475, 0.0135375, 0.000475, 6.25e-06)), 1),
            ((0.05, (0, 1), (0.98, 0.02)), 1), ((0.5, (0.3, 1.7), (0.5, 0.5)), 1),
            ((4.0, (0, 1, 2, 8), (0.5, 0.3, 0.19, 0.01)), 1)),
           (0.0, 0.5, 2.0, 8.0, 40.0)),
    # a group of K records each Poisson-sampled (issue 26): sum_k Bin(k; K, q) N(k) vs N(0)
    Family("poisson_group",
           lambda p: plda.PoissonSampled(plda.Gaussian(p[0]), p[1], group_size=p[2]),
           poisson_group_reference,
           (((1.0, 0.01, 4), 1), ((0.5, 0.3, 3), 1), ((3.0, 0.9, 16), 1), ((0.8, 1e-4, 32), 1)),
           (0.0, 0.5, 2.0, 8.0, 40.0)),
    Family("independent_records",
           lambda p: plda.GaussianMixture.independent_records(p[0], p[1]),
           independent_records_reference,
           (((1.0, (0.01, 0.05, 0.2)), 1), ((0.7, (0.5,) * 5 + (0.01,)), 1)),
           (0.0, 0.5, 2.0, 8.0)),
    # k-ary randomized response, a replace-one pair (dp_accounting's RandomizedResponseDpEvent)
    Family("randomized_response", lambda p: plda.RandomizedResponse(*p).under_replace_one(),
           randomized_response_reference,
           (((0.5, 4), 1), ((0.5, 4), 3), ((1e-6, 2), 1), ((0.9, 100), 10), ((1.0, 3), 2),
            ((0.01, 10**6), 2)),
           (0.0, 0.1, 1.0, 4.0, 14.0)),
    # a replace-one pair of two mixtures (issue 26), read under replace-one
    Family("double_mixture", lambda p: plda.GaussianDoubleMixture(*p).under_replace_one(),
           double_mixture_reference,
           (((0.8, (0.5, 2), (0.3, 0.7), (0, 1), (0.9, 0.1)), 1),
            ((1.0, (0, 1), (0.95, 0.05), (0, 1), (0.95, 0.05)), 1),
            ((2.0, (0, 1, 2, 3), (0.7, 0.2, 0.05, 0.05), (0, 4), (0.99, 0.01)), 1)),
           (0.0, 0.5, 2.0, 8.0)),
    # the exponential mechanism (issue 29): its upper law, and the realized two-point pairs
    Family("bounded_range_law",
           lambda e: plda.CustomMechanism(remove=BoundedRangeLaw(epsilon=e)),
           bounded_range_law_reference, ((1e-6, 1), (0.1, 1), (1.0, 1), (20.0, 1), (500.0, 1)),
           (0.0, 1e-7, 0.05, 0.5, 2.0, 8.0, 300.0)),
    Family("bounded_range_pair", lambda p: BoundedRangePair(*p), bounded_range_pair_reference,
           (((1.0, 0.5), 1), ((0.1, 0.3), 100), ((2.0, 0.1), 20), ((1e-3, 0.5), 1000)),
           (0.0, 0.05, 0.5, 2.0, 8.0)),
    # groups with a Laplace base (issue 26): sum_k p_k Lap(c_k, b) against Lap(0, b)
    Family("laplace_mixture", lambda p: plda.LaplaceMixture(*p), laplace_mixture_reference,
           (((1.0, (0, 1, 2), (0.81, 0.18, 0.01)), 1), ((0.5, (0, 1), (0.99, 0.01)), 1),
            ((2.0, (0.5, 1.7), (0.5, 0.5)), 1), ((0.01, (0, 1, 2, 3), (0.7, 0.2, 0.05, 0.05)), 1)),
           (0.0, 0.05, 0.2, 0.5, 2.0, 8.0, 250.0)),
    Family("poisson_laplace_group",
           lambda p: plda.PoissonSampled(plda.Laplace(p[0]), p[1], group_size=p[2]),
           poisson_laplace_group_reference,
           (((1.0, 0.01, 4), 1), ((0.5, 0.3, 3), 1), ((3.0, 0.9, 16), 1), ((0.2, 1e-4, 32), 1)),
           (0.0, 0.5, 2.0, 8.0, 40.0)),
    # tuning by random stopping (issue 29): its certified bound on an exactly enumerable base
    Family("repeat_and_select",
           lambda p: plda.RepeatAndSelect(plda.ApproximateDP(p[0]), p[1], p[2]),
           repeat_and_select_reference,
           (((1.0, 5.0, "geometric"), 1), ((0.5, 3.0, "poisson"), 1)),
           (0.0, 0.5, 1.5, 3.0)),
    # permute-and-flip and report-noisy-max (issue 29): the realized two-candidate pairs
    Family("two_candidate_pair", lambda p: TwoCandidatePair(*p), two_candidate_reference,
           (((1.0, "exponential", -1.0), 1), ((0.1, "laplace", -2.0), 100),
            ((2.0, "exponential", -3.0), 20), ((1e-3, "laplace", -1.0), 1000)),
           (0.0, 0.05, 0.5, 2.0, 8.0)),
    Family("poisson_laplace", lambda p: plda.PoissonSampled(plda.Laplace(scale=p[0]), p[1]),
           sampled_laplace_reference, (((1.0, 0.1), 1), ((0.1, 0.01), 1))),
    # one step of the symmetrized pair has the profile of the worse direction (issue 24)
    Family("symmetrized_gaussian",
           lambda p: SymmetrizedPoissonSampled(plda.Gaussian(p[0]), p[1]),
           sampled_gaussian_reference, (((1.0, 0.01), 1), ((0.5, 0.5), 1), ((0.3, 0.9), 1))),
    Family("symmetrized_laplace",
           lambda p: SymmetrizedPoissonSampled(plda.Laplace(scale=p[0]), p[1]),
           sampled_laplace_reference, (((1.0, 0.1), 1), ((0.1, 0.01), 1))),
    Family("shuffled_opposite_gaussian", _shuffled_opposite(plda.Gaussian),
           shuffled_opposite_gaussian_reference,
           (((1.0, 195), 1), ((0.5, 10**4), 1), ((5.0, 2), 1))),
    # imported guarantees (issue 29): the tight pair of a profile, the Gaussian pair of GDP, the
    # polygon of a randomized response as a curve, and zCDP / RDP against their Gaussian
    Family("privacy_profile", lambda p: plda.PrivacyProfile(epsilons=p[0], deltas=p[1]),
           profile_reference,
           ((((0.5, 1.0, 2.0), (1e-2, 1e-4, 1e-8)), 1), (((0.5, 1.0, 2.0), (1e-2, 1e-4, 1e-8)), 3),
            (((0.0, 3.0), (0.3, 0.0)), 4), (((0.1,), (1e-12,)), 40))),
    Family("gaussian_dp", lambda mu: plda.GaussianDP(mu=mu), lambda mu, k, e:
           gaussian_reference(1 / mpmath.mpf(mu), k, e),
           ((1.0, 1), (0.5, 100), (20.0, 1), (1e-3, 10**6)), (0.0, 1.0, 5.0, 700.0)),
    Family("tradeoff_curve", randomized_response_curve, curve_reference,
           (((1.0, 1e-3), 1), ((0.5, 0.0), 4), ((3.0, 1e-9), 2)), (0.0, 0.3, 3.0, 8.0)),
    Family("zcdp", lambda rho: plda.ZCDP(rho=rho), zcdp_reference,
           ((0.125, 1), (0.005, 100), (2.0, 1)), (0.0, 0.5, 2.0, 8.0)),
    Family("renyi_dp", lambda p: plda.RenyiDP(orders=p[0], epsilons=p[1]), renyi_reference,
           ((((2.0, 4.0, 8.0, 16.0, 32.0), (0.2, 0.4, 0.8, 1.6, 3.2)), 1),
            (((1.5, 3.0, 10.0), (0.5, 0.6, 2.0)), 3))),
    Family("shuffled_opposite_laplace", _shuffled_opposite(lambda b: plda.Laplace(scale=b)),
           shuffled_opposite_laplace_reference, (((0.2, 3), 1),)),
]

CASES = [
    pytest.param(family, parameter, count, id=f"{family.name}-{parameter}-{count}")
    for family in FAMILIES
    for parameter, count in family.cases
]
DELTAS = (1e-2, 1e-5, 1e-10, 1e-300)


def _quietly(function, *args, allow_accuracy_warning=False):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if allow_accuracy_warning:
            warnings.simplefilter("ignore", plda.AccuracyWarning)
        return function(*args)


@pytest.mark.parametrize(("family", "parameter", "count"), CASES)
def test_delta_bounds_bracket_the_exact_value(family, parameter, count):
    pld = plda.PrivacyLossDistribution.from_mechanism(family.make(parameter), count)
    eps = np.array(family.epsilons)
    # where neither interval meets the accuracy (atoms, steep profiles) it says so (documented)
    bounds = _quietly(pld.delta_bounds, eps, allow_accuracy_warning=True)
    assert not np.any(np.isnan(bounds.lower)) and not np.any(np.isnan(bounds.upper))
    # non-increasing in eps (the lower bound up to its floating-point error terms)
    assert np.all(np.diff(bounds.upper) <= 0) and np.all(np.diff(bounds.lower) <= 1e-12)
    with mpmath.workdps(DPS):
        for e, lower, upper in zip(eps, bounds.lower, bounds.upper, strict=True):
            exact = family.reference(parameter, count, float(e))
            assert lower <= exact <= upper, (float(e), lower, float(exact), upper)


@pytest.mark.parametrize(("family", "parameter", "count"), CASES)
def test_epsilon_bounds_bracket_the_exact_value(family, parameter, count):
    pld = plda.PrivacyLossDistribution.from_mechanism(family.make(parameter), count)
    for delta in DELTAS:
        # below the FFT's resolution (~1e-10) the gap may open, with a warning (documented)
        bounds = _quietly(pld.epsilon_bounds, delta, allow_accuracy_warning=delta <= 1e-10)
        assert 0 <= bounds.lower <= bounds.upper and not math.isnan(bounds.upper)
        with mpmath.workdps(DPS):
            if math.isfinite(bounds.upper):  # the exact delta there is at most delta
                assert family.reference(parameter, count, bounds.upper) <= delta
            if bounds.lower > 0:  # and at the lower bound at least delta
                assert family.reference(parameter, count, bounds.lower) >= delta
    many = _quietly(pld.epsilon_bounds, np.array(DELTAS), allow_accuracy_warning=True)
    # a smaller delta never gets a smaller epsilon
    assert all(a <= b for a, b in zip(many.upper[:-1], many.upper[1:], strict=True))


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_epsilon_grows_with_the_count(family):
    parameter = family.cases[0][0]
    mechanism = family.make(parameter)
    uppers = [
        _quietly(plda.PrivacyLossDistribution.from_mechanism(mechanism, k).epsilon, 1e-5)
        for k in (1, 4, 16)
    ]
    assert uppers == sorted(uppers)


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_density_in_pieces_is_the_density_pointwise(family):
    # continuous_pdf evaluates an array longer than PIECE piece by piece (the pieces cut across
    # the rows of the cell quadrature's nodes-by-cells array): every family's density must be
    # pointwise, and the pieces put back in place
    mechanism = family.make(family.cases[0][0])
    for direction in ("remove", "add"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            law = mechanism.privacy_loss(direction)
        if not (law.has_continuous_part and law.has_density):
            continue
        lo, hi = law.tail_points(1e-12)
        width = PIECE // 2 + 3  # each row one piece, the whole three-plus pieces
        points = np.linspace(lo, hi, 6 * width).reshape(6, width)
        for hypothesis in ("P", "Q"):
            whole = law.continuous_pdf(points, hypothesis)
            rows = np.stack([law.continuous_pdf(row, hypothesis) for row in points])
            assert whole.shape == points.shape
            # the same points, so the same values (a tolerance of a few roundings only for a
            # vectorized math library that rounds an array's last lanes differently)
            np.testing.assert_allclose(whole, rows, rtol=1e-13, atol=0)
