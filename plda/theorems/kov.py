"""The exact optimal k-fold composition of ``(epsilon, delta)``-DP steps (Kairouz, Oh &
Viswanath 2015, Thm. 3.3), evaluated in log space with certified error bounds."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

import numpy as np
from scipy.special import gammaln

from plda._internal.errors import check_bracket
from plda._internal.floats import UNIT_ROUNDOFF
from plda.theorems.common import (
    Guarantee,
    count_value,
    covers_delta_mass,
    delta_value,
    epsilon_value,
    round_up,
    sum_up,
)

#: up to this many steps the budget next to the mass at +inf is computed exactly (rationally)
_EXACT_BUDGET_STEPS = 4096
_MAX_FLOAT = sys.float_info.max


# ----------------------------------------------------------------------------- KOV exact
def _softplus(x: float) -> float:
    """``log(1 + e^x)`` without overflow."""
    return float(np.logaddexp(0.0, x))


def _stirling_error(n: np.ndarray) -> np.ndarray:
    """``log n! - [(n + 1/2) log n - n + log sqrt(2 pi)]`` for integers ``n >= 1``: direct for
    ``n <= 15`` (all terms are small there), the Stirling series beyond (truncation < 1e-17)."""
    n = np.asarray(n, dtype=float)
    out = np.empty_like(n)
    small = n <= 15
    ns = n[small]
    out[small] = gammaln(ns + 1) - (ns + 0.5) * np.log(ns) + ns - 0.5 * math.log(2 * math.pi)
    inv = 1.0 / n[~small]
    inv2 = inv * inv
    out[~small] = inv * (
        1 / 12 - inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 * (1 / 1680 - inv2 / 1188)))
    )
    return out


def _deviance(x: np.ndarray, m: np.ndarray, log_m: np.ndarray) -> np.ndarray:
    """``x log(x/m) + m - x`` (>= 0). Near ``x = m`` the two terms cancel, so there it is summed
    as ``(x - m) v + 2x (v^3/3 + v^5/5 + ...)`` with ``v = (x - m)/(x + m)``, ``|v| < 0.1``."""
    out = np.empty_like(x)
    near = np.abs(x - m) < 0.1 * (x + m)
    xn, mn = x[near], m[near]
    v = (xn - mn) / (xn + mn)
    v2 = v * v
    power = 2 * xn * v
    series = np.zeros_like(v)
    for j in range(1, 16):  # v^2 < 0.01: 15 terms reach 1e-30
        power = power * v2
        series += power / (2 * j + 1)
    out[near] = (xn - mn) * v + series
    far = ~near
    xf = x[far]
    with np.errstate(divide="ignore", invalid="ignore"):
        out[far] = np.where(xf > 0, xf * (np.log(xf) - log_m[far]), 0.0) + m[far] - xf
    return out


def _log_binomial_pmf(i: np.ndarray, k: int, log_p: float) -> tuple[np.ndarray, np.ndarray]:
    """``log[C(k, i) p^i (1-p)^(k-i)]`` and a bound on its absolute rounding error.

    Loader's (2000) saddle-point form: ``stirlerr(k) - stirlerr(i) - stirlerr(k-i) - D(i, kp) -
    D(k-i, kq) + log sqrt(k / (2 pi i (k-i)))``, ``D`` the deviance above. Unlike
    ``gammaln(k+1) - gammaln(i+1) - gammaln(k-i+1)`` (absolute error ~ u k log k, 1e-9 at k=1e6)
    every part is O(result), so the error stays at a few ulps of the result.
    """
    log_q = math.log1p(-math.exp(log_p)) if log_p < -0.7 else math.log(-math.expm1(log_p))
    value = np.empty_like(i)
    error = np.empty_like(i)
    first, last = i == 0, i == k
    value[first] = k * log_q
    value[last] = k * log_p
    middle = ~(first | last)
    im = i[middle]
    p, q = math.exp(log_p), math.exp(log_q)
    log_kp, log_kq = math.log(k) + log_p, math.log(k) + log_q
    dev_p = _deviance(im, np.full_like(im, k * p), np.full_like(im, log_kp))
    dev_q = _deviance(k - im, np.full_like(im, k * q), np.full_like(im, log_kq))
    value[middle] = (
        _stirling_error(np.array([float(k)]))[0]
        - _stirling_error(im)
        - _stirling_error(k - im)
        - dev_p
        - dev_q
        + 0.5 * np.log(k / (2 * math.pi * im * (k - im)))
    )
    # rounding: each part to a few ulps of itself; k p and k q carry a relative error
    # ~u (2 + |log p|), which moves D(x, m) by |x - m| times that
    sensitivity = (np.abs(im - k * p) + np.abs(k - im - k * q)) * (2 + abs(log_p) + abs(log_q))
    error[middle] = 16 * UNIT_ROUNDOFF * (4 + np.abs(value[middle]) + dev_p + dev_q + sensitivity)
    error[first | last] = 16 * UNIT_ROUNDOFF * (1 + np.abs(value[first | last]))
    return value, error


def _logsumexp_bounds(log_terms: np.ndarray) -> tuple[float, float]:
    """``(lower, upper)`` on ``log sum exp(log_terms)`` (``-inf`` for no terms)."""
    if len(log_terms) == 0:
        return -math.inf, -math.inf
    top = float(np.max(log_terms))
    if top == -math.inf:
        return -math.inf, -math.inf
    value = top + math.log(float(np.sum(np.exp(log_terms - top))))
    # shifting by the largest term costs u |max|; a term t off the max enters as exp(t - max),
    # whose rounding (~u |t - max| exp(t - max)) stays below u: summation adds u log2(n)
    err = 8 * UNIT_ROUNDOFF * (abs(value) + abs(top) + math.log2(len(log_terms)) + 4)
    return value - err, value + err


@dataclass(frozen=True)
class _KOVLaw:
    """The k-fold composition of ``RR_(epsilon0, delta0)`` (Kairouz, Oh & Viswanath 2015).

    Under the first hypothesis the privacy loss is ``l_i = (k - 2i) epsilon0`` with probability
    ``(1 - delta0)^k a_i``, ``a_i = C(k, i) e^{(k-i) epsilon0} / (1 + e^epsilon0)^k`` (a binomial
    pmf with success probability ``1/(1 + e^epsilon0)``), and ``+inf`` with probability ``1 - (1 -
    delta0)^k``; under the second, ``l_i`` has probability ``(1 - delta0)^k b_i``, ``b_i = a_i
    e^{-l_i}``. Hence (KOV's Theorem 3.3, in privacy-loss form)

        delta(eps) = 1 - (1 - delta0)^k (1 - delta_RR(eps)),
        delta_RR(eps) = sum_{i: l_i > eps} (a_i - e^eps b_i).

    Only ``i <= k/2`` (``l_i >= 0``) matters for ``eps >= 0``.
    """

    epsilon0: float
    delta0: float
    k: int

    @cached_property
    def _terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``log a_i``, its error bound, and ``l_i`` for ``i = 0..k//2`` (log space)."""
        k, e0 = self.k, self.epsilon0
        i = np.arange(k // 2 + 1, dtype=float)
        # for epsilon0 near 1e308 the largest losses and the error bounds of the far-off terms
        # overflow to inf: a loss beyond every float, a term known only to be <= 1
        with np.errstate(over="ignore"):
            log_a, error = _log_binomial_pmf(i, k, -_softplus(e0))
            return log_a, error, (k - 2.0 * i) * e0

    @cached_property
    def _loss_parts(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``l_i`` as an exact unevaluated sum ``n e_hi + n e_lo`` (``n = k - 2i``): Veltkamp's
        split leaves 26 bits in ``e_hi`` and ``e_lo``, so both products are exact for ``k <
        2^26``. Then ``eps - l_i`` is accurate to a few ulps of itself, even next to a loss.
        ``None`` (rounded products) where the split would overflow: ``epsilon0`` near 1e300 made
        ``e_hi`` NaN, and every loss then counted as below ``eps`` (an optimal delta of 0)."""
        if self.k >= 2**26 or not math.isfinite(4.0 * (2.0**27 + 1) * self.k * self.epsilon0):
            return None
        e0 = self.epsilon0
        scaled = (2.0**27 + 1) * e0
        e_hi = scaled - (scaled - e0)
        e_lo = e0 - e_hi
        n = self.k - 2.0 * np.arange(self.k // 2 + 1, dtype=float)
        return n * e_hi, n * e_lo

    def _gaps(self, eps: float) -> tuple[np.ndarray, np.ndarray]:
        """``eps - l_i`` and a bound on its absolute rounding error."""
        parts = self._loss_parts
        if parts is None:  # rounded products: error up to an ulp of l_i
            losses = self._terms[2]
            # a loss that overflowed to inf exceeds any float eps by more than 1e292, where
            # 1 - e^(eps - l_i) is 1 to any precision: its gap -inf is then exact enough
            finite = np.isfinite(losses)
            error = 2 * UNIT_ROUNDOFF * np.where(finite, np.abs(losses), 0.0)
            return eps - losses, error + 2 * UNIT_ROUNDOFF * abs(eps) + 5e-324
        hi, lo = parts
        partial = eps - hi  # exact when hi is within a factor 2 of eps (Sterbenz)
        partial_error = np.where(
            (hi >= 0.5 * eps) & (hi <= 2 * eps), 0.0, UNIT_ROUNDOFF * np.abs(partial)
        )
        gap = partial - lo
        return gap, partial_error + 2 * UNIT_ROUNDOFF * np.abs(gap) + 5e-324

    @property
    def max_loss(self) -> float:
        """An upper bound on the largest loss ``k epsilon0`` (the product is rounded)."""
        product = self.k * self.epsilon0
        return math.nextafter(product, math.inf) if product > 0 else 0.0

    @cached_property
    def _mode(self) -> int:
        return int(np.argmax(self._terms[0]))

    def delta_rr_bounds(self, eps: float) -> tuple[float, float]:
        """``(lower, upper)`` on ``delta_RR(eps)``, summed term by term with ``-expm1(eps - l_i)``
        (no cancellation).

        Interval evaluation: ``eps - l_i`` and each ``log a_i`` carry error bounds (see
        :meth:`_gaps`). Terms more than ``e^-80`` below the largest one are not summed; the upper
        bound adds their count times that size instead.
        """
        log_a, error, _ = self._terms
        gap, gap_error = self._gaps(eps)
        with np.errstate(over="ignore"):  # a gap near -1e308 widened to -inf: still < 0
            count = int(np.count_nonzero(gap - gap_error < 0))  # losses decrease: a prefix
        if count == 0:
            return 0.0, 0.0
        # log_a is unimodal, so the largest summed term sits at min(count - 1, mode)
        top = log_a[min(count - 1, self._mode)]
        start = int(np.argmax(log_a[:count] >= top - 80))
        log_a, error, gap, gap_error = (
            log_a[start:count],
            error[start:count],
            gap[start:count],
            gap_error[start:count],
        )
        with np.errstate(over="ignore"):  # the lower bound takes the smaller factor
            x_lo, x_hi = gap + gap_error, gap - gap_error
        lo_mask = x_lo < 0
        lower, _ = _logsumexp_bounds(
            log_a[lo_mask] - error[lo_mask] + np.log(-np.expm1(x_lo[lo_mask]))
        )
        with np.errstate(invalid="ignore"):  # -inf + inf: a term with no bound but a_i <= 1
            upper_log_a = np.fmin(log_a + error, 0.0)
        upper_terms = upper_log_a + np.log(-np.expm1(x_hi))
        if start > 0:
            upper_terms = np.append(upper_terms, math.log(start) + top - 80 + 1e-6)
        _, upper = _logsumexp_bounds(upper_terms)
        return math.exp(lower), min(1.0, math.exp(upper))

    def infinity_mass_bounds(self) -> tuple[float, float]:
        """Bounds on ``1 - (1 - delta0)^k``."""
        if self.delta0 == 0:
            return 0.0, 0.0
        x = self.k * math.log1p(-self.delta0)
        value = -math.expm1(x)
        err = 8 * UNIT_ROUNDOFF * (abs(x) * math.exp(x) + value)
        return max(0.0, value - err), min(1.0, value + err)

    def delta(self, eps: float) -> tuple[float, float]:
        """``(lower, upper)`` on the optimal total delta at total epsilon ``eps``."""
        p_lo, p_hi = self.infinity_mass_bounds()
        r_lo, r_hi = self.delta_rr_bounds(eps)
        lower = (p_lo + (1 - p_hi) * r_lo) * (1 - 8 * UNIT_ROUNDOFF)
        upper = (p_hi + (1 - p_lo) * r_hi) * (1 + 8 * UNIT_ROUNDOFF)
        return max(0.0, lower), min(1.0, upper)

    def epsilon(self, delta_total: float) -> tuple[float, float]:
        """``(lower, upper)`` on the smallest ``eps >= 0`` with optimal ``delta(eps) <=
        delta_total`` (``inf`` if ``delta_total < 1 - (1 - delta0)^k``).

        Between consecutive losses the curve is ``A - e^eps B``, so the solution is found in
        closed form on its segment and then bracketed outward against the certified term-by-term
        evaluation of :meth:`delta_rr_bounds`.
        """
        budget_lo, budget_hi = self._budget_bounds(delta_total)
        if budget_hi < 0:
            return math.inf, math.inf
        if budget_lo < 0:
            # within rounding of the mass at +inf: no finite epsilon is certified here (the
            # caller's exact comparison with the mass may still give k epsilon0). The lower bound
            # must hold for every budget the rounding allows, so it comes from the largest one:
            # the solution can lie far below k epsilon0 (1.03 for (0.01, 0.01) x 200 one ulp
            # above the mass, where the budget is ~1e-15)
            lower = self._bracket(self._closed_form(budget_hi), budget_hi, -1)
            return lower, math.inf
        upper = self._bracket(self._closed_form(budget_lo), budget_lo, +1)
        lower = self._bracket(self._closed_form(budget_hi), budget_hi, -1)
        check_bracket(lower, upper, query="optimal composition")
        return lower, upper

    def _budget_bounds(self, delta_total: float) -> tuple[float, float]:
        """``(lower, upper)`` on the budget left for ``delta_RR``: ``1 - (1 - delta_total) / (1 -
        delta0)^k``."""
        log_keep_total = math.log1p(-delta_total)
        log_keep_steps = self.k * math.log1p(-self.delta0)
        x = log_keep_total - log_keep_steps
        budget = -math.expm1(x)
        err = (
            8
            * UNIT_ROUNDOFF
            * ((abs(log_keep_total) + abs(log_keep_steps)) * math.exp(x) + abs(budget))
        )
        if err <= 2.0**-40 * abs(budget) or self.k > _EXACT_BUDGET_STEPS:
            return budget - err, budget + err
        # next to the mass at +inf the budget is a difference of nearly equal numbers, and its
        # rounding is no longer small beside it (or even exceeds it): the bracket would widen
        # with it, so decide the budget in rational arithmetic instead, exactly ((1 - delta0)^k
        # has at most 53 k bits: a few milliseconds at k = 4096)
        exact = 1 - (1 - Fraction(delta_total)) / (1 - Fraction(self.delta0)) ** self.k
        value = float(exact)  # correctly rounded
        below = value if Fraction(value) <= exact else math.nextafter(value, -math.inf)
        above = value if Fraction(value) >= exact else math.nextafter(value, math.inf)
        return below, above

    def _closed_form(self, budget: float) -> float:
        """Solve ``delta_RR(eps) = budget`` on the segment of losses that holds the solution."""
        if budget <= 0 or self.epsilon0 == 0:
            return self.max_loss
        log_a, _, losses = self._terms
        with np.errstate(over="ignore"):  # b_i of a loss near 1e308 is 0
            log_b = log_a - losses
        log_cum_a = np.logaddexp.accumulate(log_a)  # log A_j, A_j = sum_{i<=j} a_i
        log_cum_b = np.logaddexp.accumulate(log_b)
        # delta_RR at the loss l_j (j >= 1) sums i < j: A_{j-1} (1 - e^{l_j} B_{j-1} / A_{j-1})
        with np.errstate(invalid="ignore"):
            ratio = losses[1:] + log_cum_b[:-1] - log_cum_a[:-1]
        # inf + -inf: a loss beyond every float, where e^{l_j} B_{j-1} <= A_{j-1} e^{-2 epsilon0}
        ratio = np.minimum(np.where(np.isnan(ratio), -np.inf, ratio), 0.0)
        with np.errstate(divide="ignore"):
            log_at_losses = log_cum_a[:-1] + np.log(-np.expm1(ratio))
        log_budget = math.log(budget)
        above = np.nonzero(log_at_losses > log_budget)[0]
        # the solution lies in (l_{j+1}, l_j]; past the last loss >= 0 it lies in [0, l_last]
        j = int(above[0]) if len(above) else len(losses) - 1
        # there delta_RR = A_j - e^eps B_j, so e^eps = (A_j - budget) / B_j
        if log_budget >= log_cum_a[j]:
            return 0.0
        eps = log_cum_a[j] + math.log(-math.expm1(log_budget - log_cum_a[j])) - log_cum_b[j]
        low = losses[j + 1] if j + 1 < len(losses) else 0.0
        return float(min(max(eps, low, 0.0), losses[j]))

    def _bracket(self, estimate: float, budget: float, direction: int) -> float:
        """Move ``estimate`` outward until the certified evaluation confirms it, then bisect back
        toward the estimate: ``+1`` certifies ``delta_RR_upper(eps) <= budget`` (so eps is an
        upper bound on the solution), ``-1`` certifies ``delta_RR_lower(eps) > budget``."""

        def confirmed(eps: float) -> bool:
            if direction > 0 and eps >= self.max_loss:
                return True
            if direction < 0 and eps <= 0:
                return True
            lower, upper = self.delta_rr_bounds(eps)
            return upper <= budget if direction > 0 else lower > budget

        def clamp(eps: float) -> float:
            # the safe end for NaN; a lower bound stays finite (the gaps to the largest float
            # are certified, those to inf are not numbers)
            if math.isnan(eps):
                return self.max_loss if direction > 0 else 0.0
            return min(eps, self.max_loss) if direction > 0 else max(min(eps, _MAX_FLOAT), 0.0)

        failed, eps = None, clamp(estimate)
        step = abs(eps) * 4 * UNIT_ROUNDOFF + 1e-300
        while not confirmed(eps):
            failed, eps = eps, clamp(eps + direction * step)
            step *= 2
        if failed is None:
            return eps
        for _ in range(60):  # bisection between a failed and a confirmed point
            middle = failed + 0.5 * (eps - failed)  # (failed + eps) / 2 overflows near 1e308
            if middle in (failed, eps):
                break
            if confirmed(middle):
                eps = middle
            else:
                failed = middle
        return eps


def kairouz_oh_viswanath(
    epsilon: float,
    delta: float,
    k: int,
    *,
    delta_total: float | None = None,
    epsilon_total: float | None = None,
) -> Guarantee:
    """Optimal (exact) k-fold composition of ``(epsilon, delta)``-DP steps.

    ``delta_total = 1 - (1 - delta)^k (1 - delta_RR(eps_total))`` with ``delta_RR(e') = sum_{i:
    (k - 2i) epsilon > e'} C(k, i) (e^{(k-i) epsilon} - e^{e' + i epsilon}) / (1 + e^epsilon)^k``
    (Kairouz, Oh & Viswanath 2015, Thm. 3.3): a theorem, evaluated in log space with certified
    error bounds, stable for ``k`` up to ``10^6`` and beyond (numerics: ``docs/theorems.md``).
    The parameters must be fixed before the interaction starts; for adaptively chosen ones only
    :mod:`plda.filters` gives guarantees.

    Parameters
    ----------
    epsilon : float
        Each step's epsilon, finite and ``>= 0``.
    delta : float
        Each step's delta, in [0, 1).
    k : int
        The number of steps, at least 1.
    delta_total : float, optional
        Give the smallest total epsilon at this total delta, in [0, 1).
    epsilon_total : float, optional
        Give an upper bound on the optimal total delta at this total epsilon, ``>= 0``.

    Returns
    -------
    Guarantee
        With ``delta_total``: the smallest total epsilon, rounded up; the exact value lies in
        ``[epsilon_lower, epsilon]`` (a relative width of about 1e-12 at ``k = 10^6``). With
        ``epsilon_total``: ``(epsilon_total, upper bound on the optimal delta)``.

    Raises
    ------
    ValueError
        Unless exactly one of ``delta_total`` and ``epsilon_total`` is given, or if a value is
        out of range.
    TypeError
        If a value is not a real number.
    """
    epsilon = epsilon_value("epsilon", epsilon)
    delta = delta_value("delta", delta)
    k = count_value("k", k)
    if (delta_total is None) == (epsilon_total is None):
        raise ValueError("give exactly one of delta_total (in [0, 1)) or epsilon_total (>= 0)")
    law = _KOVLaw(epsilon, delta, k)
    name = "optimal composition (KOV15, exact)"
    if epsilon_total is not None:
        eps = epsilon_value("epsilon_total", epsilon_total)
        _, upper = law.delta(eps)
        return Guarantee(eps, float(upper), name)
    target = delta_value("delta_total", delta_total)
    lower, upper = law.epsilon(target)
    if covers_delta_mass(target, [((epsilon, delta), k)]):
        # at eps_total = k epsilon only the +inf mass is left: exactly 1 - (1 - delta)^k, so
        # the equality case (which the float comparison inside the law refuses) holds there
        upper = min(float(upper), sum_up([epsilon] * k) if k <= 4096 else round_up(k * epsilon, 2))
    check_bracket(lower, upper, query="optimal composition")
    return Guarantee(float(upper), target, name, epsilon_lower=float(lower))
