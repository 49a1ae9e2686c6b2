"""Per-step mechanisms and their privacy-loss laws (the epoch samplers, which compose, are in
:mod:`plda.epochs`)."""

from plda.mechanisms.approximate import ApproximateDP
from plda.mechanisms.base import Mechanism, NotTightWarning, SamplerAssumptionWarning
from plda.mechanisms.bounded_range import ExponentialMechanism
from plda.mechanisms.custom import CustomMechanism, LossLaw
from plda.mechanisms.discrete import DiscreteGaussian, DiscreteLaplace
from plda.mechanisms.double_mixture import GaussianDoubleMixture
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.gaussian_mixture import GaussianMixture
from plda.mechanisms.imported import ZCDP, GaussianDP, RenyiDP
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.laplace_mixture import LaplaceMixture
from plda.mechanisms.law import PrivacyLossLaw
from plda.mechanisms.noisy_max import PermuteAndFlip, ReportNoisyMax
from plda.mechanisms.privacy_profile import PrivacyProfile
from plda.mechanisms.randomized_response import RandomizedResponse
from plda.mechanisms.subsampled import PoissonSampled
from plda.mechanisms.symmetrized import SymmetrizedPoissonSampled
from plda.mechanisms.tradeoff_curve import TradeoffCurve
from plda.mechanisms.truncated_poisson import TruncatedPoisson
from plda.mechanisms.without_replacement import SampledWithoutReplacement

__all__ = [
    "ApproximateDP",
    "CustomMechanism",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "ExponentialMechanism",
    "Gaussian",
    "GaussianDP",
    "GaussianDoubleMixture",
    "GaussianMixture",
    "Laplace",
    "LaplaceMixture",
    "LossLaw",
    "Mechanism",
    "NotTightWarning",
    "PermuteAndFlip",
    "PoissonSampled",
    "PrivacyLossLaw",
    "PrivacyProfile",
    "RandomizedResponse",
    "RenyiDP",
    "ReportNoisyMax",
    "SampledWithoutReplacement",
    "SamplerAssumptionWarning",
    "SymmetrizedPoissonSampled",
    "TradeoffCurve",
    "TruncatedPoisson",
    "ZCDP",
]
