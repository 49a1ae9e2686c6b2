"""Guarded queries: private data behind a filter or an odometer (:class:`PrivateQueries`)."""

from __future__ import annotations

import math
import numbers
import threading
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from plda._internal import validation as check
from plda.filters import samplers
from plda.filters.amounts import SAFETY, delta_budget, exact, positive_int, round_up
from plda.filters.base import PrivacyFilter
from plda.filters.conversions import largest_gaussian_dp_mu
from plda.filters.odometer import Odometer


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
        scale = round_up(sensitivity / epsilon) * (1 + SAFETY)  # never less noise than calibrated
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
            delta = delta_budget("delta", delta, low_open=True)
            mu_step = largest_gaussian_dp_mu(epsilon, delta)
        elif given[1]:
            mu_step = math.sqrt(2 * check.positive_float("rho", rho))
        else:
            mu_step = check.positive_float("mu", mu)
        sigma = round_up(sensitivity / mu_step) * (1 + SAFETY)
        mu_actual = round_up(sensitivity / sigma)
        self.budget.spend(
            epsilon=epsilon if given[0] else None,
            delta=delta if given[0] else 0.0,
            rho=round_up(mu_actual * mu_actual / 2),
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
        sensitivity = positive_int("sensitivity", sensitivity)
        epsilon = check.positive_float("epsilon", epsilon)
        rate = exact(epsilon) / sensitivity  # P ∝ exp(-rate |z|), rate = s / t
        self.budget.spend(epsilon=epsilon, delta=0.0, label=label)
        values = self._integer_values(self._answer(query))
        flat = values.reshape(-1)
        with self._rng_lock:
            noise = [
                samplers.discrete_laplace(self._rng, rate.numerator, rate.denominator) for _ in flat
            ]
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
        sensitivity = positive_int("sensitivity", sensitivity)
        if (rho is None) == (sigma is None):
            raise ValueError("give exactly one of rho and sigma")
        if rho is not None:
            rho_exact = exact(check.positive_float("rho", rho))
            sigma_squared = Fraction(sensitivity**2) / (2 * rho_exact)
        else:
            sigma_squared = exact(check.positive_float("sigma", sigma)) ** 2
        rho_step = round_up(float(Fraction(sensitivity**2) / (2 * sigma_squared)))
        self.budget.spend(rho=rho_step, label=label)
        values = self._integer_values(self._answer(query))
        flat = values.reshape(-1)
        with self._rng_lock:
            noise = [samplers.discrete_gaussian(self._rng, sigma_squared) for _ in flat]
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
