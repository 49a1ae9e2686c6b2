"""Guarantees stated in another currency as composable steps: Gaussian DP (its own Gaussian
pair), zero-concentrated DP and Rényi DP (through the privacy profile they certify). The
conversions and their rounding: ``docs/concepts/imported-guarantees.md``."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from plda._internal.validation import in_range, nonnegative_float, real_sequence
from plda.mechanisms.approximate import MAX_EPSILON
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian import MU_RANGE, Gaussian, GaussianLaw
from plda.mechanisms.law import AtomLaw
from plda.mechanisms.privacy_profile import MAX_POINTS, envelope_law
from plda.mechanisms.renyi_conversion import (
    ZCDP_ORDERS,
    converted_profile,
    zcdp_delta,
    zcdp_epsilon,
)

#: largest zCDP rho accepted (mu = sqrt(2 rho) = 1414)
MAX_RHO = 1e6

def _no_loss() -> AtomLaw:
    """The law of a step that reveals nothing: loss 0 with probability 1."""
    return AtomLaw(atom_losses=np.array([0.0]), atom_probs=np.array([1.0]))


@dataclass(frozen=True)
class GaussianDP(Mechanism):
    """A ``mu``-GDP step: the Gaussian pair ``N(mu, 1)`` against ``N(0, 1)``.

    A step is ``mu``-GDP iff its tradeoff function is at least ``G_mu(alpha) =
    Phi(Phi^-1(1 - alpha) - mu)`` (Dong, Roth & Su 2022, Def. 2.6), the tradeoff of that pair,
    which is therefore its tight dominating pair: the law is :class:`Gaussian`'s with
    ``sigma = 1 / mu``, ``L ~ N(mu^2/2, mu^2)``, and ``k`` steps compose to ``sqrt(k) mu``-GDP.
    ``mu = 0`` (nothing revealed) is the point mass at loss 0.

    Parameters
    ----------
    mu : float
        The Gaussian-DP parameter: 0, or in ``MU_RANGE`` (``[1e-150, 1e15]``).

    Raises
    ------
    TypeError
        If ``mu`` is not a real number.
    ValueError
        If ``mu`` is negative, NaN or infinite, or positive outside ``MU_RANGE``.
    """

    stated_currency = "gdp"

    mu: float

    def __post_init__(self):
        mu = nonnegative_float("mu", self.mu)
        if mu > 0:
            in_range("mu", mu, MU_RANGE[0], MU_RANGE[1], "the Gaussian-DP mu plda certifies")
        object.__setattr__(self, "mu", mu)

    def _remove_law(self):
        return GaussianLaw(mu=self.mu) if self.mu > 0 else _no_loss()

    def _coarsened(self):
        """``mu`` rounded up to a power of ``2^(1/16)`` (a larger ``mu`` dominates)."""
        if self.mu == 0:
            return self
        mu = max(self.mu, 2.0 ** (math.ceil(16 * math.log2(self.mu)) / 16))
        return GaussianDP(mu=min(mu, MU_RANGE[1]))

    def under_replace_one(self) -> GaussianDP:
        """The same step under replace-one: the guarantee is taken as stated.

        Returns
        -------
        GaussianDP
            This mechanism (``mu`` holds under the relation it was proven for).
        """
        return self


@dataclass(frozen=True)
class ZCDP(Mechanism):
    """A ``rho``-zCDP step: ``D_alpha(M(D) || M(D')) <= rho alpha`` for every ``alpha > 1``.

    Accounted through the privacy profile it certifies (:func:`converted_profile` with
    ``eps_alpha = rho alpha``, the conversion of Canonne, Kamath & Steinke 2020, Prop. 12, over
    1201 orders) as a :class:`PrivacyProfile` pair, which dominates every ``rho``-zCDP step.
    The certified lower bound is that of ``GaussianDP(sqrt(2 rho))``, a ``rho``-zCDP step
    (Bun & Steinke 2016), so ``tight`` is False. Composing ``k`` such pairs can be looser than
    converting ``k rho`` once, so the epsilon/delta queries of a composition holding one are
    capped by the conversion of the whole (summed ``rho`` when every step is zCDP, else the
    summed Rényi curves): ``docs/concepts/imported-guarantees.md``. The bracket of a query
    holds the gap between the two analyses (wider than ``accuracy``: 7% at ``rho = 0.5``); it
    is the guarantee's, not the computation's, and comes without an
    :class:`~plda.AccuracyWarning` (``docs/howto/accuracy.md``).

    Parameters
    ----------
    rho : float
        In ``[0, MAX_RHO]``; 0 reveals nothing.

    Raises
    ------
    TypeError
        If ``rho`` is not a real number.
    ValueError
        If ``rho`` is negative, NaN, infinite or above ``MAX_RHO``.
    """

    stated_currency = "zcdp"

    rho: float
    tight = False

    def __post_init__(self):
        object.__setattr__(self, "rho", nonnegative_float("rho", self.rho, upper=MAX_RHO))

    def profile(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``(epsilons, deltas)`` the guarantee certifies, each delta rounded up.

        Returns
        -------
        tuple of numpy.ndarray
            :func:`converted_profile` of ``eps_alpha = rho alpha``.
        """
        return converted_profile(ZCDP_ORDERS, self.rho * ZCDP_ORDERS)

    def _remove_law(self):
        return envelope_law(*self.profile()) if self.rho > 0 else _no_loss()

    def lower_bound_mechanism(self) -> Mechanism:
        """The Gaussian step of the same ``rho``: it is ``rho``-zCDP, so its lower bound holds.

        Returns
        -------
        GaussianDP
            ``GaussianDP(sqrt(2 rho))``; ``GaussianDP(0)`` (no loss, the trivial lower bound)
            where ``sqrt(2 rho)`` is below ``MU_RANGE`` (``rho < 5e-301``).
        """
        mu = math.sqrt(2 * self.rho)
        # below MU_RANGE a GaussianDP is refused (naming its mu, not this rho); a larger mu
        # would be more than rho-zCDP, so the lower bound falls to 0 there
        return GaussianDP(mu=mu if mu >= MU_RANGE[0] else 0.0)

    def under_replace_one(self) -> ZCDP:
        """The same step under replace-one: the guarantee is taken as stated.

        Returns
        -------
        ZCDP
            This mechanism.
        """
        return self


def _orders_and_epsilons(orders, epsilons) -> tuple[tuple[float, ...], tuple[float, ...]]:
    if isinstance(orders, numbers.Real) or isinstance(epsilons, numbers.Real):
        raise TypeError("orders and epsilons must be sequences of real numbers (one per order)")
    alpha = real_sequence("orders", orders, max_length=MAX_POINTS)
    eps = real_sequence("epsilons", epsilons, max_length=MAX_POINTS)
    if len(alpha) != len(eps):
        raise ValueError(
            f"orders and epsilons must have the same length, got {len(alpha)} and {len(eps)}"
        )
    for i, (a, e) in enumerate(zip(alpha, eps, strict=True)):
        if not a > 1:
            raise ValueError(f"orders must be above 1, got orders[{i}] = {a!r}")
        if not 0 <= e <= MAX_EPSILON:  # (the engine squares losses: beyond ~1e154 overflow)
            raise ValueError(f"epsilons must be in [0, {MAX_EPSILON:g}], got epsilons[{i}] = {e!r}")
    return alpha, eps


@dataclass(frozen=True)
class RenyiDP(Mechanism):
    """A step with Rényi-DP bounds ``D_alpha(M(D) || M(D')) <= eps_alpha`` at given orders.

    Each order's bound is used on its own (Mironov 2017). Accounted through the privacy profile
    they certify (:func:`converted_profile`: Canonne, Kamath & Steinke 2020, Prop. 12, the best
    order at each epsilon) as a :class:`PrivacyProfile` pair. The certified lower bound is that
    of the largest Gaussian step within the bounds, ``GaussianDP(mu)`` with
    ``mu^2 = min_alpha 2 eps_alpha / alpha`` (its ``D_alpha`` is ``alpha mu^2 / 2``). In a
    composition, the epsilon/delta upper bound is also capped by the summed Rényi curves of all
    the steps converted once. As for :class:`ZCDP`, the bracket of a query holds the gap
    between the two analyses, without an :class:`~plda.AccuracyWarning`.

    Parameters
    ----------
    orders : sequence of float
        The orders ``alpha``, each finite and above 1.
    epsilons : sequence of float
        ``eps_alpha``, in ``[0, 1e150]``, one per order.

    Raises
    ------
    TypeError
        If an argument is not a sequence of real numbers.
    ValueError
        If the lengths differ, a value is NaN or infinite, an order is not above 1 or an
        epsilon is negative or above ``1e150``.
    """

    stated_currency = "renyi"

    orders: tuple[float, ...]
    epsilons: tuple[float, ...]
    tight = False

    def __post_init__(self):
        alpha, eps = _orders_and_epsilons(self.orders, self.epsilons)
        object.__setattr__(self, "orders", alpha)
        object.__setattr__(self, "epsilons", eps)

    def profile(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``(epsilons, deltas)`` the bounds certify, each delta rounded up.

        Returns
        -------
        tuple of numpy.ndarray
            :func:`converted_profile` of the bounds.
        """
        return converted_profile(self.orders, self.epsilons)

    def _remove_law(self):
        if min(self.epsilons) == 0:  # D_alpha = 0: the two outputs have the same law
            return _no_loss()
        return envelope_law(*self.profile())

    def lower_bound_mechanism(self) -> Mechanism:
        """The largest Gaussian step within the bounds: its lower bound holds for this step.

        Returns
        -------
        GaussianDP
            ``mu^2 = min_alpha 2 eps_alpha / alpha`` (``mu`` brought into ``MU_RANGE``, or 0).
        """
        mu2 = min(2 * e / a for a, e in zip(self.orders, self.epsilons, strict=True))
        # a smaller mu stays within the bounds: 0 below plda's range, 1e15 above it
        mu = min(math.sqrt(mu2), MU_RANGE[1])
        return GaussianDP(mu=mu if mu == 0 or mu >= MU_RANGE[0] else 0.0)

    def under_replace_one(self) -> RenyiDP:
        """The same step under replace-one: the bounds are taken as stated.

        Returns
        -------
        RenyiDP
            This mechanism.
        """
        return self


def zcdp_rho(mechanism: Mechanism) -> float | None:
    """The ``rho`` a step is ``rho``-zCDP at, when plda knows it, else None.

    ``ZCDP(rho)``: ``rho``; ``GaussianDP(mu)`` and ``Gaussian`` (``mu = sensitivity /
    sigma``): ``mu^2 / 2`` (Bun & Steinke 2016, Prop. 1.6). A composition of such steps is
    ``sum rho``-zCDP (ibid., Lemma 1.7).

    Parameters
    ----------
    mechanism : Mechanism
        A step, read under add/remove.

    Returns
    -------
    float or None
        Its ``rho``, or None for a step that is not one of these.
    """
    if isinstance(mechanism, ZCDP):
        return mechanism.rho
    if isinstance(mechanism, (GaussianDP, Gaussian)):
        return mechanism.mu**2 / 2
    return None


def composition_rho(steps) -> float | None:
    """``sum count * rho`` of a composition every step of which is zCDP (:func:`zcdp_rho`).

    Parameters
    ----------
    steps : iterable of (Mechanism, int)
        The composition read under add/remove.

    Returns
    -------
    float or None
        The composition's ``rho`` (Bun & Steinke 2016, Lemma 1.7), or None if a step is not
        zCDP with a known ``rho``.
    """
    total = 0.0
    for mechanism, count in steps:
        rho = zcdp_rho(mechanism)
        if rho is None:
            return None
        total += count * rho
    return total


def zcdp_capped(upper, steps, values, query: str):
    """``upper`` capped by the conversion of the composition's summed ``rho``, if it has one.

    A composition of zCDP steps is ``sum rho``-zCDP; when it holds an imported one (``ZCDP``,
    ``GaussianDP``), converting that once can be tighter than composing each step's dominating
    pair, and is never looser than what plda reports then (plain Gaussians alone: no cap).

    Parameters
    ----------
    upper : numpy.ndarray
        Certified upper bounds of the query at ``values``.
    steps : iterable of (Mechanism, int)
        The composition read under add/remove (:func:`composition_rho`).
    values : numpy.ndarray
        The deltas (``query="epsilon"``) or epsilons (``query="delta"``) asked, shaped as
        ``upper``.
    query : str
        ``"epsilon"`` or ``"delta"``.

    Returns
    -------
    numpy.ndarray
        ``min(upper, conversion)``, or ``upper`` when a step is not zCDP or none is imported.
    """
    steps = tuple(steps)
    if not any(type(mechanism) in (ZCDP, GaussianDP) for mechanism, _ in steps):
        return upper  # plain Gaussians alone: as before, their PLD is all but exact
    rho = composition_rho(steps)
    if rho is None:
        return upper
    converted = zcdp_epsilon(rho, values) if query == "epsilon" else zcdp_delta(rho, values)
    return np.minimum(upper, converted)


