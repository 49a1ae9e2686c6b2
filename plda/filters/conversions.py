"""Conversions between the filters' currencies: ρ-zCDP and μ-GDP to (ε, δ)-DP, and ε-DP to μ-GDP.

Every conversion is certified: the returned ε is never below the true one (and the returned μ of
:func:`largest_gaussian_dp_mu` never above the largest valid one).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from plda._internal import validation as check
from plda.filters.amounts import SAFETY, amount, delta_budget, round_up


def epsilon_of_zcdp(rho: float, delta: float) -> float:
    """Certified ε such that ρ-zCDP implies (ε, δ)-DP.

    ``min over α > 1 of αρ + log(1 - 1/α) - (log δ + log α) / (α - 1)`` (the RDP-to-DP conversion
    of Canonne, Kamath & Steinke 2020, Prop. 12; Asoodeh et al. 2021), never above Bun & Steinke's
    ``ρ + 2 sqrt(ρ log(1/δ))``. Any α gives a valid bound, so the optimizer cannot make it unsafe.
    """
    rho = amount("rho", rho)
    delta = delta_budget("delta", delta, low_open=True)
    if rho == 0:
        return 0.0
    log_delta = math.log(delta)

    def at(t: float) -> float:
        alpha = 1.0 + math.exp(t)  # alpha - 1 = e^t keeps the search well scaled
        return alpha * rho + math.log1p(-1 / alpha) - (log_delta + math.log(alpha)) / (alpha - 1)

    guess = math.log(math.sqrt(-log_delta / rho) + 1e-300)
    found = optimize.minimize_scalar(
        at, bounds=(guess - 8, guess + 8), method="bounded", options={"xatol": 1e-9}
    )
    best = min(at(found.x), rho + 2 * math.sqrt(-rho * log_delta))
    # tiny rho with large delta can give a negative value: no loss beyond 0 is the bound then
    return max(round_up(best) * (1 + SAFETY), 0.0)


def gaussian_dp_delta(mu: float, epsilon: float) -> float:
    """δ(ε) of μ-GDP: ``Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)`` (Dong, Roth & Su 2022, Cor. 2.13),
    evaluated in log space so the difference keeps its digits."""
    a = special.log_ndtr(-epsilon / mu + mu / 2)
    b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    return float(-np.exp(a) * np.expm1(b - a))


def epsilon_of_gaussian_dp(mu: float, delta: float) -> float:
    """Certified smallest ε such that μ-GDP implies (ε, δ)-DP (Dong, Roth & Su 2022, Cor. 2.13)."""
    mu = check.positive_float("mu", mu)
    delta = delta_budget("delta", delta, low_open=True)
    lo, hi = 0.0, max(1.0, mu * mu)
    while gaussian_dp_delta(mu, hi) > delta * (1 - 1e-9):
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if gaussian_dp_delta(mu, mid) <= delta * (1 - 1e-9):
            hi = mid
        else:
            lo = mid
    return hi


def largest_gaussian_dp_mu(epsilon: float, delta: float) -> float:
    """Largest μ such that μ-GDP implies (ε, δ)-DP (δ(ε) of μ-GDP grows with μ)."""
    lo, hi = 0.0, 1.0
    while gaussian_dp_delta(hi, epsilon) <= delta * (1 - 1e-9):
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if gaussian_dp_delta(mid, epsilon) <= delta * (1 - 1e-9):
            lo = mid
        else:
            hi = mid
    return lo


def gaussian_dp_of_pure_dp(epsilon: float) -> float:
    """Smallest μ such that every ε-DP mechanism is μ-GDP: ``μ = 2 Φ⁻¹(e^ε / (1 + e^ε))``.

    ε-DP is f-DP for ``f(α) = max(0, 1 - e^ε α, e^-ε (1 - α))`` (Dong, Roth & Su 2022); the
    convex ``G_μ`` lies below this piecewise-linear ``f`` iff it does at the kink
    ``α* = 1/(1 + e^ε)``, which gives the formula. Written as ``2 sqrt(2) erfinv(tanh(ε/2))``
    so small ε keep their relative precision (``-2 Φ⁻¹(1/(1 + e^ε))`` for ε >= 1); ``inf`` beyond
    ε ≈ 745, where no finite μ is representable.
    """
    epsilon = amount("epsilon", epsilon)
    if epsilon < 1:
        return round_up(2 * math.sqrt(2) * float(special.erfinv(math.tanh(epsilon / 2))))
    # 2 Φ⁻¹(1 - 1/(1 + e^ε)) = -2 Φ⁻¹(expit(-ε)): the tail form stays finite up to ε ≈ 745
    return round_up(-2 * float(special.ndtri(special.expit(-epsilon))))


# ================================================================== filters
