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
    prefix = np.concatenate([[0.0], np.cumsum(e)[:-1]])
    with np.errstate(over="ignore", invalid="ignore"):
        terms = np.where(d > 0, np.exp(prefix) * d, 0.0)  # no inf * 0 for pure steps
    value = math.fsum(terms.tolist())
    # cumsum/exp errors: relative ~ (n + |prefix|) u per term
    return min(1.0, round_up(value, 16 + 4 * len(e) + 4 * float(prefix[-1])))


def concurrent(steps, delta: float | None = None, *, accuracy: float | None = None) -> Guarantee:
    """Concurrent composition of interactive ``(epsilon_i, delta_i)``-DP mechanisms (an adversary
    may interleave its queries to them arbitrarily).

    * ``delta=None``: Vadhan & Wang 2021, **Theorem 1** (a theorem): ``(eps_g, delta_g)`` with
      ``eps_g = sum epsilon_i`` and ``delta_g = sum_i e^{sum_{j<i} epsilon_j} delta_i``, minimised
      over the order of the mechanisms (sort by decreasing ``delta_i / (e^{epsilon_i} - 1)``, see
      :func:`_concurrent_order`). Equal steps: ``(k eps, (e^{k eps} - 1)/(e^eps - 1) delta)``.
    * ``delta`` given: the smallest epsilon at that total delta. If all ``delta_i = 0``, Vadhan &
      Wang's **Corollary 3** (a theorem) says the optimal non-interactive composition holds, and
      :func:`optimal` is returned; otherwise Theorem 1 gives ``sum epsilon_i`` if ``delta >=
      delta_g`` and ``inf`` if not.

    That the optimal composition also holds for concurrent *approximate*-DP mechanisms was
    conjectured by Vadhan & Wang (2021, Section 4) and later proved (Lyu 2022; Vadhan & Zhang
    2023); it is deliberately not used here, so approximate-DP results are conservative.
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
