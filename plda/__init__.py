"""plda: a privacy-loss-distribution accountant with certified upper and lower bounds."""

from typing import TYPE_CHECKING

from plda._internal import caches
from plda._internal.errors import (
    AccuracyWarning,
    CalibrationError,
    GaussianDPWarning,
    InvertedBracketError,
    PLDAWarning,
    SamplerMismatchWarning,
    UncoveredParametersError,
)
from plda.accounting import PLDAccountant
from plda.adapters.dp_accounting import from_dp_event
from plda.calibration import calibrate_noise_multiplier, calibrate_sample_rate, calibrate_steps
from plda.epochs import RandomAllocation, Shuffled
from plda.mechanisms import (
    ZCDP,
    ApproximateDP,
    CustomMechanism,
    DiscreteGaussian,
    DiscreteLaplace,
    ExponentialMechanism,
    Gaussian,
    GaussianDoubleMixture,
    GaussianDP,
    GaussianMixture,
    Laplace,
    LaplaceMixture,
    LossLaw,
    Mechanism,
    NotTightWarning,
    PermuteAndFlip,
    PoissonSampled,
    PrivacyLossLaw,
    PrivacyProfile,
    RandomizedResponse,
    RenyiDP,
    ReportNoisyMax,
    SampledWithoutReplacement,
    SamplerAssumptionWarning,
    TradeoffCurve,
    TruncatedPoisson,
)
from plda.pld import Bounds, PrivacyLossDistribution
from plda.samplers import sampled_mechanism
from plda.selection import RepeatAndSelect
from plda.serialization import load_pld, register_type, save_pld
from plda.sweep import sweep, sweep_to_dataframe

__version__ = "0.1.0"

# saved accountant states and PLD recipes may hold a selection step (plda.serialization cannot
# import plda.selection: they stand beside each other)
register_type(RepeatAndSelect)
del register_type  # not a name of the public face

__all__ = [
    "PLDAWarning",
    "AccuracyWarning",
    "CalibrationError",
    "GaussianDPWarning",
    "InvertedBracketError",
    "SamplerMismatchWarning",
    "UncoveredParametersError",
    "ApproximateDP",
    "PLDAccountant",
    "RepeatAndSelect",
    "calibrate_noise_multiplier",
    "calibrate_sample_rate",
    "calibrate_steps",
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
    "ExponentialMechanism",
    "Gaussian",
    "GaussianDoubleMixture",
    "GaussianDP",
    "GaussianMixture",
    "Laplace",
    "LaplaceMixture",
    "LossLaw",
    "Mechanism",
    "PermuteAndFlip",
    "PoissonSampled",
    "RandomAllocation",
    "RandomizedResponse",
    "sampled_mechanism",
    "PrivacyLossDistribution",
    "PrivacyLossLaw",
    "PrivacyProfile",
    "RenyiDP",
    "ReportNoisyMax",
    "NotTightWarning",
    "SampledWithoutReplacement",
    "SamplerAssumptionWarning",
    "Shuffled",
    "TradeoffCurve",
    "TruncatedPoisson",
    "ZCDP",
]


def clear_caches() -> None:
    """Forget cached discretizations, privacy-loss laws, exp tables and FFT plans.

    For benchmarks that must time cold runs: results never depend on the caches. Thread-safe.
    """
    caches.clear_all()


_SUBMODULES = (
    "theorems",
    "filters",
    "testing",
    "plot",
    "calibration",
    "serialization",
    "adapters",
    "matrix",
    "selection",
)


#: deprecated submodules (removed in 0.2.0): still loaded on first use, not listed by dir();
#: each name read from them warns
_DEPRECATED_SUBMODULES = ("tradeoff", "renyi", "risk", "accountant")
#: deprecated top-level functions (removed in 0.2.0): ``{name: the composition's method}``
_DEPRECATED_FUNCTIONS = {
    "true_positive_rate_bounds": "pld.true_positive_rate_bounds(false_positive_rate)",
    "advantage_bounds": "pld.advantage_bounds()",
}


def __getattr__(name: str):
    # submodules load on first use, so `import plda` stays light (no matplotlib, no mpmath)
    if name in _SUBMODULES or name in _DEPRECATED_SUBMODULES:
        from importlib import import_module

        return import_module(f"plda.{name}")
    if name in _DEPRECATED_FUNCTIONS:
        from plda._internal.deprecation import composition_door, warn_moved

        warn_moved(f"plda.{name}", _DEPRECATED_FUNCTIONS[name])
        return composition_door(name)
    raise AttributeError(f"module 'plda' has no attribute {name!r}")


def __dir__() -> list[str]:
    # the lazily loaded submodules are listed too (tab completion, dir(plda)); the deprecated
    # ones are not, even once loaded (importing a submodule binds it in this namespace)
    return sorted((set(globals()) | set(_SUBMODULES)) - set(_DEPRECATED_SUBMODULES))


if TYPE_CHECKING:  # IDEs and type checkers see the lazily loaded submodules
    from plda import (  # noqa: F401
        adapters,
        calibration,
        filters,
        matrix,
        plot,
        selection,
        serialization,
        testing,
        theorems,
    )
