r"""Gaussian noise on a randomly scaled shift (a mixture of Gaussians), and gradient accumulation.

:class:`GaussianMixture` is the pair ``sum_i p_i N(c_i, s^2)`` against ``N(0, s^2)``
(Choquette-Choo, Ganesh, Steinke & Thakurta 2023; dp_accounting's
``MixtureOfGaussiansDpEvent``). Its loss ``ell(y) = log sum_i p_i e^{mu_i y - mu_i^2/2}``,
``mu_i = c_i / s``, is a log-sum-exp of lines of slopes ``mu_i >= 0``: increasing and convex in
the output ``y`` (in units of ``s``), so :class:`GaussianMixtureLaw` inverts it (Newton steps
from the right, which never overshoot a convex map) and reads every probability as a positive
sum of normal cdfs or survival functions there.

**Gradient accumulation** (:meth:`GaussianMixture.gradient_accumulation`): an optimizer step
sums the clipped gradients of ``m`` independently Poisson-sampled micro-batches (rate ``q``)
and adds ``N(0, sigma^2 C^2 I)`` once. A record is in ``K ~ Binomial(m, q)`` of them, and the
add/remove pair is the mixture with ``c_k = k C``, ``p_k = P(K = k)``:

- *realized*: every other record's clipped gradient 0 and ``x``'s equal to ``C`` along one
  direction give exactly this pair;
- *dominating*: condition on everything but the noise and the set ``S`` of micro-batches that
  hold ``x`` (Poisson sampling makes ``S`` independent of it): the pair is
  ``(E_S N(b + v_S, s^2 I), N(b, s^2 I))`` with ``|v_S| <= |S| C`` (triangle inequality: the
  contributions may differ in norm and direction). By Neyman-Pearson a test of level ``alpha``
  under ``N(b, s^2 I)`` has power at most ``Phi(|v| / s - z_alpha)`` under ``N(b + v, s^2 I)``,
  so at most ``E[Phi(K C / s - z_alpha)]`` under the mixture: the power of the half-space test
  of the one-dimensional pair above, its most powerful test (the likelihood ratio is monotone).
  That power is concave in ``alpha``, so averaging over ``b`` keeps the bound. The pair's
  tradeoff curve is thus below every realized one: it dominates in both directions (its two
  hockey-stick curves are functions of that tradeoff curve).

Under replace-one the realized pair (others 0, ``x = +C`` against ``x' = -C``) is the double
mixture ``sum_k p_k N(kC)`` against ``sum_k p_k N(-kC)``; for ``m > 1`` no proof that it
dominates every substitution is known to plda, so replace-one is refused
(:meth:`GaussianMixture.under_replace_one`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from plda._internal.binomial import binomial_probabilities
from plda._internal.floats import dot
from plda._internal.roots import convex_increasing_inverse
from plda._internal.validation import (
    MIN_SAMPLE_RATE,
    count,
    in_range,
    positive_float,
    probability,
    real_sequence,
)
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian import MU_RANGE, Gaussian, GaussianLaw
from plda.mechanisms.law import AtomLaw, PrivacyLossLaw
from plda.mechanisms.subsampled import PoissonSampled

__all__ = ["GaussianMixture", "GaussianMixtureLaw"]

#: most micro-batches :meth:`GaussianMixture.gradient_accumulation` takes (and most components
#: a mixture may have, plus one): every point of a discretization evaluates every component
MAX_ACCUMULATION_STEPS = 10_000
#: the probabilities must sum to 1 within this (they are then divided by their sum)
PROBABILITY_TOLERANCE = 1e-12
_COMPONENTS = MAX_ACCUMULATION_STEPS + 1
#: entries of one (points x components) block: bounds the memory of an evaluation
_BLOCK = 1 << 18
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _rows(n: int, k: int):
    step = max(1, _BLOCK // k)
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


@dataclass(frozen=True, eq=False)
class GaussianMixtureLaw(PrivacyLossLaw):
    r"""Loss law of ``P = sum_k w_k N(mu_k, 1)`` against ``Q = N(0, 1)`` (remove direction).

    With ``y = ell^{-1}(l)`` (``ell`` in the module docstring):
    ``P(L <= l) = sum_k w_k Phi(y - mu_k)``, ``P(L > l) = sum_k w_k Phi(mu_k - y)``,
    ``Q(L <= l) = Phi(y)``, ``Q(L > l) = Phi(-y)``; the densities are ``phi(y) / ell'(y)``
    (under ``Q``) and ``e^l`` times that (under ``P``). The loss is bounded below by
    ``log w_0`` when a shift is 0 (weight ``w_0``), the continuous support's lower end.

    Parameters
    ----------
    shifts
        Distinct ``mu_k >= 0``, at least one positive.
    weights
        Their probabilities, positive, summing to 1.
    """

    shifts: tuple = ()
    weights: tuple = ()
    has_continuous_part = True

    def __post_init__(self):
        mu = np.asarray(self.shifts, dtype=float)
        w = np.asarray(self.weights, dtype=float)
        zero, up = mu == 0, mu > 0
        # the lines log w_k - mu_k^2/2 + mu_k y of the positive shifts, and log w_0
        object.__setattr__(self, "_mu", mu)
        object.__setattr__(self, "_w", w)
        object.__setattr__(self, "_up", mu[up])
        object.__setattr__(self, "_offset", np.log(w[up]) - 0.5 * mu[up] ** 2)
        object.__setattr__(self, "_floor", float(np.log(w[zero].sum())) if zero.any() else -np.inf)

    @property
    def continuous_support(self):
        return (self._floor, np.inf)

    # ------------------------------------------------------------------ the loss map
    def _log_sum(self, y, offset):
        """``log sum_k exp(offset_k + mu_k y)`` over the positive shifts, for a 1-D ``y`` (the
        largest term taken out: no overflow; the sum is in ``[1, K]``). Blocks are laid out
        (components, points), so that the reductions run along contiguous rows."""
        out = np.empty(y.shape)
        with np.errstate(over="ignore", invalid="ignore"):
            for part in _rows(y.size, self._up.size):
                t = np.multiply.outer(self._up, y[part])
                t += offset[:, None]
                high = t.max(axis=0)
                t -= high
                np.exp(t, out=t)
                out[part] = np.where(np.isfinite(high), high + np.log(t.sum(axis=0)), high)
        out[y == np.inf] = np.inf
        out[y == -np.inf] = -np.inf
        return out

    def _shifted(self, y):
        """``h(y) = log(e^{ell(y)} - w_0)``: the positive shifts' part of the loss, a
        log-sum-exp of lines of slopes ``>= min mu_k > 0``, so it is inverted in a few steps
        even where ``ell`` flattens onto its floor ``log w_0``."""
        y = np.asarray(y, dtype=float)
        return self._log_sum(y.ravel(), self._offset).reshape(y.shape)

    def _shifted_slope(self, y):
        y = np.asarray(y, dtype=float).ravel()
        log_top = self._log_sum(y, self._offset + np.log(self._up))
        with np.errstate(invalid="ignore"):
            out = np.exp(log_top - self._shifted(y))
        return np.where(np.isfinite(out), out, self._up.max())

    def _loss(self, y):
        h = self._shifted(y)
        return h if self._floor == -np.inf else np.logaddexp(self._floor, h)

    def _inverse(self, loss):
        """Output ``y`` with ``ell(y) = loss``: ``-inf`` at or below the floor."""
        loss = np.asarray(loss, dtype=float)
        y = np.where(loss == np.inf, np.inf, -np.inf)
        y[np.isnan(loss)] = np.nan
        inside = (loss > self._floor) & np.isfinite(loss)
        if inside.any():
            target = loss[inside]
            if self._floor > -np.inf:  # h = log(e^l - w_0) = l + log(1 - e^(log w_0 - l))
                target = target + np.log(-np.expm1(self._floor - target))
            # h is convex and at least its largest line: that line's inverse is at or right of
            # the root (and within log(K) / mu of it), where Newton steps start
            with np.errstate(over="ignore"):  # a shift of 1e-320: a line inverted at +-inf
                start = (np.subtract.outer(target, self._offset) / self._up).min(axis=1)
            y[inside] = convex_increasing_inverse(
                self._shifted, self._shifted_slope, target, start
            )
        return y

    # ------------------------------------------------------------------ probabilities
    def _cont_cdf_sf(self, x):
        x = np.asarray(x, dtype=float)
        y = self._inverse(x).ravel()
        cdf_p, sf_p = np.empty(y.shape), np.empty(y.shape)
        for part in _rows(y.size, self._mu.size):
            z = np.subtract.outer(self._mu, y[part])  # mu_k - y, (components, points)
            sf_p[part] = dot(self._w, ndtr(z))
            cdf_p[part] = dot(self._w, ndtr(-z))
        out = (cdf_p, sf_p, ndtr(y), ndtr(-y))
        return tuple(v.reshape(x.shape) for v in out)

    def _cont_cdf(self, x, hypothesis):
        cdf_p, _, cdf_q, _ = self._cont_cdf_sf(x)
        return cdf_p if hypothesis == "P" else cdf_q

    def _cont_sf(self, x, hypothesis):
        _, sf_p, _, sf_q = self._cont_cdf_sf(x)
        return sf_p if hypothesis == "P" else sf_q

    def _cont_pdf(self, x, hypothesis):
        # dQ/dl = phi(y) / ell'(y), in logs: -y^2/2 - log sqrt(2 pi) - log ell'(y), where
        # ell'(y) = sum_k mu_k w_k e^{mu_k y - mu_k^2/2} / e^{ell(y)}; and dP = e^l dQ
        x = np.asarray(x, dtype=float)
        y = self._inverse(x).ravel()
        out = np.zeros(y.shape)
        live = np.isfinite(y)
        if live.any():
            yl = y[live]
            log_slope = self._log_sum(yl, self._offset + np.log(self._up)) - self._loss(yl)
            log_q = -0.5 * yl * yl - _LOG_SQRT_2PI - log_slope
            with np.errstate(over="ignore"):
                out[live] = np.exp(log_q + x.ravel()[live] if hypothesis == "P" else log_q)
        return out.reshape(x.shape)

    def _cont_tail(self, mass, hypothesis):
        # Q: -z and z, Phi(-z) = mass. P: component k keeps its tail beyond mu_k -+ z_k below
        # mass / K with Phi(-z_k) = mass / (K w_k) (none if that is >= 1: a light component
        # fits whole), so the sum is <= mass and light components far out do not widen the
        # range. Nudged outward so that the rounding of ell cannot put more than mass outside.
        with np.errstate(over="ignore", divide="ignore"):
            if hypothesis == "Q":
                z = -float(ndtri(mass))
                low, high = -z, z
            else:
                z = -ndtri(np.minimum(mass / (self._w.size * self._w), 1.0))
                low, high = float(np.min(self._mu - z)), float(np.max(self._mu + z))
        a, b = self._loss(np.array([low - 1e-9 * (1 + abs(low)), high + 1e-9 * (1 + abs(high))]))
        return float(a), float(b)


@dataclass(frozen=True)
class GaussianMixture(Mechanism):
    r"""Gaussian noise of standard deviation ``sigma`` on a shift that is ``c_i`` with
    probability ``p_i``: the pair ``sum_i p_i N(c_i, sigma^2)`` (with the record) against
    ``N(0, sigma^2)`` (without it), in both add/remove directions.

    This is dp_accounting's ``MixtureOfGaussiansDpEvent`` (Choquette-Choo, Ganesh, Steinke &
    Thakurta 2023). A zero sensitivity is allowed (the record not sampled); one shift of
    probability 1 is :class:`~plda.Gaussian`. The loss is increasing in the output (all shifts
    are ``>= 0``): see :class:`GaussianMixtureLaw`. Under replace-one it has no analysis in
    plda (:meth:`under_replace_one` says why).

    Parameters
    ----------
    sigma : float
        Noise standard deviation, in ``(0, inf)``.
    sensitivities : sequence of float
        The shifts ``c_i >= 0``, finite; ``max c_i / sigma`` (over positive ``p_i``) in
        ``[1e-150, 1e15]`` unless every shift is 0 (then nothing is released).
    probabilities : sequence of float
        ``p_i`` in ``[0, 1]``, one per shift, summing to 1 within 1e-12 (they are divided by
        their sum).

    Raises
    ------
    TypeError
        A value that is not a real number, or a sequence that is not one.
    ValueError
        A value outside its range, or sequences of different lengths (the message names the
        argument and its range).

    Examples
    --------
    >>> import plda
    >>> m = plda.GaussianMixture(sigma=0.8, sensitivities=(0, 1), probabilities=(0.95, 0.05))
    >>> round(plda.PrivacyLossDistribution.from_mechanism(m).epsilon(1e-5), 2)
    1.89
    >>> step = plda.GaussianMixture.gradient_accumulation(0.8, 0.05, 4)  # 4 micro-batches
    >>> step.sensitivities, round(float(step.privacy_loss("remove").delta(3.0)), 7)
    ((0.0, 1.0, 2.0, 3.0, 4.0), 0.0010835)
    """

    sigma: float
    sensitivities: tuple[float, ...]
    probabilities: tuple[float, ...]

    def __post_init__(self):
        sigma = positive_float("sigma", self.sigma)
        sensitivities = real_sequence("sensitivities", self.sensitivities, max_length=_COMPONENTS)
        probabilities = real_sequence("probabilities", self.probabilities, max_length=_COMPONENTS)
        if len(sensitivities) != len(probabilities):
            raise ValueError(
                f"sensitivities and probabilities must have one length, got "
                f"{len(sensitivities)} and {len(probabilities)}"
            )
        if min(sensitivities) < 0:
            raise ValueError(f"sensitivities must be >= 0, got {min(sensitivities)!r}")
        if not all(0 <= p <= 1 for p in probabilities):
            bad = next(p for p in probabilities if not 0 <= p <= 1)
            raise ValueError(f"probabilities must be in [0, 1], got {bad!r}")
        total = math.fsum(probabilities)
        if abs(total - 1.0) > PROBABILITY_TOLERANCE:
            raise ValueError(
                f"probabilities must sum to 1 (within {PROBABILITY_TOLERANCE:g}), got {total!r}"
            )
        top = max(c for c, p in zip(sensitivities, probabilities, strict=True) if p > 0)
        if top > 0:
            in_range("max(sensitivities) / sigma", top / sigma, MU_RANGE[0], MU_RANGE[1],
                     "the Gaussian-DP mu plda certifies")
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "sensitivities", sensitivities)
        object.__setattr__(self, "probabilities", probabilities)

    def components(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """``(shifts, weights)``: the distinct ``c_i / sigma`` of positive probability, in
        increasing order, and their probabilities (equal shifts added, divided by the sum)."""
        grouped: dict[float, list[float]] = {}
        for c, p in zip(self.sensitivities, self.probabilities, strict=True):
            if p > 0:
                grouped.setdefault(c, []).append(p)
        total = math.fsum(self.probabilities)
        keys = sorted(grouped)
        return (
            tuple(c / self.sigma for c in keys),
            tuple(math.fsum(grouped[c]) / total for c in keys),
        )

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        return len(self.components()[0]) == 1

    def _remove_law(self):
        shifts, weights = self.components()
        if max(shifts) == 0:  # nothing is released: the loss is 0
            return AtomLaw(atom_losses=np.zeros(1), atom_probs=np.ones(1))
        if len(shifts) == 1:  # one shift: the Gaussian mechanism
            return GaussianLaw(mu=shifts[0])
        return GaussianMixtureLaw(shifts=shifts, weights=weights)

    def under_replace_one(self) -> Mechanism:
        """Refused: a mixture is defined by its add/remove pair, and for accumulation over
        ``m > 1`` micro-batches the realized replace-one pair is not known to dominate (see
        the module docstring; ``m = 1`` is :class:`~plda.PoissonSampled`'s Zhu-Dong-Wang pair)."""
        raise ValueError(
            "GaussianMixture (and gradient accumulation over more than one micro-batch) has "
            "no replace-one analysis in plda: its add/remove pair is proven to dominate, but "
            "no replace-one pair is known to dominate every substitution of a record when it "
            "can be in several micro-batches; use relation='add_remove'"
        )

    @classmethod
    def gradient_accumulation(
        cls, noise_multiplier: float, sample_rate: float, accumulation_steps: int
    ) -> Mechanism:
        r"""The mechanism of one optimizer step over ``m`` independently Poisson-sampled
        micro-batches, noise added once (the module docstring proves that its pair is both
        realized and dominating under add/remove):

        .. math:: \sum_{k=0}^{m} \binom{m}{k} q^k (1-q)^{m-k}\, N(k, \sigma^2)
                  \quad\text{against}\quad N(0, \sigma^2)

        (in units of the clipping norm; weights from
        :func:`plda._internal.binomial.binomial_probabilities`). One
        Poisson step at rate ``m q`` does not dominate it: at ``sigma = 0.8, q = 0.05, m = 4``,
        ``delta(3)`` is 1.08e-3, against 6.4e-5. With ``m = 1`` this is
        ``PoissonSampled(Gaussian(sigma=noise_multiplier), sample_rate)``, a plain step's.

        Parameters
        ----------
        noise_multiplier : float
            ``sigma`` (noise standard deviation over the clipping norm), in ``(0, inf)``.
        sample_rate : float
            Poisson rate ``q`` of each micro-batch, in ``[1e-12, 1]``.
        accumulation_steps : int
            Number ``m`` of micro-batches per optimizer step, in ``[1, 10000]``.

        Returns
        -------
        Mechanism
            A :class:`GaussianMixture` (``m > 1``) or a :class:`~plda.PoissonSampled`.

        Raises
        ------
        TypeError, ValueError
            An argument outside its range (the message names it).
        """
        sigma = positive_float("noise_multiplier", noise_multiplier)
        q = probability("sample_rate", sample_rate, open_low=True)
        in_range("sample_rate", q, MIN_SAMPLE_RATE, 1.0,
                 "tighter rates give only loose bounds on the grid")
        m = count("accumulation_steps", accumulation_steps, minimum=1,
                  maximum=MAX_ACCUMULATION_STEPS)
        if m == 1:
            return PoissonSampled(Gaussian(sigma=sigma), sample_rate=q)
        counts, probabilities = binomial_probabilities(m, q)
        return cls(sigma=sigma, sensitivities=tuple(float(k) for k in counts),
                   probabilities=probabilities)
