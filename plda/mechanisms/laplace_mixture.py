r"""Laplace noise on a randomly scaled shift (a mixture of Laplace laws): groups of records under
Poisson sampling with a Laplace base.

:class:`LaplaceMixture` is the pair ``sum_i p_i Lap(c_i, b)`` against ``Lap(0, b)``,
:class:`LaplaceMixtureLaw` its privacy-loss law, in closed form piece by piece. Why a group's
mixture is realized and dominating under add/remove: ``docs/howto/user-level-privacy.md``
("A Laplace base").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plda._internal.validation import in_range, positive_float
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian_mixture import checked_mixture, distinct_components
from plda.mechanisms.laplace import MAX_EPSILON, LaplaceLaw
from plda.mechanisms.law import AtomLaw, PrivacyLossLaw

__all__ = ["LaplaceMixture", "LaplaceMixtureLaw", "laplace_interval_mass"]



def laplace_interval_mass(center: float, a, c):
    """``P(a < Y < c)`` for ``Y ~ Lap(center, 1)``, ``a <= c``, without cancellation.

    Each case is a product of ``exp`` of a non-positive number and ``-expm1`` of a
    non-positive number, or a sum of two such terms (never ``1`` minus something near ``1``).

    Parameters
    ----------
    center : float
        The location.
    a, c : array_like of float
        The ends, ``a <= c`` (infinite ends allowed).

    Returns
    -------
    numpy.ndarray
        The masses, in ``[0, 1]``.
    """
    a = np.asarray(a, dtype=float) - center
    c = np.asarray(c, dtype=float) - center
    with np.errstate(invalid="ignore", over="ignore"):
        width = np.minimum(c - a, 1e300)  # an infinite interval: expm1(-inf) = -1
        above = 0.5 * np.exp(-np.maximum(a, 0.0)) * -np.expm1(-width)  # both ends >= 0
        below = 0.5 * np.exp(np.minimum(c, 0.0)) * -np.expm1(-width)  # both ends <= 0
        # straddling 0: (1 - e^a)/2 + (1 - e^-c)/2
        across = 0.5 * -np.expm1(np.minimum(a, 0.0)) + 0.5 * -np.expm1(-np.maximum(c, 0.0))
    return np.where(a >= 0, above, np.where(c <= 0, below, across))


@dataclass(frozen=True, eq=False)
class LaplaceMixtureLaw(PrivacyLossLaw):
    r"""The law of ``P = sum_i p_i Lap(u_i, 1)`` against ``Q = Lap(0, 1)``, ``0 <= u_1 < ...``.

    The loss ``l(y) = log sum_i p_i e^(|y| - |y - u_i|)`` does not decrease in ``y``: it is
    ``L_lo = log sum_i p_i e^-u_i`` for ``y <= 0`` and ``L_hi = log sum_i p_i e^u_i`` for
    ``y >= u_max`` (two atoms), and on ``[u_m, u_(m+1)]``

        ``l(y) = log(A_m + B_m e^(2y))``,  ``A_m = sum_(u_i <= u_m) p_i e^u_i``,
        ``B_m = sum_(u_i > u_m) p_i e^-u_i``,

    so the output at loss ``x`` is ``y = log((e^x - A_m) / B_m) / 2``, with
    ``e^x - A_m = expm1(x) + (1 - A_m)`` and ``1 - A_m`` summed exactly (``math.fsum``) from
    ``sum_(u_i > u_m) p_i - sum_(u_i <= u_m) p_i expm1(u_i)``. The tails are sums of
    :func:`laplace_interval_mass`.

    Attributes
    ----------
    shifts
        The distinct ``u_i`` (shift over scale), increasing, the largest positive.
    weights
        Their probabilities, summing to 1.
    """

    shifts: tuple[float, ...] = (0.0, 1.0)
    weights: tuple[float, ...] = (0.5, 0.5)
    has_continuous_part = True

    def __post_init__(self):
        u, p = np.array(self.shifts, dtype=float), np.array(self.weights, dtype=float)
        top = float(u[-1])
        # the atoms, in logs: L = log sum p e^(+-u) with the largest term taken out
        lo = _log_sum_exp(np.log(p) - u)
        hi = _log_sum_exp(np.log(p) + u)
        below = float(np.sum(p * 0.5 * np.exp(-u)))  # P(Y <= 0)
        above = float(np.sum(p * 0.5 * np.exp(u - top)))  # P(Y >= u_max)
        object.__setattr__(self, "atom_losses", np.array([lo, hi]))
        object.__setattr__(self, "atom_probs", np.array([below, above]))
        # per segment m (y in [u_m, u_(m+1)], u_0 = 0 prepended when 0 is not a shift):
        # A_m, B_m and 1 - A_m, and the loss at the segment's start
        starts = u if u[0] == 0.0 else np.concatenate([[0.0], u])
        a_parts, b_parts, one_minus_a, begin = [], [], [], []
        for start in starts[:-1]:
            inside = u <= start
            a_parts.append(float(np.sum(p[inside] * np.exp(u[inside]))))
            b_parts.append(float(np.sum(p[~inside] * np.exp(-u[~inside]))))
            one_minus_a.append(math.fsum([*p[~inside], *(-p[inside] * np.expm1(u[inside]))]))
            begin.append(float(np.logaddexp(np.log(a_parts[-1]) if a_parts[-1] > 0 else -np.inf,
                                            np.log(b_parts[-1]) + 2.0 * start)))
        object.__setattr__(self, "_starts", starts)
        object.__setattr__(self, "_a", np.array(a_parts))
        object.__setattr__(self, "_b", np.array(b_parts))
        object.__setattr__(self, "_one_minus_a", np.array(one_minus_a))
        object.__setattr__(self, "_begin", np.array(begin))

    @property
    def continuous_support(self) -> tuple[float, float]:  # type: ignore[override]
        """``(L_lo, L_hi)``, the two atoms."""
        return (float(self.atom_losses[0]), float(self.atom_losses[1]))

    def output(self, loss):
        """The output ``y`` (in units of the scale) whose loss is ``loss``.

        Parameters
        ----------
        loss : array_like of float
            Losses, clipped to the continuous support.

        Returns
        -------
        numpy.ndarray
            ``y`` in ``[0, u_max]``.
        """
        lo, hi = self.continuous_support
        x = np.clip(np.asarray(loss, dtype=float), lo, hi)
        m = np.clip(np.searchsorted(self._begin, x, side="right") - 1, 0, len(self._begin) - 1)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            excess = np.expm1(x) + self._one_minus_a[m]  # e^x - A_m, >= B_m e^(2 u_m) > 0
            y = 0.5 * (np.log(np.maximum(excess, 0.0)) - np.log(self._b[m]))
        # kept inside the segment that x selects, so y never decreases as x grows. Where the
        # components above are negligible (B_m e^(2y) below an ulp of e^x) the loss is flat
        # to within an ulp over the segment and excess is rounding noise: y may land anywhere
        # in it, which moves mass by less than an ulp of loss. The ends are exact: no
        # continuous mass above the top loss (it would be read as mass at +inf), none below
        # the bottom one.
        y = np.clip(np.where(np.isfinite(y), y, self._starts[m]), self._starts[m],
                    self._starts[m + 1])
        return np.where(x >= hi, self._starts[-1], np.where(x <= lo, 0.0, y))

    def _tails(self, x, hypothesis):
        """Continuous mass below and above the loss ``x``: ``(0, y)`` and ``(y, u_max)``."""
        y = self.output(x)
        top = self._starts[-1]
        if hypothesis == "Q":
            return laplace_interval_mass(0.0, 0.0, y), laplace_interval_mass(0.0, y, top)
        below = sum(w * laplace_interval_mass(c, 0.0, y)
                    for c, w in zip(self.shifts, self.weights, strict=True))
        above = sum(w * laplace_interval_mass(c, y, top)
                    for c, w in zip(self.shifts, self.weights, strict=True))
        return np.asarray(below, dtype=float), np.asarray(above, dtype=float)

    def _cont_cdf(self, x, hypothesis):
        return self._tails(x, hypothesis)[0]

    def _cont_sf(self, x, hypothesis):
        return self._tails(x, hypothesis)[1]

    def _cont_pdf(self, x, hypothesis):
        # change of variables: dl/dy = 2 B_m e^(2y) / e^l on a segment, the P density of y
        # is sum_i p_i e^(-|y - u_i|) / 2, and under Q it is e^(-l) times the one under P
        x = np.asarray(x, dtype=float)
        lo, hi = self.continuous_support
        inside = (x > lo) & (x < hi)
        y = self.output(x)
        m = np.clip(np.searchsorted(self._begin, np.clip(x, lo, hi), side="right") - 1, 0,
                    len(self._begin) - 1)
        density = sum(w * 0.5 * np.exp(-np.abs(y - c))
                      for c, w in zip(self.shifts, self.weights, strict=True))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            slope = 2.0 * self._b[m] * np.exp(2.0 * y - x)
            out = density / slope
            if hypothesis == "Q":
                out = out * np.exp(-x)
        return np.where(inside & np.isfinite(out), out, 0.0)

    def _cont_tail(self, mass, hypothesis):
        return self.continuous_support


def _log_sum_exp(values: np.ndarray) -> float:
    top = float(np.max(values))
    return top + math.log(float(np.sum(np.exp(values - top))))


@dataclass(frozen=True)
class LaplaceMixture(Mechanism):
    """Laplace noise of scale ``b`` on a shift ``c_i`` of probability ``p_i``.

    The pair ``sum_i p_i Lap(c_i, b)`` (with the protected unit) against ``Lap(0, b)``
    (without it), in both add/remove directions. ``PoissonSampled(Laplace(b, Δ), q,
    group_size=K)`` is the binomial mixture ``c_k = k Δ``, ``p_k = Bin(k; K, q)``. One shift of
    probability 1 is :class:`~plda.Laplace`. Under replace-one it has no analysis in plda.

    Parameters
    ----------
    scale : float
        The noise scale ``b``, in ``(0, inf)``.
    sensitivities : sequence of float
        The shifts ``c_i >= 0``, finite; ``max c_i / b`` (over positive ``p_i``) in
        ``[1e-300, 700]`` unless every shift is 0.
    probabilities : sequence of float
        ``p_i`` in ``[0, 1]``, one per shift, summing to 1 within 1e-12 (they are divided by
        their sum).

    Raises
    ------
    TypeError
        If ``scale`` is not a real number, or ``sensitivities`` or ``probabilities`` is not a
        sequence of real numbers.
    ValueError
        If ``scale`` is not a finite positive number; if the sequences are empty, longer than
        10001, differ in length or hold a NaN or an infinity; if a shift is negative, a
        probability outside ``[0, 1]`` or their sum off 1 by more than 1e-12; or if
        ``max c_i / b`` is outside its range.

    Examples
    --------
    >>> import plda
    >>> step = plda.PoissonSampled(plda.Laplace(1.0), 0.1, group_size=3)
    >>> round(plda.PrivacyLossDistribution.from_mechanism(step, 10).epsilon(1e-6), 2)
    3.98
    """

    scale: float
    sensitivities: tuple[float, ...]
    probabilities: tuple[float, ...]

    def __post_init__(self):
        scale = positive_float("scale", self.scale)
        sensitivities, probabilities = checked_mixture(self.sensitivities, self.probabilities)
        top = max(c for c, p in zip(sensitivities, probabilities, strict=True) if p > 0)
        if top > 0:
            # past 700 the atom at L_lo has a P-mass below the smallest double (as Laplace)
            in_range("max(sensitivities) / scale", top / scale, 1e-300, MAX_EPSILON,
                     "the pure-DP epsilon of a Laplace step plda certifies")
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "sensitivities", sensitivities)
        object.__setattr__(self, "probabilities", probabilities)

    def components(self) -> tuple[tuple[float, ...], tuple[float, ...]]:
        """The distinct shifts in units of ``scale`` and their probabilities.

        Returns
        -------
        tuple of (tuple of float, tuple of float)
            ``(shifts, weights)``: the distinct ``c_i / b`` of positive probability, in
            increasing order, and their probabilities (those of equal shifts added, all divided
            by the sum of ``probabilities``).
        """
        return distinct_components(self.sensitivities, self.probabilities, self.scale)

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        """Whether both directions have one law: only with a single shift (a Laplace)."""
        return len(self.components()[0]) == 1

    def _remove_law(self) -> PrivacyLossLaw:
        shifts, weights = self.components()
        if max(shifts) == 0:  # nothing is released: the loss is 0
            return AtomLaw(atom_losses=np.zeros(1), atom_probs=np.ones(1))
        if len(shifts) == 1:  # one shift: the Laplace mechanism
            return LaplaceLaw(epsilon0=shifts[0])
        return LaplaceMixtureLaw(shifts=shifts, weights=weights)

    def under_replace_one(self) -> Mechanism:
        """Refused: a mixture has no replace-one analysis in plda.

        Returns
        -------
        Mechanism
            Never: the call always raises.

        Raises
        ------
        ValueError
            Always, saying how plda.theorems.group_privacy bounds it.
        """
        raise ValueError(
            "LaplaceMixture (a group under Poisson sampling with a Laplace base) has no "
            "replace-one analysis in plda: its add/remove pair is proven to dominate, but no "
            "replace-one pair is known to dominate every substitution of a group; a "
            "substitution of K records is 2K add/remove links, so plda.theorems."
            "group_privacy(epsilon, delta, 2 * K) on the relation='add_remove' guarantee of "
            "one record bounds it"
        )
