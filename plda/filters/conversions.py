"""Conversions between the filters' currencies: ρ-zCDP and μ-GDP to (ε, δ)-DP, and ε-DP to μ-GDP.

Every conversion is certified: a returned ε is never below the true one, and the μ of
:func:`largest_gaussian_dp_mu` never above the largest valid one.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special

from plda._internal import validation as check
from plda.filters.amounts import SAFETY, amount, delta_budget, round_up


def epsilon_of_zcdp(rho: float, delta: float) -> float:
    """Certified ε such that ρ-zCDP implies (ε, δ)-DP.

    ``min over α > 1 of αρ + log(1 - 1/α) - (log δ + log α) / (α - 1)`` (Canonne, Kamath &
    Steinke 2020, Prop. 12; Asoodeh et al. 2021), never above Bun & Steinke's ``ρ + 2 sqrt(ρ
    log(1/δ))``. Any α gives a valid bound, so the optimizer cannot make it unsafe.

    Parameters
    ----------
    rho : float
        The zCDP parameter, ``>= 0``.
    delta : float
        The target δ, in (0, 1).

    Returns
    -------
    float
        ε, rounded up, at least 0.

    Raises
    ------
    ValueError
        If a value is out of range.
    TypeError
        If a value is not a real number.
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
    """δ(ε) of μ-GDP: ``Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)`` (Dong, Roth & Su 2022, Cor. 2.13).

    Evaluated in log space, so the difference keeps its digits. Arguments are not checked.

    Parameters
    ----------
    mu : float
        The GDP parameter, > 0.
    epsilon : float
        Where δ is read, ``>= 0``.

    Returns
    -------
    float
        δ(ε).
    """
    a = special.log_ndtr(-epsilon / mu + mu / 2)
    b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    return float(-np.exp(a) * np.expm1(b - a))


def epsilon_of_gaussian_dp(mu: float, delta: float) -> float:
    """Certified smallest ε such that μ-GDP implies (ε, δ)-DP (Dong, Roth & Su 2022, Cor. 2.13).

    Parameters
    ----------
    mu : float
        The GDP parameter, > 0.
    delta : float
        The target δ, in (0, 1).

    Returns
    -------
    float
        ε, found by bisection on :func:`gaussian_dp_delta` and rounded up (the top of the
        bracket).

    Raises
    ------
    ValueError
        If a value is out of range.
    TypeError
        If a value is not a real number.
    """
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
    """Largest μ such that μ-GDP implies (ε, δ)-DP (δ(ε) of μ-GDP grows with μ).

    Arguments are not checked (callers pass checked budgets).

    Parameters
    ----------
    epsilon : float
        The target ε, > 0.
    delta : float
        The target δ, in (0, 1).

    Returns
    -------
    float
        μ, found by bisection and rounded down (the bottom of the bracket).
    """
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

    The convex ``G_μ`` lies below the tradeoff curve of ε-DP if and only if it does at the kink
    ``1/(1 + e^ε)`` (Dong, Roth & Su 2022; see ``docs/filters.md``, ``GaussianFilter``).

    Parameters
    ----------
    epsilon : float
        The pure-DP ε, ``>= 0``.

    Returns
    -------
    float
        μ, rounded up; ``inf`` beyond ε ≈ 745, where no finite μ is representable.

    Raises
    ------
    ValueError
        If ``epsilon`` is negative or not finite.
    TypeError
        If it is not a real number.
    """
    # 2 sqrt(2) erfinv(tanh(ε/2)) keeps the relative precision of small ε; -2 Φ⁻¹(1/(1 + e^ε))
    # is used for ε >= 1
    epsilon = amount("epsilon", epsilon)
    if epsilon < 1:
        return round_up(2 * math.sqrt(2) * float(special.erfinv(math.tanh(epsilon / 2))))
    # 2 Φ⁻¹(1 - 1/(1 + e^ε)) = -2 Φ⁻¹(expit(-ε)): the tail form stays finite up to ε ≈ 745
    return round_up(-2 * float(special.ndtri(special.expit(-epsilon))))


# ================================================================== filters
