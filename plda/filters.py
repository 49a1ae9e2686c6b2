"""Privacy filters and odometers: budgets that hold under fully adaptive composition.

An *accountant* answers "how much privacy was spent?" for a composition fixed in advance. A
*filter* enforces "never more than this" while the analyst picks each next step — and its privacy
parameters — after seeing the earlier answers (fully adaptive composition, Rogers, Roth, Ullman &
Vadhan 2016). An *odometer* gives a running bound on the privacy spent so far that is valid at
every step simultaneously (Whitehouse, Ramdas, Rogers & Wu 2023).

Every filter has the same interface (:class:`PrivacyFilter`)::

    budget = AdvancedFilter(epsilon=1.0, delta=1e-6)
    budget.spend(epsilon=0.05)          # records the step, or raises BudgetExceededError
    budget.can_spend(epsilon=0.05)      # the same check, nothing recorded
    budget.remaining()                  # largest epsilon of a pure step that still fits
    budget.steps_left(epsilon=0.05)     # how many more such steps fit
    budget.history, budget.spent        # recorded steps; what the filter's condition measures

A step is described by the guarantees it satisfies: ``epsilon``/``delta`` ((ε, δ)-DP), ``rho``
(ρ-zCDP, Bun & Steinke 2016) and/or ``mu`` (μ-GDP, Dong, Roth & Su 2022). Each filter charges the
step in its own currency and refuses a step it cannot price (e.g. the Gaussian-DP filter refuses a
step with ``delta > 0``). :class:`PrivateQueries` holds data and answers noisy queries, charging
each answer to a filter or an odometer.

Amounts are read as the decimal numbers they print as (``Fraction(repr(x))``) and summed exactly,
so ten steps of ``0.1`` fill a budget of ``1`` exactly; quantities that involve logarithms or
square roots are evaluated in floating point with a relative safety margin (``1e-12``) far above
their rounding error, so rounding can never admit a step the exact condition would refuse.
"""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy import optimize, special

from plda import _validation as check

__all__ = [
    "AdvancedFilter",
    "BasicFilter",
    "BudgetExceededError",
    "Charge",
    "FilterComparison",
    "GaussianFilter",
    "ImprovedAdvancedFilter",
    "Odometer",
    "PrivacyFilter",
    "PrivateQueries",
    "RenyiFilter",
    "Usage",
    "compare_filters",
    "epsilon_of_gaussian_dp",
    "epsilon_of_zcdp",
    "gaussian_dp_of_pure_dp",
]

#: relative margin by which a floating-point filter condition must clear its limit
SAFETY = 1e-12


# ================================================================== values


class BudgetExceededError(RuntimeError):
    """A filter refused a step; nothing was recorded.

    Attributes ``spent`` (:class:`Usage` before the request), ``requested`` (:class:`Charge`) and
    ``remaining`` (largest ε of a pure step that still fits) say why.
    """

    def __init__(self, message: str, spent: Usage, requested: Charge, remaining: float):
        super().__init__(message)
        self.spent = spent
        self.requested = requested
        self.remaining = remaining


@dataclass(frozen=True)
class Charge:
    """One step as recorded by a filter or odometer: the guarantees the step satisfies.

    ``epsilon``/``delta``: (ε, δ)-DP (``epsilon`` is ``None`` for a step described only by
    ``rho``/``mu``); ``rho``: ρ-zCDP; ``mu``: μ-GDP; ``label``: free text for the history.
    """

    epsilon: float | None
    delta: float = 0.0
    rho: float | None = None
    mu: float | None = None
    label: str = ""

    def __str__(self) -> str:
        parts = []
        if self.epsilon is not None:
            parts += [f"epsilon={self.epsilon:.6g}", f"delta={self.delta:.6g}"]
        if self.rho is not None:
            parts.append(f"rho={self.rho:.6g}")
        if self.mu is not None:
            parts.append(f"mu={self.mu:.6g}")
        if self.label:
            parts.append(f"label={self.label!r}")
        return "(" + ", ".join(parts) + ")"


@dataclass(frozen=True)
class Usage:
    """What a filter has recorded: its condition reads ``statistic <= limit`` (and, for filters
    that admit approximate steps, ``delta_sum <= delta_limit``)."""

    steps: int
    epsilon_sum: float
    delta_sum: float
    statistic: float
    limit: float
    measure: str
    delta_limit: float

    def __str__(self) -> str:
        return (
            f"{self.steps} step{'' if self.steps == 1 else 's'}, "
            f"{self.measure} = {self.statistic:.6g} of {self.limit:.6g}, "
            f"sum of step deltas = {self.delta_sum:.6g} of {self.delta_limit:.6g}"
        )


# ================================================================== numbers


def _exact(value: float) -> Fraction:
    # the decimal number the float prints as: 0.1 means 1/10, so 10 x 0.1 == 1 exactly
    return Fraction(repr(float(value)))


def _up(value: float) -> float:
    """``value`` nudged up by a few ulps (covers the rounding of one float operation)."""
    return value * (1 + 8 * 2.0**-53) if value > 0 else value


def _up_exact(value: float) -> Fraction:
    # an irrational per-step cost, rounded up then kept exactly (sums of these never round)
    return Fraction(_up(value) * (1 + SAFETY))


def _amount(name: str, value, *, optional: bool = False) -> float | None:
    if value is None:
        if optional:
            return None
        raise TypeError(f"{name} must be a real number >= 0, got None")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number >= 0, got {type(value).__name__}")
    v = float(value)
    if not (math.isfinite(v) and v >= 0):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def _delta_budget(name: str, value, *, low_open: bool, high: float = 1.0) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    v = float(value)
    ok = (v > 0 if low_open else v >= 0) and v < high
    if not ok:
        raise ValueError(
            f"{name} must be in {'(' if low_open else '['}0, {high:.6g}), got {value!r}"
        )
    return v


def epsilon_of_zcdp(rho: float, delta: float) -> float:
    """Certified ε such that ρ-zCDP implies (ε, δ)-DP.

    ``min over α > 1 of αρ + log(1 - 1/α) - (log δ + log α) / (α - 1)`` (the RDP-to-DP conversion
    of Canonne, Kamath & Steinke 2020, Prop. 12; Asoodeh et al. 2021), never above Bun & Steinke's
    ``ρ + 2 sqrt(ρ log(1/δ))``. Any α gives a valid bound, so the optimizer cannot make it unsafe.
    """
    rho = _amount("rho", rho)
    delta = _delta_budget("delta", delta, low_open=True)
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
    return max(_up(best) * (1 + SAFETY), 0.0)


def _gaussian_dp_delta(mu: float, epsilon: float) -> float:
    """δ(ε) of μ-GDP: ``Φ(-ε/μ + μ/2) - e^ε Φ(-ε/μ - μ/2)`` (Dong, Roth & Su 2022, Cor. 2.13),
    evaluated in log space so the difference keeps its digits."""
    a = special.log_ndtr(-epsilon / mu + mu / 2)
    b = epsilon + special.log_ndtr(-epsilon / mu - mu / 2)
    return float(-np.exp(a) * np.expm1(b - a))


def epsilon_of_gaussian_dp(mu: float, delta: float) -> float:
    """Certified smallest ε such that μ-GDP implies (ε, δ)-DP (Dong, Roth & Su 2022, Cor. 2.13)."""
    mu = check.positive_float("mu", mu)
    delta = _delta_budget("delta", delta, low_open=True)
    lo, hi = 0.0, max(1.0, mu * mu)
    while _gaussian_dp_delta(mu, hi) > delta * (1 - 1e-9):
        hi *= 2
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _gaussian_dp_delta(mu, mid) <= delta * (1 - 1e-9):
            hi = mid
        else:
            lo = mid
    return hi


def _largest_gaussian_dp_mu(epsilon: float, delta: float) -> float:
    """Largest μ such that μ-GDP implies (ε, δ)-DP (δ(ε) of μ-GDP grows with μ)."""
    lo, hi = 0.0, 1.0
    while _gaussian_dp_delta(hi, epsilon) <= delta * (1 - 1e-9):
        lo, hi = hi, 2 * hi
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if _gaussian_dp_delta(mid, epsilon) <= delta * (1 - 1e-9):
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
    epsilon = _amount("epsilon", epsilon)
    if epsilon < 1:
        return _up(2 * math.sqrt(2) * float(special.erfinv(math.tanh(epsilon / 2))))
    # 2 Φ⁻¹(1 - 1/(1 + e^ε)) = -2 Φ⁻¹(expit(-ε)): the tail form stays finite up to ε ≈ 745
    return _up(-2 * float(special.ndtri(special.expit(-epsilon))))


# ================================================================== filters


#: stands for a step cost too large for a float (it fits no budget)
_UNPAYABLE = Fraction(2) ** 2100


def _add(a: tuple, b: tuple) -> tuple:
    return tuple(x + y for x, y in zip(a, b, strict=True))


def _parse_charge(epsilon, delta, rho, mu, label) -> Charge:
    """A step's description checked and normalized (filters and the odometer)."""
    epsilon = _amount("epsilon", epsilon, optional=True)
    delta = _amount("delta", delta)
    rho = _amount("rho", rho, optional=True)
    mu = _amount("mu", mu, optional=True)
    if not isinstance(label, str):
        raise TypeError(f"label must be a str, got {type(label).__name__}")
    if epsilon is None and rho is None and mu is None:
        raise ValueError("describe the step: give epsilon (and delta), rho or mu")
    if epsilon is None and delta > 0:
        raise ValueError("delta was given without epsilon; give the step's (epsilon, delta)")
    return Charge(epsilon, delta, rho, mu, label)


def _zcdp_price(charge: Charge, who: str) -> Fraction:
    """Exact zCDP cost of a step: ``rho`` if given, else ``mu^2/2`` (GDP implies zCDP by data
    processing), else ``epsilon^2/2`` for a pure step (Bun & Steinke 2016, Prop. 3.3); the
    smallest available. A step with ``delta > 0`` and no ``rho``/``mu`` has no zCDP price."""
    options = []
    if charge.rho is not None:
        options.append(_exact(charge.rho))
    if charge.mu is not None:
        options.append(_exact(charge.mu) ** 2 / 2)
    if charge.epsilon is not None and charge.delta == 0:
        options.append(_exact(charge.epsilon) ** 2 / 2)
    if not options:
        raise ValueError(
            f"{who} charges zCDP: give rho (or mu) for a step with delta > 0, or a pure step "
            "(delta=0)"
        )
    return min(options)


class PrivacyFilter:
    """Common interface of the privacy filters: an overall (ε, δ) budget that holds under fully
    adaptive composition.

    Subclasses define the currency a step is charged in and the halting condition of their
    theorem. ``spend`` is all-or-nothing and thread-safe: the check and the record happen under
    one lock, and a refused request records nothing.

    Attributes
    ----------
    epsilon, delta
        The overall guarantee: every interaction that the filter lets through is
        (``epsilon``, ``delta``)-DP, however the analyst chose the steps and their parameters.
    """

    measure = ""  # what ``spent.statistic`` is

    def __init__(self, epsilon: float, delta: float):
        self._epsilon = check.positive_float("epsilon", epsilon)
        self._delta = float(delta)
        self._lock = threading.Lock()
        self._history: list[Charge] = []
        self._state = self._zero()
        self._epsilon_sum = Fraction(0)
        self._delta_sum = Fraction(0)

    # ---------------------------------------------------------------- subclass hooks
    def _zero(self) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError

    def _increment(self, charge: Charge) -> tuple:  # pragma: no cover - abstract
        """Exact (Fraction) increments of the accumulators for one step; ValueError if the
        filter cannot price the step."""
        raise NotImplementedError

    def _fits(self, state: tuple) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def _statistic(self, state: tuple) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _limit(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _step_delta_limit(self) -> float:
        return 0.0

    def _prices_delta(self, charge: Charge) -> bool:
        """Whether this step's ``delta`` enters the filter's condition (then it must be below
        the filter's ``delta``); filters that charge a step by ``rho`` or ``mu`` ignore it."""
        return True

    # ---------------------------------------------------------------- public API
    @property
    def epsilon(self) -> float:
        return self._epsilon

    @property
    def delta(self) -> float:
        return self._delta

    @property
    def history(self) -> tuple[Charge, ...]:
        """The recorded steps, oldest first."""
        with self._lock:
            return tuple(self._history)

    @property
    def spent(self) -> Usage:
        """Summary of the recorded steps and of the filter's condition."""
        with self._lock:
            return self._usage(self._state, len(self._history))

    def spend(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        *,
        rho: float | None = None,
        mu: float | None = None,
        label: str = "",
    ) -> Charge:
        """Record one step, or raise :class:`BudgetExceededError` and record nothing.

        Parameters
        ----------
        epsilon, delta
            The step is (``epsilon``, ``delta``)-DP given everything released before it.
            ``delta`` must be 0 or below the filter's ``delta``.
        rho
            The step is ``rho``-zCDP (e.g. a Gaussian mechanism: ``Δ² / (2σ²)``).
        mu
            The step is ``mu``-GDP (e.g. a Gaussian mechanism: ``Δ / σ``).
        label
            Free text kept in :attr:`history`.

        Returns
        -------
        Charge
            The recorded step.
        """
        charge = self._charge(epsilon, delta, rho, mu, label)
        increment = self._increment(charge)
        with self._lock:
            candidate = _add(self._state, increment)
            if not self._fits(candidate):
                usage = self._usage(self._state, len(self._history))
                remaining = self._largest_pure_epsilon(self._state)
                raise BudgetExceededError(
                    f"{self!r} refuses the step {charge}: spent {usage}; asked {charge}; "
                    f"remaining: a pure step of epsilon <= {remaining:.6g}, step delta "
                    f"<= {max(usage.delta_limit - usage.delta_sum, 0.0):.6g}; nothing recorded",
                    usage,
                    charge,
                    remaining,
                )
            self._state = candidate
            self._history.append(charge)
            if charge.epsilon is not None:
                self._epsilon_sum += _exact(charge.epsilon)
                self._delta_sum += _exact(charge.delta)
        return charge

    def can_spend(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        *,
        rho: float | None = None,
        mu: float | None = None,
    ) -> bool:
        """Whether :meth:`spend` would accept this step now (nothing is recorded; bad input
        still raises)."""
        increment = self._increment(self._charge(epsilon, delta, rho, mu, ""))
        with self._lock:
            return self._fits(_add(self._state, increment))

    def remaining(self) -> float:
        """Largest ε such that a pure (ε, 0)-DP step would be accepted now.

        The budget of the advanced filters is not a single number (it depends on the squares of
        the steps), so this is the meaningful scalar: ``can_spend(epsilon=remaining())`` is
        always true and any larger float is refused.
        """
        with self._lock:
            state = self._state
        return self._largest_pure_epsilon(state)

    def steps_left(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        *,
        rho: float | None = None,
        mu: float | None = None,
    ) -> int:
        """How many more copies of this step the filter would accept (none recorded)."""
        increment = self._increment(self._charge(epsilon, delta, rho, mu, ""))
        if all(v == 0 for v in increment):
            raise ValueError("a step that costs nothing can be repeated without end")
        with self._lock:
            state = self._state

        def fits(k: int) -> bool:
            return self._fits(tuple(s + k * v for s, v in zip(state, increment, strict=True)))

        lo, hi = 0, 1
        while fits(hi):  # conditions are monotone in k: the costs are non-negative
            lo, hi = hi, 2 * hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if fits(mid) else (lo, mid)
        return lo

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon:.6g}, delta={self.delta:.6g})"

    # ---------------------------------------------------------------- internals
    def _charge(self, epsilon, delta, rho, mu, label) -> Charge:
        charge = _parse_charge(epsilon, delta, rho, mu, label)
        delta = charge.delta
        if delta > 0 and self._delta == 0:
            raise ValueError(
                f"this filter has delta=0: every step must be pure (delta=0), got delta={delta!r}"
            )
        if delta > 0 and self._prices_delta(charge) and not delta < self._delta:
            raise ValueError(
                f"delta of one step must be 0 or in (0, {self._delta:.6g}) (below the filter's "
                f"delta), got {delta!r}"
            )
        return charge

    def _usage(self, state: tuple, steps: int) -> Usage:
        return Usage(
            steps=steps,
            epsilon_sum=float(self._epsilon_sum),
            delta_sum=float(self._delta_sum),
            statistic=self._statistic(state),
            limit=self._limit(),
            measure=self.measure,
            delta_limit=self._step_delta_limit(),
        )

    def _largest_pure_epsilon(self, state: tuple) -> float:
        def fits(x: float) -> bool:
            return self._fits(_add(state, self._increment(Charge(x, 0.0))))

        if not fits(0.0):
            return 0.0
        hi = 2.0 * self._epsilon + 1.0
        while fits(hi):  # pragma: no cover - no valid filter accepts a pure step this large
            hi *= 2
        # bisect on the bit patterns: positive floats are ordered like their int64 views
        lo_bits = 0
        hi_bits = int(np.float64(hi).view(np.int64))
        while hi_bits - lo_bits > 1:
            mid = (lo_bits + hi_bits) // 2
            if fits(float(np.int64(mid).view(np.float64))):
                lo_bits = mid
            else:
                hi_bits = mid
        return float(np.int64(lo_bits).view(np.float64))

    def _require_epsilon(self, charge: Charge) -> Fraction:
        if charge.epsilon is None:
            raise ValueError(
                f"{type(self).__name__} charges a step's (epsilon, delta); give epsilon (and "
                "delta) — a step known only by rho or mu needs RenyiFilter or GaussianFilter"
            )
        return _exact(charge.epsilon)


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
        super().__init__(epsilon, _delta_budget("delta", delta, low_open=False))
        self._epsilon_exact = _exact(self._epsilon)
        self._delta_exact = _exact(self._delta)

    def _zero(self):
        return (Fraction(0), Fraction(0))

    def _increment(self, charge):
        return (self._require_epsilon(charge), _exact(charge.delta))

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
        super().__init__(epsilon, _delta_budget("delta", delta, low_open=True, high=math.exp(-1)))
        self._h = self._epsilon**2 / (28.04 * math.log(1 / self._delta))
        self._log_term = math.log(2.0) - math.log(self._delta)  # ln(2/δ)
        self._step_delta = _exact(self._delta) / 2

    def _zero(self):
        return (Fraction(0), Fraction(0), Fraction(0))

    def _increment(self, charge):
        e = self._require_epsilon(charge)
        x = float(charge.epsilon)
        drift = _up_exact(x * math.expm1(x) / 2) if x < 700 else _UNPAYABLE  # e^x overflows
        return (e * e, drift, _exact(charge.delta))

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
        super().__init__(epsilon, _delta_budget("delta", delta, low_open=True))
        step = self._delta / 2 if step_delta is None else step_delta
        self.step_delta = _delta_budget("step_delta", step, low_open=False, high=self._delta)
        log_term = math.log(1 / (self._delta - self.step_delta))
        root = (
            2
            * self._epsilon
            / (math.sqrt(2 * log_term + 2 * self._epsilon) + math.sqrt(2 * log_term))
        )
        self._squares_limit = Fraction(root * root * (1 - SAFETY))
        self._step_delta_exact = _exact(self.step_delta)

    def __repr__(self) -> str:
        return (
            f"ImprovedAdvancedFilter(epsilon={self.epsilon:.6g}, delta={self.delta:.6g}, "
            f"step_delta={self.step_delta:.6g})"
        )

    def _zero(self):
        return (Fraction(0), Fraction(0))

    def _increment(self, charge):
        e = self._require_epsilon(charge)
        return (e * e, _exact(charge.delta))

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
        super().__init__(epsilon, _delta_budget("delta", delta, low_open=True))
        self._rho_exact = Fraction(self._largest_rho(self._epsilon, self._delta))

    @classmethod
    def from_rho(cls, rho: float, delta: float) -> RenyiFilter:
        """A filter whose budget is exactly ``Σ ρᵢ <= rho``; its ``epsilon`` is the certified
        conversion of ``rho`` at ``delta``."""
        rho = check.positive_float("rho", rho)
        delta = _delta_budget("delta", delta, low_open=True)
        self = cls.__new__(cls)
        PrivacyFilter.__init__(self, epsilon_of_zcdp(rho, delta), delta)
        self._rho_exact = _exact(rho)
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
        return (_zcdp_price(charge, "RenyiFilter"),)

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
        super().__init__(epsilon, _delta_budget("delta", delta, low_open=True))
        mu = _largest_gaussian_dp_mu(self._epsilon, self._delta)
        self._mu_squared = Fraction(mu * mu * (1 - SAFETY))

    @classmethod
    def from_mu(cls, mu: float, delta: float) -> GaussianFilter:
        """A filter whose budget is exactly ``Σ μᵢ² <= mu²``; its ``epsilon`` is the certified
        conversion of μ-GDP at ``delta``."""
        mu = check.positive_float("mu", mu)
        delta = _delta_budget("delta", delta, low_open=True)
        self = cls.__new__(cls)
        PrivacyFilter.__init__(self, epsilon_of_gaussian_dp(mu, delta), delta)
        self._mu_squared = _exact(mu) ** 2
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
            options.append(_exact(charge.mu) ** 2)
        if charge.epsilon is not None and charge.delta == 0:
            mu = gaussian_dp_of_pure_dp(charge.epsilon)
            options.append(_up_exact(mu * mu) if mu * mu < math.inf else _UNPAYABLE)
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


class Odometer:
    r"""A running bound on the privacy loss, valid at every step simultaneously.

    For ρᵢ-zCDP steps chosen adaptively, ``exp(λ(Lₙ - Rₙ) - λ² Rₙ)`` (``Lₙ`` the privacy loss,
    ``Rₙ = Σ ρᵢ``) is a supermartingale for every λ > 0; mixing λ over a half-normal law of
    precision ``c`` and applying Ville's inequality (the mixture method used for odometers by
    Whitehouse, Ramdas, Rogers & Wu 2023) gives, with probability at least ``1 - delta``,
    simultaneously for all n,

    .. math:: L_n \le u(R_n) = R_n + x^*, \quad
              2\sqrt{\tfrac{c}{s}}\, e^{x^{*2}/(2s)}\, \Phi\big(x^*/\sqrt{s}\big) = \frac{1}{δ},
              \quad s = 2R_n + c,

    the exact mixture (see :meth:`bound`); bounding ``Φ >= 1/2`` would give the closed form
    ``sqrt(2 s ln(sqrt(s/c)/δ))``, which is the same bound at ``2δ``.

    So after any number of steps — including a number the analyst decided on the fly — the
    interaction is ex-post (``epsilon()``, ``delta``)-private. ``c`` is fixed at construction
    (it must not depend on the data) and chosen to make the bound tightest where it equals
    ``target_epsilon``; elsewhere it pays a small ``log`` factor, the price of validity at all
    times.

    Steps are charged like :class:`RenyiFilter` (``rho``, ``mu²/2`` or ``epsilon²/2`` for pure
    steps); steps with ``delta > 0`` and no ``rho``/``mu`` are refused. The odometer never
    refuses a step for its size: it only reports.
    """

    def __init__(self, delta: float = 1e-6, *, target_epsilon: float = 1.0):
        self._delta = _delta_budget("delta", delta, low_open=True)
        self.target_epsilon = check.positive_float("target_epsilon", target_epsilon)
        self.tuning = self._tune(self.target_epsilon, self._delta)
        self._lock = threading.Lock()
        self._rho = Fraction(0)
        self._history: list[Charge] = []
        self._bounds: list[float] = []

    @property
    def delta(self) -> float:
        return self._delta

    @property
    def history(self) -> tuple[Charge, ...]:
        with self._lock:
            return tuple(self._history)

    @property
    def bounds(self) -> tuple[float, ...]:
        """The bound after each recorded step."""
        with self._lock:
            return tuple(self._bounds)

    @property
    def rho(self) -> float:
        """Σ ρᵢ recorded so far."""
        with self._lock:
            return float(self._rho)

    def epsilon(self) -> float:
        """The current bound on the privacy loss (0 before any step)."""
        with self._lock:
            return self._bounds[-1] if self._bounds else 0.0

    def bound(self, rho_total: float) -> float:
        """``u(R)`` for a total ``R = Σ ρᵢ``: ``R + x*`` with ``x*`` the root of the mixture
        condition below.

        Mixing ``exp(λx - λ²R)`` (``x = L - R``) over the half-normal density
        ``2 sqrt(c/2π) e^{-cλ²/2}`` on ``λ > 0`` gives exactly
        ``M = 2 sqrt(c/s) e^{x²/(2s)} Φ(x/√s)`` with ``s = 2R + c``, and Ville's inequality keeps
        ``M < 1/δ`` at all times with probability ``1 - δ``. ``M`` increases in ``x``, so the
        loss stays below the root ``x*`` of ``log M = log(1/δ)``. Bounding ``Φ >= 1/2`` instead
        gives the closed form ``sqrt(2 s log(sqrt(s/c) / δ))`` of the class docstring, which is
        ``x*`` at ``2δ`` (a factor 2 lost in δ); the root is found by bisection below it and
        rounded up."""
        rho_total = _amount("rho_total", rho_total)
        c = self.tuning
        spread = 2 * rho_total + c
        log_target = -math.log(self._delta)

        def log_mixture(x: float) -> float:
            return (
                math.log(2.0) + 0.5 * math.log(c / spread) + x * x / (2 * spread)
                + float(special.log_ndtr(x / math.sqrt(spread)))
            )

        # the closed form (Phi >= 1/2) is at or above the root: bisect below it, keep the top
        hi = math.sqrt(2 * spread * (0.5 * math.log(spread / c) + log_target))
        lo = 0.0  # M(0) = sqrt(c/s) <= 1 < 1/δ: the root is positive
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            if mid in (lo, hi):
                break
            if log_mixture(mid) < log_target:
                lo = mid
            else:
                hi = mid
        # 1e-9 relative margin covers the rounding of log_ndtr and the sums (a few ulps each)
        return _up(rho_total + hi * (1 + 1e-9)) * (1 + SAFETY)

    def spend(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        *,
        rho: float | None = None,
        mu: float | None = None,
        label: str = "",
    ) -> Charge:
        """Record a step (see :meth:`PrivacyFilter.spend`); returns the recorded charge."""
        charge = _parse_charge(epsilon, delta, rho, mu, label)
        price = _zcdp_price(charge, "the Odometer")
        with self._lock:
            total = self._rho + price
            try:
                bound = self.bound(float(total))
            except OverflowError:
                bound = math.inf
            if not bound < math.inf:
                raise ValueError(
                    f"the step {charge} makes the privacy loss bound overflow a float; nothing "
                    "recorded"
                )
            self._rho = total
            self._history.append(charge)
            self._bounds.append(bound)
        return charge

    def __repr__(self) -> str:
        return (
            f"Odometer(delta={self._delta:.6g}, target_epsilon={self.target_epsilon:.6g}, "
            f"epsilon()={self.epsilon():.6g})"
        )

    @staticmethod
    def _tune(target: float, delta: float) -> float:
        # the Σρ at which the (tighter) fixed-horizon bound equals the target ...
        log_term = math.log(1 / delta)
        rho_star = (math.sqrt(log_term + target) - math.sqrt(log_term)) ** 2

        # ... and the mixture precision that minimizes the bound there
        def bound_at(log_c: float) -> float:
            c = math.exp(log_c)
            spread = 2 * rho_star + c
            return rho_star + math.sqrt(2 * spread * (0.5 * math.log(spread / c) + log_term))

        centre = math.log(2 * rho_star)
        found = optimize.minimize_scalar(
            bound_at, bounds=(centre - 25, centre + 10), method="bounded"
        )
        return math.exp(found.x)


# ================================================================== guarded queries


def _randbelow(rng: np.random.Generator, n: int) -> int:
    """Uniform integer in [0, n), exact for any size."""
    if n <= 1 << 62:
        return int(rng.integers(n))
    bits = n.bit_length()
    nbytes = (bits + 7) // 8
    while True:  # rejection from raw bytes for integers numpy cannot draw
        r = int.from_bytes(rng.bytes(nbytes), "little") >> (8 * nbytes - bits)
        if r < n:
            return r


def _bernoulli_exp(rng, numerator: int, denominator: int) -> bool:
    """Bernoulli(exp(-n/d)) for integers n >= 0, d >= 1, exactly (Canonne, Kamath & Steinke
    2020, Algorithm 1): integer arithmetic only."""
    while numerator > denominator:  # exp(-γ) = exp(-1)^floor(γ) exp(-(γ - floor(γ)))
        if not _bernoulli_exp(rng, 1, 1):
            return False
        numerator -= denominator
    k = 1
    while _randbelow(rng, denominator * k) < numerator:  # Bernoulli(γ / k)
        k += 1
    return k % 2 == 1


def _discrete_laplace(rng, s: int, t: int) -> int:
    """Sample with ``P(x) ∝ exp(-|x| s / t)`` on the integers (CKS20, Algorithm 2)."""
    while True:
        u = _randbelow(rng, t)
        if not _bernoulli_exp(rng, u, t):
            continue
        v = 0
        while _bernoulli_exp(rng, 1, 1):
            v += 1
        y = (u + t * v) // s
        negative = _randbelow(rng, 2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def _discrete_gaussian(rng, sigma_squared: Fraction) -> int:
    """Sample with ``P(x) ∝ exp(-x² / (2σ²))`` on the integers (CKS20, Algorithm 3)."""
    t = math.isqrt(math.floor(sigma_squared)) + 1  # floor(sigma) + 1
    while True:
        y = _discrete_laplace(rng, 1, t)
        gamma = (abs(y) - sigma_squared / t) ** 2 / (2 * sigma_squared)
        if _bernoulli_exp(rng, gamma.numerator, gamma.denominator):
            return y


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a positive integer, got {type(value).__name__}")
    if not (float(value).is_integer() and value >= 1):
        raise ValueError(f"{name} must be a positive integer (1, 2, ...), got {value!r}")
    return int(value)


class PrivateQueries:
    """Private data behind a privacy budget: every answer is noisy and charged first.

    Like the tutorial's data node: the data are held inside, a query is a function of the data
    with a declared sensitivity (add/remove neighbours; for replace-one, declare twice the
    add/remove sensitivity), and each answer is charged to ``budget`` — any
    :class:`PrivacyFilter` (which refuses past its budget) or an :class:`Odometer` (which only
    reports). The charge happens *before* the query runs, so a refused query never touches the
    data, and a query that raises keeps its charge (its failure is an observable outcome).

    Thread-safe: the budget checks and records under its own lock, and the noise generator is
    used under another, so concurrent queries never overspend and never share random draws.

    Notes
    -----
    ``laplace`` and ``gaussian`` add floating-point noise from ``numpy.random.Generator``;
    textbook floating-point samplers have known side channels (the gaps and rounding of
    floating-point outputs can reveal the true answer; Mironov 2012, "On significance of the
    least significant bits for differential privacy"). For deployments, use the exact integer
    samplers ``discrete_laplace`` / ``discrete_gaussian`` (Canonne, Kamath & Steinke 2020; the
    mechanisms ``plda.DiscreteLaplace`` / ``plda.DiscreteGaussian`` account for them) on integer
    queries — they use rational arithmetic only. The generator itself is not a cryptographic
    source: seed it from ``secrets`` in production. This class is a budget guard, not a
    sandbox: the query callables see the raw data.

    Parameters
    ----------
    data
        Any object; only the query callables see it.
    budget
        A filter or an odometer.
    rng
        ``numpy.random.Generator``, a seed, or ``None`` (fresh entropy).
    """

    def __init__(self, data, budget: PrivacyFilter | Odometer, rng=None):
        if not isinstance(budget, PrivacyFilter | Odometer):
            raise TypeError(
                f"budget must be a PrivacyFilter or an Odometer, got {type(budget).__name__}"
            )
        self._data = data
        self.budget = budget
        self._rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        self._rng_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PrivateQueries(<data hidden>, budget={self.budget!r})"

    # ---------------------------------------------------------------- helpers
    def _answer(self, query: Callable) -> np.ndarray:
        if not callable(query):
            raise TypeError(f"query must be a callable of the data, got {type(query).__name__}")
        return query(self._data)

    @staticmethod
    def _real_values(value) -> np.ndarray:
        values = np.asarray(value, dtype=float)
        if not np.all(np.isfinite(values)):
            raise ValueError("the query returned a non-finite value")
        return values

    @staticmethod
    def _integer_values(value) -> np.ndarray:
        values = np.asarray(value)
        if values.dtype == object or not (
            np.issubdtype(values.dtype, np.integer)
            or (np.issubdtype(values.dtype, np.floating) and np.all(np.mod(values, 1) == 0))
        ):
            raise ValueError("a discrete mechanism needs an integer-valued query")
        return values.astype(object)  # Python ints: no overflow when the noise is added

    @staticmethod
    def _shape(values: np.ndarray, noisy: np.ndarray):
        return noisy.reshape(values.shape) if values.ndim else noisy.reshape(()).item()

    # ---------------------------------------------------------------- mechanisms
    def laplace(self, query: Callable, sensitivity: float, epsilon: float, *, label: str = ""):
        """``query(data) + Lap(sensitivity / epsilon)`` (each coordinate; ``sensitivity`` is the
        L1 sensitivity). Charges a pure ``epsilon`` step."""
        sensitivity = check.positive_float("sensitivity", sensitivity)
        epsilon = check.positive_float("epsilon", epsilon)
        scale = _up(sensitivity / epsilon) * (1 + SAFETY)  # never less noise than calibrated
        self.budget.spend(epsilon=epsilon, delta=0.0, label=label)
        values = self._real_values(self._answer(query))
        with self._rng_lock:
            noise = self._rng.laplace(0.0, scale, size=values.shape)
        return self._shape(values, values + noise)

    def gaussian(
        self,
        query: Callable,
        sensitivity: float,
        *,
        epsilon: float | None = None,
        delta: float | None = None,
        rho: float | None = None,
        mu: float | None = None,
        label: str = "",
    ):
        """``query(data) + N(0, σ²)`` (``sensitivity`` is the L2 sensitivity Δ).

        Give exactly one of: ``epsilon`` and ``delta`` (σ is the analytic Gaussian mechanism's,
        Balle & Wang 2018: the smallest σ with (ε, δ)-DP), ``rho`` (σ = Δ / sqrt(2ρ)) or ``mu``
        (σ = Δ / μ). The step is charged with every guarantee it has (ε, δ if given; ρ = μ²/2;
        μ = Δ/σ), so any filter can price it.
        """
        sensitivity = check.positive_float("sensitivity", sensitivity)
        given = [epsilon is not None or delta is not None, rho is not None, mu is not None]
        if sum(given) != 1:
            raise ValueError("give exactly one of: epsilon and delta; rho; mu")
        if given[0]:
            epsilon = check.positive_float("epsilon", epsilon)
            if delta is None:
                raise ValueError("delta must be given with epsilon for a Gaussian step")
            delta = _delta_budget("delta", delta, low_open=True)
            mu_step = _largest_gaussian_dp_mu(epsilon, delta)
        elif given[1]:
            mu_step = math.sqrt(2 * check.positive_float("rho", rho))
        else:
            mu_step = check.positive_float("mu", mu)
        sigma = _up(sensitivity / mu_step) * (1 + SAFETY)
        mu_actual = _up(sensitivity / sigma)
        self.budget.spend(
            epsilon=epsilon if given[0] else None,
            delta=delta if given[0] else 0.0,
            rho=_up(mu_actual * mu_actual / 2),
            mu=mu_actual,
            label=label,
        )
        values = self._real_values(self._answer(query))
        with self._rng_lock:
            noise = self._rng.normal(0.0, sigma, size=values.shape)
        return self._shape(values, values + noise)

    def discrete_laplace(
        self, query: Callable, sensitivity: int, epsilon: float, *, label: str = ""
    ):
        """Integer ``query(data) + Z`` with ``P(Z = z) ∝ exp(-epsilon |z| / sensitivity)``, sampled
        exactly (no floating point; Canonne, Kamath & Steinke 2020). Pure ``epsilon``-DP for an
        integer query of L1 ``sensitivity``."""
        sensitivity = _positive_int("sensitivity", sensitivity)
        epsilon = check.positive_float("epsilon", epsilon)
        rate = _exact(epsilon) / sensitivity  # P ∝ exp(-rate |z|), rate = s / t
        self.budget.spend(epsilon=epsilon, delta=0.0, label=label)
        values = self._integer_values(self._answer(query))
        flat = values.reshape(-1)
        with self._rng_lock:
            noise = [_discrete_laplace(self._rng, rate.numerator, rate.denominator) for _ in flat]
        noisy = np.array([int(v) + z for v, z in zip(flat, noise, strict=True)], dtype=object)
        return self._shape(values, noisy)

    def discrete_gaussian(
        self,
        query: Callable,
        sensitivity: int,
        *,
        rho: float | None = None,
        sigma: float | None = None,
        label: str = "",
    ):
        """Integer ``query(data) + Z`` with ``P(Z = z) ∝ exp(-z² / (2σ²))``, sampled exactly
        (CKS20). Give ``rho`` (σ² = Δ²/(2ρ), exactly) or ``sigma``; the step is charged as
        ``Δ²/(2σ²)``-zCDP (CKS20), which :class:`RenyiFilter` and :class:`Odometer` price."""
        sensitivity = _positive_int("sensitivity", sensitivity)
        if (rho is None) == (sigma is None):
            raise ValueError("give exactly one of rho and sigma")
        if rho is not None:
            rho_exact = _exact(check.positive_float("rho", rho))
            sigma_squared = Fraction(sensitivity**2) / (2 * rho_exact)
        else:
            sigma_squared = _exact(check.positive_float("sigma", sigma)) ** 2
        rho_step = _up(float(Fraction(sensitivity**2) / (2 * sigma_squared)))
        self.budget.spend(rho=rho_step, label=label)
        values = self._integer_values(self._answer(query))
        flat = values.reshape(-1)
        with self._rng_lock:
            noise = [_discrete_gaussian(self._rng, sigma_squared) for _ in flat]
        noisy = np.array([int(v) + z for v, z in zip(flat, noise, strict=True)], dtype=object)
        return self._shape(values, noisy)

    def count(self, predicate: Callable, epsilon: float, *, label: str = "") -> int:
        """Noisy number of records satisfying ``predicate`` (sensitivity 1), with exact discrete
        Laplace noise; ``data`` must be iterable over records."""
        if not callable(predicate):
            raise TypeError(f"predicate must be callable, got {type(predicate).__name__}")
        return self.discrete_laplace(
            lambda data: sum(1 for record in data if predicate(record)), 1, epsilon, label=label
        )

    def clipped_sum(
        self,
        value: Callable,
        lower: float,
        upper: float,
        epsilon: float,
        *,
        label: str = "",
    ) -> float:
        """Noisy ``Σ clip(value(record), lower, upper)`` with Laplace noise; one record moves the
        sum by at most ``max(|lower|, |upper|)``, the sensitivity used."""
        if not callable(value):
            raise TypeError(f"value must be callable, got {type(value).__name__}")
        for name, bound in (("lower", lower), ("upper", upper)):
            if isinstance(bound, bool) or not isinstance(bound, numbers.Real):
                raise TypeError(f"{name} must be a real number, got {type(bound).__name__}")
            if not math.isfinite(bound):
                raise ValueError(f"{name} must be finite, got {bound!r}")
        if not lower < upper:
            raise ValueError(f"lower must be below upper, got lower={lower!r}, upper={upper!r}")
        sensitivity = max(abs(float(lower)), abs(float(upper)))

        def clipped(data):
            return math.fsum(min(max(float(value(r)), lower), upper) for r in data)

        return self.laplace(clipped, sensitivity, epsilon, label=label)


# ================================================================== comparison

#: step epsilons of the default comparison
DEFAULT_STEP_EPSILONS = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5)


@dataclass(frozen=True)
class FilterComparison:
    """How many pure ε₀-steps each filter allows for a budget (ε, δ), next to the most any
    non-adaptive composition allows. ``counts[i][j]`` is column ``j`` at ``step_epsilons[i]``;
    ``None`` where a column was not computed."""

    epsilon: float
    delta: float
    step_epsilons: tuple[float, ...]
    columns: tuple[str, ...]
    counts: tuple[tuple[int | None, ...], ...]

    def column(self, name: str) -> tuple[int | None, ...]:
        if name not in self.columns:
            raise ValueError(f"name must be one of {self.columns}, got {name!r}")
        j = self.columns.index(name)
        return tuple(row[j] for row in self.counts)

    def __str__(self) -> str:
        header = ["eps0", *self.columns]
        rows = [
            [f"{e:g}", *("-" if c is None else str(c) for c in row)]
            for e, row in zip(self.step_epsilons, self.counts, strict=True)
        ]
        widths = [max(len(r[j]) for r in [header, *rows]) for j in range(len(header))]

        def line(cells):
            return "| " + " | ".join(c.rjust(w) for c, w in zip(cells, widths, strict=True)) + " |"

        rule = "|" + "|".join("-" * (w + 1) + ":" for w in widths) + "|"
        title = (
            f"Pure eps0-DP steps allowed within (epsilon={self.epsilon:g}, delta={self.delta:g})"
        )
        return "\n".join([title, "", line(header), rule, *(line(r) for r in rows)])


FILTER_COLUMNS = {
    "basic": lambda e, d: BasicFilter(e, d),
    "advanced RRUV16": lambda e, d: AdvancedFilter(e, d),
    "advanced WRRW23": lambda e, d: ImprovedAdvancedFilter(e, d, step_delta=0.0),
    "Renyi/zCDP FZ21": lambda e, d: RenyiFilter(e, d),
    "Gaussian DP ST22": lambda e, d: GaussianFilter(e, d),
}
OPTIMAL_COLUMN = "optimal, any eps0-DP"
LAPLACE_COLUMN = "optimal, Laplace"


def _largest_composition(mechanism, epsilon: float, delta: float, start: int) -> int:
    """Largest k with the certified ``epsilon(delta)`` of k runs at most ``epsilon``."""
    from plda.pld import PrivacyLossDistribution  # the engine; imported late (no cycle)

    pld = PrivacyLossDistribution.from_mechanism(mechanism)

    def ok(k: int) -> bool:
        return k == 0 or float(pld.self_compose(k).epsilon(delta)) <= epsilon

    lo, hi = 0, max(start, 1)
    while ok(hi):
        lo, hi = hi, 2 * hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def compare_filters(
    epsilon: float = 1.0,
    delta: float = 1e-6,
    step_epsilons=DEFAULT_STEP_EPSILONS,
    *,
    optimal: bool = True,
    laplace: bool = True,
) -> FilterComparison:
    """Count the pure ε₀-steps (e.g. Laplace queries) each filter allows within (ε, δ).

    Filters: :class:`BasicFilter`, :class:`AdvancedFilter`, :class:`ImprovedAdvancedFilter`
    (``step_delta=0``: every step is pure), :class:`RenyiFilter`, :class:`GaussianFilter`
    (pure steps at :func:`gaussian_dp_of_pure_dp`).

    ``optimal`` adds the largest k such that k *non-adaptive* runs of the worst ε₀-DP mechanism,
    randomized response ``plda.ApproximateDP(ε₀)`` (Kairouz, Oh & Viswanath 2015: it dominates
    every ε₀-DP mechanism, so its composition is the optimal composition theorem), have certified
    ``epsilon(delta) <= epsilon`` — the ceiling for anything that only knows "ε₀-DP", which is
    all a filter is told. ``laplace`` adds the same count for the Laplace mechanism itself
    (``plda.Laplace(1/ε₀)``), which knows the noise shape and so may allow more.
    """
    epsilon = check.positive_float("epsilon", epsilon)
    delta = _delta_budget("delta", delta, low_open=True, high=math.exp(-1))
    steps = tuple(check.positive_float("step_epsilons", e) for e in step_epsilons)
    if not steps:
        raise ValueError("step_epsilons must hold at least one value")
    filters = {name: make(epsilon, delta) for name, make in FILTER_COLUMNS.items()}
    columns = list(filters)
    if optimal:
        columns.append(OPTIMAL_COLUMN)
    if laplace:
        columns.append(LAPLACE_COLUMN)
    counts = []
    for step in steps:
        row = [f.steps_left(epsilon=step) for f in filters.values()]
        start = max(row)
        if optimal or laplace:
            from plda.mechanisms import ApproximateDP, Laplace

            if optimal:
                row.append(_largest_composition(ApproximateDP(step), epsilon, delta, start))
            if laplace:
                row.append(_largest_composition(Laplace(1 / step), epsilon, delta, start))
        counts.append(tuple(row))
    return FilterComparison(epsilon, delta, steps, tuple(columns), tuple(counts))
