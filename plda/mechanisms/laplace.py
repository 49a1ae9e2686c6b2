"""The Laplace mechanism and its privacy-loss law."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from plda._internal.validation import doubled, in_range, positive_float
from plda.mechanisms.base import Mechanism
from plda.mechanisms.law import PrivacyLossLaw

#: largest supported ``sensitivity / scale``
MAX_EPSILON = 700.0


@dataclass(frozen=True)
class Laplace(Mechanism):
    """Adds ``Lap(0, scale)`` noise to a query of L1 ``sensitivity``.

    The step is pure ``eps0``-DP with ``eps0 = sensitivity / scale``; its privacy loss has atoms
    at ``±eps0`` and a continuous part between them (:class:`LaplaceLaw`).

    Parameters
    ----------
    scale : float
        The noise scale ``b``, in ``(0, inf)``.
    sensitivity : float, optional
        The query's add/remove L1 sensitivity, in ``(0, inf)``.

    Raises
    ------
    TypeError
        If ``scale`` or ``sensitivity`` is not a real number.
    ValueError
        If ``scale`` or ``sensitivity`` is not a finite positive number, or
        ``sensitivity / scale`` is outside ``[1e-300, 700]`` (past 700 the atom at ``-eps0``
        has a mass below the smallest double).
    """

    scale: float
    sensitivity: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "scale", positive_float("scale", self.scale))
        object.__setattr__(self, "sensitivity", positive_float("sensitivity", self.sensitivity))
        # past 700 the loss atom at -epsilon has P-mass e^-epsilon / 2 below the smallest double
        in_range("sensitivity / scale", self.sensitivity / self.scale, 1e-300, MAX_EPSILON,
                 "the pure-DP epsilon of a Laplace step plda certifies")

    @property
    def epsilon(self) -> float:
        """Pure-DP parameter ``sensitivity / scale``."""
        return self.sensitivity / self.scale

    def _remove_law(self):
        return LaplaceLaw(epsilon0=self.epsilon)

    def under_replace_one(self):
        """The step under replace-one: the same noise at twice the sensitivity.

        A replaced record moves the query by up to twice its add/remove sensitivity (its old
        contribution out, the new one in).

        Returns
        -------
        Laplace
            ``Laplace(scale, 2 * sensitivity)``.

        Raises
        ------
        ValueError
            If ``2 * sensitivity / scale`` exceeds 700 (see the class).
        """
        doubled("sensitivity / scale", self.epsilon, MAX_EPSILON)
        return replace(self, sensitivity=2 * self.sensitivity)


@dataclass(frozen=True, eq=False)
class LaplaceLaw(PrivacyLossLaw):
    """Privacy-loss law of the Laplace pair ``Lap(0, b)`` vs ``Lap(Δ, b)``, ``eps0 = Δ/b``.

    Atoms ``+eps0`` (mass 1/2) and ``-eps0`` (mass ``e^-eps0 / 2``) under ``P``, continuous in
    between with ``P(L <= l) = e^-eps0 (e^((eps0+l)/2) - 1) / 2`` (Koskela et al. 2021). The
    atoms are set from ``epsilon0``.

    Parameters
    ----------
    epsilon0 : float, optional
        ``eps0 = Δ/b``, the step's pure-DP ``epsilon`` (:class:`Laplace` validates it).
    """

    epsilon0: float = 1.0
    has_continuous_part = True

    def __post_init__(self):
        e = self.epsilon0
        object.__setattr__(self, "atom_losses", np.array([-e, e]))
        object.__setattr__(self, "atom_probs", np.array([np.exp(-e) / 2, 0.5]))

    @property
    def continuous_support(self):
        """``(-eps0, eps0)``: the support of the continuous part."""
        return (-self.epsilon0, self.epsilon0)

    def _cont_cdf(self, x, hypothesis):
        e = self.epsilon0
        x = np.clip(np.asarray(x, dtype=float), -e, e)
        if hypothesis == "P":
            return 0.5 * np.exp(-e) * np.expm1((e + x) / 2)
        return -0.5 * np.expm1(-(x + e) / 2)

    def _cont_sf(self, x, hypothesis):
        e = self.epsilon0
        x = np.clip(np.asarray(x, dtype=float), -e, e)
        if hypothesis == "P":
            return -0.5 * np.expm1(-(e - x) / 2)
        return 0.5 * np.exp(-e) * np.expm1((e - x) / 2)

    def _cont_pdf(self, x, hypothesis):
        e = self.epsilon0
        x = np.asarray(x, dtype=float)
        inside = (x > -e) & (x < e)
        # dP/dl = e^{(l-eps0)/2} / 4 and dQ/dl = e^{-(l+eps0)/2} / 4 on (-eps0, eps0)
        shift = -e if hypothesis == "P" else -e
        sign = 1.0 if hypothesis == "P" else -1.0
        return np.where(inside, 0.25 * np.exp((sign * x + shift) / 2), 0.0)

    def _cont_tail(self, mass, hypothesis):
        return -self.epsilon0, self.epsilon0
