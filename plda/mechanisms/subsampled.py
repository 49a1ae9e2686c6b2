"""Poisson subsampling of any mechanism, and its privacy-loss laws (add/remove; a sampled
Gaussian under replace-one); a group of records sampled independently (a Gaussian mixture)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from plda._internal.binomial import binomial_probabilities
from plda._internal.caches import remembered
from plda._internal.floats import UNIT_ROUNDOFF, log_mixture, q_masses
from plda._internal.validation import MIN_SAMPLE_RATE, count, in_range, probability
from plda.mechanisms.base import Mechanism
from plda.mechanisms.double_mixture import GaussianDoubleMixture
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.gaussian_mixture import MAX_GROUP_SIZE, GaussianMixture
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.laplace_mixture import LaplaceMixture
from plda.mechanisms.law import PrivacyLossLaw, ReversedLaw
from plda.mechanisms.mixture_range import check_sampled_mu


@dataclass(frozen=True)
class PoissonSampled(Mechanism):
    """Runs ``mechanism`` on a Poisson sample that keeps each record with ``sample_rate`` q.

    Under add/remove its dominating pairs are ``(q P + (1-q) Q, Q)`` (remove) and the reversed
    pair (add), where ``(P, Q)`` dominates the base mechanism (Zhu, Dong & Wang 2022, Thm. 11).
    The two directions differ; plda reports the worse of the two.

    With ``group_size=K`` the protected unit is a group of ``K`` records, each sampled on its
    own (a user's examples; or one record over ``K`` independently sampled micro-batches whose
    clipped gradients are summed before the noise): ``k ~ Binomial(K, q)`` of them are in the
    step, and the pair is the mixture ``sum_k Bin(k; K, q) N(k Δ, σ^2)`` against
    ``N(0, σ^2)`` (:meth:`group_mixture`; realized and dominating, ``docs/accountant.md``), or
    ``sum_k Bin(k; K, q) Lap(k Δ, b)`` against ``Lap(0, b)`` for a Laplace base. Under
    replace-one (Gaussian base) see :meth:`under_replace_one`.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism run on the sample, with its add/remove sensitivity.
    sample_rate : float
        The probability ``q`` that a record is kept, in ``[1e-12, 1]``.
    group_size : int, optional
        Records ``K`` of the protected unit, each sampled independently, in ``[1, 10000]``
        (1: one record; ``K > 1`` needs a Gaussian or Laplace base); with ``q < 1`` a Gaussian's
        ``K sensitivity / sigma`` (a GaussianDP's ``K mu``) must be at most ``1e8``.

    Raises
    ------
    TypeError
        If ``mechanism`` is not a plda mechanism, or a value is not a number.
    ValueError
        If a value is outside its range (``K mu``: an UncoveredParametersError), or
        ``group_size > 1`` with a base neither Gaussian nor Laplace (the message names it).
    """

    mechanism: Mechanism
    sample_rate: float
    group_size: int = 1

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
        # the two directions differ unless every record is kept; the sampled laws are realized
        # when the base's are (a base known only through a dominating pair, such as
        # plda.ExponentialMechanism, is not tight): derived once, as data
        object.__setattr__(
            self, "symmetric", self.sample_rate == 1.0 and self.mechanism.symmetric
        )
        object.__setattr__(self, "tight", self.mechanism.tight)
        group = count("group_size", self.group_size, minimum=1, maximum=MAX_GROUP_SIZE)
        object.__setattr__(self, "group_size", group)
        check_sampled_mu(self.mechanism, self.sample_rate, group)  # before the group's mixture
        if group > 1:
            if type(self.mechanism) not in (Gaussian, Laplace):
                raise ValueError(
                    f"group_size={group} needs a plda.Gaussian or plda.Laplace base (its group "
                    f"law is a mixture of the base's noise), got "
                    f"{type(self.mechanism).__name__}; for another base bound the group with "
                    "plda.theorems.group_privacy"
                )
            self.group_mixture()  # validates K sensitivity / sigma (or / scale)

    def group_mixture(self) -> GaussianMixture | LaplaceMixture:
        """The group's add/remove pair as a mixture (``group_size > 1``).

        Returns
        -------
        GaussianMixture or LaplaceMixture
            ``sum_k Bin(k; K, q) N(k Δ, σ^2)`` against ``N(0, σ^2)`` for a Gaussian base,
            ``sum_k Bin(k; K, q) Lap(k Δ, b)`` against ``Lap(0, b)`` for a Laplace base,
            ``k = 0..K`` (binomial weights to within half an ulp).

        Raises
        ------
        ValueError
            If the base is neither a :class:`~plda.Gaussian` nor a :class:`~plda.Laplace`.
        """
        base = self.mechanism
        if type(base) not in (Gaussian, Laplace):
            raise ValueError(
                f"group_mixture needs a plda.Gaussian or plda.Laplace base, got "
                f"{type(base).__name__}"
            )
        # remembered: the constructor's validation and both directions' laws read it, and the
        # exact binomial weights of a large group cost milliseconds each time
        return remembered(self, "group_mixture", self._group_mixture)

    def _group_mixture(self) -> GaussianMixture | LaplaceMixture:
        base = self.mechanism
        counts, weights = binomial_probabilities(self.group_size, self.sample_rate)
        if type(base) is Laplace:
            return LaplaceMixture(scale=base.scale,
                                  sensitivities=tuple(float(k) * base.sensitivity
                                                      for k in counts),
                                  probabilities=weights)
        return GaussianMixture(sigma=base.sigma,
                               sensitivities=tuple(float(k) * base.sensitivity for k in counts),
                               probabilities=weights)

    def lower_bound_mechanisms(self) -> tuple[Mechanism, ...]:
        """The sampled realized pairs of the base.

        The sampled mechanism itself when the base is ``tight``, else the base's
        :meth:`~Mechanism.lower_bound_mechanisms` sampled alike (the record that switches the
        base between its realized pair's two sides is in the batch with probability
        ``sample_rate``).

        Returns
        -------
        tuple of Mechanism
            Each realized by a pair of neighbouring datasets.
        """
        if self.mechanism.tight:
            return (self,)
        return tuple(PoissonSampled(m, self.sample_rate, self.group_size)
                     for m in self.mechanism.lower_bound_mechanisms())

    def _remove_law(self):
        if self.group_size > 1:
            return self.group_mixture().privacy_loss("remove")
        base = self.mechanism.privacy_loss("remove")
        if self.sample_rate == 1.0:
            return base
        return SubsampledLaw(base=base, sample_rate=self.sample_rate)

    def _add_law(self):
        if self.group_size > 1:
            return self.group_mixture().privacy_loss("add")
        if self.sample_rate == 1.0:
            return self.mechanism.privacy_loss("add")
        return ReversedLaw(base=self.privacy_loss("remove"))

    def _coarsened(self) -> Mechanism:
        """The base coarsened and ``q`` rounded up to a power of ``2^(1/16)``: ``delta(eps)`` of
        both directions grows with ``q`` (joint convexity of the hockey-stick divergence)."""
        q = self.sample_rate
        q = min(1.0, max(q, 2.0 ** (math.ceil(16 * math.log2(q)) / 16)))
        return PoissonSampled(self.mechanism._coarsened(), q, self.group_size)

    def under_replace_one(self) -> Mechanism:
        """The mechanism whose add/remove laws are this one's replace-one laws.

        One record moves between ``±Δ`` around the rest of the sum, kept with probability q:
        the pair ``((1-q) N(0) + q N(Δ), (1-q) N(0) + q N(-Δ))`` (Zhu, Dong & Wang 2022),
        tighter than doubling the sensitivity. A group of ``K`` records, each kept on its own,
        is ``K`` removals and ``K`` insertions: ``sum_k Bin(k; K, q) N(kΔ)`` against
        ``sum_j Bin(j; K, q) N(-jΔ)``, a :class:`~plda.GaussianDoubleMixture` (Schuchardt,
        Stoian, Kosmala & Günnemann 2024, Thm. 3.8; ``docs/howto/user-level-privacy.md``).

        Returns
        -------
        Mechanism
            The sampled Gaussian read under replace-one (at ``q = 1``, the Gaussian at
            sensitivity ``2 K Δ``).

        Raises
        ------
        ValueError
            If the base mechanism is not a :class:`~plda.Gaussian`.
        """
        if type(self.mechanism) is not Gaussian:
            raise ValueError(
                "relation='replace_one' with PoissonSampled is supported for Gaussian base "
                f"mechanisms only, got {type(self.mechanism).__name__}; a substitution is a "
                "removal and an insertion per record, so plda.theorems.group_privacy(epsilon, "
                f"delta, {2 * self.group_size}) on the relation='add_remove' guarantee bounds it"
            )
        if self.sample_rate == 1:
            # every record is kept: N(K Δ) against N(-K Δ); the mixture law would take
            # log1p(-1) = -inf for its lower branch
            base = self.mechanism
            return Gaussian(base.sigma, self.group_size * base.sensitivity).under_replace_one()
        if self.group_size > 1:
            mix = self.group_mixture()
            return GaussianDoubleMixture(
                sigma=mix.sigma, sensitivities=mix.sensitivities, probabilities=mix.probabilities,
                other_sensitivities=mix.sensitivities, other_probabilities=mix.probabilities,
            ).under_replace_one()
        return _ReplaceOneSampledGaussian(self.mechanism, self.sample_rate)


@dataclass(frozen=True)
class _ReplaceOneSampledGaussian(Mechanism):
    """Internal: a Poisson-sampled Gaussian read under the replace-one relation."""

    mechanism: Gaussian
    sample_rate: float

    def _remove_law(self):
        return ReplaceOneSampledGaussianLaw(mu=self.mechanism.mu, sample_rate=self.sample_rate)


@dataclass(frozen=True, eq=False)
class SubsampledLaw(PrivacyLossLaw):
    """The law of Poisson subsampling, remove direction: ``(q P + (1-q) Q, Q)`` of a base pair.

    Its loss is ``log(1 + q (e^L - 1))`` for a base loss ``L`` (Zhu, Dong & Wang 2022,
    Thm. 11).

    Attributes
    ----------
    base
        The law of the base pair ``(P, Q)``.
    sample_rate
        The probability ``q`` that a record is kept.
    """

    base: PrivacyLossLaw | None = None
    sample_rate: float = 1.0

    def __post_init__(self):
        b, q = self.base, self.sample_rate
        qb = q_masses(b.atom_probs, b.atom_losses)
        losses = self.subsampled_loss(b.atom_losses)
        probs = q * b.atom_probs + (1 - q) * qb
        if b.neg_infinity_mass > 0:  # Q-only outputs of the base now carry (1-q) of P's mass
            losses = np.concatenate([[np.log1p(-q)], losses])
            probs = np.concatenate([[(1 - q) * b.neg_infinity_mass], probs])
        object.__setattr__(self, "atom_losses", losses)
        object.__setattr__(self, "atom_probs", probs)
        object.__setattr__(self, "infinity_mass", q * b.infinity_mass)
        object.__setattr__(self, "neg_infinity_mass", 0.0)
        object.__setattr__(self, "truncated_mass", q * b.truncated_mass)
        # read by every discretization step: derived once, here
        object.__setattr__(self, "has_continuous_part", b.has_continuous_part)
        lo, hi = b.continuous_support
        object.__setattr__(
            self,
            "continuous_support",
            (float(self.subsampled_loss(lo)), float(self.subsampled_loss(hi))),
        )

    def subsampled_loss(self, loss):
        """The subsampled loss of an output from its base loss ``y``.

        Parameters
        ----------
        loss : array_like of float
            Base losses ``y``.

        Returns
        -------
        numpy.ndarray
            ``log(1 + q (e^y - 1))`` (increasing, ``0`` at ``0``).
        """
        return log_mixture(self.sample_rate, loss)

    def base_loss(self, loss):
        """The base loss that maps to a subsampled loss (the inverse of :meth:`subsampled_loss`).

        Parameters
        ----------
        loss : array_like of float
            Subsampled losses.

        Returns
        -------
        numpy.ndarray
            The base losses; ``-inf`` at or below ``log(1 - q)``.
        """
        loss, q = np.asarray(loss, dtype=float), self.sample_rate
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            ratio = np.expm1(loss) / q
            out = np.where(ratio > -1, np.log1p(np.maximum(ratio, -1.0)), -np.inf)
            big = loss > 30  # few or none: only those take log(1 + (e^l - 1)/q) =
            if big.any():  # l - log q + log1p((q - 1) e^{-l})
                high = loss[big]
                out[big] = high - np.log(q) + np.log1p((q - 1) * np.exp(-high))
            return out

    def _cont_cdf(self, x, hypothesis):
        y = self.base_loss(x)
        if hypothesis == "Q":
            return self.base._cont_cdf(y, "Q")
        q = self.sample_rate
        return q * self.base._cont_cdf(y, "P") + (1 - q) * self.base._cont_cdf(y, "Q")

    def _cont_sf(self, x, hypothesis):
        y = self.base_loss(x)
        if hypothesis == "Q":
            return self.base._cont_sf(y, "Q")
        q = self.sample_rate
        return q * self.base._cont_sf(y, "P") + (1 - q) * self.base._cont_sf(y, "Q")

    def _cont_cdf_sf(self, x):
        # one loss map and one set of base tails for all four (the discretization needs all)
        base_cdf_p, base_sf_p, base_cdf_q, base_sf_q = self.base._cont_cdf_sf(self.base_loss(x))
        q = self.sample_rate
        return (
            q * base_cdf_p + (1 - q) * base_cdf_q,
            q * base_sf_p + (1 - q) * base_sf_q,
            base_cdf_q,
            base_sf_q,
        )

    def _cont_pdf(self, x, hypothesis):
        # change of variables l -> y = log(1 + r), r = (e^l - 1)/q: dy/dl = e^l / (e^l - 1 + q);
        # base densities under Q are e^{-y} = 1/(1 + r) times those under P
        # With g = e^l / (e^l - 1 + q) (= dy/dl) the P density is q g^2 base_P(y) and the Q
        # density q g base_P(y) / (e^l - 1 + q); written with in-place steps, as this is the
        # innermost loop of every DP-SGD discretization.
        x = np.asarray(x, dtype=float)
        q = self.sample_rate
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            em = np.expm1(x)
            inside = em > -q  # losses above log(1 - q)
            base = self.base._cont_pdf(np.log1p(em / q), "P")
            g = em + 1.0
            em += q  # now e^l - 1 + q
            g /= em
            out = base * g
            if hypothesis == "Q":
                out /= em
            else:
                out *= g
            out *= q
        out = np.where(inside & np.isfinite(out), out, 0.0)
        # e^l overflows beyond l = 709 (inf / inf read 0 there, so the pessimistic grid version
        # of a small-sigma step held up to 3 times its mass): above l = 30, g = 1 / (1 - (1-q)
        # e^{-l}) and the Q density is e^{-l} times the P density (the likelihood ratio)
        big = x > 30
        if np.any(big):
            high = x[big]
            with np.errstate(under="ignore"):
                g = 1.0 / (1.0 + (q - 1.0) * np.exp(-high))
                dens = q * g * g * self.base._cont_pdf(self.base_loss(high), "P")
                if hypothesis == "Q":
                    dens = dens * np.exp(-high)
            out[big] = dens
        return out

    def _cont_tail(self, mass, hypothesis):
        ap, bp = self.base._cont_tail(mass, "P")
        aq, bq = self.base._cont_tail(mass, "Q")
        # both ends in one call (a call's fixed cost is most of it: every law asks three tails)
        ends = [aq, bq] if hypothesis == "Q" else [min(ap, aq), max(bp, bq)]
        return tuple(self.subsampled_loss(ends).tolist())


@dataclass(frozen=True, eq=False)
class ReplaceOneSampledGaussianLaw(PrivacyLossLaw):
    """The law of a Poisson-sampled Gaussian under replace-one.

    ``P = (1-q) N(0,1) + q N(mu,1)`` against ``Q = (1-q) N(0,1) + q N(-mu,1)`` (the replaced
    record's contribution moves from ``-Δ/2`` to ``+Δ/2`` around the rest; Zhu, Dong & Wang
    2022, Sec. 5). The loss ``L(x) = log(1-q + q e^{mu x - mu^2/2}) - log(1-q + q e^{-mu x -
    mu^2/2})`` is increasing and odd in the output ``x``; it is inverted numerically
    (safeguarded Newton).

    Attributes
    ----------
    mu
        ``Δ/σ`` of the Gaussian.
    sample_rate
        The probability ``q`` that a record is kept.
    """

    mu: float = 1.0
    sample_rate: float = 1.0
    has_continuous_part = True
    continuous_support = (-np.inf, np.inf)

    def _loss(self, x):
        a, b = self._loss_terms(x)
        return a - b

    def _loss_terms(self, x):
        """The two logarithms whose difference is the loss (their sizes bound its rounding)."""
        q, m = self.sample_rate, self.mu
        return log_mixture(q, m * x - m * m / 2), log_mixture(q, -m * x - m * m / 2)

    def _slope(self, x):
        q, m = self.sample_rate, self.mu
        with np.errstate(over="ignore", invalid="ignore"):  # inf / inf is replaced by m
            up = q * np.exp(m * x - m * m / 2)
            down = q * np.exp(-m * x - m * m / 2)
            s1 = np.where(np.isfinite(up), m * up / (1 - q + up), m)
            s2 = np.where(np.isfinite(down), m * down / (1 - q + down), m)
        return s1 + s2

    def _closed_inverse(self, loss):
        """The output with loss ``loss`` in closed form: with ``a = e^(mu x)``,
        ``c = e^(-mu^2/2)`` and ``t = e^L``, ``L(x) = loss`` is the quadratic
        ``q c a^2 + (1-q)(1-t) a - t q c = 0``. For ``L >= 0`` its positive root, scaled by
        ``e^-L`` (no overflow) and with no difference of large numbers, gives
        ``log a = L + log((1-q) E + sqrt(((1-q) E)^2 + e^(2g - L))) - g`` with
        ``E = 1 - e^-L`` and ``g = log(2 q c)``; ``L`` is odd in ``x``. Accurate to a few ulps
        of the terms, so a Newton step polishes it."""
        q, m = self.sample_rate, self.mu
        size = np.abs(loss)
        e = -np.expm1(-size) * (1 - q)
        g = math.log(2 * q) - m * m / 2
        with np.errstate(divide="ignore", over="ignore", under="ignore", invalid="ignore"):
            root = e + np.sqrt(e * e + np.exp(2 * g - size))
            x = (size + np.log(root) - g) / m
        x = np.where(size == 0, 0.0, x)
        return np.where(np.isfinite(x), np.sign(loss) * x, 0.0)

    def _inverse(self, loss):
        """Output ``x`` with ``L(x) = loss`` (vectorized, to a few ulps): the closed form of
        :meth:`_closed_inverse`, bracketed and polished by safeguarded Newton steps."""
        loss = np.asarray(loss, dtype=float)
        shape = loss.shape
        loss = loss.ravel()
        x = self._closed_inverse(loss)
        # a bracket around the closed form, widened until it holds (at once, but for losses
        # where the closed form lost its accuracy)
        width = 1e-9 * (1 + np.abs(x))
        lo, hi = x - width, x + width
        for _ in range(64):
            low = self._loss(lo) > loss
            high = self._loss(hi) < loss
            if not (low.any() or high.any()):
                break
            width = np.where(low | high, 16 * width, width)
            lo = np.where(low, x - width, lo)
            hi = np.where(high, x + width, hi)
        # Newton steps on the entries not yet converged: converged once the step is below an
        # ulp-sized tolerance, or once the residual is within the rounding of the loss itself
        # (a few ulps of its two logarithms: no step can then say more)
        active = np.flatnonzero(np.isfinite(loss))
        for _ in range(60):
            if not active.size:
                break
            xa, target = x[active], loss[active]
            a, b = self._loss_terms(xa)
            f = (a - b) - target
            lo[active] = np.where(f < 0, xa, lo[active])
            hi[active] = np.where(f > 0, xa, hi[active])
            # a zero or non-finite slope (far out, at shift / sigma 1e3) gives an infinite or
            # NaN step: not inside the bracket, so a bisection step
            with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                nxt = xa - f / self._slope(xa)
            bad = ~((nxt > lo[active]) & (nxt < hi[active]))
            nxt = np.where(bad, 0.5 * (lo[active] + hi[active]), nxt)
            x[active] = nxt
            noise = 4 * UNIT_ROUNDOFF * (np.abs(a) + np.abs(b) + np.abs(target))
            done = (np.abs(nxt - xa) <= 1e-15 * (1 + np.abs(xa))) | (np.abs(f) <= noise)
            active = active[~done]
        return x.reshape(shape)

    def _cont_cdf_sf(self, x):
        y = self._inverse(x)  # one inversion for the four (it is most of their cost)
        q, m = self.sample_rate, self.mu
        below, above = (1 - q) * ndtr(y), (1 - q) * ndtr(-y)
        return (below + q * ndtr(y - m), above + q * ndtr(-(y - m)),
                below + q * ndtr(y + m), above + q * ndtr(-(y + m)))

    def _cont_cdf(self, x, hypothesis):
        return self._cont_cdf_sf(x)[0 if hypothesis == "P" else 2]

    def _cont_sf(self, x, hypothesis):
        return self._cont_cdf_sf(x)[1 if hypothesis == "P" else 3]

    def _cont_pdf(self, x, hypothesis):
        y = self._inverse(x)
        q, m = self.sample_rate, self.mu
        shift = m if hypothesis == "P" else -m
        dens = (1 - q) * np.exp(-0.5 * y * y) + q * np.exp(-0.5 * (y - shift) ** 2)
        return dens / np.sqrt(2 * np.pi) / self._slope(y)

    def _cont_tail(self, mass, hypothesis):
        z = -ndtri(mass)
        m = self.mu
        lo = -z - m  # covers both mixture components' lower tails
        hi = z + m
        return float(self._loss(np.array([lo]))[0]), float(self._loss(np.array([hi]))[0])
