r"""The double mixture of Gaussians: a replace-one pair whose two sides are both mixtures.

``sum_i p_i N(c_i, s^2)`` (with the record ``x``) against ``sum_j p'_j N(-c'_j, s^2)`` (with
``x'`` in its place), shifts ``>= 0`` (Koskela, Jälkö & Honkela 2020, Sec. 6; the substitution
pair that dp_accounting's issue 277 asks for). Its loss, in units of ``s``, is
``ell(y) = LSE_i(log p_i - mu_i^2/2 + mu_i y) - LSE_j(log p'_j - mu'_j^2/2 - mu'_j y)``: a
convex increasing term plus a concave increasing one, so it is increasing (strictly, once both
sides have a positive shift) and :class:`GaussianDoubleMixtureLaw` inverts it by safeguarded
Newton steps; every probability is a positive sum of normal cdfs at the inverse.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from plda._internal.caches import remembered
from plda._internal.floats import dot
from plda._internal.roots import tabulated_inverse
from plda.mechanisms.base import ReplaceOnePair
from plda.mechanisms.gaussian_mixture import GaussianMixture, log_sum_of_lines
from plda.mechanisms.law import PrivacyLossLaw

__all__ = ["GaussianDoubleMixture", "GaussianDoubleMixtureLaw"]

_LOG_SQRT_2PI = 0.5 * math.log(2 * math.pi)


def _log_slope(slopes, offsets, y):
    """``log`` of the derivative of :func:`log_sum_of_lines` over ``y`` (slopes ``>= 0``)."""
    with np.errstate(divide="ignore"):
        top = log_sum_of_lines(slopes, offsets + np.log(slopes), y)
    return top - log_sum_of_lines(slopes, offsets, y)


@dataclass(frozen=True, eq=False)
class GaussianDoubleMixtureLaw(PrivacyLossLaw):
    r"""Loss law of ``P = sum_i w_i N(mu_i, 1)`` against ``Q = sum_j v_j N(-nu_j, 1)``.

    With ``y = ell^{-1}(l)``: ``P(L <= l) = sum_i w_i Phi(y - mu_i)``,
    ``Q(L <= l) = sum_j v_j Phi(y + nu_j)`` (and the survival functions with the signs
    turned); the density under ``Q`` is ``q(y) / ell'(y)``, and ``e^l`` times that under ``P``.

    Attributes
    ----------
    shifts, weights : tuple of float
        ``mu_i >= 0`` and ``w_i > 0`` (summing to 1) of ``P``, at least one shift positive.
    other_shifts, other_weights : tuple of float
        ``nu_j >= 0`` and ``v_j > 0`` of ``Q``, at least one shift positive.
    """

    shifts: tuple = ()
    weights: tuple = ()
    other_shifts: tuple = ()
    other_weights: tuple = ()
    has_continuous_part = True

    def __post_init__(self):
        mu, w = np.asarray(self.shifts, float), np.asarray(self.weights, float)
        nu, v = np.asarray(self.other_shifts, float), np.asarray(self.other_weights, float)
        object.__setattr__(self, "_p", (mu, np.log(w) - 0.5 * mu * mu, w))
        object.__setattr__(self, "_q", (nu, np.log(v) - 0.5 * nu * nu, v))

    @property
    def continuous_support(self):
        """``(-inf, inf)``: both sides have a positive shift, so the loss is unbounded."""
        return (-np.inf, np.inf)

    def _loss(self, y):
        y = np.asarray(y, dtype=float).ravel()
        (mu, a, _), (nu, b, _) = self._p, self._q
        with np.errstate(invalid="ignore"):
            out = log_sum_of_lines(mu, a, y) - log_sum_of_lines(nu, b, -y)
        out[y == np.inf] = np.inf
        out[y == -np.inf] = -np.inf
        return out

    def _slope(self, y):
        y = np.asarray(y, dtype=float).ravel()
        (mu, a, _), (nu, b, _) = self._p, self._q
        return np.exp(_log_slope(mu, a, y)) + np.exp(_log_slope(nu, b, -y))

    def _inverse(self, loss):
        """``y`` with ``ell(y) = loss``: Newton from a table of ``ell`` over the components'
        bulk (a few steps; from a doubled bracket, at shifts of 1e3, some ninety evaluations
        of ``ell`` per point, most of a query's time)."""
        loss = np.asarray(loss, dtype=float)
        y = np.where(loss == np.inf, np.inf, -np.inf)
        y[np.isnan(loss)] = np.nan
        inside = np.isfinite(loss)
        if inside.any():
            grid, values = remembered(self, "table", self._table)
            y[inside] = tabulated_inverse(self._loss, self._slope, loss[inside], grid, values)
        return y

    def _table(self):
        grid = np.linspace(-float(np.max(self._q[0])) - 40.0, float(np.max(self._p[0])) + 40.0,
                           4097)
        return grid, self._loss(grid)

    def _cont_cdf_sf(self, x):
        x = np.asarray(x, dtype=float)
        y = self._inverse(x).ravel()
        (mu, _, w), (nu, _, v) = self._p, self._q
        z_p = np.subtract.outer(mu, y)  # mu_i - y
        z_q = np.add.outer(nu, y)  # nu_j + y
        out = (dot(w, ndtr(-z_p)), dot(w, ndtr(z_p)), dot(v, ndtr(z_q)), dot(v, ndtr(-z_q)))
        return tuple(np.asarray(o).reshape(x.shape) for o in out)

    def _cont_cdf(self, x, hypothesis):
        cdf_p, _, cdf_q, _ = self._cont_cdf_sf(x)
        return cdf_p if hypothesis == "P" else cdf_q

    def _cont_sf(self, x, hypothesis):
        _, sf_p, _, sf_q = self._cont_cdf_sf(x)
        return sf_p if hypothesis == "P" else sf_q

    def _cont_pdf(self, x, hypothesis):
        # dQ/dl = q(y) / ell'(y) in logs, q(y) = sum_j v_j phi(y + nu_j); dP = e^l dQ
        x = np.asarray(x, dtype=float)
        y = self._inverse(x).ravel()
        out = np.zeros(y.shape)
        live = np.isfinite(y)
        if live.any():
            yl = y[live]
            nu, _, v = self._q
            log_q = np.logaddexp.reduce(
                np.log(v)[:, None] - 0.5 * np.add.outer(nu, yl) ** 2, axis=0) - _LOG_SQRT_2PI
            log_density = log_q - np.log(self._slope(yl))
            with np.errstate(over="ignore"):
                out[live] = np.exp(log_density + x.ravel()[live] if hypothesis == "P"
                                   else log_density)
        return out.reshape(x.shape)

    def _cont_tail(self, mass, hypothesis):
        # every component keeps its tails beyond z_k with Phi(-z_k) = mass / (K w_k), so that
        # the sum outside is <= mass; nudged outward against the rounding of ell
        mu, _, w = self._p if hypothesis == "P" else self._q
        centers = mu if hypothesis == "P" else -mu
        with np.errstate(over="ignore", divide="ignore"):
            z = -ndtri(np.minimum(mass / (w.size * w), 1.0))
        low, high = float(np.min(centers - z)), float(np.max(centers + z))
        a, b = self._loss(np.array([low - 1e-9 * (1 + abs(low)), high + 1e-9 * (1 + abs(high))]))
        return float(a), float(b)


@dataclass(frozen=True)
class GaussianDoubleMixture(ReplaceOnePair):
    r"""A replace-one pair of two Gaussian mixtures.

    ``sum_i p_i N(c_i, sigma^2)`` (the record ``x``) against ``sum_j p'_j N(-c'_j, sigma^2)``
    (``x'`` in its place).

    The pair is the *replace-one* dominating pair the caller asserts (e.g. a record whose
    contribution moves from ``-c'_j`` to ``+c_i`` with the given probabilities): account it
    with ``relation="replace_one"``; under add/remove it is refused. One step of a
    Poisson-sampled Gaussian under replace-one is the case ``c = c' = (0, 1)``,
    ``p = p' = (1-q, q)`` (Zhu, Dong & Wang 2022).

    Parameters
    ----------
    sigma : float
        Noise standard deviation, in ``(0, inf)``.
    sensitivities, probabilities : sequence of float
        The shifts ``c_i >= 0`` of ``x``'s side and their probabilities (as in
        :class:`~plda.GaussianMixture`), at least one positive shift of positive probability.
    other_sensitivities, other_probabilities : sequence of float
        The same for ``x'``'s side (shifted to ``-c'_j``).

    Raises
    ------
    TypeError
        A value that is not a real number, or a sequence that is not one.
    ValueError
        A value outside its range, sequences of different lengths, or a side without a
        positive shift (then the pair is a :class:`~plda.GaussianMixture`; the message names
        the argument).
    """

    add_remove_advice = " (under add/remove use plda.GaussianMixture)"

    sigma: float
    sensitivities: tuple[float, ...]
    probabilities: tuple[float, ...]
    other_sensitivities: tuple[float, ...]
    other_probabilities: tuple[float, ...]

    def __post_init__(self):
        x_side = GaussianMixture(self.sigma, self.sensitivities, self.probabilities)
        other = GaussianMixture(self.sigma, self.other_sensitivities, self.other_probabilities)
        for name, side in (("sensitivities", x_side), ("other_sensitivities", other)):
            if max(side.components()[0]) == 0:
                raise ValueError(
                    f"{name} must have a positive shift of positive probability (a side "
                    "that is N(0, sigma^2) makes the pair a plda.GaussianMixture)"
                )
        object.__setattr__(self, "sigma", x_side.sigma)
        object.__setattr__(self, "sensitivities", x_side.sensitivities)
        object.__setattr__(self, "probabilities", x_side.probabilities)
        object.__setattr__(self, "other_sensitivities", other.sensitivities)
        object.__setattr__(self, "other_probabilities", other.probabilities)
        object.__setattr__(self, "symmetric", x_side.components() == other.components())

    def law(self) -> GaussianDoubleMixtureLaw:
        """The pair's loss law, ``x``'s side against ``x'``'s.

        Returns
        -------
        GaussianDoubleMixtureLaw
            With the distinct shifts over ``sigma`` and their summed probabilities.
        """
        mu, w = GaussianMixture(self.sigma, self.sensitivities,
                                self.probabilities).components()
        nu, v = GaussianMixture(self.sigma, self.other_sensitivities,
                                self.other_probabilities).components()
        return GaussianDoubleMixtureLaw(shifts=mu, weights=w, other_shifts=nu, other_weights=v)
