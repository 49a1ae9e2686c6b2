"""Discrete Laplace and discrete Gaussian mechanisms on the integers."""

from __future__ import annotations

import numbers
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import logsumexp

from plda._internal.validation import in_range, positive_float
from plda.mechanisms.base import Mechanism
from plda.mechanisms.law import AtomLaw

#: largest supported integer sensitivity: the loss law has one atom per integer of the support,
#: so work and memory grow with it (1e6 atoms: ~0.4 s, ~50 MB)
MAX_SENSITIVITY = 10**6
#: largest supported ``sigma / sensitivity`` of the discrete Gaussian (its support holds
#: ~77 sigma integers: 3e4 takes ~2 s)
MAX_RELATIVE_SIGMA = 3e4


def integer_sensitivity(value) -> int:
    """``value`` as an integer sensitivity in ``[1, MAX_SENSITIVITY]``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError("sensitivity must be a positive integer")
    if not float(value).is_integer() or not 1 <= value <= MAX_SENSITIVITY:
        raise ValueError(
            f"sensitivity must be an integer in [1, {MAX_SENSITIVITY}] (the loss law holds one "
            f"atom per integer), got {value!r}"
        )
    return int(value)


@dataclass(frozen=True)
class DiscreteLaplace(Mechanism):
    """Adds noise with ``P(x) ∝ exp(-parameter |x|)`` on the integers (Ghosh et al. 2009) to an
    integer query of ``sensitivity`` Δ. Loss atoms ``parameter (Δ - 2x)`` for ``x = 0..Δ``;
    pure ``parameter * Δ``-DP."""

    parameter: float
    sensitivity: int = 1

    def __post_init__(self):
        object.__setattr__(self, "parameter", positive_float("parameter", self.parameter))
        object.__setattr__(self, "sensitivity", integer_sensitivity(self.sensitivity))

    def _remove_law(self):
        t, d = self.parameter, self.sensitivity
        x = np.arange(d + 1)
        log_z = np.log1p(np.exp(-t)) - np.log1p(-np.exp(-t))  # normalizer (1+e^-t)/(1-e^-t)
        logp = -t * x - log_z
        logp[0] = -np.log1p(np.exp(-t))  # P(X <= 0)
        logp[-1] = -t * d - np.log1p(np.exp(-t))  # P(X >= Δ)
        if d == 0:  # pragma: no cover - excluded by validation
            logp = np.array([0.0])
        losses = t * (d - 2 * x)
        order = np.argsort(losses)
        return AtomLaw(atom_losses=losses[order].astype(float), atom_probs=np.exp(logp[order]))

    def under_replace_one(self):
        return replace(self, sensitivity=2 * self.sensitivity)


@dataclass(frozen=True)
class DiscreteGaussian(Mechanism):
    """Adds noise with ``P(x) ∝ exp(-x^2 / (2 sigma^2))`` on the integers (Canonne, Kamath &
    Steinke 2020) to an integer query of ``sensitivity`` Δ; loss atoms ``(Δ^2 - 2xΔ)/(2σ^2)``."""

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
        return AtomLaw(
            atom_losses=losses[keep][order], atom_probs=probs[keep][order], truncated_mass=tail
        )

    def under_replace_one(self):
        return replace(self, sensitivity=2 * self.sensitivity)
