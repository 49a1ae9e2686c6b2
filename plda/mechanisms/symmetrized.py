"""The symmetrized pair of a Poisson-subsampled symmetric mechanism: the least symmetric pair
dominating both directions, for steps whose orientation can flip from one step to the next
(substitutions under replace-one: fixed-size and truncated Poisson batches). Why composing the
worse direction alone is unsound there, and the derivation of this pair:
``docs/concepts/neighbouring-relations.md`` ("When the orientation can flip").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from plda._internal.floats import UNIT_ROUNDOFF
from plda.mechanisms.base import Mechanism
from plda.mechanisms.law import PrivacyLossLaw
from plda.mechanisms.subsampled import PoissonSampled, SubsampledLaw

_OTHER = {"P": "Q", "Q": "P"}
#: relative accuracy assumed of a law's cdf/sf values (as the discretizer assumes it): the mass
#: at loss 0, a difference of two of them, is rounded up by twice that
_CDF_RTOL = 64 * UNIT_ROUNDOFF


@dataclass(frozen=True)
class SymmetrizedPoissonSampled(Mechanism):
    """The least symmetric pair dominating both directions of ``PoissonSampled(mechanism, q)``.

    For a symmetric base ``mechanism``: a step whose orientation may flip within a run. Where
    one run can realize both ``(q P + (1-q) Q, Q)`` and its reverse (a substitution under
    replace-one: fixed-size batches, truncated Poisson batches), composing the worse direction
    alone under-reports; this pair dominates every step of either orientation, so its
    composition is certified (:class:`~plda.mechanisms.symmetrized.SymmetrizedSubsampledLaw`).
    Its profile equals the removal direction's for ``eps >= 0``.

    Parameters
    ----------
    mechanism : Mechanism
        A symmetric base mechanism (``mechanism.symmetric``: Gaussian, Laplace, discrete ones,
        ``ApproximateDP``).
    sample_rate : float
        The probability ``q``, in ``[1e-12, 1]``.

    Raises
    ------
    TypeError
        If ``mechanism`` is not a plda mechanism, or ``sample_rate`` is not a real number.
    ValueError
        If ``mechanism`` is not symmetric, or ``sample_rate`` is outside ``[1e-12, 1]``.
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


@dataclass(frozen=True, eq=False)
class SymmetrizedSubsampledLaw(PrivacyLossLaw):
    """Loss law of the least symmetric pair dominating a Poisson-subsampled symmetric pair.

    For the subsampled pair ``R = (q P + (1-q) Q, Q)`` of a *symmetric* base pair ``(P, Q)``,
    its privacy profile is ``max(delta_remove, delta_add) = delta_R`` on ``eps >= 0`` and its
    tradeoff curve the convex hull of ``min(f_R, f_R^{-1})`` (Dong, Roth & Su 2022, Sec. 4.2;
    derivation in ``docs/concepts/neighbouring-relations.md``). Under ``P`` it has ``R``'s loss
    law on ``(0, inf]``, its mirror image ``P_S(L < -t) = Q_R(L > t)`` on the negative losses
    and the rest at loss ``0``, mass ``q Q_B(Y = 0) + (1-q)(Q_B(Y <= 0) - Q_B(Y > 0))`` (``Y``
    the base loss), rounded up. Every probability is formed from the base's tails
    without cancellation: for ``t >= 0``, ``y`` the base loss of ``t``
    (:meth:`SubsampledLaw.base_loss`) and ``s_0 = S_Q(0)``,

    * ``P(L <= t) = q F_P(y) + (1-q) (2 s_0 - S_Q(y))``, ``P(L > t) = q S_P(y) + (1-q) S_Q(y)``;
    * ``P(L < -t) = S_Q(y)``, ``P(L >= -t) = (s_0 - S_Q(y)) + q S_P(0) + (1-q) s_0``;

    and under ``Q`` the mirror image, ``Q(L <= x) = P(L >= -x)``.

    Parameters
    ----------
    subsampled : SubsampledLaw
        The removal law ``R`` of a Poisson-subsampled symmetric base (its ``base`` must be
        symmetric: its law under ``Q`` is that of ``-Y`` under ``P``; the mechanism building
        this law checks it).

    Raises
    ------
    TypeError
        If ``subsampled`` is not a :class:`~plda.mechanisms.subsampled.SubsampledLaw`.
    """

    subsampled: SubsampledLaw | None = None

    def __post_init__(self):
        r = self.subsampled
        if not isinstance(r, SubsampledLaw):
            raise TypeError(f"subsampled must be a SubsampledLaw, got {type(r).__name__}")
        base, q = r.base, r.sample_rate
        zero = np.zeros(1)
        s0_q = float(base.continuous_sf(zero, "Q")[0])
        s0_p = float(base.continuous_sf(zero, "P")[0])
        object.__setattr__(self, "_tails_at_zero", (s0_p, s0_q))
        positive = r.atom_losses > 0
        losses, probs = r.atom_losses[positive], r.atom_probs[positive]
        # mass at loss 0 under both hypotheses (see the class docstring), rounded up: extra mass
        # at loss 0 can only raise a composition's delta
        below, above = float(base.cdf(0.0, "Q")), float(base.sf(0.0, "Q"))
        at_zero = float(base.atom_probs[base.atom_losses == 0].sum())
        zero_mass = q * at_zero + (1 - q) * (below - above)
        zero_mass += 2 * _CDF_RTOL * (below + above) + 4 * UNIT_ROUNDOFF
        order = np.argsort(np.concatenate([-losses, [0.0], losses]))
        object.__setattr__(
            self, "atom_losses", np.concatenate([-losses, [0.0], losses])[order]
        )
        object.__setattr__(
            self,
            "atom_probs",
            np.concatenate([probs * np.exp(-losses), [max(zero_mass, 0.0)], probs])[order],
        )
        object.__setattr__(self, "infinity_mass", r.infinity_mass)
        object.__setattr__(self, "neg_infinity_mass", r.infinity_mass)
        object.__setattr__(self, "truncated_mass", r.truncated_mass)

    @property
    def sample_rate(self) -> float:
        """The sampling probability ``q`` of the subsampled pair."""
        return self.subsampled.sample_rate

    @property
    def has_continuous_part(self):  # type: ignore[override]
        """Whether the law has a continuous part: the subsampled law's, above loss 0."""
        r = self.subsampled
        return r.has_continuous_part and r.continuous_support[1] > 0

    @property
    def has_density(self):  # type: ignore[override]
        """Whether the continuous part has a density: when the subsampled law's has one."""
        return self.subsampled.has_density

    @property
    def continuous_support(self):
        """``(-hi, hi)``, ``hi`` the upper end of the subsampled law's continuous part."""
        hi = self.subsampled.continuous_support[1]
        return (-hi, hi) if hi > 0 else (0.0, 0.0)

    def _four(self, t: np.ndarray):
        """``(P(L <= t), P(L > t), P(L < -t), P(L >= -t))`` of the continuous part, ``t >= 0``."""
        r = self.subsampled
        q = r.sample_rate
        s0_p, s0_q = self._tails_at_zero
        cdf_p, sf_p, _, sf_q = r.base.continuous_cdf_sf(r.base_loss(t))
        # S_Q(y) <= s_0 for y >= 0: the differences below are of numbers below s_0, never of
        # numbers near 1, and clipping removes the sign of their rounding
        inner = np.maximum(s0_q - sf_q, 0.0)
        return (
            q * cdf_p + (1 - q) * (s0_q + inner),
            q * sf_p + (1 - q) * sf_q,
            sf_q,
            inner + q * s0_p + (1 - q) * s0_q,
        )

    def _cont_cdf_sf(self, x):
        x = np.asarray(x, dtype=float)
        below, above, mirror_below, mirror_above = self._four(np.abs(x))
        negative = x < 0
        cdf_p = np.where(negative, mirror_below, below)
        sf_p = np.where(negative, mirror_above, above)
        # under Q the law is the mirror image: Q(L <= x) = P(L >= -x), Q(L > x) = P(L < -x)
        cdf_q = np.where(negative, above, mirror_above)
        sf_q = np.where(negative, below, mirror_below)
        return cdf_p, sf_p, cdf_q, sf_q

    def _cont_cdf(self, x, hypothesis):
        cdf_p, _, cdf_q, _ = self._cont_cdf_sf(x)
        return cdf_p if hypothesis == "P" else cdf_q

    def _cont_sf(self, x, hypothesis):
        _, sf_p, _, sf_q = self._cont_cdf_sf(x)
        return sf_p if hypothesis == "P" else sf_q

    def _cont_pdf(self, x, hypothesis):
        x = np.asarray(x, dtype=float)
        t = np.abs(x)
        r = self.subsampled
        # losses above 0 are R's; below 0 the mirror image, read under the other hypothesis
        same = r.continuous_pdf(t, hypothesis)
        other = r.continuous_pdf(t, _OTHER[hypothesis])
        return np.where(x < 0, other, same)

    def _cont_tail(self, mass, hypothesis):
        r = self.subsampled
        # P(L > b) = P_R(L > b) and P(L < a) = Q_R(L > -a) for a <= 0 <= b
        b = max(float(r.tail_points(mass, "P")[1]), 0.0)
        a = -max(float(r.tail_points(mass, "Q")[1]), 0.0)
        return (a, b) if hypothesis == "P" else (-b, -a)
