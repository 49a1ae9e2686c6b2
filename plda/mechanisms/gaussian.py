"""The Gaussian mechanism and its privacy-loss law."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
from scipy.special import ndtr, ndtri

from plda._internal.validation import doubled, in_range, positive_float
from plda.bounds import check_relation
from plda.mechanisms.base import Mechanism
from plda.mechanisms.law import PrivacyLossLaw

#: supported ``mu = sensitivity / sigma``
MU_RANGE = (1e-150, 1e15)


@dataclass(frozen=True)
class Gaussian(Mechanism):
    """Adds ``N(0, sigma^2)`` noise to a query of L2 ``sensitivity``.

    Its privacy loss is Gaussian: ``L ~ N(mu^2/2, mu^2)`` with ``mu = sensitivity / sigma``; it is
    exactly ``mu``-GDP (Dong, Roth & Su 2019) and ``k`` compositions are ``sqrt(k) mu``-GDP.

    Parameters
    ----------
    sigma
        The noise's standard deviation, positive.
    sensitivity
        The query's L2 sensitivity, positive.

    Attributes
    ----------
    mu
        The Gaussian-DP parameter ``sensitivity / sigma``.

    Raises
    ------
    TypeError
        If an argument is not a real number.
    ValueError
        If an argument is not positive and finite, or ``sensitivity / sigma`` is outside
        ``MU_RANGE``, the range plda certifies.
    """

    sigma: float
    sensitivity: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "sigma", positive_float("sigma", self.sigma))
        object.__setattr__(self, "sensitivity", positive_float("sensitivity", self.sensitivity))
        # below 1e-150, mu^2 (the loss variance) underflows; above 1e15 the loss mean mu^2/2
        # leaves the range where grid indices are exact integers
        mu = in_range("sensitivity / sigma", self.sensitivity / self.sigma, MU_RANGE[0],
                      MU_RANGE[1], "the Gaussian-DP mu plda certifies")
        object.__setattr__(self, "mu", mu)  # derived once, as data

    @classmethod
    def from_noise_multiplier(
        cls, noise_multiplier: float, relation: str = "add_remove"
    ) -> Gaussian:
        """DP-SGD's Gaussian: noise of ``noise_multiplier`` times the clipping norm.

        Parameters
        ----------
        noise_multiplier
            ``sigma / sensitivity``; its reciprocal ``mu`` must lie in ``MU_RANGE``, so
            ``noise_multiplier`` in ``[1e-15, 1e150]``; ``[2e-15, 1e150]`` under replace-one,
            where ``mu`` is ``2 / noise_multiplier``.
        relation
            The relation the step will be accounted under, ``"add_remove"`` or
            ``"replace_one"``: it sets the range checked (not the mechanism returned).

        Returns
        -------
        Gaussian
            ``Gaussian(sigma=noise_multiplier)`` (sensitivity 1).

        Raises
        ------
        TypeError
            If ``noise_multiplier`` is not a real number.
        ValueError
            If it is not positive, or outside its range under ``relation`` (the message names
            ``noise_multiplier``, not the ``sensitivity / sigma`` it makes), or ``relation`` is
            neither relation.
        """
        check_relation(relation)
        sigma = positive_float("noise_multiplier", noise_multiplier)
        # a replaced record moves the sum by twice the clipping norm: the mu that Gaussian (and
        # its replace-one reading) checks is 2 / noise_multiplier there, so the floor doubles
        factor = 2.0 if relation == "replace_one" else 1.0
        if not MU_RANGE[0] <= 1.0 / sigma <= MU_RANGE[1] or factor / sigma > MU_RANGE[1]:
            where, mu = (" under relation='replace_one'", "2 / noise_multiplier") if (
                factor > 1) else ("", "its reciprocal")
            raise ValueError(
                f"noise_multiplier must be in [{factor / MU_RANGE[1]:g}, {1 / MU_RANGE[0]:g}]"
                f"{where} ({mu}, the Gaussian-DP mu, in the range plda certifies), got "
                f"{noise_multiplier!r}")
        return cls(sigma=sigma)

    def _remove_law(self):
        return GaussianLaw(mu=self.mu)

    def _coarsened(self):
        """``sigma`` rounded down to a power of ``2^(1/16)``: more noise is a post-processing."""
        sigma = min(self.sigma, 2.0 ** (math.floor(16 * math.log2(self.sigma)) / 16))
        return replace(self, sigma=sigma)

    def under_replace_one(self) -> Gaussian:
        """The Gaussian whose add/remove laws are this one's replace-one laws.

        Returns
        -------
        Gaussian
            The same noise on twice the sensitivity (a replaced record moves the output by up
            to twice the add/remove sensitivity).

        Raises
        ------
        ValueError
            If ``2 * sensitivity / sigma`` exceeds ``MU_RANGE`` (1e15).
        """
        doubled("sensitivity / sigma", self.mu, MU_RANGE[1])
        return replace(self, sensitivity=2 * self.sensitivity)


@dataclass(frozen=True, eq=False)
class GaussianLaw(PrivacyLossLaw):
    """The privacy-loss law of the Gaussian pair ``N(mu, 1)`` vs ``N(0, 1)``.

    ``L ~ N(mu^2/2, mu^2)`` under P and ``N(-mu^2/2, mu^2)`` under Q (Balle & Wang 2018).

    Attributes
    ----------
    mu
        ``sensitivity / sigma`` of the mechanism.
    """

    mu: float = 1.0
    has_continuous_part = True
    continuous_support = (-np.inf, np.inf)

    def _mean(self, hypothesis):
        return self.mu**2 / 2 if hypothesis == "P" else -(self.mu**2) / 2

    def _cont_cdf(self, x, hypothesis):
        return ndtr((np.asarray(x) - self._mean(hypothesis)) / self.mu)

    def _cont_sf(self, x, hypothesis):
        return ndtr(-(np.asarray(x) - self._mean(hypothesis)) / self.mu)

    def _cont_cdf_sf(self, x):
        # one ndtr per hypothesis: the smaller tail ndtr(-|z|) and its complement, which for
        # |z| >= 1 is ndtr(|z|) to the bit (both are 1 - erfc(|z|/sqrt(2))/2 there); the centre
        # |z| < 1, where ndtr goes through erf instead, takes ndtr itself (the values are those
        # of _cont_cdf and _cont_sf). Both hypotheses in one pass: a row each
        shape, means = np.shape(x), np.array([[self._mean("P")], [self._mean("Q")]])
        z = (np.reshape(x, (1, -1)) - means) / self.mu
        size = np.abs(z)
        small = ndtr(-size)
        large = 1.0 - small
        centre = size < 1.0
        if centre.any():
            large[centre] = ndtr(size[centre])
        below = z < 0
        cdf, sf = np.where(below, small, large), np.where(below, large, small)
        # [()]: a scalar for a scalar
        return tuple(part.reshape(shape)[()] for part in (cdf[0], sf[0], cdf[1], sf[1]))

    def _cont_pdf(self, x, hypothesis):
        z = np.asarray(x, dtype=float) - self._mean(hypothesis)
        z *= 1.0 / self.mu
        np.square(z, out=z)
        z *= -0.5
        np.exp(z, out=z)
        z *= 1.0 / (self.mu * math.sqrt(2 * math.pi))
        return z

    def _cont_tail(self, mass, hypothesis):
        z = -ndtri(mass)
        m = self._mean(hypothesis)
        return m - self.mu * z, m + self.mu * z
