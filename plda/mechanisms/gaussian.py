"""The Gaussian mechanism."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from plda._internal.validation import in_range, positive_float
from plda.mechanisms.base import Mechanism
from plda.mechanisms.laws import GaussianLaw

#: supported ``mu = sensitivity / sigma``
MU_RANGE = (1e-150, 1e15)


@dataclass(frozen=True)
class Gaussian(Mechanism):
    """Adds ``N(0, sigma^2)`` noise to a query of L2 ``sensitivity``.

    Its privacy loss is Gaussian: ``L ~ N(mu^2/2, mu^2)`` with ``mu = sensitivity / sigma``; it is
    exactly ``mu``-GDP (Dong, Roth & Su 2019) and ``k`` compositions are ``sqrt(k) mu``-GDP.
    """

    sigma: float
    sensitivity: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "sigma", positive_float("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", positive_float("sensitivity", self.sensitivity))
        # below 1e-150, mu^2 (the loss variance) underflows; above 1e15 the loss mean mu^2/2
        # leaves the range where grid indices are exact integers
        in_range("sensitivity / sigma", self.sensitivity / self.sigma, MU_RANGE[0], MU_RANGE[1],
                 "the Gaussian-DP mu plda certifies")

    @property
    def mu(self) -> float:
        """Gaussian-DP parameter ``sensitivity / sigma``."""
        return self.sensitivity / self.sigma

    def _remove_law(self):
        return GaussianLaw(mu=self.mu)

    def _coarsened(self):
        """``sigma`` rounded down to a power of ``2^(1/16)``: more noise is a post-processing."""
        sigma = min(self.sigma, 2.0 ** (math.floor(16 * math.log2(self.sigma)) / 16))
        return replace(self, sigma=sigma)

    def under_replace_one(self):
        return replace(self, sensitivity=2 * self.sensitivity)
