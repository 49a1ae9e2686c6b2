"""Targets and evaluators of DP-SGD calibration (used by :mod:`plda.calibration.dpsgd`).

:func:`make_target` turns the keyword arguments of a calibration call into its one
:class:`~plda.calibration.core.Target`; :func:`gdp_mu` gives the Gaussian-DP ``mu`` meeting it
(the starting guess of every search); :class:`DPSGDEvaluator` maps a parameter value to certified
bounds on the objective for the DP-SGD composition.
"""

from __future__ import annotations

import math

from scipy.optimize import brentq
from scipy.special import ndtr, ndtri

from plda._internal import validation as check
from plda._internal.errors import quiet_accuracy
from plda.accountant import PLDAccountant
from plda.calibration.core import DEFAULT_RTOL, SEARCH_ACCURACY, Target
from plda.mechanisms import Gaussian, PoissonSampled
from plda.pld import PrivacyLossDistribution
from plda.risk import advantage_bounds, true_positive_rate_bounds

__all__ = [
    "DPSGDEvaluator",
    "RISK_RTOL",
    "check_options",
    "gdp_mu",
    "gdp_noise_multiplier",
    "log_sigma",
    "make_target",
]

#: default relative tolerance of a risk target: the risk bounds are cheap to evaluate, and the
#: least noise that meets the target is the point (at 1e-3 the result may carry ~0.05% more
#: noise than needed, more than riskcal's own search tolerance)
RISK_RTOL = 1e-5
#: grid refinements of a risk objective beyond the engine's epsilon-driven grid
_REFINEMENTS = 4


def make_target(
    target_epsilon=None,
    target_delta=None,
    *,
    target_true_positive_rate=None,
    at_false_positive_rate=None,
    target_advantage=None,
) -> Target:
    """The one target of a calibration call; ``ValueError`` naming the arguments unless exactly
    one kind is given, completely."""
    kinds = {
        "target_epsilon/target_delta": (target_epsilon, target_delta),
        "target_true_positive_rate/at_false_positive_rate": (
            target_true_positive_rate,
            at_false_positive_rate,
        ),
        "target_advantage": (target_advantage,),
    }
    given = [name for name, values in kinds.items() if any(v is not None for v in values)]
    if len(given) != 1:
        raise ValueError(
            "give exactly one calibration target: target_epsilon with target_delta, or "
            "target_true_positive_rate with at_false_positive_rate, or target_advantage; got "
            + (", ".join(given) if given else "none")
        )
    if given[0].startswith("target_epsilon"):
        if target_epsilon is None or target_delta is None:
            raise ValueError("target_epsilon and target_delta must be given together")
        eps = check.positive_float("target_epsilon", target_epsilon)
        delta = check.probability("target_delta", target_delta, open_low=True)
        if not delta < 1:
            raise ValueError(f"target_delta must be in (0, 1), got {target_delta!r}")
        return Target(objective="epsilon", value=eps, delta=delta)
    if given[0].startswith("target_true"):
        if target_true_positive_rate is None or at_false_positive_rate is None:
            raise ValueError(
                "target_true_positive_rate and at_false_positive_rate must be given together"
            )
        alpha = check.probability("at_false_positive_rate", at_false_positive_rate, open_low=True)
        tpr = check.probability("target_true_positive_rate", target_true_positive_rate)
        if not alpha < tpr < 1:
            raise ValueError(
                "target_true_positive_rate must be in (at_false_positive_rate, 1) (every test "
                f"reaches TPR = FPR), got {target_true_positive_rate!r} at "
                f"at_false_positive_rate={at_false_positive_rate!r}"
            )
        return Target(objective="true_positive_rate", value=tpr, false_positive_rate=alpha)
    advantage = check.probability("target_advantage", target_advantage, open_low=True)
    if not advantage < 1:
        raise ValueError(f"target_advantage must be in (0, 1), got {target_advantage!r}")
    return Target(objective="advantage", value=advantage)


def gdp_mu(target: Target) -> float:
    """Gaussian-DP ``mu`` that just meets ``target`` (a starting point only).

    Epsilon: ``delta_mu(eps) = delta`` (Dong, Roth & Su 2022, Cor. 2.13); true-positive rate:
    ``1 - G_mu(alpha) = Phi(Phi^-1(alpha) + mu)``; advantage: ``2 Phi(mu / 2) - 1``."""
    if target.objective == "true_positive_rate":
        return float(ndtri(target.value) - ndtri(target.false_positive_rate))
    if target.objective == "advantage":
        return float(2 * ndtri((1 + target.value) / 2))
    eps, delta = target.value, target.delta

    def excess(mu):
        return ndtr(-eps / mu + mu / 2) - math.exp(eps) * ndtr(-eps / mu - mu / 2) - delta

    try:
        return brentq(excess, 1e-6, 1e3, xtol=1e-8)
    except (ValueError, ZeroDivisionError, OverflowError):
        return 1.0


def gdp_noise_multiplier(target_epsilon: float, delta: float, sample_rate: float, steps: int):
    """Log of the central-limit (Gaussian DP) noise multiplier for an epsilon target:
    ``mu = q sqrt(T (e^{1/sigma^2} - 1))`` (Bu, Dong, Long & Su 2020) solved for ``sigma``.
    Only a guess (it can be off by tens of percent either way); the search brackets around it."""
    mu = gdp_mu(Target(objective="epsilon", value=target_epsilon, delta=delta))
    return log_sigma(mu, sample_rate, steps)


def log_sigma(mu: float, sample_rate: float, steps: int) -> float:
    try:
        return -0.5 * math.log(math.log1p((mu / sample_rate) ** 2 / steps))
    except (ValueError, ZeroDivisionError, OverflowError):
        return 0.0


class DPSGDEvaluator:
    """DP-SGD composition for a parameter value -> certified bounds of the target objective."""

    def __init__(self, make, target: Target, relation: str):
        self.make = make  # parameter -> (noise_multiplier, sample_rate, steps)
        self.target = target
        self.relation = relation
        self.search_step = None  # grid step of the search evaluations, set by the first

    def __call__(self, value, accuracy: float, search: bool) -> tuple[float, float]:
        sigma, rate, steps = self.make(value)
        try:
            with quiet_accuracy():  # the solver reports the accuracy of its result once
                if self.target.objective == "epsilon" and not search:
                    accountant = PLDAccountant(relation=self.relation, accuracy=accuracy)
                    accountant.step(sigma, rate, count=steps)
                    return tuple(accountant.epsilon_bounds(self.target.delta))
                step = self.search_step if search else None
                # the engine's accuracy steers its grid by the *epsilon* gap; a risk objective
                # starts from the coarse grid and is refined on its own gap (_refined): the
                # advantage of DP-SGD is often resolved far below 1e-3 on the coarse grid
                grid_accuracy = accuracy
                if self.target.objective != "epsilon":
                    grid_accuracy = max(accuracy, SEARCH_ACCURACY)
                mechanism = PoissonSampled(Gaussian(sigma=sigma), sample_rate=rate)
                pld = PrivacyLossDistribution(
                    ((mechanism, steps),), self.relation, grid_accuracy, step=step
                )
                bounds = self._objective(pld)
                if search:
                    if self.search_step is None:
                        self.search_step = pld.grid_step
                    return bounds
                return self._refined(pld, bounds, accuracy)
        except (OverflowError, FloatingPointError, MemoryError):
            # extreme parameters the engine cannot discretize: count them as not meeting any
            # target (never reported as a result, only steers the search away)
            return math.inf, math.inf

    def _refined(self, pld: PrivacyLossDistribution, bounds, accuracy: float):
        """Refine the grid until the relative gap of the objective meets ``accuracy``: the
        engine chooses its grid for the epsilon gap, and the tradeoff curve at a small
        false-positive rate can need a finer one (both bounds hold on every grid, so the
        tighter pair of each refinement is kept)."""
        lower, upper = bounds
        step = pld.grid_step
        for _ in range(_REFINEMENTS):
            gap = (upper - lower) / upper if upper > 0 else 0.0
            if not gap > accuracy:
                break
            # the gap falls about like step^2: aim a little below the accuracy, at least halve
            step *= min(0.5, max(0.125, 0.9 * math.sqrt(accuracy / gap)))
            finer = PrivacyLossDistribution(pld.components, pld.relation, pld.accuracy, step=step)
            try:
                lo, up = self._objective(finer)
            except MemoryError:
                break
            lower, upper = max(lower, lo), min(upper, up)
        return lower, upper

    def _objective(self, pld: PrivacyLossDistribution) -> tuple[float, float]:
        target = self.target
        if target.objective == "epsilon":
            bounds = pld.epsilon_bounds(target.delta)
        elif target.objective == "true_positive_rate":
            bounds = true_positive_rate_bounds(pld, target.false_positive_rate)
        else:
            bounds = advantage_bounds(pld)
        return float(bounds.lower), float(bounds.upper)


def check_options(accuracy, rtol, progress, target: Target) -> tuple[float, float]:
    """Validated ``(accuracy, rtol)``; ``rtol=None`` is :data:`~plda.calibration.core.
    DEFAULT_RTOL` (1e-3) for epsilon targets and :data:`RISK_RTOL` (1e-5) for risk targets."""
    if rtol is None:
        rtol = DEFAULT_RTOL if target.objective == "epsilon" else RISK_RTOL
    accuracy = check.positive_float("accuracy", accuracy)
    rtol = check.positive_float("rtol", rtol)
    if not accuracy < 1 or not rtol < 1:
        raise ValueError(f"accuracy and rtol must be in (0, 1), got {accuracy!r}, {rtol!r}")
    if progress is not None and not callable(progress):
        raise TypeError(
            f"progress must be a callable (fraction, message) or None, got {progress!r}"
        )
    return accuracy, rtol
