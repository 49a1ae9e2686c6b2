"""The privacy odometer: a running bound on the privacy loss, valid at every step at once."""

from __future__ import annotations

import math
import threading
from fractions import Fraction

from scipy import optimize, special

from plda._internal import validation as check
from plda.filters.amounts import SAFETY, amount, delta_budget, round_up
from plda.filters.charges import Charge, parse_charge, zcdp_price


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
        self._delta = delta_budget("delta", delta, low_open=True)
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
        rho_total = amount("rho_total", rho_total)
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
        """Record a step (see :meth:`PrivacyFilter.spend`); returns the recorded charge."""
        charge = parse_charge(epsilon, delta, rho, mu, label)
        price = zcdp_price(charge, "the Odometer")
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
