"""plda: a privacy-loss-distribution accountant with certified upper and lower bounds."""

from plda.mechanisms import (
    ApproximateDP,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    Mechanism,
    PoissonSampled,
    PrivacyLossLaw,
)
from plda.pld import Bounds, PrivacyLossDistribution

__version__ = "0.1.0"

__all__ = [
    "ApproximateDP",
    "Bounds",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Gaussian",
    "Laplace",
    "Mechanism",
    "PoissonSampled",
    "PrivacyLossDistribution",
    "PrivacyLossLaw",
]
