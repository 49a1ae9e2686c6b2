"""``plda calibrate`` for the samplers other than Poisson: noise multiplier or steps.

The same solver as :mod:`plda.calibration` (:func:`plda.calibration.solve`) on an evaluator
built from the sampler's mechanism: the searched value's upper bound is the sampler's PLD upper
bound, so the result meets the target as the Poisson calibration's does; the reported lower
bound comes from the sampler's realized pair.
"""

from __future__ import annotations

import math
import warnings
from argparse import Namespace
from dataclasses import replace

from plda._internal.errors import check_bracket, quiet_accuracy
from plda.calibration import CalibrationResult, Parameter, make_target, solve
from plda.calibration.problem import max_steps_hint
from plda.calibration.targets import gdp_mu, log_sigma
from plda.cli.checks import UsageError
from plda.cli.commands import build_pld, certified_bounds
from plda.cli.samplers import SamplerRun
from plda.mechanisms import NotTightWarning
from plda.samplers import EPOCH_SAMPLERS

__all__ = ["SamplerEvaluator", "calibrate_sampler"]

#: noise multipliers searched (as plda.calibration searches them)
SIGMA_RANGE = (1e-2, 1e4)


class SamplerEvaluator:
    """Parameter value -> certified ``(lower, upper)`` of the target's objective for the run.

    Called by :func:`plda.calibration.solve` as ``evaluate(value, accuracy, search)``.

    Parameters
    ----------
    run : SamplerRun
        The run, its sampler and sizes.
    target : Target
        What is calibrated for.
    parameter : str
        ``"noise_multiplier"`` or ``"steps"``: what the value sets.
    fixed : float or None
        The other parameter's value (the noise multiplier when the steps are searched).
    relation : str
        The neighbouring relation.
    """

    def __init__(self, run: SamplerRun, target, parameter: str, fixed, relation: str):
        self.run, self.target, self.parameter = run, target, parameter
        self.fixed, self.relation = fixed, relation  # the other parameter's value

    def components(self, value) -> tuple:
        """The composition at a searched value.

        Parameters
        ----------
        value : float or int
            A noise multiplier, or a number of steps (epochs for epoch samplers).

        Returns
        -------
        tuple of (Mechanism, int)
            ``((step mechanism, count),)``.

        Raises
        ------
        UsageError
            For a noise multiplier the sampler's analysis does not cover.
        """
        if self.parameter == "noise_multiplier":
            return ((self.run.step(value), self.run.count()),)
        return ((self.run.step(self.fixed), int(value)),)  # value counts steps or epochs

    def objective(self, pld):
        """The target's objective of ``pld``.

        Parameters
        ----------
        pld : PrivacyLossDistribution
            The composition at a searched value.

        Returns
        -------
        Bounds
            Its epsilon at the target's delta, true-positive rate at its false-positive rate,
            or advantage.
        """
        target = self.target
        if target.objective == "epsilon":
            return pld.epsilon_bounds(target.delta)
        if target.objective == "true_positive_rate":
            return pld.true_positive_rate_bounds(target.false_positive_rate)
        return pld.advantage_bounds()

    def __call__(self, value, accuracy: float, search: bool) -> tuple[float, float]:
        try:
            components = self.components(value)
        except UsageError:
            # a noise multiplier the sampler's analysis does not cover (random allocation needs
            # sigma >= ~0.69): counted as not meeting the target, which steers the search away
            # from it and is never reported as a result
            return math.inf, math.inf
        args = Namespace(relation=self.relation, accuracy=accuracy)
        try:
            # the solver reports the accuracy of its result once, judged on the bracket of the
            # pairs the PLD is computed from (the grid's accuracy); the sampler's lower bound is
            # taken from its realized pairs afterwards (realized_bounds), so NotTightWarning's
            # advice is followed
            with quiet_accuracy(), warnings.catch_warnings():
                warnings.simplefilter("ignore", NotTightWarning)
                bounds = self.objective(build_pld(components, args).dominating())
        except (OverflowError, FloatingPointError, MemoryError):
            return math.inf, math.inf
        return float(bounds.lower), float(bounds.upper)

    def realized_bounds(self, result: CalibrationResult, accuracy: float) -> CalibrationResult:
        """``result`` with its lower bound from the sampler's realized pair.

        For samplers whose dominating pair is not realized; the PLD's own lower bound brackets
        that pair only.

        Parameters
        ----------
        result : CalibrationResult
            What the solver returned.
        accuracy : float
            Target relative gap of the bounds.

        Returns
        -------
        CalibrationResult
            ``result`` itself when every mechanism is tight, else with the realized lower
            bound.
        """
        components = self.components(result.value)
        if all(mechanism.tight for mechanism, _ in components):
            return result
        args = Namespace(relation=self.relation, accuracy=accuracy)
        with quiet_accuracy():
            lower = float(certified_bounds(components, args, self.objective).lower)
        check_bracket(lower, result.upper, query="calibrate")
        if self.target.objective == "epsilon":
            return replace(result, lower=lower, epsilon_lower=lower)
        return replace(result, lower=lower)


def calibrate_sampler(run: SamplerRun, keywords: dict, calibrated: str, sigma, options: dict):
    """Calibrate the noise multiplier or the steps of a run on another sampler than Poisson.

    Parameters
    ----------
    run : SamplerRun
        The run, its sampler and sizes.
    keywords : dict
        The target, as the :mod:`plda.calibration` functions take it.
    calibrated : str
        ``"noise_multiplier"`` or ``"steps"``.
    sigma : float or None
        The noise multiplier when the steps are calibrated.
    options : dict
        ``relation``, ``accuracy``, ``progress`` and ``max_steps``.

    Returns
    -------
    tuple
        ``(value, result)``: the value in the command line's units (steps, not epochs) and the
        :class:`~plda.calibration.CalibrationResult`, its lower bound from the realized pair.

    Raises
    ------
    UsageError
        For what the sampler refuses.
    CalibrationError
        If the target cannot be met in the searched range.
    """
    target = make_target(**keywords)
    relation, accuracy, progress = options["relation"], options["accuracy"], options["progress"]
    rtol = 1e-3 if target.objective == "epsilon" else 1e-5
    if calibrated == "noise_multiplier":
        run.step(SIGMA_RANGE[1])  # a refusal that does not depend on sigma is reported now
        rate, steps = run.nominal_rate, run.steps
        start = math.exp(log_sigma(gdp_mu(target), rate, steps))
        parameter = Parameter(
            name="noise_multiplier",
            low=SIGMA_RANGE[0],
            high=SIGMA_RANGE[1],
            increasing=False,
            start=min(max(start, SIGMA_RANGE[0]), SIGMA_RANGE[1]),
            hint="raise the target or lower the steps or the batch size",
            cap_hint=(
                f"noise multipliers are searched down to {SIGMA_RANGE[0]:g}: lower the target, "
                "or raise the steps or the batch size"
            ),
        )
        evaluate = SamplerEvaluator(run, target, "noise_multiplier", None, relation)
        result = solve(evaluate, target, parameter, accuracy=accuracy, rtol=rtol,
                       progress=progress)
        return result.value, evaluate.realized_bounds(result, accuracy)
    run.step(sigma)  # the sampler's own refusals first
    epochs = run.sampler in EPOCH_SAMPLERS
    unit = run.epoch_length
    try:
        guess = (gdp_mu(target) / run.nominal_rate) ** 2 / math.expm1(sigma**-2) / unit
    except OverflowError:
        guess = 1.0
    max_steps = options["max_steps"]
    high = max(1, max_steps // unit)
    parameter = Parameter(
        name="epochs" if epochs else "steps",
        low=1,
        high=high,
        increasing=True,
        start=min(max(guess, 1.0), float(high)) if math.isfinite(guess) else 1.0,
        integer=True,
        hint="raise the target or the noise multiplier",
        cap_hint=max_steps_hint(max_steps),
    )
    evaluate = SamplerEvaluator(run, target, "steps", sigma, relation)
    result: CalibrationResult = solve(
        evaluate, target, parameter, accuracy=accuracy, rtol=2.5e-3, progress=progress
    )
    return int(result.value) * unit, evaluate.realized_bounds(result, accuracy)
