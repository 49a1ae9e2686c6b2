"""Exact ``delta(eps)`` of a mixture-of-Gaussians pair in mpmath (shared by the tests of
:class:`plda.GaussianMixture`; not a test module).

The pair is ``P = sum_k w_k N(mu_k, 1)`` against ``Q = N(0, 1)`` with ``mu_k = c_k / sigma``. Its
likelihood ratio is increasing in the output ``y``, so the optimal set of the hockey-stick
divergence is a half-line cut where the loss ``log sum_k w_k e^{mu_k y - mu_k^2/2}`` crosses
``eps`` (remove) or ``-eps`` (add): the crossing is found by bisection to the working precision
and ``delta`` is a sum of normal cdfs there (no quadrature).
"""

from __future__ import annotations

import mpmath


def _ncdf(x):
    # a crossing far out (a shift of 1e-100 flattens the loss for ~1e100) would overflow erfc
    return mpmath.ncdf(x) if abs(x) < 1e6 else mpmath.mpf(x > 0)


def mixture_delta(sigma, sensitivities, probabilities, eps, direction="max"):
    """``delta(eps)`` of the pair, for ``direction`` ``"remove"`` (P against Q), ``"add"``
    (Q against P) or ``"max"`` (the larger), at the current mpmath precision."""
    if direction == "max":
        return max(mixture_delta(sigma, sensitivities, probabilities, eps, d)
                   for d in ("remove", "add"))
    s, eps = mpmath.mpf(sigma), mpmath.mpf(eps)
    total = mpmath.fsum(mpmath.mpf(p) for p in probabilities)
    comps = [(mpmath.mpf(p) / total, mpmath.mpf(c) / s)
             for c, p in zip(sensitivities, probabilities, strict=True) if p > 0]

    def loss(y):
        return mpmath.log(mpmath.fsum(w * mpmath.exp(m * y - m * m / 2) for w, m in comps))

    target = eps if direction == "remove" else -eps
    floor = mpmath.fsum(w for w, m in comps if m == 0)
    if floor > 0 and target <= mpmath.log(floor):
        return mpmath.mpf(0)  # the loss never goes below log w_0 (add direction only)
    lo, hi = mpmath.mpf(-1), mpmath.mpf(1)
    while loss(lo) > target:
        lo *= 2
    while loss(hi) < target:
        hi *= 2
    for _ in range(int(mpmath.mp.prec * 1.2) + 64):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if loss(mid) < target else (lo, mid)
    y = (lo + hi) / 2
    if direction == "remove":
        return (mpmath.fsum(w * _ncdf(m - y) for w, m in comps)
                - mpmath.exp(eps) * _ncdf(-y))
    return _ncdf(y) - mpmath.exp(eps) * mpmath.fsum(w * _ncdf(y - m) for w, m in comps)


def binomial_weights(trials, sample_rate):
    """Exact ``Binomial(trials, sample_rate)`` probabilities in mpmath."""
    q = mpmath.mpf(sample_rate)
    return [mpmath.binomial(trials, k) * q**k * (1 - q) ** (trials - k)
            for k in range(trials + 1)]


def accumulation_delta(noise_multiplier, sample_rate, trials, eps, direction="max"):
    """``delta(eps)`` of gradient accumulation over ``trials`` micro-batches (exact weights)."""
    return mixture_delta(noise_multiplier, range(trials + 1),
                         binomial_weights(trials, sample_rate), eps, direction)


__all__ = ["accumulation_delta", "binomial_weights", "mixture_delta"]


def double_mixture_delta(sigma, sensitivities, probabilities, other_sensitivities,
                         other_probabilities, eps, direction="max"):
    """``delta(eps)`` of ``P = sum_i p_i N(c_i)`` against ``Q = sum_j p'_j N(-c'_j)`` (both
    scaled by ``sigma``), ``"remove"`` (P against Q), ``"add"`` (Q against P) or ``"max"``: the
    loss is increasing in the output, so the optimal set is a half-line found by bisection."""
    if direction == "max":
        return max(double_mixture_delta(sigma, sensitivities, probabilities, other_sensitivities,
                                        other_probabilities, eps, d) for d in ("remove", "add"))
    s, eps = mpmath.mpf(sigma), mpmath.mpf(eps)

    def side(shifts, probs, sign):
        total = mpmath.fsum(mpmath.mpf(p) for p in probs)
        return [(mpmath.mpf(p) / total, sign * mpmath.mpf(c) / s)
                for c, p in zip(shifts, probs, strict=True) if p > 0]

    p_side = side(sensitivities, probabilities, 1)
    q_side = side(other_sensitivities, other_probabilities, -1)

    def log_density(comps, y):
        return mpmath.log(mpmath.fsum(w * mpmath.exp(-(y - m) ** 2 / 2) for w, m in comps))

    def loss(y):
        return log_density(p_side, y) - log_density(q_side, y)

    target = eps if direction == "remove" else -eps
    lo, hi = mpmath.mpf(-1), mpmath.mpf(1)
    while loss(lo) > target:
        lo *= 2
    while loss(hi) < target:
        hi *= 2
    for _ in range(int(mpmath.mp.prec * 1.2) + 64):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if loss(mid) < target else (lo, mid)
    y = (lo + hi) / 2
    if direction == "remove":  # P(L > eps) - e^eps Q(L > eps)
        p_above = mpmath.fsum(w * _ncdf(m - y) for w, m in p_side)
        q_above = mpmath.fsum(w * _ncdf(m - y) for w, m in q_side)
        return p_above - mpmath.exp(eps) * q_above
    # Q(L < -eps) - e^eps P(L < -eps), the masses below y summed directly: as 1 - (mass above)
    # they cancel, and at 60 digits a delta below ~1e-55 was lost (it read 4e-524 for 1e-280)
    q_below = mpmath.fsum(w * _ncdf(y - m) for w, m in q_side)
    p_below = mpmath.fsum(w * _ncdf(y - m) for w, m in p_side)
    return q_below - mpmath.exp(eps) * p_below


def _laplace_sf(y, center):
    """``P(Y > y)`` for ``Y ~ Lap(center, 1)``."""
    z = y - center
    return mpmath.exp(-z) / 2 if z >= 0 else 1 - mpmath.exp(z) / 2


def laplace_mixture_delta(scale, sensitivities, probabilities, eps, direction="max"):
    """``delta(eps)`` of ``P = sum_k w_k Lap(c_k, b)`` against ``Q = Lap(0, b)`` (remove), the
    reverse (add) or the larger. The loss ``log sum_k w_k e^{|y| - |y - u_k|}`` does not
    decrease in ``y`` and is flat below 0 and above ``max u_k``: the optimal set is a half-line
    cut where it crosses ``eps`` (or ``-eps``), found by bisection, or everything, or nothing.
    Written from the definitions, not from plda's segment formulas."""
    if direction == "max":
        return max(laplace_mixture_delta(scale, sensitivities, probabilities, eps, d)
                   for d in ("remove", "add"))
    b, eps = mpmath.mpf(scale), mpmath.mpf(eps)
    total = mpmath.fsum(mpmath.mpf(p) for p in probabilities)
    comps = [(mpmath.mpf(p) / total, mpmath.mpf(c) / b)
             for c, p in zip(sensitivities, probabilities, strict=True) if p > 0]
    top = max(u for _, u in comps)

    def loss(y):
        return mpmath.log(mpmath.fsum(w * mpmath.exp(abs(y) - abs(y - u)) for w, u in comps))

    def tails(y):  # P(Y > y), Q(Y > y)
        return (mpmath.fsum(w * _laplace_sf(y, u) for w, u in comps), _laplace_sf(y, 0))

    e = mpmath.exp(eps)
    low, high = loss(mpmath.mpf(-1)), loss(top + 1)
    target = eps if direction == "remove" else -eps
    if target < low:  # every output's loss is above the target
        return 1 - e if direction == "remove" else mpmath.mpf(0)
    if target >= high:  # none is
        return mpmath.mpf(0) if direction == "remove" else 1 - e
    lo, hi = mpmath.mpf(0), top
    for _ in range(mpmath.mp.prec + 20):  # the cut: loss(y) <= target below it
        mid = (lo + hi) / 2
        if loss(mid) <= target:
            lo = mid
        else:
            hi = mid
    p_above, q_above = tails(hi)
    if direction == "remove":  # {loss > eps} = {Y > cut}
        return max(p_above - e * q_above, 0)
    # add: P' = Q, Q' = P and {-loss > eps} = {loss < -eps} = {Y < cut}
    return max((1 - q_above) - e * (1 - p_above), 0)
