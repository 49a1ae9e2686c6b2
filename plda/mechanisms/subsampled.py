"""Poisson subsampling of any mechanism."""

from __future__ import annotations

import math
from dataclasses import dataclass

from plda._internal.validation import MIN_SAMPLE_RATE, in_range, probability
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.laws import ReplaceOneSampledGaussianLaw, SubsampledLaw
from plda.mechanisms.symmetrized import SymmetrizedSubsampledLaw


@dataclass(frozen=True)
class PoissonSampled(Mechanism):
    """Runs ``mechanism`` on a Poisson sample that keeps each record with ``sample_rate`` q.

    Under add/remove its dominating pairs are ``(q P + (1-q) Q, Q)`` (remove) and the reversed
    pair (add), where ``(P, Q)`` dominates the base mechanism (Zhu, Dong & Wang 2022, Thm. 11).
    The two directions differ; plda reports the worse of the two.
    """

    mechanism: Mechanism
    sample_rate: float

    def __post_init__(self):
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(
                f"mechanism must be a plda mechanism, got {type(self.mechanism).__name__}"
            )
        object.__setattr__(
            self, "sample_rate", probability("sample_rate", self.sample_rate, open_low=True)
        )
        in_range("sample_rate", self.sample_rate, MIN_SAMPLE_RATE, 1.0,
                 "tighter rates give only loose bounds on the grid")

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        return self.sample_rate == 1.0 and self.mechanism.symmetric

    def _remove_law(self):
        base = self.mechanism.privacy_loss("remove")
        if self.sample_rate == 1.0:
            return base
        return SubsampledLaw(base=base, sample_rate=self.sample_rate)

    def _add_law(self):
        if self.sample_rate == 1.0:
            return self.mechanism.privacy_loss("add")
        return self.privacy_loss("remove").reversed()

    def _coarsened(self) -> Mechanism:
        """The base coarsened and ``q`` rounded up to a power of ``2^(1/16)``: ``delta(eps)`` of
        both directions grows with ``q`` (joint convexity of the hockey-stick divergence)."""
        q = self.sample_rate
        q = min(1.0, max(q, 2.0 ** (math.ceil(16 * math.log2(q)) / 16)))
        return PoissonSampled(self.mechanism._coarsened(), q)

    def under_replace_one(self) -> Mechanism:
        """Replace-one: the replaced record's contribution moves between ``±sensitivity``
        around the rest of the sum, sampled with probability q: the symmetric pair
        ``((1-q) N(0) + q N(Δ), (1-q) N(0) + q N(-Δ))`` (Zhu, Dong & Wang 2022) — tighter than
        doubling the sensitivity. Supported for Gaussian base mechanisms."""
        if type(self.mechanism) is not Gaussian:
            raise ValueError(
                "relation='replace_one' with PoissonSampled is supported for Gaussian base "
                f"mechanisms only, got {type(self.mechanism).__name__}"
            )
        return _ReplaceOneSampledGaussian(self.mechanism, self.sample_rate)


@dataclass(frozen=True)
class SymmetrizedPoissonSampled(Mechanism):
    """The least symmetric pair dominating both directions of ``PoissonSampled(mechanism, q)``,
    for a symmetric base ``mechanism``: a step whose orientation may flip within a run.

    Where one run can realize both ``(q P + (1-q) Q, Q)`` and its reverse (a substitution under
    replace-one: fixed-size batches, truncated Poisson batches), composing the worse direction
    alone under-reports; this pair dominates every step of either orientation, so its
    composition is certified (:class:`~plda.mechanisms.symmetrized.SymmetrizedSubsampledLaw`).
    Its profile equals the removal direction's for ``eps >= 0``.

    Parameters
    ----------
    mechanism
        A symmetric base mechanism (``mechanism.symmetric``: Gaussian, Laplace, discrete ones,
        ``ApproximateDP``).
    sample_rate
        The probability ``q`` in (0, 1].

    Raises
    ------
    TypeError
        If ``mechanism`` is not a plda mechanism.
    ValueError
        If it is not symmetric, or ``sample_rate`` is outside (0, 1].
    """

    mechanism: Mechanism
    sample_rate: float

    def __post_init__(self):
        step = PoissonSampled(self.mechanism, self.sample_rate)  # validates both
        if not self.mechanism.symmetric:
            raise ValueError(
                "mechanism must be symmetric (its two directions equal) to be symmetrized "
                f"after subsampling, got {self.mechanism!r}"
            )
        object.__setattr__(self, "sample_rate", step.sample_rate)

    def _remove_law(self):
        law = PoissonSampled(self.mechanism, self.sample_rate).privacy_loss("remove")
        if self.sample_rate == 1.0:
            return law  # the base itself, already symmetric
        return SymmetrizedSubsampledLaw(subsampled=law)

    def _coarsened(self) -> Mechanism:
        """The coarsened Poisson step, symmetrized: its profile on ``eps >= 0`` is the removal
        direction's, which grows under coarsening."""
        coarse = PoissonSampled(self.mechanism, self.sample_rate).coarsened()
        return SymmetrizedPoissonSampled(coarse.mechanism, coarse.sample_rate)


@dataclass(frozen=True)
class _ReplaceOneSampledGaussian(Mechanism):
    """Internal: a Poisson-sampled Gaussian read under the replace-one relation."""

    mechanism: Gaussian
    sample_rate: float

    def _remove_law(self):
        return ReplaceOneSampledGaussianLaw(mu=self.mechanism.mu, sample_rate=self.sample_rate)
