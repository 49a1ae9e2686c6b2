"""The Laplace mechanism and its privacy-loss law."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from plda._internal.validation import in_range, positive_float
from plda.mechanisms.base import Mechanism
from plda.mechanisms.law import PrivacyLossLaw

#: largest supported ``sensitivity / scale``
MAX_EPSILON = 700.0


@dataclass(frozen=True)
class Laplace(Mechanism):
    """Adds ``Lap(0, scale)`` noise to a query of L1 ``sensitivity``: pure
    ``sensitivity / scale``-DP, with privacy-loss atoms at ``±sensitivity/scale``."""

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "scale", positive_float("scale", self.scale))
        object.__setattr__(self, "sensitivity", positive_float("sensitivity", self.sensitivity))
        # past 700 the loss atom at -epsilon has P-mass e^-epsilon / 2 below the smallest double
        in_range("sensitivity / scale", self.sensitivity / self.scale, 1e-300, MAX_EPSILON,
                 "the pure-DP epsilon of a Laplace step plda certifies")

    @property
    def epsilon(self) -> float:
        """Pure-DP parameter ``sensitivity / scale``."""
        return self.sensitivity / self.scale

    def _remove_law(self):
        return LaplaceLaw(epsilon0=self.epsilon)

    def under_replace_one(self):
        return replace(self, sensitivity=2 * self.sensitivity)


@dataclass(frozen=True, eq=False)
class LaplaceLaw(PrivacyLossLaw):
    """Laplace pair ``Lap(0, b)`` vs ``Lap(Δ, b)`` with ``eps0 = Δ/b``: atoms ``+eps0`` (mass 1/2)
    and ``-eps0`` (mass ``e^-eps0 / 2``), continuous in between with
    ``P(L <= l) = e^-eps0 (e^((eps0+l)/2) - 1) / 2`` (Koskela et al. 2021)."""

    epsilon0: float = 1.0
    has_continuous_part = True

    def __post_init__(self):
        e = self.epsilon0
        object.__setattr__(self, "atom_losses", np.array([-e, e]))
        object.__setattr__(self, "atom_probs", np.array([np.exp(-e) / 2, 0.5]))

    @property
    def continuous_support(self):
        return (-self.epsilon0, self.epsilon0)

    def _cont_cdf(self, x, hypothesis):
        e = self.epsilon0
        x = np.clip(np.asarray(x, dtype=float), -e, e)
        if hypothesis == "P":
            return 0.5 * np.exp(-e) * np.expm1((e + x) / 2)
        return -0.5 * np.expm1(-(x + e) / 2)

    def _cont_sf(self, x, hypothesis):
        e = self.epsilon0
        x = np.clip(np.asarray(x, dtype=float), -e, e)
        if hypothesis == "P":
            return -0.5 * np.expm1(-(e - x) / 2)
        return 0.5 * np.exp(-e) * np.expm1((e - x) / 2)

    def _cont_pdf(self, x, hypothesis):
        e = self.epsilon0
        x = np.asarray(x, dtype=float)
        inside = (x > -e) & (x < e)
        # dP/dl = e^{(l-eps0)/2} / 4 and dQ/dl = e^{-(l+eps0)/2} / 4 on (-eps0, eps0)
        shift = -e if hypothesis == "P" else -e
        sign = 1.0 if hypothesis == "P" else -1.0
        return np.where(inside, 0.25 * np.exp((sign * x + shift) / 2), 0.0)

    def _cont_tail(self, mass, hypothesis):
        return -self.epsilon0, self.epsilon0
