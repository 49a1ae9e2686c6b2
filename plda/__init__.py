"""plda: a privacy-loss-distribution accountant with certified upper and lower bounds."""

from typing import TYPE_CHECKING

from plda._internal import caches
from plda._internal.errors import (
    AccuracyWarning,
    CalibrationError,
    InvertedBracketError,
    PLDAWarning,
    SamplerMismatchWarning,
)
from plda.accountant import PLDAccountant
from plda.adapters.dp_accounting import from_dp_event
from plda.calibration import calibrate_noise_multiplier, calibrate_sample_rate, calibrate_steps
from plda.epochs import RandomAllocation, Shuffled
from plda.mechanisms import (
    ApproximateDP,
    CustomMechanism,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    GaussianMixture,
    Laplace,
    LossLaw,
    Mechanism,
    NotTightWarning,
    PoissonSampled,
    PrivacyLossLaw,
    SampledWithoutReplacement,
    SamplerAssumptionWarning,
    TruncatedPoisson,
)
from plda.pld import Bounds, PrivacyLossDistribution
from plda.risk import advantage_bounds, true_positive_rate_bounds
from plda.samplers import sampled_mechanism
from plda.serialization import load_pld, save_pld
from plda.sweep import sweep, sweep_to_dataframe

__version__ = "0.1.0"

__all__ = [
    "PLDAWarning",
    "AccuracyWarning",
    "CalibrationError",
    "InvertedBracketError",
    "SamplerMismatchWarning",
    "ApproximateDP",
    "PLDAccountant",
    "calibrate_noise_multiplier",
    "calibrate_sample_rate",
    "calibrate_steps",
    "advantage_bounds",
    "true_positive_rate_bounds",
    "sweep",
    "sweep_to_dataframe",
    "from_dp_event",
    "load_pld",
    "save_pld",
    "Bounds",
    "clear_caches",
    "CustomMechanism",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Gaussian",
    "GaussianMixture",
    "Laplace",
    "LossLaw",
    "Mechanism",
    "PoissonSampled",
    "RandomAllocation",
    "sampled_mechanism",
    "PrivacyLossDistribution",
    "PrivacyLossLaw",
    "NotTightWarning",
    "SampledWithoutReplacement",
    "SamplerAssumptionWarning",
    "Shuffled",
    "TruncatedPoisson",
]


def clear_caches() -> None:
    """Forget cached discretizations, privacy-loss laws, exp tables and FFT plans (for benchmarks
    that must time cold runs; results never depend on the caches). Thread-safe."""
    caches.clear_all()


_SUBMODULES = (
    "theorems",
    "filters",
    "testing",
    "plot",
    "tradeoff",
    "renyi",
    "accountant",
    "calibration",
    "serialization",
    "adapters",
)


def __getattr__(name: str):
    # submodules load on first use, so `import plda` stays light (no matplotlib, no mpmath)
    if name in _SUBMODULES:
        from importlib import import_module

        return import_module(f"plda.{name}")
    raise AttributeError(f"module 'plda' has no attribute {name!r}")


def __dir__() -> list[str]:
    # the lazily loaded submodules are listed too (tab completion, dir(plda))
    return sorted(set(globals()) | set(_SUBMODULES))


if TYPE_CHECKING:  # IDEs and type checkers see the lazily loaded submodules
    from plda import (  # noqa: F401
        accountant,
        adapters,
        calibration,
        filters,
        plot,
        renyi,
        serialization,
        testing,
        theorems,
        tradeoff,
    )
