"""Concurrent composition of interactive mechanisms (Vadhan & Wang 2021)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from plda.theorems.common import Guarantee, delta_value, parse_steps, round_up, sum_up
from plda.theorems.optimum import optimal


# ----------------------------------------------------------------------------- concurrent
def _concurrent_order(epsilons: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """Order minimising ``delta_g = sum_i e^{sum_{j<i} eps_j} delta_i``.

    Exchange argument: swapping adjacent steps ``a, b`` changes only their two terms, ``e^E
    (delta_a + e^{eps_a} delta_b)`` versus ``e^E (delta_b + e^{eps_b} delta_a)`` (``E`` = the sum of
    the epsilons before them; the terms after them see the same sum). ``a`` first is no worse iff
    ``delta_b (e^{eps_a} - 1) <= delta_a (e^{eps_b} - 1)``, i.e. iff ``delta_a / (e^{eps_a} - 1) >=
    delta_b / (e^{eps_b} - 1)``. This is a key comparison, so any order can be bubble-sorted into
    decreasing key without increasing delta_g: sorting by decreasing key is optimal (a step with
    ``eps = 0`` has key ``+inf``: it multiplies nothing after it).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        key = np.where(epsilons > 0, deltas / np.expm1(epsilons), np.inf)
    return np.argsort(-key, kind="stable")


def _concurrent_delta_up(epsilons: np.ndarray, deltas: np.ndarray) -> float:
    order = _concurrent_order(epsilons, deltas)
    e, d = epsilons[order], deltas[order]
    with np.errstate(over="ignore", invalid="ignore"):  # a prefix sum beyond 1.8e308 is inf
        prefix = np.concatenate([[0.0], np.cumsum(e)[:-1]])
        terms = np.where(d > 0, np.exp(prefix) * d, 0.0)  # no inf * 0 for pure steps
    value = sum_up(terms.tolist())  # fsum raises where a partial sum overflows
    # cumsum/exp errors: relative ~ (n + |prefix|) u per term
    return min(1.0, round_up(value, 16 + 4 * len(e) + 4 * float(prefix[-1])))


def concurrent(steps, delta: float | None = None, *, accuracy: float | None = None) -> Guarantee:
    """Concurrent composition of interactive ``(epsilon_i, delta_i)``-DP mechanisms.

    An adversary may interleave its queries to the mechanisms arbitrarily. Without ``delta``:
    Vadhan & Wang 2021, Theorem 1, ``(sum epsilon_i, sum_i e^{sum_{j<i} epsilon_j} delta_i)``,
    with the order of the steps chosen to minimise the delta. With ``delta``: pure-DP steps get
    the optimal composition (VW21, Corollary 3); otherwise Theorem 1 gives ``sum epsilon_i`` if
    ``delta`` covers its delta, else ``inf``. The optimal composition of concurrent
    *approximate*-DP mechanisms (conjectured in VW21, later proved) is not used: conservative.
    See ``docs/concepts/theorems-and-conjectures.md``.

    Parameters
    ----------
    steps : sequence
        The steps: ``(epsilon_i, delta_i)`` pairs, or objects with ``epsilon`` and ``delta``
        attributes (e.g. :class:`~plda.ApproximateDP`); ``epsilon_i >= 0`` finite,
        ``delta_i`` in [0, 1).
    delta : float, optional
        The total delta at which to give the smallest epsilon; None: Theorem 1's own pair.
    accuracy : float, optional
        Target relative gap of the engine's bounds for pure-DP steps (its default: 1e-3).

    Returns
    -------
    Guarantee
        The concurrent guarantee, rounded up.

    Raises
    ------
    TypeError
        If ``steps`` is not a sequence of pairs, or a value is not a real number.
    ValueError
        If ``steps`` is empty or a value is out of range.
    """
    epsilons, deltas = parse_steps(steps)
    delta_g = _concurrent_delta_up(epsilons, deltas)
    total = sum_up(epsilons.tolist())
    if delta is None:
        return Guarantee(total, delta_g, "concurrent composition (VW21 Thm 1)")
    target = delta_value("delta", delta)
    if not np.any(deltas > 0):
        result = optimal(list(zip(epsilons, deltas, strict=True)), target, accuracy=accuracy)
        return replace(result, name="concurrent composition, pure DP (VW21 Cor 3)")
    epsilon = total if target >= delta_g else math.inf
    return Guarantee(epsilon, target, "concurrent composition (VW21 Thm 1)")
