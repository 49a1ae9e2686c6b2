"""The privacy odometer: a running bound on the privacy loss, valid at every step at once."""

from __future__ import annotations

import math
import sys
import threading
from fractions import Fraction

from scipy import optimize, special

from plda._internal import validation as check
from plda.filters.amounts import (
    LARGEST_EPSILON,
    SAFETY,
    amount,
    delta_budget,
    log_inverse,
    round_up,
)
from plda.filters.charges import Charge, parse_charge, zcdp_price

#: the targets an Odometer accepts (see its docstring)
TARGET_RANGE = (1e-100, 1e100)


class Odometer:
    """A running bound on the privacy loss, valid at every step simultaneously.

    With probability at least ``1 - delta``, for all n at once, the privacy loss of the first n
    steps is at most ``u(Rₙ)``, ``Rₙ = Σ ρᵢ`` (the mixture method of Whitehouse, Ramdas, Rogers
    & Wu 2023; :meth:`bound`; derivation in ``docs/filters.md``, "Odometer"). So after any
    number of steps, even one decided on the fly, the interaction is ex-post (``epsilon()``,
    ``delta``)-private. Steps are charged like :class:`RenyiFilter`; the odometer never refuses
    a step for its size: it only reports.

    Parameters
    ----------
    delta : float, optional
        The probability, in (0, 1), with which the bound may fail.
    target_epsilon : float, optional
        Where the bound is made tightest (the mixture's precision ``c`` is fixed here, before
        any data is seen); elsewhere it pays a small ``log`` factor. In [1e-100, 1e100]: ``c``
        scales like ``target_epsilon²`` for small targets and must stay a normal float (no
        target outside this range means any privacy).

    Attributes
    ----------
    target_epsilon : float
        As given.
    tuning : float
        The mixture's precision ``c``.

    Raises
    ------
    ValueError
        If a value is out of range.
    TypeError
        If a value is not a real number.
    """

    def __init__(self, delta: float = 1e-6, *, target_epsilon: float = 1.0):
        self._delta = delta_budget("delta", delta, low_open=True)
        self.target_epsilon = check.positive_float("target_epsilon", target_epsilon)
        if not TARGET_RANGE[0] <= self.target_epsilon <= TARGET_RANGE[1]:
            raise ValueError(
                f"target_epsilon must be in [{TARGET_RANGE[0]:g}, {TARGET_RANGE[1]:g}], got "
                f"{target_epsilon!r}"
            )
        self.tuning = self._tune(self.target_epsilon, self._delta)
        self._lock = threading.Lock()
        self._rho = Fraction(0)
        self._history: list[Charge] = []
        self._bounds: list[float] = []

    @property
    def delta(self) -> float:
        """The probability with which the bound may fail."""
        return self._delta

    @property
    def history(self) -> tuple[Charge, ...]:
        """The recorded steps, oldest first."""
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
        """The current bound on the privacy loss.

        Returns
        -------
        float
            ``u(Σ ρᵢ)`` after the last recorded step; 0 before any step.
        """
        with self._lock:
            return self._bounds[-1] if self._bounds else 0.0

    def bound(self, rho_total: float) -> float:
        """The bound ``u(R) = R + x*`` on the privacy loss at a total ``R = Σ ρᵢ``.

        ``x*`` is the root of ``2 sqrt(c/s) e^{x²/(2s)} Φ(x/√s) = 1/δ`` with ``s = 2R + c``,
        found by bisection and rounded up (derivation: ``docs/filters.md``, "Odometer").

        Parameters
        ----------
        rho_total : float
            The total ``R``, in [0, 1e307] (so that ``s`` and ``u(R)`` stay floats).

        Returns
        -------
        float
            ``u(R)``, rounded up.

        Raises
        ------
        ValueError
            If ``rho_total`` is outside [0, 1e307].
        TypeError
            If it is not a real number.
        """
        rho_total = amount("rho_total", rho_total)
        if rho_total > LARGEST_EPSILON:
            raise ValueError(f"rho_total must be in [0, {LARGEST_EPSILON:g}], got {rho_total!r}")
        c = self.tuning
        spread = 2 * rho_total + c
        log_target = -math.log(self._delta)
        if c / spread >= sys.float_info.min:
            log_ratio, log_inverse_ratio = math.log(c / spread), math.log(spread / c)
        else:  # c/s underflows (a tiny target's c against a large total): logs of each
            log_ratio = math.log(c) - math.log(spread)
            log_inverse_ratio = -log_ratio

        def log_mixture(x: float) -> float:
            return (
                math.log(2.0) + 0.5 * log_ratio + x * x / (2 * spread)
                + float(special.log_ndtr(x / math.sqrt(spread)))
            )

        # the closed form (Phi >= 1/2) is at or above the root: bisect below it, keep the top
        inner = 0.5 * log_inverse_ratio + log_target
        hi_squared = 2 * spread * inner
        if hi_squared < math.inf:
            hi = math.sqrt(hi_squared)
        else:  # 2s ln(...) overflows for R near 1e307, its root does not
            hi = math.sqrt(2 * spread) * math.sqrt(inner)
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
        return round_up(rho_total + hi * (1 + 1e-9)) * (1 + SAFETY)

    def spend(
        self,
        epsilon: float | None = None,
        delta: float = 0.0,
        *,
        rho: float | None = None,
        mu: float | None = None,
        label: str = "",
    ) -> Charge:
        """Record a step and move the bound; the odometer never refuses a step for its size.

        Parameters
        ----------
        epsilon : float, optional
            The step is (``epsilon``, ``delta``)-DP (a pure step is priced ``epsilon²/2``).
        delta : float, optional
            The step's δ (a step with ``delta > 0`` needs ``rho`` or ``mu``).
        rho : float, optional
            The step is ``rho``-zCDP.
        mu : float, optional
            The step is ``mu``-GDP (priced ``mu²/2``).
        label : str, optional
            Free text kept in :attr:`history`.

        Returns
        -------
        Charge
            The recorded step.

        Raises
        ------
        ValueError
            If the step has no zCDP price (``delta > 0`` without ``rho`` or ``mu``), an amount is
            out of range, or the bound would overflow a float; nothing is recorded then.
        TypeError
            If an amount is not a real number.
        """
        charge = parse_charge(epsilon, delta, rho, mu, label)
        price = zcdp_price(charge, "the Odometer")
        with self._lock:
            total = self._rho + price
            bound = self.bound(float(total)) if total <= LARGEST_EPSILON else math.inf
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
        log_term = log_inverse(delta)
        if target >= 1e-6 * log_term:  # the difference keeps all but ~4L/ε 2^-53 of its digits
            rho_star = (math.sqrt(log_term + target) - math.sqrt(log_term)) ** 2
        else:  # the same, in a form that does not cancel (the difference is 0 for ε << L)
            rho_star = (target / (math.sqrt(log_term + target) + math.sqrt(log_term))) ** 2

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
