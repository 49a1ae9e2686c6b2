"""Rényi DP of a composition from its steps, and the conversion of a Rényi curve to
``(epsilon, delta)``.

The cumulant ``K(alpha) = (alpha - 1) D_alpha`` adds up under composition, so the curve is
summed from per-step bounds (:mod:`plda.conversions.per_step`), never read from the composed
grid. The mathematics: ``docs/tradeoff.md``, "Rényi DP and zCDP".
"""

from __future__ import annotations

import numpy as np

from plda._internal import validation as check
from plda._internal.errors import check_bracket
from plda.bounds import Bounds
from plda.conversions.common import scalar_like
from plda.conversions.composed import ComposedLaws, steps_of
from plda.conversions.cumulants import Cumulant
from plda.conversions.per_step import step_cumulant
from plda.engine.recipe import realized_recipes
from plda.mechanisms.base import DIRECTIONS
from plda.mechanisms.renyi_conversion import (
    epsilon_from_log_delta,
    log_delta_from_renyi,
)

#: default orders of the RDP -> (epsilon, delta) conversion and of the zCDP search
DEFAULT_ORDERS = np.concatenate([1 + np.geomspace(1e-3, 0.5, 30), np.geomspace(1.5, 1e4, 120)])


def check_orders(name: str, value) -> np.ndarray:
    """An argument checked to be Rényi orders: each finite and above 1.

    Parameters
    ----------
    name : str
        The argument's name, for the error messages.
    value : float or array_like
        The orders.

    Returns
    -------
    numpy.ndarray
        The orders, as floats.

    Raises
    ------
    ValueError
        If an order is not finite and above 1.
    TypeError
        If ``value`` is not numeric.
    """
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a number or an array of numbers > 1") from exc
    bad = ~(np.isfinite(arr) & (arr > 1))
    if np.any(bad):
        raise ValueError(f"{name} must be finite and in (1, inf), got {arr[bad].flat[0]!r}")
    return arr


def _cumulant(composed: ComposedLaws, alpha: np.ndarray) -> Cumulant:
    """Bounds on the composition's ``K(alpha) = (alpha - 1) eps_alpha``, worse direction.

    A step that is not ``tight`` (e.g. :class:`~plda.Shuffled`) has laws of a *dominating* pair:
    they bound it from above, but their lower bound brackets that pair, not the step. The lower
    bound comes from the compositions of realized pairs
    (:func:`plda.engine.recipe.realized_recipes`): each is one pair of neighbouring datasets in
    one direction for the whole composition, so its summed divergence is a lower bound, and so
    is the largest of them.
    """
    steps = steps_of(composed)
    upper = _summed(steps, alpha, "upper")
    recipes = realized_recipes(steps) or (steps,)
    lower = np.max([_summed(recipe, alpha, "lower") for recipe in recipes], axis=0)
    lower, upper = np.maximum(lower, 0.0), np.maximum(upper, 0.0)
    check_bracket(lower, upper, query="renyi_bounds")
    return Cumulant(lower=lower, upper=upper)


def _summed(steps, alpha: np.ndarray, bound: str) -> np.ndarray:
    """``max over directions of sum_f count_f K_f(alpha)`` for the ``bound`` of each step."""
    symmetric = all(mechanism.symmetric for mechanism, _ in steps)
    total = np.full(alpha.shape, -np.inf)
    for direction in ("remove",) if symmetric else DIRECTIONS:
        summed = np.zeros(alpha.shape)
        for mechanism, count in steps:
            summed = summed + count * getattr(step_cumulant(mechanism, direction, alpha), bound)
        total = np.maximum(total, summed)
    return total


def renyi_bounds(composed: ComposedLaws, order) -> Bounds:
    """Certified bounds on the Rényi-DP curve ``eps_alpha`` of a composition.

    ``eps_alpha = max_direction sum_f k_f K_f(alpha) / (alpha - 1)`` (Mironov 2017, Prop. 1),
    with the per-step cumulants ``K_f`` bounded by :func:`~plda.conversions.per_step.step_cumulant`;
    the lower bound of a step that only dominates comes from its realized pairs.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    order : float or array_like
        Rényi orders ``alpha > 1`` (any real, vectorized).

    Returns
    -------
    Bounds
        ``(lower, upper)`` on ``eps_alpha``, shaped like ``order``; ``inf`` where the curve is
        infinite (a mass at infinite loss, e.g. an ``(epsilon, delta > 0)`` step).

    Raises
    ------
    ValueError
        If an order is not finite and above 1.
    TypeError
        If ``order`` is not numeric.
    """
    alpha = check_orders("order", order)
    flat = np.atleast_1d(alpha).ravel()
    k = _cumulant(composed, flat)
    lower = (k.lower / (flat - 1)).reshape(alpha.shape)
    upper = (k.upper / (flat - 1)).reshape(alpha.shape)
    return Bounds(lower=scalar_like(lower, order), upper=scalar_like(upper, order))


def renyi(composed: ComposedLaws, order):
    """Certified Rényi-DP curve: the composition is ``(alpha, eps_alpha)``-RDP at each order.

    The upper side of :func:`renyi_bounds`: ``eps_alpha = max_direction sum_f k_f
    D_alpha(step_f)`` (Mironov 2017, Prop. 1), each step's divergence bounded from its per-step
    law, never from the composed grid.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    order : float or array_like
        Rényi orders ``alpha > 1``.

    Returns
    -------
    float or numpy.ndarray
        Upper bounds on ``eps_alpha``, shaped like ``order``.

    Raises
    ------
    ValueError
        If an order is not finite and above 1.
    TypeError
        If ``order`` is not numeric.
    """
    return renyi_bounds(composed, order).upper


# ------------------------------------------------------------- conversion
def _check_orders(orders) -> np.ndarray:
    alpha = np.atleast_1d(check_orders("orders", DEFAULT_ORDERS if orders is None else orders))
    if not alpha.size:
        raise ValueError("orders must hold at least one Rényi order above 1, got none")
    return alpha


def epsilon_from_renyi(curve_orders, curve_epsilons, delta):
    """Smallest ``epsilon`` a Rényi-DP curve certifies at ``delta``.

    ``min_alpha eps_alpha + log(1 - 1/alpha) - (log delta + log alpha)/(alpha - 1)``, at least 0
    (Canonne, Kamath & Steinke 2020, Prop. 12; Asoodeh et al. 2021).

    Parameters
    ----------
    curve_orders : array_like
        The orders ``alpha`` of the curve, each finite and above 1.
    curve_epsilons : array_like
        ``eps_alpha`` at those orders, one per order.
    delta : float or array_like
        Where epsilon is read, in [0, 1].

    Returns
    -------
    float or numpy.ndarray
        Epsilon, shaped like ``delta``.

    Raises
    ------
    ValueError
        If an order is not above 1, the curve has NaN or the wrong length, or a delta is
        outside [0, 1].
    TypeError
        If an argument is not numeric.
    """
    alpha = np.atleast_1d(check_orders("orders", curve_orders))
    eps_alpha = np.atleast_1d(np.asarray(curve_epsilons, dtype=float))
    if eps_alpha.shape != alpha.shape or np.any(np.isnan(eps_alpha)):
        raise ValueError("curve_epsilons must be one number per order, without NaN")
    d = check.array_in("delta", delta, 0.0, 1.0)
    flat = np.ravel(d)
    with np.errstate(divide="ignore"):
        log_delta = np.log(flat)[:, None]
    eps = epsilon_from_log_delta(alpha[None, :], eps_alpha[None, :], log_delta)
    eps = np.where(np.isnan(eps), np.inf, eps)
    out = np.maximum(np.min(eps, axis=1), 0.0).reshape(d.shape)
    return scalar_like(out, delta)


def delta_from_renyi(curve_orders, curve_epsilons, epsilon):
    """Smallest ``delta`` a Rényi-DP curve certifies at ``epsilon``.

    ``min_alpha exp((alpha - 1)(eps_alpha - epsilon)) (1 - 1/alpha)^(alpha - 1) / alpha``, at
    most 1 (Canonne, Kamath & Steinke 2020, Prop. 12).

    Parameters
    ----------
    curve_orders : array_like
        The orders ``alpha`` of the curve, each finite and above 1.
    curve_epsilons : array_like
        ``eps_alpha`` at those orders, one per order.
    epsilon : float or array_like
        Where delta is read, ``>= 0``.

    Returns
    -------
    float or numpy.ndarray
        Delta, shaped like ``epsilon``.

    Raises
    ------
    ValueError
        If an order is not above 1, the curve has NaN or the wrong length, or an epsilon is
        negative.
    TypeError
        If an argument is not numeric.
    """
    alpha = np.atleast_1d(check_orders("orders", curve_orders))
    eps_alpha = np.atleast_1d(np.asarray(curve_epsilons, dtype=float))
    if eps_alpha.shape != alpha.shape or np.any(np.isnan(eps_alpha)):
        raise ValueError("curve_epsilons must be one number per order, without NaN")
    e = check.array_in("epsilon", epsilon, 0.0, np.inf)
    flat = np.ravel(e)
    log_delta = log_delta_from_renyi(alpha[None, :], eps_alpha[None, :], flat[:, None])
    log_delta = np.where(np.isnan(log_delta), np.inf, log_delta)
    out = np.minimum(np.exp(np.min(log_delta, axis=1)), 1.0).reshape(e.shape)
    return scalar_like(out, epsilon)


def _refined(composed, orders, score):
    """Orders plus a fine grid around the best of them for ``score`` (any order is valid, so
    refining only tightens the conversion)."""
    alpha = _check_orders(orders)
    if orders is not None:
        return alpha, renyi(composed, alpha)
    curve = renyi(composed, alpha)
    best = np.unique(np.argmin(np.atleast_2d(score(alpha, curve)), axis=1))
    fine = [np.linspace(alpha[max(i - 1, 0)], alpha[min(i + 1, len(alpha) - 1)], 41) for i in best]
    fine = np.concatenate(fine)
    return np.concatenate([alpha, fine]), np.concatenate([curve, renyi(composed, fine)])


def renyi_epsilon(composed: ComposedLaws, delta, *, orders=None):
    """Certified ``epsilon(delta)`` by RDP accounting, to compare with the PLD's.

    The certified Rényi curve of the composition, converted with :func:`epsilon_from_renyi`:
    what an RDP accountant reports for the same composition.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    delta : float or array_like
        Where epsilon is read, in [0, 1].
    orders : array_like, optional
        The orders of the conversion; default: a geometric grid refined around its best order.

    Returns
    -------
    float or numpy.ndarray
        Epsilon, shaped like ``delta``.

    Raises
    ------
    ValueError
        If a delta is outside [0, 1] or an order is not above 1.
    TypeError
        If an argument is not numeric.
    """
    d = check.array_in("delta", delta, 0.0, 1.0)
    if not d.size:  # nothing asked (the orders are still checked)
        _check_orders(orders)
        return np.zeros(d.shape)
    flat = np.atleast_1d(d).ravel()

    def score(alpha, curve):
        with np.errstate(divide="ignore", invalid="ignore"):
            penalty = np.log1p(-1 / alpha) - np.log(alpha) / (alpha - 1)
            return curve[None, :] + penalty[None, :] - np.log(flat)[:, None] / (alpha - 1)

    alpha, curve = _refined(composed, orders, score)
    return epsilon_from_renyi(alpha, curve, delta)


def renyi_delta(composed: ComposedLaws, epsilon, *, orders=None):
    """Certified ``delta(epsilon)`` by RDP accounting, to compare with the PLD's.

    The certified Rényi curve of the composition, converted with :func:`delta_from_renyi` (see
    :func:`renyi_epsilon`).

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    epsilon : float or array_like
        Where delta is read, ``>= 0``.
    orders : array_like, optional
        The orders of the conversion; default: a geometric grid refined around its best order.

    Returns
    -------
    float or numpy.ndarray
        Delta, shaped like ``epsilon``.

    Raises
    ------
    ValueError
        If an epsilon is negative or an order is not above 1.
    TypeError
        If an argument is not numeric.
    """
    e = check.array_in("epsilon", epsilon, 0.0, np.inf)
    if not e.size:  # nothing asked (the orders are still checked)
        _check_orders(orders)
        return np.zeros(e.shape)
    flat = np.atleast_1d(e).ravel()

    def score(alpha, curve):
        with np.errstate(invalid="ignore", over="ignore"):
            return (alpha - 1)[None, :] * (curve[None, :] - flat[:, None]) + (
                (alpha - 1) * np.log1p(-1 / alpha) - np.log(alpha)
            )[None, :]

    alpha, curve = _refined(composed, orders, score)
    return delta_from_renyi(alpha, curve, epsilon)
