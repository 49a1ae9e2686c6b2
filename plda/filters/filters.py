"""The privacy filters, each the halting rule of one fully-adaptive composition theorem.

Basic (RRUV16), advanced (RRUV16; WRRW23), Rényi/zCDP (FZ21) and Gaussian DP (ST22); the
theorems are stated in ``docs/filters.md``.
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction

from plda._internal import validation as check
from plda.filters.amounts import (
    LARGEST_EPSILON,
    LARGEST_MU,
    LARGEST_RHO,
    SAFETY,
    SMALLEST_RENYI_EPSILON,
    UNPAYABLE,
    delta_budget,
    exact,
    exact_round_up,
    largest_float_where,
    log_inverse,
    shaded_square,
)
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
    epsilon : float
        Overall ε, in (0, 1e307].
    delta : float, optional
        Overall δ in [0, 1); the steps' δᵢ add up against it.

    Raises
    ------
    ValueError
        If ``epsilon`` is outside (0, 1e307] or ``delta`` is outside [0, 1).
    TypeError
        If a value is not a real number.

    Examples
    --------
    >>> from plda import filters
    >>> budget = filters.BasicFilter(epsilon=1.0)
    >>> for _ in range(10):
    ...     _ = budget.spend(epsilon=0.1)
    >>> budget.can_spend(epsilon=1e-9)
    False
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
    """The advanced-composition filter of Rogers, Roth, Ullman & Vadhan (2016).

    Halt if ``Σ δᵢ > δ/2`` or ``K > ε``, with ``K = Σ εⱼ (e^{εⱼ} - 1)/2 + sqrt((Σ εᵢ² + H)
    (2 + ln(Σ εᵢ²/H + 1)) ln(2/δ))`` and ``H = ε² / (28.04 ln(1/δ))``: a valid filter for
    ``δ ∈ (0, 1/e)`` (RRUV16; see ``docs/filters.md``). ``K`` is evaluated in floating point
    and must clear ``ε`` by the relative margin :data:`SAFETY`.

    Parameters
    ----------
    epsilon : float
        Overall ε, in (0, 1e307].
    delta : float
        Overall δ in (0, 1/e); half of it pays for the steps' δᵢ, half for the concentration
        bound.

    Raises
    ------
    ValueError
        If ``epsilon`` is outside (0, 1e307] or ``delta`` is outside (0, 1/e).
    TypeError
        If a value is not a real number.
    """

    measure = "K (RRUV16)"

    def __init__(self, epsilon: float, delta: float):
        super().__init__(epsilon, delta_budget("delta", delta, low_open=True, high=math.exp(-1)))
        # K is homogeneous of degree 1 in (ε, εᵢ): it is evaluated in units of 2^k, with
        # ε = m 2^k, m in [1/2, 1). Scaling by a power of 2 is exact, so wherever ε², H and the
        # sums are normal floats the result is bit for bit the unscaled one, and elsewhere
        # (ε near 1e-170 or 1e307) nothing under- or overflows
        self._mantissa, exponent = math.frexp(self._epsilon)
        self._unit = Fraction(2) ** exponent
        self._exponent = exponent
        self._h = self._mantissa**2 / (28.04 * log_inverse(self._delta))  # H / 4^k
        self._log_term = math.log(2.0) - math.log(self._delta)  # ln(2/δ)
        self._step_delta = exact(self._delta) / 2
        self._epsilon_squared = Fraction(self._epsilon) ** 2

    def _zero(self):
        return (Fraction(0), Fraction(0), Fraction(0))

    def _increment(self, charge):
        e = self._require_epsilon(charge)
        x = float(charge.epsilon)
        if x < 1e-150:  # x (e^x - 1)/2 <= e² (1 + e)/2 (e^x - 1 <= x + x², x <= 1): no underflow
            drift = e * e * (1 + e) / 2
        else:
            drift = exact_round_up(x * math.expm1(x) / 2) if x < 700 else UNPAYABLE  # overflow
        return (e * e, drift, exact(charge.delta))

    def _k_scaled(self, state) -> float:
        """K / 2^k."""
        squares = float(state[0] / self._unit**2)
        drift = float(state[1] / self._unit)
        h = self._h
        spread = (squares + h) * (2 + math.log1p(squares / h)) * self._log_term
        return drift + math.sqrt(spread)

    def _fits(self, state):
        if state[2] > self._step_delta or state[0] > self._epsilon_squared:
            return False  # K > sqrt(Σ εᵢ²): refused before any float overflows
        if state[1] > self._epsilon:
            return False  # K > drift
        return self._k_scaled(state) * (1 + SAFETY) <= self._mantissa

    def _statistic(self, state):
        return math.ldexp(self._k_scaled(state), self._exponent)

    def _limit(self):
        return self._epsilon

    def _step_delta_limit(self):
        return self._delta / 2


class ImprovedAdvancedFilter(PrivacyFilter):
    """The advanced-composition filter of Whitehouse, Ramdas, Rogers & Wu (2023).

    "Fully adaptive composition in differential privacy" (ICML) reaches advanced composition's
    constants under fully adaptive parameters: with ``δ = δ' + δ''``, halt if
    ``sqrt(2 ln(1/δ') Σ εᵢ²) + Σ εᵢ²/2 > ε`` or ``Σ δᵢ > δ''``. The first condition is
    ``Σ εᵢ² <= V``, ``V = (sqrt(2L + 2ε) - sqrt(2L))²`` with ``L = ln(1/δ')``, computed without
    cancellation, shaded down by :data:`SAFETY` and compared exactly (``docs/filters.md``).

    Parameters
    ----------
    epsilon : float
        Overall ε, in (0, 1e307].
    delta : float
        Overall δ, in (0, 1).
    step_delta : float, optional
        The part δ'' of ``delta`` reserved for the steps' δᵢ, in [0, delta); default
        ``delta / 2`` (as RRUV16). Use 0 when every step is pure.

    Raises
    ------
    ValueError
        If ``epsilon`` is outside (0, 1e307] or ``delta`` is outside (0, 1), or
        ``step_delta`` outside [0, delta).
    TypeError
        If a value is not a real number.
    """

    measure = "sum of squared step epsilons"

    def __init__(self, epsilon: float, delta: float, *, step_delta: float | None = None):
        super().__init__(epsilon, delta_budget("delta", delta, low_open=True))
        step = self._delta / 2 if step_delta is None else step_delta
        self.step_delta = delta_budget("step_delta", step, low_open=False, high=self._delta)
        log_term = log_inverse(self._delta - self.step_delta)
        # root = 2ε / (sqrt(2L + 2ε) + sqrt(2L)) = sqrt(V), formed as 2m/(...) times 2^k with
        # ε = m 2^k: the same float as the direct quotient where that is normal, and exact in
        # its exponent where the quotient would be subnormal (ε near 1e-320)
        mantissa, exponent = math.frexp(self._epsilon)
        scaled = (
            2 * mantissa / (math.sqrt(2 * log_term + 2 * self._epsilon) + math.sqrt(2 * log_term))
        )
        self._squares_limit = shaded_square(scaled) * Fraction(2) ** (2 * exponent)
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
    """Rényi / zCDP filter of Feldman & Zrnic (2021), for Gaussian-type steps.

    "Individual privacy accounting via a Rényi filter" (NeurIPS): halting when ``Σ ρᵢ > ρ``
    keeps the interaction ρ-zCDP, hence (ε, δ)-DP with ε from :func:`epsilon_of_zcdp`; ``ρ``
    is the largest budget whose conversion is at most the requested ε (``docs/filters.md``).
    Steps are charged the smallest of ``rho``, ``mu²/2`` and, for a pure step, ``epsilon²/2``
    (Bun & Steinke 2016, Prop. 3.3); steps with ``delta > 0`` and no ``rho``/``mu`` are refused.

    Parameters
    ----------
    epsilon : float
        Overall ε, in [1e-150, 1e307]: below, the zCDP budget ``ρ ≈ ε² / (4 ln(1/δ))`` is no
        longer a normal float.
    delta : float
        Overall δ, in (0, 1).

    Raises
    ------
    ValueError
        If ``epsilon`` is outside [1e-150, 1e307] or ``delta`` is outside (0, 1).
    TypeError
        If a value is not a real number.
    """

    measure = "sum of step rho (zCDP)"

    def __init__(self, epsilon: float, delta: float):
        super().__init__(epsilon, delta_budget("delta", delta, low_open=True))
        if self._epsilon < SMALLEST_RENYI_EPSILON:
            raise ValueError(
                f"epsilon must be in [{SMALLEST_RENYI_EPSILON:g}, {LARGEST_EPSILON:g}] for a "
                f"RenyiFilter (below, its zCDP budget is no normal float), got {epsilon!r}"
            )
        self._rho_exact = Fraction(self._largest_rho(self._epsilon, self._delta))

    @classmethod
    def from_rho(cls, rho: float, delta: float) -> RenyiFilter:
        """A filter whose budget is exactly ``Σ ρᵢ <= rho``.

        Parameters
        ----------
        rho : float
            The zCDP budget, in (0, 1e306] (so that its ε stays at most 1e307).
        delta : float
            The overall δ, in (0, 1).

        Returns
        -------
        RenyiFilter
            Its ``epsilon`` is the certified conversion of ``rho`` at ``delta`` (at least the
            smallest positive float: a conversion clamped at 0 holds for any ε > 0).

        Raises
        ------
        ValueError
            If a value is out of range.
        TypeError
            If a value is not a real number.
        """
        rho = check.positive_float("rho", rho)
        if rho > LARGEST_RHO:
            raise ValueError(f"rho must be in (0, {LARGEST_RHO:g}], got {rho!r}")
        delta = delta_budget("delta", delta, low_open=True)
        self = cls.__new__(cls)
        PrivacyFilter.__init__(self, max(epsilon_of_zcdp(rho, delta), math.ulp(0.0)), delta)
        self._rho_exact = exact(rho)
        return self

    @property
    def rho(self) -> float:
        """The zCDP budget."""
        return float(self._rho_exact)

    @staticmethod
    def _largest_rho(epsilon: float, delta: float) -> float:
        log_term = log_inverse(delta)
        # Bun & Steinke's ρ, (sqrt(L + ε) - sqrt(L))², in a form that does not cancel (for
        # ε far below L the difference of roots is 0 in floating point)
        lo = (epsilon / (math.sqrt(log_term + epsilon) + math.sqrt(log_term))) ** 2 * (1 - 1e-9)
        if epsilon_of_zcdp(lo, delta) > epsilon:  # pragma: no cover - the CKS bound is tighter
            raise ArithmeticError("zCDP budget search failed")
        # rho may exceed epsilon (epsilon 1, delta 0.5 allows rho 1.0164): grow the bracket
        # until its top fails rather than assuming rho <= epsilon
        hi = max(epsilon, 2 * lo)
        while epsilon_of_zcdp(hi, delta) <= epsilon:
            lo, hi = hi, 2 * hi
        return largest_float_where(lambda r: epsilon_of_zcdp(r, delta) <= epsilon, lo, hi)

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
    """Gaussian-DP filter of Smith & Thakurta (2022): halt if ``Σ μᵢ² > μ²``.

    μᵢ-GDP steps with adaptively chosen μᵢ compose to μ-GDP when the filter stops at
    ``Σ μᵢ² <= μ²``, as in non-adaptive composition; μ is the largest value for which μ-GDP
    implies the requested (ε, δ) (Dong, Roth & Su 2022, Cor. 2.13; ``docs/filters.md``). Steps
    are charged ``mu``, or a pure ε-step :func:`gaussian_dp_of_pure_dp`; a step known only by
    ``rho`` or with ``delta > 0`` is refused: neither implies a GDP guarantee.

    Parameters
    ----------
    epsilon : float
        Overall ε, in (0, 1e307].
    delta : float
        Overall δ, in (0, 1).

    Raises
    ------
    ValueError
        If ``epsilon`` is outside (0, 1e307] or ``delta`` is outside (0, 1).
    TypeError
        If a value is not a real number.
    """

    measure = "sum of squared step mu (GDP)"

    def __init__(self, epsilon: float, delta: float):
        super().__init__(epsilon, delta_budget("delta", delta, low_open=True))
        mu = largest_gaussian_dp_mu(self._epsilon, self._delta)
        self._mu_squared = shaded_square(mu)  # μ² (1 - SAFETY), also where μ² underflows

    @classmethod
    def from_mu(cls, mu: float, delta: float) -> GaussianFilter:
        """A filter whose budget is exactly ``Σ μᵢ² <= mu²``.

        Parameters
        ----------
        mu : float
            The GDP budget, in (0, 1e153] (so that its ε, about μ²/2, stays at most 1e307).
        delta : float
            The overall δ, in (0, 1).

        Returns
        -------
        GaussianFilter
            Its ``epsilon`` is the certified conversion of μ-GDP at ``delta`` (at least the
            smallest positive float: μ-GDP with ``δ(0) <= delta`` is (ε, delta)-DP for any ε).

        Raises
        ------
        ValueError
            If a value is out of range.
        TypeError
            If a value is not a real number.
        """
        mu = check.positive_float("mu", mu)
        if mu > LARGEST_MU:
            raise ValueError(f"mu must be in (0, {LARGEST_MU:g}], got {mu!r}")
        delta = delta_budget("delta", delta, low_open=True)
        self = cls.__new__(cls)
        epsilon = max(epsilon_of_gaussian_dp(mu, delta), math.ulp(0.0))
        PrivacyFilter.__init__(self, epsilon, delta)
        self._mu_squared = exact(mu) ** 2
        return self

    @property
    def mu(self) -> float:
        """The GDP budget."""
        # scaled by an even power of 2 first: μ² may lie below the floats (μ near 1e-300)
        square = self._mu_squared
        shift = square.numerator.bit_length() - square.denominator.bit_length()
        shift -= shift % 2
        return math.ldexp(math.sqrt(float(square / Fraction(2) ** shift)), shift // 2)

    def _prices_delta(self, charge: Charge) -> bool:
        return charge.mu is None  # a mu price ignores delta

    def _zero(self):
        return (Fraction(0),)

    def _increment(self, charge):
        options = []
        if charge.mu is not None:
            options.append(exact(charge.mu) ** 2)
        if charge.epsilon is not None and charge.delta == 0:
            mu = gaussian_dp_of_pure_dp(charge.epsilon)  # rounded up
            square = mu * mu
            if square == math.inf:
                options.append(UNPAYABLE)
            elif square < sys.float_info.min:  # μ² under the normal floats: its exact square
                options.append(Fraction(mu) ** 2)
            else:
                options.append(exact_round_up(square))
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
