"""Discrete Laplace and discrete Gaussian mechanisms on the integers."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import logsumexp

from plda._internal.floats import TINY
from plda._internal.validation import doubled, in_range, positive_float
from plda.mechanisms.approximate import MAX_EPSILON
from plda.mechanisms.base import Mechanism
from plda.mechanisms.law import AtomLaw

#: largest supported integer sensitivity: the loss law has one atom per integer of the support,
#: so work and memory grow with it (1e6 atoms: ~0.4 s, ~50 MB)
MAX_SENSITIVITY = 10**6
#: largest supported ``sigma / sensitivity`` of the discrete Gaussian (its support holds
#: ~77 sigma integers: 3e4 takes ~2 s)
MAX_RELATIVE_SIGMA = 3e4


def integer_sensitivity(value) -> int:
    """``value`` as an integer sensitivity in ``[1, MAX_SENSITIVITY]``.

    Parameters
    ----------
    value : int or float
        The sensitivity; an integral float such as ``2.0`` is accepted.

    Returns
    -------
    int
        ``value`` as an ``int``.

    Raises
    ------
    TypeError
        If ``value`` is not a real number (a bool included).
    ValueError
        If ``value`` is not an integer in ``[1, MAX_SENSITIVITY]`` (the loss law holds one
        atom per integer).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"sensitivity must be an integer in [1, {MAX_SENSITIVITY}], got "
                        f"{type(value).__name__}")
    if not float(value).is_integer() or not 1 <= value <= MAX_SENSITIVITY:
        raise ValueError(
            f"sensitivity must be an integer in [1, {MAX_SENSITIVITY}] (the loss law holds one "
            f"atom per integer), got {value!r}"
        )
    return int(value)


@dataclass(frozen=True)
class DiscreteLaplace(Mechanism):
    """Adds discrete Laplace noise ``P(x) ∝ exp(-parameter |x|)`` to an integer query.

    The noise lives on the integers (Ghosh et al. 2009); for a query of ``sensitivity`` Δ the
    privacy loss has atoms ``parameter (Δ - 2x)`` for ``x = 0..Δ`` (the tails beyond ``0`` and
    ``Δ`` gathered on the end atoms), and the step is pure ``parameter * Δ``-DP.

    Parameters
    ----------
    parameter : float
        The decay ``t`` of the noise, in ``(0, inf)``.
    sensitivity : int, optional
        The query's add/remove sensitivity Δ, an integer in ``[1, MAX_SENSITIVITY]``.

    Raises
    ------
    TypeError
        If ``parameter`` or ``sensitivity`` is not a real number.
    ValueError
        If ``parameter`` is not a finite positive number, ``sensitivity`` is not an integer
        in ``[1, MAX_SENSITIVITY]``, or ``parameter * sensitivity`` exceeds ``1e150``.
    """

    parameter: float
    sensitivity: int = 1

    def __post_init__(self):
        parameter = positive_float("parameter", self.parameter)
        sensitivity = integer_sensitivity(self.sensitivity)
        if parameter * sensitivity > MAX_EPSILON:
            # the engine squares losses (variances, Chernoff orders): beyond ~1e154 they overflow
            raise ValueError(
                f"parameter * sensitivity (the step's pure-DP epsilon) must be at most "
                f"{MAX_EPSILON:g}, got {parameter!r} * {sensitivity}")
        object.__setattr__(self, "parameter", parameter)
        object.__setattr__(self, "sensitivity", sensitivity)

    def _remove_law(self):
        t, d = self.parameter, self.sensitivity
        x = np.arange(d + 1)
        # log(1 - e^-t): log1p(-e^-t) divides by 0 once e^-t rounds to 1 (t below ~1e-16, a
        # RuntimeWarning and interior atoms of mass 0); -expm1(-t) is t there
        log_gap = np.log1p(-np.exp(-t)) if np.exp(-t) < 1.0 else np.log(-np.expm1(-t))
        log_z = np.log1p(np.exp(-t)) - log_gap  # normalizer (1+e^-t)/(1-e^-t)
        logp = -t * x - log_z
        logp[0] = -np.log1p(np.exp(-t))  # P(X <= 0)
        logp[-1] = -t * d - np.log1p(np.exp(-t))  # P(X >= Δ)
        if d == 0:  # pragma: no cover - excluded by validation
            logp = np.array([0.0])
        losses = t * (d - 2 * x)
        order = np.argsort(losses)
        return AtomLaw(atom_losses=losses[order].astype(float), atom_probs=np.exp(logp[order]))

    def under_replace_one(self):
        """The step under replace-one: the same noise at twice the sensitivity.

        A replaced record moves the query by up to twice its add/remove sensitivity.

        Returns
        -------
        DiscreteLaplace
            ``DiscreteLaplace(parameter, 2 * sensitivity)``.

        Raises
        ------
        ValueError
            If ``2 * sensitivity`` exceeds ``MAX_SENSITIVITY``, or ``2 * parameter *
            sensitivity`` exceeds ``1e150``.
        """
        doubled("parameter * sensitivity", self.parameter * self.sensitivity, MAX_EPSILON)
        return replace(self, sensitivity=2 * self.sensitivity)


@dataclass(frozen=True)
class DiscreteGaussian(Mechanism):
    """Adds discrete Gaussian noise ``P(x) ∝ exp(-x^2 / (2 sigma^2))`` to an integer query.

    The noise lives on the integers (Canonne, Kamath & Steinke 2020); for a query of
    ``sensitivity`` Δ the privacy loss has atoms ``(Δ^2 - 2xΔ) / (2 sigma^2)``, kept for
    ``|x|`` up to about ``38.5 sigma``; the mass beyond is bounded and charged to
    ``truncated_mass``.

    Parameters
    ----------
    sigma : float
        The noise scale, in ``[1e-3, MAX_RELATIVE_SIGMA * sensitivity]``.
    sensitivity : int, optional
        The query's add/remove sensitivity Δ, an integer in ``[1, MAX_SENSITIVITY]``.

    Raises
    ------
    TypeError
        If ``sigma`` or ``sensitivity`` is not a real number.
    ValueError
        If ``sigma`` is not a finite positive number or is outside its range, or
        ``sensitivity`` is not an integer in ``[1, MAX_SENSITIVITY]``.
    """

    sigma: float
    sensitivity: int = 1

    def __post_init__(self):
        object.__setattr__(self, "sigma", positive_float("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", integer_sensitivity(self.sensitivity))
        in_range("sigma", self.sigma, 1e-3, MAX_RELATIVE_SIGMA * max(self.sensitivity, 1),
                 "the discrete Gaussian holds one atom per integer within ~38 sigma")

    def _remove_law(self):
        s, d = self.sigma, self.sensitivity
        # |x| <= reach keeps all mass above exp(-740) ~ 1e-321; the rest is bounded below
        reach = int(np.ceil(np.sqrt(2 * 740.0) * s)) + d + 1
        x = np.arange(-reach, reach + 1)
        log_weights = -(x.astype(float) ** 2) / (2 * s * s)
        log_z = logsumexp(log_weights)
        probs = np.exp(log_weights - log_z)
        losses = (d * d - 2.0 * x * d) / (2 * s * s)
        # mass beyond -reach (largest losses):
        # sum_{x>reach} e^{-x^2/2s^2} <= e^{-reach^2/2s^2} (1 + s^2/reach)
        tail = float(np.exp(-(reach**2) / (2 * s * s) - log_z) * (1 + s * s / reach))
        keep = probs > 0
        order = np.argsort(losses[keep])
        # the loss is unbounded, so some mass always lies beyond: never 0, even where the bound
        # and the atoms dropped for underflowing (below 5e-324 each) round to 0 (at sigma =
        # 0.05, epsilon(0) came out 600.2 instead of inf)
        tail = max(tail, TINY) + TINY * int(np.count_nonzero(~keep))
        return AtomLaw(
            atom_losses=losses[keep][order], atom_probs=probs[keep][order], truncated_mass=tail
        )

    def under_replace_one(self):
        """The step under replace-one: the same noise at twice the sensitivity.

        A replaced record moves the query by up to twice its add/remove sensitivity.

        Returns
        -------
        DiscreteGaussian
            ``DiscreteGaussian(sigma, 2 * sensitivity)``.

        Raises
        ------
        ValueError
            If ``2 * sensitivity`` exceeds ``MAX_SENSITIVITY``.
        """
        return replace(self, sensitivity=2 * self.sensitivity)
