"""Exact references for composed discrete Laplace and discrete Gaussian mechanisms.

Both losses live on a lattice, so ``k`` runs depend only on the sum of the noises and their law
is a power of a polynomial: computed by *direct* convolution (sums of non-negative products keep
their relative accuracy; an FFT would not) and summed term by term,
``delta(eps) = sum_{l > eps} P(l) (1 - e^(eps - l))``. Both mechanisms are symmetric.
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal import validation as check
from plda._internal.caches import cached
from plda._internal.floats import UNIT_ROUNDOFF
from plda.mechanisms.discrete import integer_sensitivity
from plda.testing._internal.atoms import FloatAtoms, ScaledPmf, mp_atoms_delta, mp_power
from plda.testing._internal.numerics import (
    DEFAULT_DPS,
    Profile,
    load_mpmath,
    profile_delta,
    profile_epsilon,
)

#: float path: the dropped discrete-Gaussian mass of all runs is below e^-_FLOAT_TAIL_NATS
_FLOAT_TAIL_NATS = 200.0


def _atoms_from_pmf(power: ScaledPmf, count: int, sensitivity: int, low: int, unit: float,
                    unit_rel_err: float, dropped_mass: float = 0.0) -> FloatAtoms:
    """Atoms of ``S = low + index`` with loss ``unit * (count * D - 2 S)`` (ascending)."""
    s = low + np.arange(len(power.values))
    multiples = (count * sensitivity - 2 * s)[::-1]
    with np.errstate(divide="ignore"):  # underflowed masses become -inf, covered by abs_floor
        log_probs = np.log(power.values[::-1]) + power.log_scale
    return FloatAtoms(
        multiples, unit, log_probs, power.rel_err + 2 * UNIT_ROUNDOFF, unit_rel_err,
        abs_floor=power.floor * math.exp(power.log_scale),
        dropped_mass=dropped_mass, dropped_max_loss=math.inf if dropped_mass else -math.inf,
    )


# ---------------------------------------------------------------- discrete Laplace
def _laplace_step_log_masses(parameter: float, sensitivity: int) -> np.ndarray:
    x = np.arange(sensitivity + 1, dtype=float)
    log_norm = math.log1p(math.exp(-parameter))  # log(1 + r)
    logs = -parameter * x + math.log(-math.expm1(-parameter)) - log_norm
    logs[0] = -log_norm
    logs[-1] = -parameter * sensitivity - log_norm
    return logs


@cached(maxsize=8)
def _laplace_float(parameter: float, sensitivity: int, count: int) -> FloatAtoms:
    logs = _laplace_step_log_masses(parameter, sensitivity)
    step = ScaledPmf.from_log(logs, 8 * UNIT_ROUNDOFF * (2 + parameter * sensitivity))
    return _atoms_from_pmf(step.power(count), count, sensitivity, 0, parameter, 0.0)


def _laplace_profile(parameter, count, sensitivity) -> Profile:
    parameter = check.positive_float("parameter", parameter)
    count = check.count("count", count, minimum=1)
    sensitivity = integer_sensitivity(sensitivity)
    atoms = _laplace_float(parameter, sensitivity, count)

    def precise_delta(mp, eps):
        losses, probs = _laplace_precise(parameter, sensitivity, count, mp.dps)
        return mp_atoms_delta(mp, losses, probs, 0, eps)

    return Profile(atoms.delta, precise_delta, max_loss=atoms.max_loss)


@cached(maxsize=8)
def _laplace_precise(parameter: float, sensitivity: int, count: int, dps: int):
    mp = load_mpmath()
    with mp.workdps(dps):
        t = mp.mpf(parameter)
        r = mp.exp(-t)
        step = [(1 - r) * r**x / (1 + r) for x in range(sensitivity + 1)]
        step[0] = 1 / (1 + r)
        step[-1] = r**sensitivity / (1 + r)
        probs = mp_power(mp, step, count)
        losses = [t * (count * sensitivity - 2 * s) for s in range(len(probs))]
    return losses, probs


def discrete_laplace_composition_delta(
    epsilon, *, parameter: float, count: int, sensitivity: int = 1, precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """Exact ``delta(epsilon)`` of ``count`` runs of the discrete Laplace mechanism, by enumeration.

    The noise is ``P(x) ∝ exp(-parameter |x|)`` on a query of integer ``sensitivity`` D. One run
    has loss atoms ``parameter (D - 2x)``, ``x = 0..D``, with masses ``1/(1+r)``,
    ``(1-r) r^x/(1+r)``, ``r^D/(1+r)`` (``r = e^-parameter``); ``count`` runs are a polynomial
    power (``count * D + 1`` atoms, cost ``O((count D)^2)``: meant for ``count * D`` up to a
    few thousand; ``precise=True`` for a few hundred).

    Parameters
    ----------
    epsilon : float or array_like
        ``epsilon >= 0``.
    parameter : float
        ``t > 0`` in ``P(x) ∝ exp(-t |x|)``.
    count : int
        Runs ``k >= 1``.
    sensitivity : int, optional
        The query's integer sensitivity ``D >= 1``.
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``delta(epsilon)``, rounded to nearest (an array for an array ``epsilon``).

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    return profile_delta(_laplace_profile(parameter, count, sensitivity), epsilon, precise, dps)


def discrete_laplace_composition_epsilon(
    delta, *, parameter: float, count: int, sensitivity: int = 1, precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """Exact ``epsilon(delta)`` of ``count`` discrete Laplace runs, rounded up (certified).

    Parameters
    ----------
    delta : float or array_like
        ``delta`` in ``[0, 1]``.
    parameter : float
        ``t > 0`` in ``P(x) ∝ exp(-t |x|)``.
    count : int
        Runs ``k >= 1``.
    sensitivity : int, optional
        The query's integer sensitivity ``D >= 1``.
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``epsilon(delta)``, rounded up: the exact ``delta`` at it is at most ``delta``.

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    return profile_epsilon(_laplace_profile(parameter, count, sensitivity), delta, precise, dps)


# --------------------------------------------------------------- discrete Gaussian
def _gaussian_reach(sigma: float, count: int, nats: float) -> int:
    """``R`` with ``count * 2 e^{-(R+1)^2/(2 sigma^2)} (1 + sigma^2/(R+1)) <= e^-nats``."""
    budget = nats + math.log(count) + math.log(2 * (1 + sigma * sigma))
    return int(math.ceil(sigma * math.sqrt(2 * budget)))


@cached(maxsize=8)
def _gaussian_float(sigma: float, sensitivity: int, count: int) -> FloatAtoms:
    reach = _gaussian_reach(sigma, count, _FLOAT_TAIL_NATS)
    x = np.arange(-reach, reach + 1, dtype=float)
    logs = -x * x / (2 * sigma * sigma)
    log_norm = math.log(math.fsum(np.exp(logs)))
    step = ScaledPmf.from_log(
        logs - log_norm, 8 * UNIT_ROUNDOFF * (2 + reach * reach / (sigma * sigma))
    )
    unit = sensitivity / (2 * sigma * sigma)
    # delta = sum P (1 - e^{eps-l})_+ over P-masses only: conditioning the runs on |x| <= R
    # changes it by at most 2 k tau (mass outside the box, renormalization inside)
    return _atoms_from_pmf(
        step.power(count), count, sensitivity, -count * reach, unit, 4 * UNIT_ROUNDOFF,
        dropped_mass=2 * math.exp(-_FLOAT_TAIL_NATS),
    )


@cached(maxsize=8)
def _gaussian_precise(sigma: float, sensitivity: int, count: int, dps: int):
    mp = load_mpmath()
    reach = _gaussian_reach(sigma, count, (2 * dps + 10) * math.log(10))
    with mp.workdps(dps):
        s2 = 2 * mp.mpf(sigma) ** 2
        weights = [mp.exp(-mp.mpf(x) ** 2 / s2) for x in range(-reach, reach + 1)]
        norm = mp.fsum(weights)
        probs = mp_power(mp, [w / norm for w in weights], count)
        unit = mp.mpf(sensitivity) / s2
        losses = [unit * (count * sensitivity - 2 * (s - count * reach)) for s in range(len(probs))]
    return losses[::-1], probs[::-1]


def _gaussian_profile(sigma, count, sensitivity) -> Profile:
    sigma = check.positive_float("sigma", sigma)
    count = check.count("count", count, minimum=1)
    sensitivity = integer_sensitivity(sensitivity)
    atoms = _gaussian_float(sigma, sensitivity, count)

    def precise_delta(mp, eps):
        losses, probs = _gaussian_precise(sigma, sensitivity, count, mp.dps)
        return mp_atoms_delta(mp, losses, probs, 0, eps)

    return Profile(atoms.delta, precise_delta, max_loss=atoms.max_loss)


def discrete_gaussian_composition_delta(
    epsilon, *, sigma: float, count: int, sensitivity: int = 1, precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """Exact ``delta(epsilon)`` of ``count`` runs of the discrete Gaussian mechanism.

    The noise is ``P(x) ∝ exp(-x^2 / (2 sigma^2))`` (Canonne, Kamath & Steinke 2020) on a query
    of integer ``sensitivity`` D; by enumeration of ``S = x_1 + ... + x_k`` (loss
    ``(k D^2 - 2 D S) / (2 sigma^2)``) with the support cut at ``|x| <= R``: the dropped mass
    changes ``delta`` by at most ``2 e^-200`` (float; included in the certified error used by
    the epsilon solver) or ``2 10^-(2 dps + 10)`` (precise). Cost ``O((count R)^2)`` with
    ``R ~ 20 sigma``.

    Parameters
    ----------
    epsilon : float or array_like
        ``epsilon >= 0``.
    sigma : float
        ``sigma > 0`` in ``P(x) ∝ exp(-x^2 / (2 sigma^2))``.
    count : int
        Runs ``k >= 1``.
    sensitivity : int, optional
        The query's integer sensitivity ``D >= 1``.
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``delta(epsilon)``, rounded to nearest (an array for an array ``epsilon``).

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    return profile_delta(_gaussian_profile(sigma, count, sensitivity), epsilon, precise, dps)


def discrete_gaussian_composition_epsilon(
    delta, *, sigma: float, count: int, sensitivity: int = 1, precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """Exact ``epsilon(delta)`` of ``count`` discrete Gaussian runs, rounded up (certified).

    Certified up to the truncation bound of :func:`discrete_gaussian_composition_delta`.

    Parameters
    ----------
    delta : float or array_like
        ``delta`` in ``[0, 1]``.
    sigma : float
        ``sigma > 0`` in ``P(x) ∝ exp(-x^2 / (2 sigma^2))``.
    count : int
        Runs ``k >= 1``.
    sensitivity : int, optional
        The query's integer sensitivity ``D >= 1``.
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``epsilon(delta)``, rounded up: the exact ``delta`` at it is at most ``delta``.

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    return profile_epsilon(_gaussian_profile(sigma, count, sensitivity), delta, precise, dps)
