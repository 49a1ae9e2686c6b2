"""Conversions between the filters' currencies: ρ-zCDP and μ-GDP to (ε, δ)-DP, and ε-DP to μ-GDP.

Every conversion is certified: a returned ε is never below the true one, and the μ of
:func:`largest_gaussian_dp_mu` never above the largest valid one.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

import numpy as np
from scipy import optimize, special

from plda._internal import validation as check
from plda._internal.floats import UNIT_ROUNDOFF
from plda.filters.amounts import SAFETY, amount, delta_budget, largest_float_where, round_up


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

    def terms(t: float) -> tuple[float, float]:
        """The bound at alpha = 1 + e^t, and the sum of its terms' magnitudes (for its
        rounding error: a few units of 2^-53 of that sum)."""
        t = float(t)
        w = math.exp(t)  # alpha - 1 = e^t keeps the search well scaled
        if w >= 1e-3:  # 1 - 1/alpha keeps all but 1e-13 of its digits: the direct form
            alpha = 1.0 + w
            log_alpha = math.log(alpha)
            first, second = alpha * rho, math.log1p(-1 / alpha)
            tail = (log_delta + log_alpha) / (alpha - 1)
            spread = (abs(log_delta) + log_alpha + 1) / (alpha - 1)
        else:
            # for a huge rho, w ~ 1e-154 and 1 + w rounds to 1 (log1p(-1) was a domain
            # error): every term from w, log(1 - 1/alpha) = t - log1p(w), log(alpha) = log1p(w)
            log_alpha = math.log1p(w)
            first, second = rho + w * rho, t - log_alpha
            tail = (log_delta + log_alpha) / w
            spread = abs(t) + (abs(log_delta) + log_alpha + 1) / w
        value = first + second - tail
        return value, abs(first) + abs(second) + abs(tail) + spread

    guess = math.log(math.sqrt(-log_delta / rho) + 1e-300)
    if guess == math.inf:  # -log δ / ρ overflows for a subnormal ρ: the same, from the logs
        guess = 0.5 * (math.log(-log_delta) - math.log(rho))
    found = optimize.minimize_scalar(
        lambda t: terms(t)[0],
        bounds=(guess - 8, guess + 8),
        method="bounded",
        options={"xatol": 1e-9},
    )
    value, magnitude = terms(found.x)
    # SAFETY covers a relative rounding error; where the terms cancel (a tiny rho against a
    # large delta: the bound near 0, its terms near 1e-6), 16 units of 2^-53 of their
    # magnitudes are added instead, so the rounding never lowers the bound
    slack = 16 * UNIT_ROUNDOFF * magnitude
    if slack > 0.5 * SAFETY * abs(value):
        value += slack
    best = min(value, rho + 2 * math.sqrt(-rho * log_delta))
    # tiny rho with large delta can give a negative value: no loss beyond 0 is the bound then
    return max(round_up(best) * (1 + SAFETY), 0.0)


#: below this ratio of step to point, erfcx(x) - erfcx(x + h) is integrated, not subtracted
_SHORT = 0.5
#: Gauss-Legendre rule for the integral of -erfcx' over a short interval: its error is about
#: pi n (h / 4x)^(2n), far below 1e-16 with n = 12 and h <= x / 2 (and for x < 1, h < 1/2)
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(12)
_TWO_OVER_ROOT_PI = 2 / math.sqrt(math.pi)


def _erfcx_slope(t: float) -> float:
    """``-erfcx'(t) = 2/sqrt(pi) - 2 t erfcx(t) > 0`` for ``t >= 0``, to a few ulps.

    The difference cancels by a factor ``2t^2``; from ``t = 8`` on, the asymptotic series of
    ``1 - sqrt(pi) t erfcx(t) = sum_n (-1)^(n+1) (2n-1)!! / (2t^2)^n`` is used instead (its
    terms shrink by ``(2n+1) / 2t^2 <= 1/3`` up to n = 20, the last below 1e-17 of the first).
    """
    if t < 8:
        return _TWO_OVER_ROOT_PI - 2 * t * float(special.erfcx(t))
    x = 1 / (2 * t * t)
    term, total = x, 0.0
    for n in range(1, 21):
        total += term if n % 2 else -term
        term *= (2 * n + 1) * x
    return _TWO_OVER_ROOT_PI * total


def _erfcx_drop(x: float, h: float) -> tuple[float, float]:
    """``erfcx(x) - erfcx(x + h) > 0`` for ``x >= 0``, ``h > 0``, to a relative ~1e-14, as a
    product ``scale * value`` of two floats (the product alone may underflow).

    Subtracted when ``h`` is not short next to ``max(x, 1)`` (the difference then keeps all but
    a factor ``(2x + h)/h <= 5`` of its digits); else the integral of the slope over
    ``[x, x + h]``, whose integrand is positive.
    """
    if h >= _SHORT * max(x, 1.0):
        return 1.0, float(special.erfcx(x)) - float(special.erfcx(x + h))
    half = h / 2
    return half, math.fsum(
        w * _erfcx_slope(x + half * (1 + node)) for node, w in zip(_NODES, _WEIGHTS, strict=True)
    )


def log_gaussian_dp_delta(mu: float, epsilon: float) -> float:
    """``log δ(ε)`` of μ-GDP (Dong, Roth & Su 2022, Cor. 2.13), with no cancellation or overflow.

    ``δ = Φ(-u) - e^ε Φ(-v)``, ``u = ε/μ - μ/2``, ``v = u + μ``. Since ``v² - u² = 2ε``,
    ``e^ε Φ(-v) = ½ e^{-u²/2} erfcx(v/√2)``: the huge ``e^ε`` never appears. For ``u >= 0``,
    ``δ = ½ e^{-u²/2} (erfcx(u/√2) - erfcx(v/√2))``; for ``u < 0``,
    ``δ = ½ erf(|u|/√2) + ½ [(1 - erfcx(v/√2)) - erfcx(v/√2) expm1(-u²/2)]``, a sum of
    non-negative terms. ``u`` and ``v`` are formed exactly from the two floats, then rounded
    once. Relative error about ``u² 2^-53`` plus 1e-14 (checked against mpmath in the tests).
    Arguments are not checked.

    Parameters
    ----------
    mu : float
        The GDP parameter, a finite float > 0.
    epsilon : float
        Where δ is read, a finite float ``>= 0``.

    Returns
    -------
    float
        ``log δ(ε)``, ``-inf`` where δ is 0 to far below the smallest float.
    """
    ratio = Fraction(epsilon) / Fraction(mu)
    half = Fraction(mu) / 2
    u_exact = ratio - half
    if u_exact > 1e300:  # -u²/2 is -inf to double precision
        return -math.inf
    if u_exact < -1e300:  # impossible for epsilon >= 0 (u >= -mu/2): kept for safety
        return 0.0
    u = float(u_exact)
    root2 = math.sqrt(2)
    if u >= 0:
        exponent = -0.5 * u * u
        if exponent == -math.inf:
            return -math.inf
        scale, value = _erfcx_drop(u / root2, mu / root2)
        # scale is 1 or h/2 = μ/(2√2); for a subnormal μ its log comes from μ itself
        if scale >= sys.float_info.min:
            log_scale = math.log(scale)
        else:
            log_scale = math.log(mu) - 1.5 * math.log(2)
        return exponent - math.log(2) + log_scale + math.log(value)
    if mu < 1e-150:
        # -μ/2 <= u < 0: every term below is linear in μ to a relative O(μ²); their sum is
        # δ = μ/√(2π) (erf z ≈ 2z/√π, 1 - erfcx(y) ≈ 2y/√π, |u| + v = μ), also for subnormal μ
        return math.log(mu) - 0.5 * math.log(2 * math.pi)
    y = float(ratio + half) / root2  # v/√2 > 0
    tail = math.prod(_erfcx_drop(0.0, y))  # 1 - erfcx(y), without cancellation for small y
    body = float(special.erfcx(y)) * -math.expm1(-0.5 * u * u)
    return math.log(0.5 * float(special.erf(-u / root2)) + 0.5 * (tail + body))


def gaussian_dp_delta(mu: float, epsilon: float) -> float:
    """δ(ε) of μ-GDP: ``Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)`` (Dong, Roth & Su 2022, Cor. 2.13).

    ``exp`` of :func:`log_gaussian_dp_delta` (see there how it is computed): never NaN,
    accurate for every finite μ > 0 and ε >= 0. Arguments are not checked.

    Parameters
    ----------
    mu : float
        The GDP parameter, > 0.
    epsilon : float
        Where δ is read, ``>= 0``.

    Returns
    -------
    float
        δ(ε), in [0, 1].
    """
    return math.exp(log_gaussian_dp_delta(mu, epsilon))


def _gdp_fits(mu: float, epsilon: float, delta: float) -> bool:
    # δ(ε) <= δ (1 - 1e-9): the margin covers the evaluation's relative error (<= 1e-12 where
    # a comparison can be close); compared in log space, so subnormal targets stay exact
    return log_gaussian_dp_delta(mu, epsilon) <= math.log(delta) + math.log1p(-1e-9)


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
        bracket); 0 if ``δ(0) <= delta``; ``inf`` if ε exceeds the largest float (μ above about
        1.9e154).

    Raises
    ------
    ValueError
        If a value is out of range.
    TypeError
        If a value is not a real number.
    """
    mu = check.positive_float("mu", mu)
    delta = delta_budget("delta", delta, low_open=True)
    if _gdp_fits(mu, 0.0, delta):
        return 0.0
    hi = min(max(1.0, mu * mu), sys.float_info.max)
    while not _gdp_fits(mu, hi, delta):
        if hi == sys.float_info.max:
            return math.inf  # no float is a large enough epsilon
        hi = min(2 * hi, sys.float_info.max)
    misses = largest_float_where(lambda e: not _gdp_fits(mu, e, delta), 0.0, hi)
    return math.nextafter(misses, math.inf)


def largest_gaussian_dp_mu(epsilon: float, delta: float) -> float:
    """Largest μ such that μ-GDP implies (ε, δ)-DP (δ(ε) of μ-GDP grows with μ).

    Arguments are not checked (callers pass checked budgets).

    Parameters
    ----------
    epsilon : float
        The target ε, a finite float > 0.
    delta : float
        The target δ, in (0, 1).

    Returns
    -------
    float
        μ, found by bisection on the floats and rounded down (the bottom of the bracket).
    """
    lo, hi = 0.0, 1.0
    while _gdp_fits(hi, epsilon, delta):  # ends: μ-GDP with μ² > 2ε + 2 has δ(ε) > 1/2
        lo, hi = hi, 2 * hi
    return largest_float_where(lambda m: _gdp_fits(m, epsilon, delta), lo, hi)


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
        μ, rounded up; finite for every finite ε (about ``2 sqrt(2ε)`` for large ε).

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
    if epsilon < 1e-100:
        # μ = sqrt(π/2) ε (1 + O(ε²)) from above (tanh(x) <= x, erfinv(x) = √π/2 x (1 + O(x²)));
        # the next float up also covers a subnormal μ, whose relative rounding is coarse
        return math.nextafter(round_up(math.sqrt(math.pi / 2) * epsilon), math.inf)
    if epsilon < 1:
        return round_up(2 * math.sqrt(2) * float(special.erfinv(math.tanh(epsilon / 2))))
    if epsilon < 708:
        # 2 Φ⁻¹(1 - 1/(1 + e^ε)) = -2 Φ⁻¹(expit(-ε)), while expit(-ε) is a normal float
        return round_up(-2 * float(special.ndtri(special.expit(-epsilon))))
    # beyond, expit(-ε) is subnormal (ndtri loses it, then inf): solve log Φ(-z) = -T in log
    # space, T = ε + log1p(e^-ε). With Φ(-z) = ½ e^{-z²/2} erfcx(z/√2) the root is the fixed
    # point of z² = 2 (T + log(erfcx(z/√2) / 2)); the map contracts by about 1/z² <= 1/5600,
    # so six steps from z² = 2T reach it to the last bit. z is then within ~3 units of 2^-53
    # (the sum, the log term's absolute error next to T >= 708, the root), which round_up's
    # 8 units cover.
    total = epsilon + math.log1p(math.exp(-epsilon))
    z = math.sqrt(2) * math.sqrt(total)
    for _ in range(6):
        square_half = total + math.log(0.5 * float(special.erfcx(z / math.sqrt(2))))
        twice = 2 * square_half
        z = math.sqrt(twice) if twice < math.inf else math.sqrt(2) * math.sqrt(square_half)
    return round_up(2 * z)
