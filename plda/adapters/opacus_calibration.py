"""Noise for a target epsilon under the accounting that will report the run.

Opacus's ``make_private_with_epsilon`` calibrates the noise with ``get_noise_multiplier``,
which builds a fresh accountant from the registry and treats every loader as Poisson. The
Opacus adapter checks that noise against the run that will actually be accounted (the
accountant's relation and accuracy, the loader ``make_private`` prepared) and recalibrates
when it misses the target (:func:`meet_target`).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from plda._internal.errors import CalibrationError, quiet_accuracy
from plda.accounting.accountant import PLDAccountant
from plda.adapters.epochs import OnePassEpochs
from plda.calibration import calibrate_noise_multiplier
from plda.epochs import Shuffled
from plda.mechanisms import Gaussian, NotTightWarning

__all__ = ["PlannedRun", "meet_target", "noise_for_target", "planned_run", "run_epsilon"]

#: relative increases of the noise tried when the calibrated value misses the target on the
#: run's own accountant (the two compose the same mechanisms, so this is rounding at most)
_NUDGES = 8


@dataclass(frozen=True)
class PlannedRun:
    """DP-SGD steps as the adapter will account them.

    Attributes
    ----------
    relation, accuracy
        Of the accountant that will report the run.
    num_batches
        Batches per pass over the data (``len(loader)``; the Poisson rate is its inverse).
    steps
        Optimizer steps (one per batch): ``ceil(epochs * num_batches)``.
    one_pass
        True: the loader uses every record once per pass, accounted as
        :class:`~plda.Shuffled` epochs (an unfinished last epoch counts as a whole one);
        False: Poisson-subsampled steps at rate ``1 / num_batches``.
    """

    relation: str
    accuracy: float
    num_batches: int
    steps: int
    one_pass: bool


def run_epsilon(run: PlannedRun, noise_multiplier: float, delta: float) -> float:
    """The certified epsilon the adapter will report after ``run`` with ``noise_multiplier``.

    Computed with the same accountants it records the steps in.

    Parameters
    ----------
    run : PlannedRun
        The steps as the adapter will account them.
    noise_multiplier : float
        The noise of every step.
    delta : float
        The target delta.

    Returns
    -------
    float
        The certified upper bound on epsilon at ``delta``.
    """
    if run.one_pass:
        epochs = OnePassEpochs(run.num_batches, run.accuracy)
        for _ in range(math.ceil(run.steps / run.num_batches)):
            for _ in range(run.num_batches):
                epochs.step(noise_multiplier)
        return epochs.epsilon(delta)
    accountant = PLDAccountant(relation=run.relation, accuracy=run.accuracy)
    accountant.step(noise_multiplier, 1.0 / run.num_batches, count=run.steps)
    return float(accountant.epsilon(delta))


def noise_for_target(run: PlannedRun, target_epsilon: float, target_delta: float) -> float:
    """The noise multiplier whose :func:`run_epsilon` meets ``target_epsilon``.

    :func:`plda.calibrate_noise_multiplier` at the run's relation, accuracy and sampler, then
    raised by steps of 0.1% (at most 8) until the run's own accountant meets the target.

    Parameters
    ----------
    run : PlannedRun
        The steps as the adapter will account them.
    target_epsilon, target_delta : float
        The budget.

    Returns
    -------
    float
        The noise multiplier, within the calibration's tolerance below the target.

    Raises
    ------
    CalibrationError
        If the target cannot be met in the calibration's range of noise.
    """
    sampler, steps = None, run.steps
    if run.one_pass:
        size = run.num_batches

        def sampler(sigma, _rate):
            return Shuffled(Gaussian(sigma=sigma), num_steps=size)

        steps = math.ceil(run.steps / run.num_batches)
    with quiet_accuracy(), warnings.catch_warnings():
        # the run is reported by its upper bound; the shuffled analysis gap is no news here
        warnings.simplefilter("ignore", NotTightWarning)
        sigma = calibrate_noise_multiplier(
            target_epsilon, target_delta, 1.0 / run.num_batches, steps,
            relation=run.relation, sampler=sampler, accuracy=run.accuracy,
        )
        for _ in range(_NUDGES):
            if run_epsilon(run, sigma, target_delta) <= target_epsilon:
                return sigma
            sigma *= 1.001
    raise CalibrationError(
        f"no noise multiplier found whose epsilon meets target_epsilon={target_epsilon!r} at "
        f"target_delta={target_delta!r} on this run ({run.steps} steps): raise the target"
    )


def planned_run(relation: str, accuracy: float, epochs, num_batches: int, *,
                one_pass: bool) -> PlannedRun:
    """The :class:`PlannedRun` of ``epochs`` passes over ``num_batches`` batches.

    Parameters
    ----------
    relation : str
        The relation of the accountant that will report the run.
    accuracy : float
        Its accuracy.
    epochs : float
        Passes over the data, as read from Opacus's call.
    num_batches : int
        Batches per pass.
    one_pass : bool
        Whether the loader is accounted as one-pass (shuffled) epochs.

    Returns
    -------
    PlannedRun
        With ``ceil(epochs * num_batches)`` steps.

    Raises
    ------
    ValueError
        If ``epochs`` is not a positive number (Opacus's caller could not be read).
    """
    if isinstance(epochs, bool) or not isinstance(epochs, (int, float)) or not epochs > 0:
        raise ValueError(
            f"cannot read the epochs of make_private_with_epsilon (got {epochs!r}; an Opacus "
            "version this adapter does not know): choose the noise with "
            "plda.calibrate_noise_multiplier and call make_private"
        )
    return PlannedRun(relation=relation, accuracy=accuracy, num_batches=num_batches,
                      steps=math.ceil(epochs * num_batches), one_pass=one_pass)


def meet_target(optimizer, run: PlannedRun, request) -> None:
    """Raise the optimizer's noise to what the target needs on ``run``, if Opacus's fell short.

    Opacus calibrated for Poisson batches at its registry accountant's accuracy; where that
    noise misses ``request.target_epsilon`` at ``request.target_delta`` on ``run``,
    ``optimizer.noise_multiplier`` is raised to :func:`noise_for_target`, else left as is.

    Parameters
    ----------
    optimizer : opacus.optimizers.DPOptimizer
        The optimizer whose ``noise_multiplier`` every step adds.
    run : PlannedRun
        The steps as the adapter will account them.
    request : CalibrationRequest
        The target of ``make_private_with_epsilon``.

    Raises
    ------
    ValueError
        If the target or the optimizer could not be read from Opacus's call.
    CalibrationError
        If no noise meets the target.
    """
    target, delta = request.target_epsilon, request.target_delta
    if not all(isinstance(v, (int, float)) for v in (target, delta)) or optimizer is None:
        raise ValueError(
            "cannot read the target of make_private_with_epsilon (an Opacus version this "
            "adapter does not know): choose the noise with plda.calibrate_noise_multiplier "
            "and call make_private"
        )
    if run_epsilon(run, optimizer.noise_multiplier, delta) > target:
        optimizer.noise_multiplier = noise_for_target(run, target, delta)
