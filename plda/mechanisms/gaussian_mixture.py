r"""Gaussian noise on a randomly scaled shift (a mixture of Gaussians): groups, gradient
accumulation and multi-attribution under Poisson sampling.

:class:`GaussianMixture` is the pair ``sum_i p_i N(c_i, s^2)`` against ``N(0, s^2)``
(Choquette-Choo, Ganesh, Steinke & Thakurta 2023; dp_accounting's ``MixtureOfGaussiansDpEvent``),
:class:`GaussianMixtureLaw` its privacy-loss law. Why a group's mixture (a user's records, or one
record over accumulated micro-batches, each sampled on its own) is realized and dominating under
add/remove: ``docs/accountant.md`` ("Why the accumulated pair is certified").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from plda._internal.binomial import poisson_binomial_probabilities
from plda._internal.floats import dot
from plda._internal.roots import convex_increasing_inverse
from plda._internal.validation import (
    MIN_SAMPLE_RATE,
    in_range,
    positive_float,
    real_sequence,
)
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian import MU_RANGE, GaussianLaw
from plda.mechanisms.law import AtomLaw, PrivacyLossLaw
from plda.mechanisms.mixture_range import check_mixture_mu

__all__ = [
    "GaussianMixture",
    "GaussianMixtureLaw",
    "checked_mixture",
    "distinct_components",
    "log_sum_of_lines",
]

#: largest group (records of a protected unit times micro-batches per step) of
#: :class:`~plda.PoissonSampled`, and most components a mixture may have, minus one: every point
#: of a discretization evaluates every component
MAX_GROUP_SIZE = 10_000
#: the probabilities must sum to 1 within this (they are then divided by their sum)
PROBABILITY_TOLERANCE = 1e-12
_COMPONENTS = MAX_GROUP_SIZE + 1
#: entries of one (points x components) block: bounds the memory of an evaluation
_BLOCK = 1 << 18
_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _rows(n: int, k: int):
    step = max(1, _BLOCK // k)
    for start in range(0, n, step):
        yield slice(start, min(n, start + step))


def log_sum_of_lines(slopes: np.ndarray, offsets: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``log sum_k exp(offsets_k + slopes_k y)`` for a 1-D ``y``, the largest term taken out.

    It is the log-likelihood ratio of a mixture of unit Gaussians against ``N(0, 1)`` (the
    slopes are the shifts). Taking the largest term out avoids overflow (the sum left is in
    ``[1, K]``); blocks are laid out (components, points), so that the reductions run along
    contiguous rows.

    Parameters
    ----------
    slopes, offsets : numpy.ndarray
        The lines' slopes (``>= 0``) and offsets, one per component.
    y : numpy.ndarray
        The 1-D outputs; ``+-inf`` give ``+-inf``.

    Returns
    -------
    numpy.ndarray
        The log-sum, one per output.
    """
    out = np.empty(y.shape)
    with np.errstate(over="ignore", invalid="ignore"):
        for part in _rows(y.size, slopes.size):
            t = np.multiply.outer(slopes, y[part])
            t += offsets[:, None]
            high = t.max(axis=0)
            t -= high
            np.exp(t, out=t)
            out[part] = np.where(np.isfinite(high), high + np.log(t.sum(axis=0)), high)
    out[y == np.inf] = np.inf
    out[y == -np.inf] = -np.inf
    return out


@dataclass(frozen=True, eq=False)
class GaussianMixtureLaw(PrivacyLossLaw):
    """Loss law of ``P = sum_k w_k N(mu_k, 1)`` against ``Q = N(0, 1)`` (remove direction).

    The loss ``ell(y) = log sum_k w_k e^{mu_k y - mu_k^2/2}`` of the output ``y`` is a
    log-sum-exp of lines of slopes ``mu_k >= 0``: increasing and convex, so it is inverted by
    Newton steps from the right (which never overshoot). With ``y = ell^{-1}(l)``:
    ``P(L <= l) = sum_k w_k Phi(y - mu_k)``, ``P(L > l) = sum_k w_k Phi(mu_k - y)``,
    ``Q(L <= l) = Phi(y)``, ``Q(L > l) = Phi(-y)``; the densities are ``phi(y) / ell'(y)``
    (under ``Q``) and ``e^l`` times that (under ``P``). The loss is bounded below by
    ``log w_0`` when a shift is 0 (weight ``w_0``), the continuous support's lower end.

    Parameters
    ----------
    shifts : tuple of float
        Distinct ``mu_k >= 0``, at least one positive (:meth:`GaussianMixture.components`
        gives them, checked).
    weights : tuple of float
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
        """``(log w_0, inf)``: the loss is bounded below by ``log w_0`` when a shift is 0."""
        return (self._floor, np.inf)

    # ------------------------------------------------------------------ the loss map
    def _log_sum(self, y, offset):
        """``log sum_k exp(offset_k + mu_k y)`` over the positive shifts, for a 1-D ``y``."""
        return log_sum_of_lines(self._up, offset, y)

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


def checked_mixture(sensitivities, probabilities) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Validate a mixture's shifts and probabilities (shared by the mixture mechanisms).

    Parameters
    ----------
    sensitivities, probabilities : sequence of float
        Shifts ``>= 0`` and their probabilities in ``[0, 1]``, summing to 1 within
        :data:`PROBABILITY_TOLERANCE`, one per shift, at most ``MAX_GROUP_SIZE + 1``.

    Returns
    -------
    tuple of (tuple of float, tuple of float)
        The two sequences as tuples of floats.

    Raises
    ------
    TypeError
        If either is not a sequence of real numbers.
    ValueError
        If either is empty, too long or holds a NaN or an infinity, if their lengths differ, a
        shift is negative, a probability outside ``[0, 1]`` or their sum off 1.
    """
    sensitivities = real_sequence("sensitivities", sensitivities, max_length=_COMPONENTS)
    probabilities = real_sequence("probabilities", probabilities, max_length=_COMPONENTS)
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
    return sensitivities, probabilities


def distinct_components(sensitivities, probabilities, scale: float):
    """The distinct shifts over ``scale`` of positive probability and their probabilities.

    Parameters
    ----------
    sensitivities, probabilities : sequence of float
        A validated mixture (:func:`checked_mixture`).
    scale : float
        The noise scale the shifts are measured in.

    Returns
    -------
    tuple of (tuple of float, tuple of float)
        Increasing shifts, and their probabilities (equal shifts added, all divided by the sum
        of ``probabilities``).
    """
    grouped: dict[float, list[float]] = {}
    for c, p in zip(sensitivities, probabilities, strict=True):
        if p > 0:
            grouped.setdefault(c, []).append(p)
    total = math.fsum(probabilities)
    keys = sorted(grouped)
    return (
        tuple(c / scale for c in keys),
        tuple(math.fsum(grouped[c]) / total for c in keys),
    )


@dataclass(frozen=True)
class GaussianMixture(Mechanism):
    """Gaussian noise of standard deviation ``sigma`` on a shift ``c_i`` of probability ``p_i``.

    The pair ``sum_i p_i N(c_i, sigma^2)`` (with the record) against ``N(0, sigma^2)``
    (without it), in both add/remove directions: dp_accounting's ``MixtureOfGaussiansDpEvent``
    (Choquette-Choo, Ganesh, Steinke & Thakurta 2023). A zero sensitivity is allowed (the
    record not sampled); one shift of probability 1 is :class:`~plda.Gaussian`. The loss is
    increasing in the output (all shifts are ``>= 0``): see :class:`GaussianMixtureLaw`.
    Under replace-one it has no analysis in plda (:meth:`under_replace_one` says why).

    Parameters
    ----------
    sigma : float
        Noise standard deviation, in ``(0, inf)``.
    sensitivities : sequence of float
        The shifts ``c_i >= 0``, finite; ``max c_i / sigma`` (over positive ``p_i``) in
        ``[1e-150, 1e15]`` unless every shift is 0 (then nothing is released), and at most
        ``1e8`` with two or more distinct shifts (the losses span ``0`` to about
        ``(c / sigma)^2 / 2``: beyond, the grid needs ever more cells).
    probabilities : sequence of float
        ``p_i`` in ``[0, 1]``, one per shift, summing to 1 within 1e-12 (they are divided by
        their sum).

    Raises
    ------
    TypeError
        If ``sigma`` is not a real number, or ``sensitivities`` or ``probabilities`` is not a
        sequence of real numbers.
    ValueError
        If ``sigma`` is not a finite positive number; if ``sensitivities`` or
        ``probabilities`` is empty, longer than 10001 or holds a NaN or an infinity; if they
        differ in length; if a shift is negative, a probability outside ``[0, 1]`` or their
        sum off 1 by more than 1e-12; or if ``max c_i / sigma`` is outside its range
        (:class:`~plda.UncoveredParametersError`, a ``ValueError``, above ``1e8`` with two or
        more distinct shifts).

    Examples
    --------
    >>> import plda
    >>> m = plda.GaussianMixture(sigma=0.8, sensitivities=(0, 1), probabilities=(0.95, 0.05))
    >>> round(plda.PrivacyLossDistribution.from_mechanism(m).epsilon(1e-5), 2)
    1.89
    >>> step = plda.PoissonSampled(plda.Gaussian(0.8), 0.05, group_size=4)  # 4 micro-batches
    >>> step.group_mixture().sensitivities, round(float(step.privacy_loss("remove").delta(3.0)), 7)
    ((0.0, 1.0, 2.0, 3.0, 4.0), 0.0010835)
    """

    sigma: float
    sensitivities: tuple[float, ...]
    probabilities: tuple[float, ...]

    def __post_init__(self):
        sigma = positive_float("sigma", self.sigma)
        sensitivities, probabilities = checked_mixture(self.sensitivities, self.probabilities)
        top = max(c for c, p in zip(sensitivities, probabilities, strict=True) if p > 0)
        if top > 0:
            in_range("max(sensitivities) / sigma", top / sigma, MU_RANGE[0], MU_RANGE[1],
                     "the Gaussian-DP mu plda certifies")
            if len(distinct_components(sensitivities, probabilities, sigma)[0]) > 1:
                check_mixture_mu("max(sensitivities) / sigma", top / sigma)
        object.__setattr__(self, "sigma", sigma)
        object.__setattr__(self, "sensitivities", sensitivities)
        object.__setattr__(self, "probabilities", probabilities)

    def components(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The distinct shifts in units of ``sigma`` and their probabilities.

        Returns
        -------
        tuple of (tuple of float, tuple of float)
            ``(shifts, weights)``: the distinct ``c_i / sigma`` of positive probability, in
            increasing order, and their probabilities (those of equal shifts added, all divided
            by the sum of ``probabilities``).
        """
        return distinct_components(self.sensitivities, self.probabilities, self.sigma)

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        """Whether both directions have one law: only with a single shift (a Gaussian)."""
        return len(self.components()[0]) == 1

    def _remove_law(self):
        shifts, weights = self.components()
        if max(shifts) == 0:  # nothing is released: the loss is 0
            return AtomLaw(atom_losses=np.zeros(1), atom_probs=np.ones(1))
        if len(shifts) == 1:  # one shift: the Gaussian mechanism
            return GaussianLaw(mu=shifts[0])
        return GaussianMixtureLaw(shifts=shifts, weights=weights)

    def under_replace_one(self) -> Mechanism:
        """Refused: a mixture has no replace-one analysis in plda.

        A mixture is defined by its add/remove pair; its shifts and weights do not say what
        replaces the record. A group of ``K`` records (or one record over ``m``
        micro-batches), each Poisson-sampled, has a replace-one pair:
        ``PoissonSampled(Gaussian(sigma), q, group_size=K)`` read under replace-one, the
        binomial double mixture (``docs/howto/user-level-privacy.md``).

        Returns
        -------
        Mechanism
            Never: the call always raises.

        Raises
        ------
        ValueError
            Always, saying to account under ``relation='add_remove'``.
        """
        raise ValueError(
            "GaussianMixture has no replace-one analysis in plda: it is an add/remove pair, "
            "and its shifts do not say what replaces the record; for a group of records or "
            "gradient accumulation, each Poisson-sampled, account PoissonSampled(Gaussian("
            "sigma), q, group_size=K) (accumulation_steps=m) under replace-one, or "
            "use relation='add_remove'"
        )

    @classmethod
    def independent_records(
        cls, sigma: float, sample_rates, sensitivity: float = 1.0
    ) -> GaussianMixture:
        r"""The pair of a unit whose records are each sampled on their own, at their own rates.

        ``sum_k P(K = k) N(k sensitivity, sigma^2)`` against ``N(0, sigma^2)``, ``K`` the
        number of its records in the batch (Poisson-binomial).

        Multi-attribution (a record owned by several users; Ganesh et al. 2025): the unit is a
        user, and each record the user owns is sampled with its own rate ``q_i``. Realized and
        dominating under add/remove by the argument of ``docs/accountant.md`` ("Why the
        accumulated pair is certified"), which depends on ``K``'s law only. The weights are
        rounded so that ``K`` only grows stochastically
        (:func:`plda._internal.binomial.poisson_binomial_probabilities`). With equal rates use
        ``PoissonSampled(Gaussian(sigma), q, group_size=m)`` (exact binomial weights).

        Parameters
        ----------
        sigma : float
            Noise standard deviation, in ``(0, inf)``.
        sample_rates : sequence of float
            The rate ``q_i`` of each record of the unit, each in ``[1e-12, 1]``; at most
            10000 records.
        sensitivity : float, optional
            Each record's contribution bound (the clipping norm), in ``(0, inf)``.

        Returns
        -------
        GaussianMixture
            The unit's pair.

        Raises
        ------
        TypeError
            A value that is not a real number, or ``sample_rates`` not a sequence.
        ValueError
            A value outside its range (the message names the argument).
        """
        sigma = positive_float("sigma", sigma)
        sensitivity = positive_float("sensitivity", sensitivity)
        rates = real_sequence("sample_rates", sample_rates, max_length=MAX_GROUP_SIZE)
        for q in rates:
            in_range("sample_rates", q, MIN_SAMPLE_RATE, 1.0,
                     "each record's sample rate")
        counts, weights = poisson_binomial_probabilities(rates)
        return cls(sigma=sigma, sensitivities=tuple(float(k) * sensitivity for k in counts),
                   probabilities=weights)

