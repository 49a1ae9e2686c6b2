"""A composition's epsilon and delta bounds capped by its conversion in other currencies.

The grid's answer is certified, and so is the whole composition read in Rényi or zCDP currency
(each step's certified curve, summed, converted once): the smaller holds. The conversion is
read where it can win: a step imported in Rényi or zCDP currency, a delta the grid resolves by
its Chernoff bound alone, and an answer looser than the composition's zCDP conversion (a grid
that failed). The mathematics: ``docs/tradeoff.md``, "Rényi DP and zCDP".
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal.caches import remembered
from plda._internal.floats import UNIT_ROUNDOFF
from plda.conversions.per_step import largest_loss, step_cumulant, step_rho
from plda.conversions.renyi import DEFAULT_ORDERS, delta_from_renyi, epsilon_from_renyi
from plda.engine.gaps import monotone_envelope
from plda.engine.recipe import add_remove_steps
from plda.mechanisms.base import DIRECTIONS
from plda.mechanisms.imported import RenyiDP, zcdp_capped
from plda.mechanisms.renyi_conversion import ROUND_UP, TINY

#: at deltas up to this, an epsilon upper bound is also capped by the Rényi conversion
#: (:func:`currency_capped`): a tilted composition keeps its laws' far tails to about 1e-307
#: each, so with many steps their mass at +inf exceeds delta and only the Chernoff bound
#: answers (DP-SGD, q = 0.01, sigma = 1, 1000 steps: 123.7 at 1e-304, 85.5 at 1e-300); such
#: queries take seconds, the conversion milliseconds
CHERNOFF_ONLY = 1e-290
#: the orders of :func:`renyi_capped`: the default ones and dp_accounting's
CAP_ORDERS = np.union1d(DEFAULT_ORDERS, np.concatenate(
    [1 + np.arange(1, 101) / 10, np.arange(12, 64), [128, 256, 512]]))


def _renyi_stated(mechanism) -> bool:
    """Whether a step is stated in Rényi currency: ``ZCDP``, ``RenyiDP``, or a step that
    carries a ``RenyiDP`` as its ``renyi_guarantee`` (``RepeatAndSelect``)."""
    return getattr(mechanism, "stated_currency", None) in ("zcdp", "renyi")


def _stated_orders(mechanism) -> tuple:
    if type(mechanism) is RenyiDP:
        return mechanism.orders
    stated = getattr(mechanism, "renyi_guarantee", None)
    return stated.orders if isinstance(stated, RenyiDP) else ()


def renyi_capped(upper, steps, values, query: str):
    """``upper`` capped by the RDP accounting of the whole composition, if Rényi-stated.

    Applies when the composition holds a guarantee stated in Rényi currency (``ZCDP``,
    ``RenyiDP``). Such a step is composed through the pair of the profile it certifies, the
    worst step with that profile; the Rényi curves of all the steps add up instead (Mironov
    2017), and their sum converted once (:func:`epsilon_from_renyi`, :func:`delta_from_renyi`,
    at ``CAP_ORDERS`` and every order a ``RenyiDP`` states, each step's curve there remembered
    on its mechanism so that a query costs a sum) can be tighter. Both are
    certified, so is the smaller; the conversion is rounded up by ``ROUND_UP`` (a delta that
    underflows is reported as the smallest float).

    Parameters
    ----------
    upper : numpy.ndarray
        Certified upper bounds of the query at ``values``.
    steps : iterable of (Mechanism, int)
        The composition read under add/remove.
    values : numpy.ndarray
        The deltas (``query="epsilon"``) or epsilons (``query="delta"``) asked, shaped as
        ``upper``.
    query : str
        ``"epsilon"`` or ``"delta"``.

    Returns
    -------
    numpy.ndarray
        ``min(upper, conversion)``, or ``upper`` without a Rényi-currency step.
    """
    steps = tuple(steps)
    if not any(_renyi_stated(mechanism) for mechanism, _ in steps):
        return upper
    return np.minimum(upper, _renyi_converted(steps, values, query, upper))


def _renyi_converted(steps: tuple, values, query: str, upper):
    """The whole composition's RDP accounting at ``values`` (:func:`renyi_capped`): each step's
    certified Rényi curve summed, then converted and rounded up; ``upper`` answers a delta
    query at ``epsilon = inf``."""
    # a fixed grid of orders (the default, dp_accounting's, and every order a RenyiDP states),
    # so that each step's curve is computed once per mechanism, not at every query
    stated = tuple(sorted({a for m, _ in steps if _renyi_stated(m) for a in _stated_orders(m)}))
    alpha = np.union1d(CAP_ORDERS, stated)
    symmetric = all(mechanism.symmetric for mechanism, _ in steps)
    curve = np.full(alpha.shape, -np.inf)
    for direction in ("remove",) if symmetric else DIRECTIONS:
        summed = np.zeros(alpha.shape)
        for mechanism, count in steps:
            summed = summed + count * remembered(
                mechanism, ("renyi_cap", direction, stated),
                lambda m=mechanism, d=direction: step_cumulant(m, d, alpha).upper)
        curve = np.maximum(curve, summed)
    curve = np.maximum(curve, 0.0) / (alpha - 1)
    with np.errstate(over="ignore"):  # (a curve of 1e9 Gaussians: its delta is 1)
        if query == "epsilon":
            return np.asarray(epsilon_from_renyi(alpha, curve, values)) * (1 + ROUND_UP)
        converted = np.asarray(delta_from_renyi(alpha, curve, values)) * (1 + ROUND_UP)
    converted = np.clip(converted, TINY, 1.0)
    # delta at eps = inf is the mass at infinite loss: none where a Renyi divergence is finite
    at_infinity = 0.0 if np.any(np.isfinite(curve)) else upper
    return np.where(np.isinf(values), at_infinity, converted)


def currency_capped(upper, values, *, components, relation: str, query: str, missed=None):
    """``upper`` never looser than the whole composition converted in its own currency.

    When a component is a guarantee imported in zCDP or Rényi currency (``ZCDP``,
    ``GaussianDP``, ``RenyiDP``): capped by the summed ``rho`` converted when every step is
    zCDP (:func:`~plda.mechanisms.imported.zcdp_capped`), and by the summed Rényi curves
    converted when a step is ``ZCDP`` or ``RenyiDP`` (:func:`renyi_capped`). And an epsilon
    bound at a delta in ``(0, CHERNOFF_ONLY]``, or ``+inf`` at any delta above 0, is capped by
    the summed Rényi curves converted, where each step has a finite certified curve. There
    the grid's answer may be its Chernoff bound alone, and below about 1e-310 not even that:
    a discretization's far tail moves its subnormal masses to ``+inf``, so a Gaussian's grid
    answered ``+inf`` where its Rényi curve gives a finite bound (``Gaussian(1)`` at
    ``1e-310``: about 38.2, exactly 38.07). So is any bound looser than the composition's
    zCDP conversion, NaN, or a delta bound of 1 (a grid that failed, :func:`_beyond_zcdp`).
    Anything else is returned as it is, after one look at the component types and one sum of
    their closed-form ``rho``.

    Parameters
    ----------
    upper : numpy.ndarray
        Certified upper bounds of the query at ``values``.
    values : numpy.ndarray
        The deltas (``query="epsilon"``) or epsilons (``query="delta"``) asked.
    components : iterable of (Mechanism, int)
        The composition, as given (the relation not yet applied).
    relation : str
        ``"add_remove"`` or ``"replace_one"``.
    query : str
        ``"epsilon"`` or ``"delta"``.
    missed : numpy.ndarray of bool, optional
        Where the grid's bracket missed its accuracy (shaped as ``upper``): only there is a
        grid read as failed or as its Chernoff bound alone. A bracket within the accuracy
        holds the truth, which no conversion undercuts, so capping it gains less than the
        accuracy. None (a caller without the lower bound): everywhere.

    Returns
    -------
    numpy.ndarray
        The capped upper bounds.
    """
    components, values = tuple(components), np.asarray(values)
    imported = any(getattr(m, "stated_currency", None) for m, _ in components)
    steps = add_remove_steps(components, relation)
    where = np.ones(np.shape(upper), dtype=bool) if missed is None else np.asarray(missed)
    unbounded = np.zeros(np.shape(upper), dtype=bool)
    if where.any():  # (the zCDP reading: a sum of closed forms, remembered per mechanism)
        unbounded = _beyond_zcdp(upper, steps, values, query)
        if query == "epsilon":
            unbounded |= (values > 0) & (np.isinf(upper) | (values <= CHERNOFF_ONLY))
        else:  # a delta of 1 says nothing (where the zCDP conversion says nothing either)
            unbounded |= ~(np.asarray(upper) < 1.0)
        unbounded &= where
    # epsilon(0), where the Rényi conversion says nothing
    at_zero = where & (values == 0) if query == "epsilon" else np.zeros(np.shape(upper), bool)
    unbounded &= ~at_zero
    if not imported and not np.any(unbounded | at_zero):
        return upper
    if imported:
        upper = renyi_capped(zcdp_capped(upper, steps, values, query), steps, values, query)
    if np.any(at_zero):
        # epsilon(0) is the largest composed loss: at most the steps' largest losses summed
        # (pure DP composes additively), finite where every step's loss is bounded
        upper = np.where(at_zero, np.fmin(upper, _pure_epsilon(steps)), upper)
    if np.any(unbounded):
        # only where the grid's answer is the Chernoff bound, nothing or a failure: an answer
        # must not depend on the other deltas asked along with it (fmin: a NaN never stands)
        converted = _renyi_converted(steps, values, query, upper)
        upper = np.where(unbounded, np.fmin(upper, converted), upper)
        # the cap may undercut the grid's bound at a larger delta asked with it, which an
        # upper bound at a smaller delta bounds too: every answer stays monotone in delta
        flat = np.ravel(upper)
        upper = monotone_envelope(values.ravel(), flat, flat)[1].reshape(np.shape(upper))
    return upper


def _pure_epsilon(steps: tuple) -> float:
    """``sum k eps_k`` over the steps' largest absolute losses, rounded up (``inf`` if one is
    unbounded): the composition is that pure-DP (Dwork, McSherry, Nissim & Smith 2006)."""
    total = math.fsum(count * remembered(m, "largest_loss", lambda m=m: largest_loss(m))
                      for m, count in steps)
    # each product is rounded (u), fsum once more: widened by twice their count
    return total * (1 + 2 * (len(steps) + 1) * UNIT_ROUNDOFF)


def _beyond_zcdp(upper, steps: tuple, values: np.ndarray, query: str) -> np.ndarray:
    """Where ``upper`` is looser than the composition's zCDP conversion, or NaN.

    The conversion is the closed form of Bun & Steinke 2016 (Prop. 1.3: ``eps <= rho +
    2 sqrt(rho log(1/delta))``, ``delta <= exp(-(eps - rho)^2 / (4 rho))`` for ``eps >= rho``)
    of each step's closed-form ``rho`` summed (:func:`~plda.conversions.per_step.step_rho`; no
    amplification by sampling): microseconds. A PLD that works is far tighter; a grid answer
    that loose has failed (a sampled step whose losses, about 1e-11, are comparable with its
    grid's rounding held 0.2% too much mass, and 1e5 of them composed to an error term of
    1e86), so the Rényi conversion is read there."""
    rho = math.fsum(count * remembered(m, "step_rho", lambda m=m: step_rho(m))
                    for m, count in steps)
    if not 0 < rho < math.inf:
        return np.zeros(np.shape(upper), dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if query == "epsilon":
            converted = rho + 2 * np.sqrt(rho * -np.log(values))
        else:
            converted = np.where(values > rho, np.exp(-((values - rho) ** 2) / (4 * rho)), 1.0)
        return ~(np.asarray(upper) <= converted)
