"""The privacy filters, each the halting rule of one fully-adaptive composition theorem:
basic (RRUV16), advanced (RRUV16; WRRW23), Rényi/zCDP (FZ21) and Gaussian DP (ST22)."""

from __future__ import annotations

import math
from fractions import Fraction

from plda._internal import validation as check
from plda.filters.amounts import SAFETY, UNPAYABLE, delta_budget, exact, exact_round_up
from plda.filters.base import PrivacyFilter
from plda.filters.charges import Charge, zcdp_price
from plda.filters.conversions import (
    epsilon_of_gaussian_dp,
    epsilon_of_zcdp,
    gaussian_dp_of_pure_dp,
    largest_gaussian_dp_mu,
)


class BasicFilter(PrivacyFilter):
    """Basic composition as a filter: halt when ``Σ εᵢ > ε`` or ``Σ δᵢ > δ``.

    Rogers, Roth, Ullman & Vadhan (2016), "Privacy odometers and filters: pay-as-you-go
    composition", basic composition for privacy filters: for any ε, δ ≥ 0 this rule is a valid
    filter, i.e. the interaction is (ε, δ)-DP even when each (εᵢ, δᵢ) is chosen adaptively.
    Sums are exact (amounts read as decimals), so ten steps of 0.1 fill ε = 1.

    Parameters
    ----------
    epsilon
        Overall ε > 0.
    delta
        Overall δ in [0, 1); the steps' δᵢ add up against it.
    """

    measure = "sum of step epsilons"

    def __init__(self, epsilon: float, delta: float = 0.0):
        super().__init__(epsilon, delta_budget("delta", delta, low_open=False))
        self._epsilon_exact = exact(self._epsilon)
        self._delta_exact = exact(self._delta)

    def _zero(self):
        return (Fraction(0), Fraction(0))

    def _increment(self, charge):
        return (self._require_epsilon(charge), exact(charge.delta))

    def _fits(self, state):
        return state[0] <= self._epsilon_exact and state[1] <= self._delta_exact

    def _statistic(self, state):
        return float(state[0])

    def _limit(self):
        return self._epsilon

    def _step_delta_limit(self):
        return self._delta


class AdvancedFilter(PrivacyFilter):
    r"""The advanced-composition filter of Rogers, Roth, Ullman & Vadhan (2016).

    With ``H = ε² / (28.04 ln(1/δ))`` (the parameter fixed by the theorem) and

    .. math:: K = \sum_j ε_j \frac{e^{ε_j} - 1}{2}
                  + \sqrt{\Big(\sum_i ε_i^2 + H\Big)\Big(2 + \ln\big(\tfrac{1}{H}\sum_i ε_i^2
                  + 1\big)\Big)\ln(2/δ)},

    the rule "halt if ``Σ δᵢ > δ/2`` or ``K > ε``" is a valid privacy filter for
    ``δ ∈ (0, 1/e)`` and ``ε > 0`` (RRUV16, advanced composition for privacy filters; the form
    in the privacy-filters tutorial). Half of δ pays for the steps' δᵢ, half for the
    concentration bound. ``K`` is evaluated in floating point and must clear ``ε`` by the
    relative margin :data:`SAFETY`.
    """

    measure = "K (RRUV16)"

    def __init__(self, epsilon: float, delta: float):
        super().__init__(epsilon, delta_budget("delta", delta, low_open=True, high=math.exp(-1)))
        self._h = self._epsilon**2 / (28.04 * math.log(1 / self._delta))
        self._log_term = math.log(2.0) - math.log(self._delta)  # ln(2/δ)
        self._step_delta = exact(self._delta) / 2

    def _zero(self):
        return (Fraction(0), Fraction(0), Fraction(0))

    def _increment(self, charge):
        e = self._require_epsilon(charge)
        x = float(charge.epsilon)
        drift = exact_round_up(x * math.expm1(x) / 2) if x < 700 else UNPAYABLE  # e^x overflows
        return (e * e, drift, exact(charge.delta))

    def _k(self, state) -> float:
        squares, drift = float(state[0]), float(state[1])
        h = self._h
        spread = (squares + h) * (2 + math.log1p(squares / h)) * self._log_term
        return drift + math.sqrt(spread)

    def _fits(self, state):
        if state[2] > self._step_delta or state[0] > self._epsilon**2 or state[1] > self._epsilon:
            return False  # K > sqrt(Σ εᵢ²) and K > drift: refused before any float overflows
        return self._k(state) * (1 + SAFETY) <= self._epsilon

    def _statistic(self, state):
        return self._k(state)

    def _limit(self):
        return self._epsilon

    def _step_delta_limit(self):
        return self._delta / 2


class ImprovedAdvancedFilter(PrivacyFilter):
    r"""The advanced-composition filter of Whitehouse, Ramdas, Rogers & Wu (2023), "Fully
    adaptive composition in differential privacy" (ICML): advanced composition's constants
    under fully adaptive parameters.

    With ``δ = δ' + δ''`` (``δ'' = step_delta`` pays for the steps' δᵢ), halt if

    .. math:: \sqrt{2 \ln(1/δ') \sum_i ε_i^2} + \tfrac12 \sum_i ε_i^2 > ε
              \quad\text{or}\quad \sum_i δ_i > δ''.

    The first condition is ``Σ εᵢ² <= V`` with ``V = (sqrt(2L + 2ε) - sqrt(2L))²``,
    ``L = ln(1/δ')`` (solve the quadratic in ``sqrt(Σ εᵢ²)``); ``V`` is computed once as
    ``(2ε / (sqrt(2L + 2ε) + sqrt(2L)))²`` (no cancellation) and shaded down by
    :data:`SAFETY`, then compared exactly. For pure steps this is the zCDP filter with
    ``ρᵢ = εᵢ²/2`` and Bun–Steinke's conversion ``ρ + 2 sqrt(ρ ln(1/δ))``.

    Parameters
    ----------
    epsilon, delta
        Overall guarantee; ``delta`` in (0, 1).
    step_delta
        The part δ'' of ``delta`` reserved for the steps' δᵢ, in [0, delta); default
        ``delta / 2`` (as RRUV16). Use 0 when every step is pure.
    """

    measure = "sum of squared step epsilons"

    def __init__(self, epsilon: float, delta: float, *, step_delta: float | None = None):
        super().__init__(epsilon, delta_budget("delta", delta, low_open=True))
        step = self._delta / 2 if step_delta is None else step_delta
        self.step_delta = delta_budget("step_delta", step, low_open=False, high=self._delta)
        log_term = math.log(1 / (self._delta - self.step_delta))
        root = (
            2
            * self._epsilon
            / (math.sqrt(2 * log_term + 2 * self._epsilon) + math.sqrt(2 * log_term))
        )
        self._squares_limit = Fraction(root * root * (1 - SAFETY))
        self._step_delta_exact = exact(self.step_delta)

    def __repr__(self) -> str:
        return (
            f"ImprovedAdvancedFilter(epsilon={self.epsilon:.6g}, delta={self.delta:.6g}, "
            f"step_delta={self.step_delta:.6g})"
        )

    def _zero(self):
        return (Fraction(0), Fraction(0))

    def _increment(self, charge):
        e = self._require_epsilon(charge)
        return (e * e, exact(charge.delta))

    def _fits(self, state):
        return state[0] <= self._squares_limit and state[1] <= self._step_delta_exact

    def _statistic(self, state):
        return float(state[0])

    def _limit(self):
        return float(self._squares_limit)

    def _step_delta_limit(self):
        return self.step_delta


class RenyiFilter(PrivacyFilter):
    """Rényi / zCDP filter of Feldman & Zrnic (2021), "Individual privacy accounting via a Rényi
    filter" (NeurIPS), for Gaussian-type steps.

    Their theorem: if at a fixed order α the adaptively chosen RDP parameters satisfy
    ``Σ εᵢ(α) <= B`` always, the composition is (α, B)-RDP. For ρᵢ-zCDP steps
    (``εᵢ(α) = α ρᵢ``) the rule "halt if ``Σ ρᵢ > ρ``" is the same at every α, so the
    interaction is ρ-zCDP, hence (ε, δ)-DP with ε from :func:`epsilon_of_zcdp`. ``ρ`` is the
    largest budget whose conversion is at most the requested ε.

    Steps are charged ``rho`` if given, else ``mu²/2`` (μ-GDP implies μ²/2-zCDP by data
    processing), else ``epsilon²/2`` for a pure step (Bun & Steinke 2016, Prop. 3.3); the
    smallest available. Steps with ``delta > 0`` and no ``rho``/``mu`` are refused.
    """

    measure = "sum of step rho (zCDP)"

    def __init__(self, epsilon: float, delta: float):
        super().__init__(epsilon, delta_budget("delta", delta, low_open=True))
        self._rho_exact = Fraction(self._largest_rho(self._epsilon, self._delta))

    @classmethod
    def from_rho(cls, rho: float, delta: float) -> RenyiFilter:
        """A filter whose budget is exactly ``Σ ρᵢ <= rho``; its ``epsilon`` is the certified
        conversion of ``rho`` at ``delta``."""
        rho = check.positive_float("rho", rho)
        delta = delta_budget("delta", delta, low_open=True)
        self = cls.__new__(cls)
        PrivacyFilter.__init__(self, epsilon_of_zcdp(rho, delta), delta)
        self._rho_exact = exact(rho)
        return self

    @property
    def rho(self) -> float:
        """The zCDP budget."""
        return float(self._rho_exact)

    @staticmethod
    def _largest_rho(epsilon: float, delta: float) -> float:
        log_term = math.log(1 / delta)
        lo = (math.sqrt(log_term + epsilon) - math.sqrt(log_term)) ** 2 * (1 - 1e-9)
        if epsilon_of_zcdp(lo, delta) > epsilon:  # pragma: no cover - the CKS bound is tighter
            raise ArithmeticError("zCDP budget search failed")
        # rho may exceed epsilon (epsilon 1, delta 0.5 allows rho 1.0164): grow the bracket
        # until its top fails rather than assuming rho <= epsilon
        hi = max(epsilon, 2 * lo)
        while epsilon_of_zcdp(hi, delta) <= epsilon:
            lo, hi = hi, 2 * hi
        for _ in range(200):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if epsilon_of_zcdp(mid, delta) <= epsilon:
                lo = mid
            else:
                hi = mid
        return lo

    def _prices_delta(self, charge: Charge) -> bool:
        return charge.rho is None and charge.mu is None  # a rho/mu price ignores delta

    def _zero(self):
        return (Fraction(0),)

    def _increment(self, charge):
        return (zcdp_price(charge, "RenyiFilter"),)

    def _fits(self, state):
        return state[0] <= self._rho_exact

    def _statistic(self, state):
        return float(state[0])

    def _limit(self):
        return self.rho


class GaussianFilter(PrivacyFilter):
    """Gaussian-DP filter: halt if ``Σ μᵢ² > μ²``.

    Smith & Thakurta (2022), "Fully adaptive composition for Gaussian differential privacy":
    μᵢ-GDP steps with adaptively chosen μᵢ compose to μ-GDP when the filter stops at
    ``Σ μᵢ² <= μ²``, exactly as in non-adaptive composition; Koskela, Tobaben & Honkela (2023)
    prove it for Gaussian mechanisms with individual (adaptive) sensitivities. μ is the largest
    value for which μ-GDP implies the requested (ε, δ) (Dong, Roth & Su 2022, Cor. 2.13).

    Steps are charged ``mu`` if given, else a pure ε-step costs
    :func:`gaussian_dp_of_pure_dp` (exact worst case over ε-DP mechanisms). A step known only
    by ``rho`` or with ``delta > 0`` is refused: neither implies a GDP guarantee.
    """

    measure = "sum of squared step mu (GDP)"

    def __init__(self, epsilon: float, delta: float):
        super().__init__(epsilon, delta_budget("delta", delta, low_open=True))
        mu = largest_gaussian_dp_mu(self._epsilon, self._delta)
        self._mu_squared = Fraction(mu * mu * (1 - SAFETY))

    @classmethod
    def from_mu(cls, mu: float, delta: float) -> GaussianFilter:
        """A filter whose budget is exactly ``Σ μᵢ² <= mu²``; its ``epsilon`` is the certified
        conversion of μ-GDP at ``delta``."""
        mu = check.positive_float("mu", mu)
        delta = delta_budget("delta", delta, low_open=True)
        self = cls.__new__(cls)
        PrivacyFilter.__init__(self, epsilon_of_gaussian_dp(mu, delta), delta)
        self._mu_squared = exact(mu) ** 2
        return self

    @property
    def mu(self) -> float:
        """The GDP budget."""
        return math.sqrt(float(self._mu_squared))

    def _prices_delta(self, charge: Charge) -> bool:
        return charge.mu is None  # a mu price ignores delta

    def _zero(self):
        return (Fraction(0),)

    def _increment(self, charge):
        options = []
        if charge.mu is not None:
            options.append(exact(charge.mu) ** 2)
        if charge.epsilon is not None and charge.delta == 0:
            mu = gaussian_dp_of_pure_dp(charge.epsilon)
            options.append(exact_round_up(mu * mu) if mu * mu < math.inf else UNPAYABLE)
        if not options:
            raise ValueError(
                "GaussianFilter charges Gaussian DP: give mu (a Gaussian step: sensitivity / "
                "sigma) or a pure step (delta=0); rho or delta > 0 imply no GDP guarantee"
            )
        return (min(options),)

    def _fits(self, state):
        return state[0] <= self._mu_squared

    def _statistic(self, state):
        return float(state[0])

    def _limit(self):
        return float(self._mu_squared)


# ================================================================== odometer
