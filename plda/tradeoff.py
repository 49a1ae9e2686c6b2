"""Deprecated (removed in plda 0.2.0): the tradeoff, membership-inference and Gaussian-DP
queries are methods of the composition (``pld.tradeoff_bounds(alpha)``,
``pld.true_positive_rate_bounds(fpr)``, ``pld.advantage_bounds()``, ``pld.gdp_mu()``,
``pld.gdp_summary()``, ...); the helpers that are not queries live in
:mod:`plda.conversions.gdp`, :mod:`plda.conversions.profile` and
:mod:`plda.conversions.envelope`. Each name read here warns and names its new home."""

from __future__ import annotations

from plda._internal import errors
from plda._internal.deprecation import composition_door, moved_names, upper
from plda.conversions import envelope, gdp, profile

__all__: list[str] = []  # nothing here is public any more

__getattr__, __dir__ = moved_names(
    __name__,
    {
        "tradeoff": ("pld.tradeoff(alpha)", lambda: composition_door("tradeoff")),
        "tradeoff_bounds": (
            "pld.tradeoff_bounds(alpha)",
            lambda: composition_door("tradeoff_bounds"),
        ),
        "true_positive_rate_bounds": (
            "pld.true_positive_rate_bounds(false_positive_rate)",
            lambda: composition_door("true_positive_rate_bounds"),
        ),
        "max_true_positive_rate": (
            "pld.true_positive_rate_bounds(false_positive_rate).upper",
            lambda: composition_door("true_positive_rate_bounds", transform=upper),
        ),
        "max_advantage": (
            "pld.advantage_bounds() (clipped to [0, 1])",
            lambda: composition_door("advantage_bounds"),
        ),
        "symmetric_profile": (
            "pld.symmetric_profile(bound)",
            lambda: composition_door("symmetric_profile"),
        ),
        "gdp_mu": ("pld.gdp_mu()", lambda: composition_door("gdp_mu")),
        "gaussian_dp": ("pld.gdp_summary()", lambda: composition_door("gdp_summary")),
        "gdp_comparison": (
            "plda.conversions.gdp.gdp_comparison(pld.composed_laws(), alpha, mu)",
            lambda: _gdp_comparison,
        ),
        "DELTA_FLOOR": ("plda.conversions.profile.DELTA_FLOOR", lambda: profile.DELTA_FLOOR),
        "ProfileSamples": (
            "plda.conversions.profile.ProfileSamples",
            lambda: profile.ProfileSamples,
        ),
        "LowerEnvelope": (
            "plda.conversions.envelope.LowerEnvelope",
            lambda: envelope.LowerEnvelope,
        ),
        "GaussianComparison": (
            "plda.conversions.gdp.GaussianComparison",
            lambda: gdp.GaussianComparison,
        ),
        "GaussianDPSummary": (
            "plda.conversions.gdp.GaussianDPSummary",
            lambda: gdp.GaussianDPSummary,
        ),
        "GaussianDPWarning": ("plda.GaussianDPWarning", lambda: errors.GaussianDPWarning),
        "gaussian_delta": (
            "plda.conversions.gdp.gaussian_delta",
            lambda: gdp.gaussian_delta,
        ),
        "gaussian_tradeoff": (
            "plda.conversions.gdp.gaussian_tradeoff",
            lambda: gdp.gaussian_tradeoff,
        ),
        "log_gaussian_delta": (
            "plda.conversions.gdp.log_gaussian_delta",
            lambda: gdp.log_gaussian_delta,
        ),
    },
)


def _gdp_comparison(pld, alpha=None, mu: float | None = None):
    """Deprecated: ``plda.conversions.gdp.gdp_comparison(pld.composed_laws(), alpha, mu)``."""
    composed = getattr(pld, "composed_laws", None)
    if not callable(composed):
        raise TypeError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
    return gdp.gdp_comparison(composed(), alpha, mu)
