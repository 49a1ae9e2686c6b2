"""Plug in any mechanism through the law of its privacy loss.

How to write one and check it against a known case: ``docs/howto/custom-mechanisms.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from plda.mechanisms.base import Mechanism
from plda.mechanisms.law import PrivacyLossLaw

Function = Callable[[np.ndarray], np.ndarray]


@dataclass(frozen=True, eq=False)
class LossLaw(PrivacyLossLaw):
    """A privacy-loss law given by functions, like a ``scipy.stats`` distribution.

    Parameters
    ----------
    cdf_p, sf_p, cdf_q, sf_q : callable, optional
        ``P(L <= x)``, ``P(L > x)``, ``Q(L <= x)``, ``Q(L > x)`` of the *continuous part* of the
        loss, vectorized over ``x``. Both tails are asked for so no probability near 1 has to be
        subtracted from 1. They must be accurate to a few ulps (their error is not bounded by
        plda; a rough cdf gives rough bounds).
    support : tuple of float, optional
        ``(lo, hi)`` of the continuous part, ``lo < hi``; infinite ends allowed.
    pdf_p : callable, optional
        Density of the loss under ``P`` (under ``Q`` it is ``exp(-x)`` times it). With a
        density, cell masses come from Gauss–Legendre quadrature (no cancellation in the bulk);
        without, from cdf/sf differences.
    atom_losses, atom_probs, infinity_mass, neg_infinity_mass
        Point masses, as for every law (:class:`~plda.mechanisms.law.PrivacyLossLaw`).

    Raises
    ------
    TypeError
        If one of ``cdf_p``, ``sf_p``, ``cdf_q``, ``sf_q`` and ``pdf_p`` is given and is not
        callable.
    ValueError
        If only some of ``cdf_p``, ``sf_p``, ``cdf_q`` and ``sf_q`` are given, if they are given
        with a ``support`` whose ``lo >= hi``, or if ``atom_probs`` has a negative entry or not
        one entry per atom loss.

    Examples
    --------
    The Gaussian mechanism with sigma = 2 written as a custom law (``mu = 1/2``):

    >>> from scipy.stats import norm
    >>> mu = 0.5
    >>> mp, mq = mu**2 / 2, -(mu**2) / 2
    >>> law = LossLaw(
    ...     cdf_p=lambda x: norm.cdf(x, mp, mu), sf_p=lambda x: norm.sf(x, mp, mu),
    ...     cdf_q=lambda x: norm.cdf(x, mq, mu), sf_q=lambda x: norm.sf(x, mq, mu),
    ...     pdf_p=lambda x: norm.pdf(x, mp, mu), support=(-np.inf, np.inf))
    """

    cdf_p: Function | None = None
    sf_p: Function | None = None
    cdf_q: Function | None = None
    sf_q: Function | None = None
    support: tuple[float, float] = (0.0, 0.0)
    pdf_p: Function | None = None
    _continuous: bool = field(default=False, repr=False)

    def __post_init__(self):
        functions = (self.cdf_p, self.sf_p, self.cdf_q, self.sf_q)
        given = [f is not None for f in functions]
        if any(given) and not all(given):
            raise ValueError("cdf_p, sf_p, cdf_q and sf_q must be given together")
        if any(f is not None and not callable(f) for f in (*functions, self.pdf_p)):
            raise TypeError("cdf_p, sf_p, cdf_q, sf_q and pdf_p must be callables")
        lo, hi = self.support
        if all(given) and not lo < hi:
            raise ValueError(f"support must be (lo, hi) with lo < hi, got {self.support!r}")
        object.__setattr__(self, "_continuous", all(given))
        object.__setattr__(self, "atom_losses", np.asarray(self.atom_losses, dtype=float))
        object.__setattr__(self, "atom_probs", np.asarray(self.atom_probs, dtype=float))
        if np.any(self.atom_probs < 0) or len(self.atom_probs) != len(self.atom_losses):
            raise ValueError("atom_probs must be non-negative, one per atom loss")

    @property
    def has_continuous_part(self):  # type: ignore[override]
        """Whether the law has a continuous part: the four functions were given."""
        return self._continuous

    @property
    def has_density(self) -> bool:
        """Whether ``pdf_p`` was given: cell masses by quadrature, else by cdf/sf differences."""
        return self.pdf_p is not None

    @property
    def continuous_support(self):
        """``support`` as a pair of floats: ``(lo, hi)`` of the continuous part."""
        return tuple(float(v) for v in self.support)

    def _call(self, f, x):
        x = np.asarray(x, dtype=float)
        lo, hi = self.support
        return np.asarray(f(np.clip(x, lo, hi)), dtype=float) * np.ones_like(x)

    def _cont_cdf(self, x, hypothesis):
        if not self._continuous:  # atoms only
            return np.zeros(np.shape(x))
        return self._call(self.cdf_p if hypothesis == "P" else self.cdf_q, x)

    def _cont_sf(self, x, hypothesis):
        if not self._continuous:
            return np.zeros(np.shape(x))
        return self._call(self.sf_p if hypothesis == "P" else self.sf_q, x)

    def _cont_pdf(self, x, hypothesis):
        if self.pdf_p is None:
            return np.full(np.shape(x), np.nan)
        x = np.asarray(x, dtype=float)
        lo, hi = self.support
        dens = np.where((x >= lo) & (x <= hi), self.pdf_p(np.clip(x, lo, hi)), 0.0)
        return dens if hypothesis == "P" else dens * np.exp(-x)


@dataclass(frozen=True, eq=False)
class CustomMechanism(Mechanism):
    """A mechanism known only through its privacy-loss law(s).

    Parameters
    ----------
    remove : PrivacyLossLaw
        Law of the pair ``(M(D), M(D'))`` with one record removed from ``D`` (a
        :class:`LossLaw` or any :class:`~plda.mechanisms.law.PrivacyLossLaw`).
    add : PrivacyLossLaw or None, optional
        Law of the reversed direction; ``None`` declares the mechanism symmetric (both
        directions have the law ``remove``).
    name : str, optional
        Shown in reprs and reports.

    Raises
    ------
    TypeError
        If ``remove`` or ``add`` is given and is not a
        :class:`~plda.mechanisms.law.PrivacyLossLaw`.
    """

    remove: PrivacyLossLaw
    add: PrivacyLossLaw | None = None
    name: str = "custom"

    def __post_init__(self):
        for label, law in (("remove", self.remove), ("add", self.add)):
            if law is not None and not isinstance(law, PrivacyLossLaw):
                raise TypeError(f"{label} must be a PrivacyLossLaw, got {type(law).__name__}")

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        """Whether ``add`` is None: both directions have the law ``remove``."""
        return self.add is None

    def _remove_law(self):
        return self.remove

    def _add_law(self):
        return self.remove if self.add is None else self.add
