"""The evaluator of DP-SGD calibration: a parameter value -> certified bounds of the objective.

:class:`DPSGDEvaluator` builds the step mechanism (Poisson-sampled Gaussian, or any sampler),
composes it and reads the target's objective; :func:`epsilon_bounds_of` gives the certified
epsilon bounds of a composed step mechanism.
"""

from __future__ import annotations

import math

from plda._internal.errors import UncoveredParametersError, check_bracket, quiet_accuracy
from plda.accounting.accountant import PLDAccountant
from plda.bounds import check_relation
from plda.calibration.problem import SEARCH_ACCURACY, Target
from plda.mechanisms import CustomMechanism, Gaussian, PoissonSampled
from plda.mechanisms.base import Mechanism
from plda.pld import PrivacyLossDistribution
from plda.samplers import Sampler

__all__ = ["RISK_SEARCH_GAP", "DPSGDEvaluator", "epsilon_bounds_of"]

#: relative gap of the risk bounds during the search (its root is only a starting point)
RISK_SEARCH_GAP = 1e-2
#: grid refinements of a risk objective whose gap misses the requested one
_REFINEMENTS = 4


def epsilon_bounds_of(
    mechanism: Mechanism, count: int, relation: str, accuracy: float, delta: float
) -> tuple[float, float]:
    """Certified bounds on ``epsilon(delta)`` of a mechanism run ``count`` times.

    Computed as :class:`~plda.PLDAccountant` computes them: for a sampler whose own pair only
    dominates (``mechanism.tight`` False), the lower bound comes from its realized pairs.

    Parameters
    ----------
    mechanism : Mechanism
        One step.
    count : int
        How many times it runs.
    relation : str
        ``"add_remove"`` or ``"replace_one"``.
    accuracy : float
        Target relative gap of the bounds.
    delta : float
        Where epsilon is read.

    Returns
    -------
    tuple of float
        ``(lower, upper)``.
    """
    accountant = PLDAccountant(relation=relation, accuracy=accuracy)
    accountant.compose(mechanism, count)
    lower, upper = accountant.epsilon_bounds(delta)
    return float(lower), float(upper)


class DPSGDEvaluator:
    """DP-SGD composition for a parameter value -> certified bounds of the target objective.

    Called as ``evaluator(value, accuracy, search) -> (lower, upper)`` (an
    :data:`~plda.calibration.problem.Evaluator`). Epsilon targets: the search pins the grid step
    of its first evaluation, the final checks run a fresh :class:`~plda.PLDAccountant` at the
    requested accuracy. Risk targets choose their own grids, coarser than the engine's (which
    are sized for the *epsilon* gap): one grid step per requested gap, predicted from the
    measured gap (it falls like ``step^2``) and then kept, so that the objective is a smooth
    function of the parameter at each accuracy, as the solver's secant steps need.

    Parameters
    ----------
    make : callable
        ``make(value) -> (noise_multiplier, sample_rate, steps)``: the run of a parameter value.
    target : Target
        The calibration target (its objective).
    relation : str
        ``"add_remove"`` or ``"replace_one"``.
    sampler : callable, optional
        ``sampler(noise_multiplier, sample_rate) -> Mechanism``, one DP-SGD step; None: Poisson
        sampling.

    Raises
    ------
    ValueError
        If ``relation`` is not one of :data:`plda.bounds.RELATIONS` (checked here: a risk
        target's evaluations read it only to pick a pair, so another spelling would silently be
        add/remove).
    """

    #: share of the gap ``upper - lower`` that is the upper bound's own discretization bias
    #: (about 1/3 for the advantage on DP-SGD grids, 0.1 to 0.35 as measured; less for a
    #: true-positive rate): the solver uses it to predict the fine upper bound from a coarse
    #: pair (only a prediction: every result is checked at the requested accuracy)
    upper_share = None

    def __init__(self, make, target: Target, relation: str, sampler: Sampler | None = None):
        self.make = make  # parameter -> (noise_multiplier, sample_rate, steps)
        self.target = target
        self.relation = check_relation(relation)
        self.sampler = sampler  # None: Poisson sampling
        self.search_step = None  # grid step of the epsilon search evaluations, set by the first
        self.steps: dict = {}  # risk: requested gap -> grid step (kept once chosen)
        self.scale = None  # risk: (grid step, relative gap) of the latest evaluation
        if target.objective != "epsilon":
            self.upper_share = 1 / 3

    def __call__(self, value, accuracy: float, search: bool) -> tuple[float, float]:
        """Certified bounds on the objective at a parameter value.

        Parameters
        ----------
        value : float
            The parameter value.
        accuracy : float
            The relative gap asked of the bounds.
        search : bool
            Whether this is a coarse search evaluation (only the upper bound is needed).

        Returns
        -------
        tuple of float
            ``(lower, upper)``; ``(inf, inf)`` for parameters the engine cannot discretize
            (they count as missing every target).
        """
        sigma, rate, steps = self.make(value)
        try:
            with quiet_accuracy():  # the solver reports the accuracy of its result once
                if self.target.objective == "epsilon":
                    return self._epsilon(sigma, rate, steps, accuracy, search)
                gap = RISK_SEARCH_GAP if search else accuracy
                return self._risk(sigma, rate, steps, gap, strict=not search)
        except (OverflowError, FloatingPointError, MemoryError, UncoveredParametersError):
            # extreme parameters the engine cannot discretize, or a sampler's analysis does not
            # cover (random allocation below sigma ~0.69): count them as not meeting any target
            # (never reported as a result, only steers the search away)
            return math.inf, math.inf

    def step_mechanism(self, sigma, rate) -> Mechanism:
        """One DP-SGD step: the sampler's, or the Poisson-sampled Gaussian.

        Parameters
        ----------
        sigma : float
            The noise multiplier.
        rate : float
            The sample rate.

        Returns
        -------
        Mechanism
            The step mechanism.

        Raises
        ------
        TypeError
            If the sampler returns anything else.
        """
        if self.sampler is not None:
            step = self.sampler(sigma, rate)
            if not isinstance(step, Mechanism):
                raise TypeError("sampler must return a plda mechanism (one DP-SGD step), got "
                                f"{type(step).__name__}")
            return step
        return PoissonSampled(Gaussian(sigma=sigma), sample_rate=rate)

    def _epsilon(self, sigma, rate, steps, accuracy, search):
        delta = self.target.delta
        if not search and self.sampler is None:
            accountant = PLDAccountant(relation=self.relation, accuracy=accuracy)
            accountant.step(sigma, rate, count=steps)
            return tuple(accountant.epsilon_bounds(delta))
        mechanism = self.step_mechanism(sigma, rate)
        if not search:
            return epsilon_bounds_of(mechanism, steps, self.relation, accuracy, delta)
        # the search judges its grid by the bracket of the pairs it computes with
        pld = PrivacyLossDistribution(
            ((mechanism, steps),), self.relation, accuracy, step=self.search_step
        ).dominating()
        try:
            bounds = pld.epsilon_bounds(self.target.delta)
        except ValueError:
            if self.search_step is None:
                raise
            # the pinned step is too fine for this many steps (its grid would pass the cap):
            # let the engine choose (and coarsen) the grid, and pin that step from now on
            self.search_step = None
            return self._epsilon(sigma, rate, steps, accuracy, search)
        if self.search_step is None:
            self.search_step = pld.grid_step
        return float(bounds.lower), float(bounds.upper)

    def mechanism(self, sigma, rate):
        """The step's mechanism under ``add_remove``; for the advantage, one direction only.

        The advantage is the total variation ``TV(P^T, Q^T)``, the same for a pair and its
        reverse, so for Poisson sampling (whose add law is the reversed remove law) a symmetric
        :class:`~plda.CustomMechanism` of the remove law halves the compositions.

        Parameters
        ----------
        sigma : float
            The noise multiplier.
        rate : float
            The sample rate.

        Returns
        -------
        Mechanism
            The step mechanism read under ``add_remove``.
        """
        mechanism = self.step_mechanism(sigma, rate)
        poisson = type(mechanism) is PoissonSampled
        if self.relation == "replace_one":
            mechanism = mechanism.under_replace_one()
        if poisson and self.target.objective == "advantage" and not mechanism.symmetric:
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
                lower, upper = self._objective(pld.dominating())
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
        if strict and not mechanism.tight:
            # the sampler's own pair only dominates: the certified lower bound is that of its
            # realized pairs (the PLD's own), on the same grid
            pld = PrivacyLossDistribution(
                ((mechanism, steps),), "add_remove", SEARCH_ACCURACY, step=used
            )
            lower = self._objective(pld)[0]
            check_bracket(lower, best[1], query="calibrate")
            best = (lower, best[1])
        return best

    def _objective(self, pld: PrivacyLossDistribution) -> tuple[float, float]:
        target = self.target
        if target.objective == "epsilon":
            bounds = pld.epsilon_bounds(target.delta)
        elif target.objective == "true_positive_rate":
            bounds = pld.true_positive_rate_bounds(target.false_positive_rate)
        else:
            bounds = pld.advantage_bounds()
        return float(bounds.lower), float(bounds.upper)
