"""Privacy-loss laws: the distribution of ``L = log(dP/dQ)(o)`` for one ordered pair ``(P, Q)``,
as atoms, a continuous part and masses at ``±inf``, read under either hypothesis like a
``scipy.stats`` law. Families implement the hooks ``_cont_*``; only the public methods, which
validate, call them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq

from plda._internal.caches import remembered
from plda._internal.floats import dot, q_masses
from plda._internal.validation import array_in
from plda.mechanisms.quantiles import first_reaching, support_ends

HYPOTHESES = ("P", "Q")

#: the hooks are pointwise (the value at ``x`` depends on ``x`` alone), so
#: :meth:`PrivacyLossLaw.continuous_pdf` evaluates a longer array in pieces of this many points:
#: a density makes several temporaries the size of its input, and in pieces they stay in the
#: processor's cache (measured: a Poisson-sampled Gaussian's density at 226k points took 5.5 ms
#: at once and 2.0-3.5 ms in pieces of 16k; the cdf and sf, dominated by ``ndtr``, gained
#: nothing)
PIECE = 1 << 14


def _bad_hypothesis(hypothesis) -> ValueError:
    """The error of a public method given a ``hypothesis`` not in :data:`HYPOTHESES` (each
    checks it by one comparison, on the discretizer's innermost path)."""
    return ValueError(f"hypothesis must be 'P' or 'Q', got {hypothesis!r}")


@dataclass(frozen=True, eq=False)
class PrivacyLossLaw:
    """Base law: atoms only (override the continuous hooks for a continuous part).

    Parameters
    ----------
    atom_losses, atom_probs
        Finite losses carrying point masses and their probabilities under ``P``
        (under ``Q`` the mass of atom ``l`` is ``p * exp(-l)``).
    infinity_mass
        ``P(L = +inf)``: outputs that ``Q`` never produces.
    neg_infinity_mass
        ``Q(L = -inf)``: outputs that ``P`` never produces.
    """

    atom_losses: np.ndarray = field(default_factory=lambda: np.zeros(0))
    atom_probs: np.ndarray = field(default_factory=lambda: np.zeros(0))
    infinity_mass: float = 0.0
    neg_infinity_mass: float = 0.0

    #: mass of large losses the law leaves out (a pessimistic discretization charges it to +inf)
    truncated_mass: float = 0.0

    # ---------------------------------------------------------- continuous part
    #: whether the law has a continuous part (a family sets it, or computes it as a property)
    has_continuous_part = False
    #: whether ``_cont_pdf`` is available (quadrature) or only cdf/sf (differences)
    has_density = True
    #: support ``(lo, hi)`` of the continuous part, infinite ends allowed (a family sets it, in
    #: its class body or at construction, or computes it as a property)
    continuous_support = (0.0, 0.0)

    def _cont_cdf(self, x: np.ndarray, hypothesis: str) -> np.ndarray:
        return np.zeros_like(x)

    def _cont_sf(self, x: np.ndarray, hypothesis: str) -> np.ndarray:
        return np.zeros_like(x)

    def _cont_pdf(self, x: np.ndarray, hypothesis: str) -> np.ndarray:
        """Density of the continuous part (under Q it is ``exp(-x)`` times the one under P)."""
        return np.zeros_like(x)

    def _cont_tail(self, mass: float, hypothesis: str) -> tuple[float, float]:
        """Points ``(a, b)`` with continuous mass below ``a`` and above ``b`` each ``<= mass``."""
        lo, hi = self.continuous_support
        total = float(self._cont_sf(np.array([lo]), hypothesis)[0]) if np.isfinite(lo) else 1.0
        if total <= mass:
            return lo, lo
        a = lo if np.isfinite(lo) else self._search(lambda x: self._cont_cdf(x, hypothesis), mass)
        b = hi if np.isfinite(hi) else self._search(lambda x: -self._cont_sf(x, hypothesis), -mass)
        return a, b

    @staticmethod
    def _search(increasing, target: float) -> float:
        """Point where the increasing function ``increasing`` crosses ``target``."""
        lo, hi = -1.0, 1.0
        while increasing(np.array([lo]))[0] > target:
            lo *= 2.0
            if lo < -1e6:
                return lo
        while increasing(np.array([hi]))[0] < target:
            hi *= 2.0
            if hi > 1e6:
                return hi
        return brentq(lambda x: increasing(np.array([x]))[0] - target, lo, hi, xtol=1e-12)

    # ------------------------------------------- public interface of the continuous part
    # The scipy.stats pattern: these public methods validate their arguments and call the
    # family's ``_cont_*`` hooks; code outside ``plda.mechanisms`` calls only these.
    def continuous_cdf(self, x, hypothesis: str = "P") -> np.ndarray:
        """Mass of the continuous part at losses ``<= x``.

        .. math:: F_c(x) = \\int_{-\\infty}^{x} f_c(l)\\,dl

        under ``P`` (``hypothesis="P"``) or ``Q`` (``hypothesis="Q"``, density
        ``f_c^Q(l) = e^{-l} f_c^P(l)``). Atoms and the masses at ``±inf`` are not included
        (``cdf`` includes them).

        Parameters
        ----------
        x : array_like of float
            Losses.
        hypothesis : {"P", "Q"}
            Distribution the output is drawn from.

        Returns
        -------
        numpy.ndarray
            ``F_c(x)``, same shape as ``x``.

        Raises
        ------
        ValueError
            If ``hypothesis`` is not ``"P"`` or ``"Q"``.
        """
        if hypothesis not in HYPOTHESES:
            raise _bad_hypothesis(hypothesis)
        return self._cont_cdf(np.asarray(x, dtype=float), hypothesis)

    def continuous_sf(self, x, hypothesis: str = "P") -> np.ndarray:
        """Mass of the continuous part at losses ``> x``: ``S_c(x) = int_x^inf f_c(l) dl``.

        Computed directly (not as ``total - F_c(x)``) so that small tails keep their
        relative accuracy.

        Parameters
        ----------
        x : array_like of float
            Losses.
        hypothesis : {"P", "Q"}
            Distribution the output is drawn from.

        Returns
        -------
        numpy.ndarray
            ``S_c(x)``, same shape as ``x``.

        Raises
        ------
        ValueError
            If ``hypothesis`` is not ``"P"`` or ``"Q"``.
        """
        if hypothesis not in HYPOTHESES:
            raise _bad_hypothesis(hypothesis)
        return self._cont_sf(np.asarray(x, dtype=float), hypothesis)

    def continuous_pdf(self, x, hypothesis: str = "P") -> np.ndarray:
        """Density ``f_c(x)`` of the continuous part; under ``Q`` it is ``e^{-x} f_c^P(x)``.

        Parameters
        ----------
        x : array_like of float
            Losses.
        hypothesis : {"P", "Q"}
            Distribution the output is drawn from.

        Returns
        -------
        numpy.ndarray
            ``f_c(x)``, same shape as ``x``; only meaningful when ``has_density`` is true
            (laws without one return zeros).

        Raises
        ------
        ValueError
            If ``hypothesis`` is not ``"P"`` or ``"Q"``.
        """
        if hypothesis not in HYPOTHESES:
            raise _bad_hypothesis(hypothesis)
        x = np.asarray(x, dtype=float)
        if x.size <= PIECE:
            return self._cont_pdf(x, hypothesis)
        flat = x.reshape(-1)
        pieces = [self._cont_pdf(flat[i : i + PIECE], hypothesis)
                  for i in range(0, flat.size, PIECE)]
        return np.concatenate(pieces).reshape(x.shape)

    def continuous_cdf_sf(self, x) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(F_c^P(x), S_c^P(x), F_c^Q(x), S_c^Q(x))`` together.

        Laws whose four functions share work (e.g. one loss map) compute them at once.

        Parameters
        ----------
        x : array_like of float
            Losses.

        Returns
        -------
        tuple of numpy.ndarray
            The four, each shaped like ``x``.
        """
        return self._cont_cdf_sf(np.asarray(x, dtype=float))

    def tail_points(self, mass: float, hypothesis: str = "P") -> tuple[float, float]:
        """Points ``(a, b)`` with continuous mass below ``a`` and above ``b`` each ``<= mass``.

        .. math:: F_c(a) \\le m, \\qquad S_c(b) \\le m

        The discretizer keeps ``[a, b]`` and charges the two tails in the safe direction.

        Parameters
        ----------
        mass : float
            Tail mass ``m``, in ``[0, 1]``.
        hypothesis : {"P", "Q"}
            Distribution the output is drawn from.

        Returns
        -------
        tuple of float
            ``(a, b)``, remembered per law.

        Raises
        ------
        ValueError
            If ``mass`` is outside ``[0, 1]`` or ``hypothesis`` is not ``"P"``/``"Q"``.
        """
        if hypothesis not in HYPOTHESES:
            raise _bad_hypothesis(hypothesis)
        m = float(mass)
        if not 0.0 <= m <= 1.0:
            raise ValueError(f"mass must be in [0, 1], got {mass!r}")
        # remembered per law: a discretization asks for the same few tails about ten times
        # (support, range, fine part, far tail), and each is a root search for some laws
        return remembered(self, ("tail", m, hypothesis), lambda: self._cont_tail(m, hypothesis))

    # ------------------------------------------------------------ public API
    def _atom_masses(self, hypothesis: str) -> np.ndarray:
        if hypothesis == "P":
            return self.atom_probs
        return q_masses(self.atom_probs, self.atom_losses)

    def cdf(self, loss, hypothesis: str = "P"):
        """``P(L <= loss)``, or under ``Q``, vectorized.

        Parameters
        ----------
        loss : array_like of float
            Losses.
        hypothesis : {"P", "Q"}
            Distribution the output is drawn from.

        Returns
        -------
        numpy.ndarray
            The cdf, shaped like ``loss`` (atoms, the continuous part and, under ``Q``, the
            mass at ``-inf``).

        Raises
        ------
        ValueError
            If ``hypothesis`` is not ``"P"`` or ``"Q"``.
        """
        if hypothesis not in HYPOTHESES:
            raise _bad_hypothesis(hypothesis)
        x = np.asarray(loss, dtype=float)
        atoms = self._atom_masses(hypothesis)
        below = dot(self.atom_losses[None, :] <= x.reshape(-1, 1), atoms) if len(atoms) else 0.0
        out = np.reshape(below, x.shape) if len(atoms) else np.zeros(x.shape)
        out = out + self._cont_cdf(x, hypothesis)
        if hypothesis == "Q":
            out = out + self.neg_infinity_mass
        return out

    def sf(self, loss, hypothesis: str = "P"):
        """``P(L > loss)``, or under ``Q``, vectorized.

        Parameters
        ----------
        loss : array_like of float
            Losses.
        hypothesis : {"P", "Q"}
            Distribution the output is drawn from.

        Returns
        -------
        numpy.ndarray
            The survival function, shaped like ``loss`` (under ``P`` it includes the mass at
            ``+inf``).

        Raises
        ------
        ValueError
            If ``hypothesis`` is not ``"P"`` or ``"Q"``.
        """
        if hypothesis not in HYPOTHESES:
            raise _bad_hypothesis(hypothesis)
        x = np.asarray(loss, dtype=float)
        atoms = self._atom_masses(hypothesis)
        above = dot(self.atom_losses[None, :] > x.reshape(-1, 1), atoms) if len(atoms) else 0.0
        out = np.reshape(above, x.shape) if len(atoms) else np.zeros(x.shape)
        out = out + self._cont_sf(x, hypothesis)
        if hypothesis == "P":
            out = out + self.infinity_mass
        return out

    def ppf(self, quantile, hypothesis: str = "P"):
        """Generalized inverse of :meth:`cdf`: the smallest loss with ``cdf >= quantile``.

        As in scipy.stats, ``ppf(0)`` is the lower end of the support and ``ppf(1)`` the upper
        end (``-inf`` or ``+inf`` where the support or a mass at an infinite loss reaches
        there); beyond the finite losses' mass the answer is ``+inf``.

        Parameters
        ----------
        quantile : array_like of float
            Probabilities in ``[0, 1]``.
        hypothesis : {"P", "Q"}
            Distribution the output is drawn from.

        Returns
        -------
        numpy.ndarray
            The losses, shaped like ``quantile`` (found by bisection, to 1e-12 relative; an
            atom exactly).

        Raises
        ------
        ValueError
            If ``hypothesis`` is not ``"P"`` or ``"Q"``, or a quantile is outside ``[0, 1]``
            or NaN.
        TypeError
            If ``quantile`` is not a number or an array of numbers.
        """
        if hypothesis not in HYPOTHESES:
            raise _bad_hypothesis(hypothesis)
        qs = array_in("quantile", quantile, 0.0, 1.0)
        lowest, highest = support_ends(self, hypothesis)

        def cdf(x):
            return float(self.cdf(np.array([x]), hypothesis)[0])
        out = [lowest if q == 0 else highest if q == 1 else
               first_reaching(cdf, q, self.atom_losses) for q in qs.ravel().tolist()]
        return np.array(out, dtype=float).reshape(qs.shape)

    def isf(self, quantile, hypothesis: str = "P"):
        """Inverse of :meth:`sf`: the smallest loss with ``sf <= quantile``.

        As in scipy.stats, ``isf(1)`` is the lower end of the support and ``isf(0)`` the upper
        end (``-inf`` or ``+inf`` where the support or a mass at an infinite loss reaches
        there).

        Parameters
        ----------
        quantile : array_like of float
            Probabilities in ``[0, 1]``.
        hypothesis : {"P", "Q"}
            Distribution the output is drawn from.

        Returns
        -------
        numpy.ndarray
            The losses, shaped like ``quantile`` (found by bisection, to 1e-12 relative; an
            atom exactly).

        Raises
        ------
        ValueError
            If ``hypothesis`` is not ``"P"`` or ``"Q"``, or a quantile is outside ``[0, 1]``
            or NaN.
        TypeError
            If ``quantile`` is not a number or an array of numbers.
        """
        if hypothesis not in HYPOTHESES:
            raise _bad_hypothesis(hypothesis)
        qs = array_in("quantile", quantile, 0.0, 1.0)
        lowest, highest = support_ends(self, hypothesis)

        def rising(x):  # -sf: non-decreasing and right-continuous
            return -float(self.sf(np.array([x]), hypothesis)[0])
        out = [lowest if q == 1 else highest if q == 0 else
               first_reaching(rising, -q, self.atom_losses) for q in qs.ravel().tolist()]
        return np.array(out, dtype=float).reshape(qs.shape)

    def delta(self, epsilon):
        """Exact hockey-stick divergence ``sup_S P(S) - e^eps Q(S) = S_P(eps) - e^eps S_Q(eps)``.

        Parameters
        ----------
        epsilon : array_like of float
            Epsilons.

        Returns
        -------
        numpy.ndarray
            ``delta(epsilon)``, shaped like ``epsilon``.
        """
        eps = np.asarray(epsilon, dtype=float)
        return np.maximum(self.sf(eps, "P") - np.exp(eps) * self.sf(eps, "Q"), 0.0)

    def reversed(self) -> PrivacyLossLaw:
        """Law of the reversed pair ``(Q, P)``: the loss is ``-L``, read under ``Q``.

        Returns
        -------
        PrivacyLossLaw
            A :class:`ReversedLaw` of this one.
        """
        return ReversedLaw(base=self)

    def _cont_cdf_sf(self, x):
        """``(cdf_P, sf_P, cdf_Q, sf_Q)`` of the continuous part at ``x``, the four together:
        laws whose four share work (a loss map) override this."""
        return (
            self._cont_cdf(x, "P"),
            self._cont_sf(x, "P"),
            self._cont_cdf(x, "Q"),
            self._cont_sf(x, "Q"),
        )


@dataclass(frozen=True, eq=False)
class ReversedLaw(PrivacyLossLaw):
    """The pair ``(Q, P)`` of a given law: ``L' = -L`` with ``L`` drawn under ``Q``.

    Attributes
    ----------
    base
        The law of ``(P, Q)``.
    """

    base: PrivacyLossLaw | None = None

    def __post_init__(self):
        b = self.base
        object.__setattr__(self, "atom_losses", -b.atom_losses[::-1])
        object.__setattr__(self, "atom_probs", q_masses(b.atom_probs, b.atom_losses)[::-1])
        object.__setattr__(self, "infinity_mass", b.neg_infinity_mass)
        object.__setattr__(self, "neg_infinity_mass", b.infinity_mass)
        # read by every discretization step: derived once, here
        object.__setattr__(self, "has_continuous_part", b.has_continuous_part)
        lo, hi = b.continuous_support
        object.__setattr__(self, "continuous_support", (-hi, -lo))

    def _cont_cdf(self, x, hypothesis):
        other = "Q" if hypothesis == "P" else "P"
        return self.base._cont_sf(-np.asarray(x), other)

    def _cont_sf(self, x, hypothesis):
        other = "Q" if hypothesis == "P" else "P"
        return self.base._cont_cdf(-np.asarray(x), other)

    def _cont_pdf(self, x, hypothesis):
        other = "Q" if hypothesis == "P" else "P"
        return self.base._cont_pdf(-np.asarray(x), other)

    def _cont_cdf_sf(self, x):
        cdf_p, sf_p, cdf_q, sf_q = self.base._cont_cdf_sf(-np.asarray(x))
        return sf_q, cdf_q, sf_p, cdf_p

    def _cont_tail(self, mass, hypothesis):
        other = "Q" if hypothesis == "P" else "P"
        a, b = self.base._cont_tail(mass, other)
        return -b, -a

    def reversed(self) -> PrivacyLossLaw:
        """The law of the pair in its own order.

        Returns
        -------
        PrivacyLossLaw
            ``base``.
        """
        return self.base


@dataclass(frozen=True, eq=False)
class AtomLaw(PrivacyLossLaw):
    """A law made of atoms only (discrete mechanisms, randomized response).

    Attributes
    ----------
    atom_losses
        The finite losses carrying point masses.
    atom_probs
        Their probabilities under ``P``.
    infinity_mass
        ``P(L = +inf)``.
    neg_infinity_mass
        ``Q(L = -inf)``.
    truncated_mass
        Mass of large losses left out (charged to ``+inf`` by a pessimistic discretization).
    """
