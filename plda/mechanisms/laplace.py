"""The Laplace mechanism."""

from __future__ import annotations

from dataclasses import dataclass, replace

from plda._internal.validation import in_range, positive_float
from plda.mechanisms.base import Mechanism
from plda.mechanisms.laws import LaplaceLaw

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
