"""Guarded queries: private data behind a filter or an odometer (:class:`PrivateQueries`)."""

from __future__ import annotations

import math
import numbers
import sys
import threading
from collections.abc import Callable
from fractions import Fraction

import numpy as np

from plda._internal import validation as check
from plda.filters import samplers
from plda.filters.amounts import (
    SAFETY,
    delta_budget,
    exact,
    positive_int,
    round_up,
    upper_float,
)
from plda.filters.base import PrivacyFilter
from plda.filters.conversions import largest_gaussian_dp_mu
from plda.filters.odometer import Odometer


class PrivateQueries:
    """Private data behind a privacy budget: every answer is noisy and charged first.

    Like the tutorial's data node: the data are held inside, a query is a function of the data
    with a declared sensitivity (add/remove neighbours; for replace-one, declare twice the
    add/remove sensitivity), and each answer is charged to ``budget`` — any
    :class:`PrivacyFilter` (which refuses past its budget) or an :class:`Odometer` (which only
    reports). Every argument is checked first: a call that raises TypeError or ValueError for
    bad input changes nothing (no charge, no noise drawn, the query not run). The charge then
    happens *before* the query runs, so a refused query never touches the data, and a query
    that raises keeps its charge (its failure is an observable outcome).

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
    data : object
        Any object; only the query callables see it.
    budget : PrivacyFilter or Odometer
        What each answer is charged to.
    rng : numpy.random.Generator or int, optional
        The noise generator, a seed, or ``None`` (fresh entropy).

    Raises
    ------
    TypeError
        If ``budget`` is not a :class:`PrivacyFilter` or an :class:`Odometer`.
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
    # the checks every mechanism runs before it charges the budget (see the class docstring)
    @staticmethod
    def _check_query(query: Callable) -> Callable:
        if not callable(query):
            raise TypeError(f"query must be a callable of the data, got {type(query).__name__}")
        return query

    @staticmethod
    def _check_label(label: str) -> str:
        if not isinstance(label, str):
            raise TypeError(f"label must be a str, got {type(label).__name__}")
        return label

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
        """Laplace mechanism: ``query(data) + Lap(sensitivity / epsilon)``, charged a pure ε step.

        Parameters
        ----------
        query : callable
            ``query(data)``: a number or an array of numbers.
        sensitivity : float
            The query's L1 sensitivity, > 0.
        epsilon : float
            The step's ε, > 0.
        label : str, optional
            Free text kept in the budget's history.

        Returns
        -------
        float or numpy.ndarray
            The noisy answer, of the query's shape.

        Raises
        ------
        BudgetExceededError
            If the budget is a filter and refuses the step (the query does not run).
        ValueError
            If an argument is out of range, ``sensitivity / epsilon`` (the noise scale) exceeds
            the largest float, or the query returns a non-finite value.
        TypeError
            If ``query`` is not callable, ``label`` not a str, or a number is not a real number.
        """
        self._check_query(query)
        self._check_label(label)
        sensitivity = check.positive_float("sensitivity", sensitivity)
        epsilon = check.positive_float("epsilon", epsilon)
        scale = round_up(sensitivity / epsilon) * (1 + SAFETY)  # never less noise than calibrated
        if not math.isfinite(scale):  # infinite noise would answer inf/nan, yet be charged
            raise ValueError(
                "sensitivity / epsilon (the Laplace scale) must be at most 1.7e308, got "
                f"sensitivity={sensitivity!r}, epsilon={epsilon!r}"
            )
        self.budget.spend(epsilon=epsilon, delta=0.0, label=label)
        values = self._real_values(query(self._data))
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
        """Gaussian mechanism: ``query(data) + N(0, σ²)``, charged with every guarantee it has.

        Give exactly one of: ``epsilon`` and ``delta`` (σ is the analytic Gaussian mechanism's,
        Balle & Wang 2018: the smallest σ with (ε, δ)-DP), ``rho`` (σ = Δ / sqrt(2ρ)) or ``mu``
        (σ = Δ / μ). The step is charged (ε, δ) if given, ρ = μ²/2 and μ = Δ/σ, so any filter
        can price it.

        Parameters
        ----------
        query : callable
            ``query(data)``: a number or an array of numbers.
        sensitivity : float
            The query's L2 sensitivity Δ, > 0.
        epsilon, delta : float, optional
            Calibrate σ to (ε, δ)-DP.
        rho : float, optional
            Calibrate σ to ρ-zCDP.
        mu : float, optional
            Calibrate σ to μ-GDP.
        label : str, optional
            Free text kept in the budget's history.

        Returns
        -------
        float or numpy.ndarray
            The noisy answer, of the query's shape.

        Raises
        ------
        BudgetExceededError
            If the budget is a filter and refuses the step (the query does not run).
        ValueError
            If an argument is out of range, not exactly one calibration is given, the noise's
            σ = Δ/μ is not a positive finite float or the charged μ = Δ/σ is below 2.2e-308
            (the smallest normal float), or the query returns a non-finite value.
        TypeError
            If ``query`` is not callable, ``label`` not a str, or a number is not a real number.
        """
        self._check_query(query)
        self._check_label(label)
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
            rho = check.positive_float("rho", rho)
            # sqrt(2) sqrt(rho) where 2 rho overflows: a huge rho is a tiny sigma, not a failure
            mu_step = math.sqrt(2 * rho) if 2 * rho < math.inf else math.sqrt(2) * math.sqrt(rho)
        else:
            mu_step = check.positive_float("mu", mu)
        sigma = round_up(sensitivity / mu_step) * (1 + SAFETY)
        mu_actual = round_up(sensitivity / sigma) if 0 < sigma < math.inf else 0.0
        # sigma must be a finite positive float and the charged mu a normal one (a subnormal mu
        # cannot be rounded up by a relative margin): else the answer would be inf, or the charge
        # rounded below the step's true mu
        if not (0 < sigma < math.inf and mu_actual >= sys.float_info.min):
            raise ValueError(
                "sensitivity / mu (the noise's sigma) must be a positive finite float and mu = "
                "sensitivity / sigma at least 2.2e-308, got "
                f"sensitivity={sensitivity!r}, mu={mu_step!r}"
            )
        rho_step = exact(mu_actual) ** 2 / 2
        self.budget.spend(
            epsilon=epsilon if given[0] else None,
            delta=delta if given[0] else 0.0,
            # no float holds a rho beyond 1.8e308: the step is then charged by its mu alone
            rho=upper_float(rho_step, round_up(mu_actual * mu_actual / 2))
            if rho_step <= sys.float_info.max
            else None,
            mu=mu_actual,
            label=label,
        )
        values = self._real_values(query(self._data))
        with self._rng_lock:
            noise = self._rng.normal(0.0, sigma, size=values.shape)
        return self._shape(values, values + noise)

    def discrete_laplace(
        self, query: Callable, sensitivity: int, epsilon: float, *, label: str = ""
    ):
        """Discrete Laplace mechanism, sampled exactly: pure ε-DP for an integer query.

        ``query(data) + Z`` with ``P(Z = z) ∝ exp(-epsilon |z| / sensitivity)``, sampled with
        rational arithmetic only (Canonne, Kamath & Steinke 2020).

        Parameters
        ----------
        query : callable
            ``query(data)``: an integer or an array of integers.
        sensitivity : int
            The query's L1 sensitivity, a positive integer.
        epsilon : float
            The step's ε, > 0.
        label : str, optional
            Free text kept in the budget's history.

        Returns
        -------
        int or numpy.ndarray
            The noisy answer (Python integers, no overflow), of the query's shape.

        Raises
        ------
        BudgetExceededError
            If the budget is a filter and refuses the step (the query does not run).
        ValueError
            If an argument is out of range, or the query is not integer-valued.
        TypeError
            If ``query`` is not callable, ``label`` not a str, or a number is not a real number.
        """
        self._check_query(query)
        self._check_label(label)
        sensitivity = positive_int("sensitivity", sensitivity)
        epsilon = check.positive_float("epsilon", epsilon)
        rate = exact(epsilon) / sensitivity  # P ∝ exp(-rate |z|), rate = s / t
        self.budget.spend(epsilon=epsilon, delta=0.0, label=label)
        values = self._integer_values(query(self._data))
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
        """Discrete Gaussian mechanism, sampled exactly, charged ``Δ²/(2σ²)``-zCDP.

        ``query(data) + Z`` with ``P(Z = z) ∝ exp(-z² / (2σ²))`` (Canonne, Kamath & Steinke
        2020); the zCDP charge is priced by :class:`RenyiFilter` and :class:`Odometer`.

        Parameters
        ----------
        query : callable
            ``query(data)``: an integer or an array of integers.
        sensitivity : int
            The query's L2 sensitivity Δ, a positive integer.
        rho : float, optional
            Calibrate σ² = Δ²/(2ρ), exactly.
        sigma : float, optional
            The noise scale σ.
        label : str, optional
            Free text kept in the budget's history.

        Returns
        -------
        int or numpy.ndarray
            The noisy answer (Python integers), of the query's shape.

        Raises
        ------
        BudgetExceededError
            If the budget is a filter and refuses the step (the query does not run).
        ValueError
            If an argument is out of range, not exactly one of ``rho`` and ``sigma`` is given,
            the step's ρ = Δ²/(2σ²) exceeds the largest float, the budget cannot price a zCDP
            step (e.g. a :class:`GaussianFilter`), or the query is not integer-valued.
        TypeError
            If ``query`` is not callable, ``label`` not a str, or a number is not a real number.
        """
        self._check_query(query)
        self._check_label(label)
        sensitivity = positive_int("sensitivity", sensitivity)
        if (rho is None) == (sigma is None):
            raise ValueError("give exactly one of rho and sigma")
        if rho is not None:
            rho_exact = exact(check.positive_float("rho", rho))
            sigma_squared = Fraction(sensitivity**2) / (2 * rho_exact)
        else:
            sigma_squared = exact(check.positive_float("sigma", sigma)) ** 2
        rho_exact = Fraction(sensitivity**2) / (2 * sigma_squared)
        if rho_exact > sys.float_info.max:  # the charge must be a float: refuse before spending
            raise ValueError(
                "sensitivity² / (2 sigma²) (the step's rho) must be at most 1.7e308, got "
                f"sensitivity={sensitivity!r}, sigma={sigma!r}"
            )
        rho_step = upper_float(rho_exact, round_up(float(rho_exact)))
        self.budget.spend(rho=rho_step, label=label)
        values = self._integer_values(query(self._data))
        flat = values.reshape(-1)
        with self._rng_lock:
            noise = [samplers.discrete_gaussian(self._rng, sigma_squared) for _ in flat]
        noisy = np.array([int(v) + z for v, z in zip(flat, noise, strict=True)], dtype=object)
        return self._shape(values, noisy)

    def count(self, predicate: Callable, epsilon: float, *, label: str = "") -> int:
        """Noisy number of records satisfying a predicate, with exact discrete Laplace noise.

        The count has sensitivity 1; ``data`` must be iterable over records.

        Parameters
        ----------
        predicate : callable
            ``predicate(record) -> bool``.
        epsilon : float
            The step's ε, > 0.
        label : str, optional
            Free text kept in the budget's history.

        Returns
        -------
        int
            The noisy count.

        Raises
        ------
        BudgetExceededError
            If the budget is a filter and refuses the step (the query does not run).
        ValueError
            If an argument is out of range.
        TypeError
            If ``predicate`` is not callable or a number is not a real number.
        """
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
        """Noisy clipped sum ``Σ clip(value(record), lower, upper)``, with Laplace noise.

        One record moves the sum by at most ``max(|lower|, |upper|)``, the sensitivity used.

        Parameters
        ----------
        value : callable
            ``value(record) -> float``.
        lower, upper : float
            The clipping range, finite, ``lower < upper``.
        epsilon : float
            The step's ε, > 0.
        label : str, optional
            Free text kept in the budget's history.

        Returns
        -------
        float
            The noisy sum.

        Raises
        ------
        BudgetExceededError
            If the budget is a filter and refuses the step (the query does not run).
        ValueError
            If an argument is out of range, or ``lower >= upper``.
        TypeError
            If ``value`` is not callable or a number is not a real number.
        """
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
