"""The common interface of the privacy filters (:class:`PrivacyFilter`): all-or-nothing,
thread-safe spending against a budget that holds under fully adaptive composition."""

from __future__ import annotations

import threading
from fractions import Fraction

from plda._internal import validation as check
from plda.filters.amounts import LARGEST_EPSILON, add_states, exact, largest_float_where
from plda.filters.charges import BudgetExceededError, Charge, Usage, parse_charge


class PrivacyFilter:
    """Common interface of the privacy filters: an (ε, δ) budget under fully adaptive composition.

    Subclasses define the currency a step is charged in and the halting condition of their
    theorem. ``spend`` is all-or-nothing and thread-safe: the check and the record happen under
    one lock, and a refused request records nothing.

    Parameters
    ----------
    epsilon : float
        The overall epsilon, in (0, 1e307] (:data:`~plda.filters.amounts.LARGEST_EPSILON`:
        sums of squared steps must stay floats; no larger epsilon means any privacy).
    delta : float
        The overall delta (each subclass checks its range).

    Raises
    ------
    TypeError
        If ``epsilon`` is not a real number.
    ValueError
        If ``epsilon`` is not in (0, 1e307].
    """

    measure = ""  # what ``spent.statistic`` is

    def __init__(self, epsilon: float, delta: float):
        self._epsilon = check.positive_float("epsilon", epsilon)
        if self._epsilon > LARGEST_EPSILON:
            raise ValueError(f"epsilon must be in (0, {LARGEST_EPSILON:g}], got {epsilon!r}")
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
        """The overall epsilon: whatever the filter lets through is (epsilon, delta)-DP."""
        return self._epsilon

    @property
    def delta(self) -> float:
        """The overall delta: whatever the filter lets through is (epsilon, delta)-DP."""
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
        epsilon : float, optional
            The step is (``epsilon``, ``delta``)-DP given everything released before it.
        delta : float, optional
            The step's δ: 0, or below the filter's ``delta``.
        rho : float, optional
            The step is ``rho``-zCDP (e.g. a Gaussian mechanism: ``Δ² / (2σ²)``).
        mu : float, optional
            The step is ``mu``-GDP (e.g. a Gaussian mechanism: ``Δ / σ``).
        label : str, optional
            Free text kept in :attr:`history`.

        Returns
        -------
        Charge
            The recorded step.

        Raises
        ------
        BudgetExceededError
            If the step does not fit; it says what was spent and what remains.
        ValueError
            If the step is described by nothing, an amount is negative or not finite, its
            ``delta`` is not below the filter's, or the filter cannot price it (e.g. a step
            known only by ``rho`` for :class:`~plda.filters.GaussianFilter`).
        TypeError
            If an amount is not a real number.
        """
        charge = self._charge(epsilon, delta, rho, mu, label)
        increment = self._increment(charge)
        with self._lock:
            candidate = add_states(self._state, increment)
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
                self._epsilon_sum += exact(charge.epsilon)
                self._delta_sum += exact(charge.delta)
        return charge

    def can_spend(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        *,
        rho: float | None = None,
        mu: float | None = None,
    ) -> bool:
        """Whether :meth:`spend` would accept this step now; nothing is recorded.

        Parameters
        ----------
        epsilon : float, optional
            The step is (``epsilon``, ``delta``)-DP given everything released before it.
        delta : float, optional
            The step's δ: 0, or below the filter's ``delta``.
        rho : float, optional
            The step is ``rho``-zCDP (e.g. a Gaussian mechanism: ``Δ² / (2σ²)``).
        mu : float, optional
            The step is ``mu``-GDP (e.g. a Gaussian mechanism: ``Δ / σ``).

        Returns
        -------
        bool
            True if the step fits the budget.

        Raises
        ------
        ValueError
            If the step is described by nothing, an amount is negative or not finite, its
            ``delta`` is not below the filter's, or the filter cannot price it (e.g. a step
            known only by ``rho`` for :class:`~plda.filters.GaussianFilter`).
        TypeError
            If an amount is not a real number.
        """
        increment = self._increment(self._charge(epsilon, delta, rho, mu, ""))
        with self._lock:
            return self._fits(add_states(self._state, increment))

    def remaining(self) -> float:
        """Largest ε such that a pure (ε, 0)-DP step would be accepted now.

        The budget of the advanced filters is not a single number (it depends on the squares of
        the steps), so this is the meaningful scalar.

        Returns
        -------
        float
            ``can_spend(epsilon=remaining())`` is true, and any larger float is refused.
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
        """How many more copies of a step the filter would accept; nothing is recorded.

        Parameters
        ----------
        epsilon : float, optional
            The step is (``epsilon``, ``delta``)-DP given everything released before it.
        delta : float, optional
            The step's δ: 0, or below the filter's ``delta``.
        rho : float, optional
            The step is ``rho``-zCDP (e.g. a Gaussian mechanism: ``Δ² / (2σ²)``).
        mu : float, optional
            The step is ``mu``-GDP (e.g. a Gaussian mechanism: ``Δ / σ``).

        Returns
        -------
        int
            The number of copies that fit, possibly 0.

        Raises
        ------
        ValueError
            If the step costs nothing (it could be repeated without end), or as for
            :meth:`spend`.
        TypeError
            If an amount is not a real number.
        """
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
        charge = parse_charge(epsilon, delta, rho, mu, label)
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
            return self._fits(add_states(state, self._increment(Charge(x, 0.0))))

        if not fits(0.0):
            return 0.0
        hi = 2.0 * self._epsilon + 1.0  # finite: epsilon <= LARGEST_EPSILON
        while fits(hi):  # pragma: no cover - no valid filter accepts a pure step this large
            hi *= 2
        return largest_float_where(fits, 0.0, hi)

    def _require_epsilon(self, charge: Charge) -> Fraction:
        if charge.epsilon is None:
            raise ValueError(
                f"{type(self).__name__} charges a step's (epsilon, delta); give epsilon (and "
                "delta) — a step known only by rho or mu needs RenyiFilter or GaussianFilter"
            )
        return exact(charge.epsilon)
