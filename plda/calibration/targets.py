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
from plda.mechanisms import CustomMechanism, Gaussian, PoissonSampled
from plda.pld import DEFAULT_ACCURACY, PrivacyLossDistribution
from plda.risk import advantage_bounds, true_positive_rate_bounds

__all__ = [
    "DPSGDEvaluator",
    "RISK_ACCURACY",
    "RISK_RTOL",
    "check_options",
    "gdp_mu",
    "gdp_noise_multiplier",
    "gdp_slope",
    "log_sigma",
    "make_target",
]

#: default tolerances of a risk target: the upper bound lands in ``[target (1 - RISK_RTOL),
#: target]`` with a relative gap ``(upper - lower) / upper <= RISK_ACCURACY``, so the true risk
#: at the result is certified within 1.5e-4 of the target (the least noise that meets the
#: target is the point: riskcal's own answers carry 1e-4 to 7e-4 more noise than needed on the
#: cases of ``benchmarks/run_risk.py``)
RISK_RTOL = 5e-5
RISK_ACCURACY = 1e-4
#: relative gap of the risk bounds during the search (its root is only a starting point)
RISK_SEARCH_GAP = 1e-2
#: grid refinements of a risk objective whose gap misses the requested one
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
    """``log sigma`` with Gaussian-DP ``mu`` after ``steps`` steps at ``sample_rate``: exactly
    ``sqrt(T) / mu`` without subsampling, else the central-limit form (a guess)."""
    try:
        if sample_rate >= 1:
            return math.log(math.sqrt(steps) / mu)
        return -0.5 * math.log(math.log1p((mu / sample_rate) ** 2 / steps))
    except (ValueError, ZeroDivisionError, OverflowError):
        return 0.0


def gdp_slope(target: Target, make, value: float) -> float | None:
    """``d log(objective) / d log(value)`` under the Gaussian-DP reading of DP-SGD (``mu = q
    sqrt(T (e^{1/sigma^2} - 1))``, Bu, Dong, Long & Su 2020), ``make(value) -> (sigma, q, T)``;
    None for epsilon targets or where the model is undefined. Only steers the search."""
    if target.objective == "epsilon":
        return None

    def log_objective(x):
        sigma, rate, steps = make(math.exp(x))
        if rate >= 1:  # T Gaussian steps: exactly sqrt(T) / sigma
            mu = math.sqrt(steps) / sigma
        else:
            mu = rate * math.sqrt(steps * math.expm1(sigma**-2))
        if target.objective == "true_positive_rate":
            return math.log(ndtr(ndtri(target.false_positive_rate) + mu))
        return math.log(2 * ndtr(mu / 2) - 1)

    x, h = math.log(value), 1e-4
    try:
        slope = (log_objective(x + h) - log_objective(x - h)) / (2 * h)
    except (ValueError, OverflowError, ZeroDivisionError):
        return None
    return slope if math.isfinite(slope) and slope != 0 else None


class DPSGDEvaluator:
    """DP-SGD composition for a parameter value -> certified bounds of the target objective.

    Epsilon targets: the search pins the grid step of its first evaluation, the final checks
    run a fresh :class:`~plda.PLDAccountant` at the requested accuracy. Risk targets choose
    their own grids (the engine's are driven by the *epsilon* gap, far finer than a risk needs:
    R4 of ``benchmarks/run_risk.py`` got 360k points where 25k give a 1e-3 gap): one grid step
    per requested gap, predicted from the measured gap (both discretizations are second
    order, the gap falls like ``step^2``) and then kept, so that the objective is a smooth
    function of the parameter at each accuracy (the solver's secant steps rely on it).
    """

    #: share of the gap ``upper - lower`` that is the upper bound's own discretization bias
    #: (about 1/3 for the advantage and the true-positive rate on DP-SGD grids): the solver
    #: uses it to predict the fine upper bound from a coarse pair (only a prediction, every
    #: result is checked)
    upper_share = None

    def __init__(self, make, target: Target, relation: str):
        self.make = make  # parameter -> (noise_multiplier, sample_rate, steps)
        self.target = target
        self.relation = relation
        self.search_step = None  # grid step of the epsilon search evaluations, set by the first
        self.steps: dict = {}  # risk: requested gap -> grid step (kept once chosen)
        self.scale = None  # risk: (grid step, relative gap) of the latest evaluation
        if target.objective != "epsilon":
            self.upper_share = 1 / 3

    def __call__(self, value, accuracy: float, search: bool) -> tuple[float, float]:
        sigma, rate, steps = self.make(value)
        try:
            with quiet_accuracy():  # the solver reports the accuracy of its result once
                if self.target.objective == "epsilon":
                    return self._epsilon(sigma, rate, steps, accuracy, search)
                gap = RISK_SEARCH_GAP if search else accuracy
                return self._risk(sigma, rate, steps, gap, strict=not search)
        except (OverflowError, FloatingPointError, MemoryError):
            # extreme parameters the engine cannot discretize: count them as not meeting any
            # target (never reported as a result, only steers the search away)
            return math.inf, math.inf

    def _epsilon(self, sigma, rate, steps, accuracy, search):
        if not search:
            accountant = PLDAccountant(relation=self.relation, accuracy=accuracy)
            accountant.step(sigma, rate, count=steps)
            return tuple(accountant.epsilon_bounds(self.target.delta))
        mechanism = PoissonSampled(Gaussian(sigma=sigma), sample_rate=rate)
        pld = PrivacyLossDistribution(
            ((mechanism, steps),), self.relation, accuracy, step=self.search_step
        )
        bounds = pld.epsilon_bounds(self.target.delta)
        if self.search_step is None:
            self.search_step = pld.grid_step
        return float(bounds.lower), float(bounds.upper)

    def mechanism(self, sigma, rate):
        """The step's mechanism under ``add_remove``; for the advantage, one direction only.

        The advantage is the total variation ``TV(P^T, Q^T)``, the same for the pair and its
        reverse, so the remove direction alone bounds it (both directions give one number: a
        symmetric :class:`~plda.CustomMechanism` of the remove law halves the compositions)."""
        mechanism = PoissonSampled(Gaussian(sigma=sigma), sample_rate=rate)
        if self.relation == "replace_one":
            mechanism = mechanism.under_replace_one()
        if self.target.objective == "advantage" and not mechanism.symmetric:
            mechanism = CustomMechanism(remove=mechanism.privacy_loss("remove"), name="tv")
        return mechanism

    def _first_step(self, sigma, rate, steps, gap: float) -> float:
        """Grid step for a relative ``gap``: from the latest measured ``(step, gap)`` where the
        gap is small enough to scale like ``step^2``, else from the Gaussian-DP reading of the
        composition (loss spread ``mu = q sqrt(T (e^{1/sigma^2} - 1))``; the gap is about ``c T
        step^2 / mu^2``, with ``c`` about 1/4 for the advantage and up to 1 for a true-positive
        rate on the DP-SGD settings measured). A first guess only."""
        if self.scale is not None:
            step, measured = self.scale
            return step * min(4.0, max(1 / 64, math.sqrt(0.8 * gap / measured)))
        count = steps if rate < 1 else 1
        try:
            mu = rate * math.sqrt(steps * math.expm1(sigma**-2))
        except OverflowError:
            mu = math.inf
        c = 0.25 if self.target.objective == "advantage" else 1.0
        return min(max(mu * math.sqrt(0.8 * gap / (c * count)), 1e-8), 0.05)

    def _risk(self, sigma, rate, steps, gap: float, strict: bool) -> tuple[float, float]:
        """Bounds of the objective on one grid step per requested ``gap``, chosen at its first
        call and then kept (a smooth objective for the solver's secant steps).

        Final checks (``strict``) refine until the relative gap is at most ``gap``, keeping the
        tighter of the certified pairs (at the first call a gap below ``gap / 16`` coarsens
        once instead). The search only needs the upper bound: its step is kept unless the
        bounds are meaningless (gap above 1/2; the lower bound of a true-positive rate at a
        small false-positive rate is poor on coarse grids while the upper one is fine)."""
        mechanism = self.mechanism(sigma, rate)
        known = gap in self.steps
        step = self.steps[gap] if known else self._first_step(sigma, rate, steps, gap)
        best = used = None
        refined = False
        for _ in range(_REFINEMENTS + 2):
            try:
                pld = PrivacyLossDistribution(
                    ((mechanism, steps),), "add_remove", SEARCH_ACCURACY, step=step
                )
                lower, upper = self._objective(pld)
            except ValueError:  # more grid points than the cap: a coarser grid is certified too
                if best is not None:
                    break  # refining hit the cap: the bounds found stand
                step *= 2
                continue
            measured = (upper - lower) / upper if upper > 0 else 0.0
            if 0 < measured <= 0.05:  # in the range where the gap scales like step^2
                self.scale = (step, measured)
            if strict and best is not None and step < used:
                # a refinement: both pairs are certified, keep the tighter one
                lower, upper = max(lower, best[0]), min(upper, best[1])
                measured = (upper - lower) / upper if upper > 0 else 0.0
            best, used = (lower, upper), step
            if strict and measured > gap:
                factor = 0.9 * math.sqrt(gap / measured) if math.isfinite(measured) else 0
                step *= min(0.8, max(0.25, factor))
                refined = True
            elif strict and not known and not refined and 0 < measured < gap / 16:
                step *= min(4.0, 0.9 * math.sqrt(gap / measured))
                refined = True  # once
            elif not strict and not known and not measured <= 0.5:
                step *= 0.25
            else:
                break
        if best is None:
            return math.inf, math.inf
        if not known:
            self.steps[gap] = used
        elif strict and used < self.steps[gap]:
            self.steps[gap] = used  # later checks start from the step that met the gap
        return best

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
    """Validated ``(accuracy, rtol)``; None picks the defaults of the target: for epsilon
    ``accuracy`` :data:`~plda.pld.DEFAULT_ACCURACY` (1e-3) and ``rtol``
    :data:`~plda.calibration.core.DEFAULT_RTOL` (1e-3), for risk targets :data:`RISK_ACCURACY`
    (1e-4) and :data:`RISK_RTOL` (5e-5)."""
    epsilon = target.objective == "epsilon"
    if rtol is None:
        rtol = DEFAULT_RTOL if epsilon else RISK_RTOL
    if accuracy is None:
        accuracy = DEFAULT_ACCURACY if epsilon else RISK_ACCURACY
    accuracy = check.positive_float("accuracy", accuracy)
    rtol = check.positive_float("rtol", rtol)
    if not accuracy < 1 or not rtol < 1:
        raise ValueError(f"accuracy and rtol must be in (0, 1), got {accuracy!r}, {rtol!r}")
    if progress is not None and not callable(progress):
        raise TypeError(
            f"progress must be a callable (fraction, message) or None, got {progress!r}"
        )
    return accuracy, rtol
