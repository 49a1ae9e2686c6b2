"""The Gaussian mechanism."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from plda._validation import positive_float
from plda.mechanisms.base import Mechanism
from plda.mechanisms.laws import GaussianLaw


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
