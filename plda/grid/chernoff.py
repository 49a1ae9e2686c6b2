"""The Chernoff tail bound of a pessimistic grid law, for deltas below the FFT's resolution.

``delta(eps) <= P(L = inf) + min_t c(t) exp(log E[e^{tL}; L finite] - t eps)`` with
``c(t) = t^t / (t+1)^(t+1)`` (docs/concepts/discretization.md, "Tiny δ"). The moments come
from a coarse discretization that reaches far into the tail, computed only when a query
needs them (:data:`CHERNOFF_GATE`, read by :class:`~plda.grid.discrete.DiscreteLoss`): a
composition's are the sum of its factors' (:class:`~plda.grid.moments.ComposedTail`).
"""

from __future__ import annotations

import numpy as np

from plda._internal.chernoff import CHERNOFF_LOG_C, CHERNOFF_ORDERS

__all__ = ["CHERNOFF_GATE", "chernoff_delta", "chernoff_epsilon"]

#: the Chernoff bound is consulted where the grid's delta is at most this many times what the
#: grid cannot resolve (its mass at +inf and the bound on its rounding). Above that, what the
#: grid adds to the true delta is at most a thousandth of it besides the discretization's own
#: error, while a Chernoff bound of a composed law exceeds the truth by a factor of order
#: ``t sigma`` (its optimal constant is sharp only for a single atom). Either is a valid upper
#: bound: the gate only decides which work a query does
CHERNOFF_GATE = 1e3


def chernoff_delta(moments, eps: np.ndarray) -> np.ndarray:
    """The Chernoff bound on ``delta`` at ``eps``.

    Parameters
    ----------
    moments
        ``(log_mgf, infinity_mass)`` (:meth:`~plda.grid.discrete.DiscreteLoss.chernoff`), or
        None.
    eps
        Epsilons, any shape.

    Returns
    -------
    numpy.ndarray
        Upper bounds on ``delta``, shaped like ``eps`` (``inf`` without moments).
    """
    if moments is None:
        return np.full(np.shape(eps), np.inf)
    log_mgf, infinity = moments
    t, base = CHERNOFF_ORDERS, log_mgf + CHERNOFF_LOG_C
    flat = np.ravel(eps)
    smallest = np.empty(len(flat))
    for start in range(0, len(flat), 4096):  # chunks keep the (points x orders) array small
        # t eps overflows to inf past eps ~ 1e308 / t: the exponent is then -inf, read below
        with np.errstate(over="ignore", invalid="ignore"):
            exponent = base[None, :] - np.multiply.outer(flat[start : start + 4096], t)
        smallest[start : start + 4096] = np.min(exponent, axis=1)
    # a bound that underflows is rounded up to the smallest double, not down to 0 (the true
    # delta of a Gaussian at eps = 1e5 is 3e-5406995: positive, so 0 would under-report;
    # at a finite eps whose products overflowed, too). It is 0 only where it is exact: at
    # eps = +inf if some order's moment is finite, or when no finite loss has mass
    # (log_mgf = -inf at every order)
    finite_order = bool(np.any(np.isfinite(log_mgf)))
    exact_zero = ((flat == np.inf) & finite_order) | bool(np.all(log_mgf == -np.inf))
    with np.errstate(over="ignore"):  # a bound above 1 says nothing; it is clipped later
        bound = np.where(exact_zero, 0.0, np.maximum(np.exp(smallest), 5e-324))
    # a NaN order (inf - inf in a moment) says nothing: never let it through np.minimum
    bound = np.where(np.isnan(bound), np.inf, bound).reshape(np.shape(eps))
    # 1e-9 relative margin covers rounding in the log-sum-exp of the moments
    return infinity + bound * (1 + 1e-9)


def chernoff_epsilon(moments, d: np.ndarray) -> np.ndarray:
    """The Chernoff bound on ``epsilon`` at ``d``.

    Parameters
    ----------
    moments
        ``(log_mgf, infinity_mass)`` (:meth:`~plda.grid.discrete.DiscreteLoss.chernoff`), or
        None.
    d
        Deltas, any shape.

    Returns
    -------
    numpy.ndarray
        Upper bounds on ``epsilon``, shaped like ``d`` (``inf`` where ``d`` is at most the
        mass at +inf, or without moments).
    """
    d = np.asarray(d, dtype=float)
    if moments is None:
        return np.full(d.shape, np.inf)
    log_mgf, infinity = moments
    t = CHERNOFF_ORDERS
    room = np.ravel(d) - infinity
    with np.errstate(divide="ignore", invalid="ignore"):
        log_room = np.where(room > 0, np.log(np.maximum(room, 1e-320)), -np.inf)
        eps = (log_mgf + CHERNOFF_LOG_C + 1e-9)[None, :] - log_room[:, None]
        eps = np.min(eps / t[None, :], axis=1)
    eps = np.where(room > 0, eps, np.inf)
    return eps.reshape(d.shape)
