"""Group privacy: an ``(epsilon, delta)``-DP guarantee for groups of ``k`` records (closed form),
or a known mechanism's group guarantee from its privacy-loss distribution."""

from __future__ import annotations

import math
from dataclasses import replace

from plda.mechanisms.base import Mechanism
from plda.pld import PrivacyLossDistribution
from plda.theorems.common import Guarantee, count_value, delta_value, epsilon_value, round_up


# ----------------------------------------------------------------------------- group privacy
def group_privacy(epsilon: float, delta: float, group_size: int) -> Guarantee:
    """Group privacy of an ``(epsilon, delta)``-DP mechanism for datasets that differ in
    ``group_size = k`` records: ``(k epsilon, delta sum_{i<k} e^{i epsilon})``-DP.

    Theorem, by the hybrid argument over ``x_0 ~ x_1 ~ ... ~ x_k``:
    ``P[M(x_0) in T] <= e^eps P[M(x_1) in T] + delta <= ... <= e^{k eps} P[M(x_k) in T] +
    delta (1 + e^eps + ... + e^{(k-1) eps})`` (see Vadhan & Wang 2021, Section 2). The sum is
    ``(e^{k eps} - 1)/(e^eps - 1) delta``, never more than the textbook ``k e^{(k-1) eps}
    delta`` (each of the k terms is at most ``e^{(k-1) eps}``).
    """
    epsilon = epsilon_value("epsilon", epsilon)
    delta = delta_value("delta", delta)
    k = count_value("group_size", group_size)
    if delta == 0:
        group_delta = 0.0
    elif epsilon == 0:
        group_delta = k * delta
    else:
        # (e^{k eps} - 1) / (e^eps - 1) with expm1: accurate for small eps too
        ratio = math.expm1(k * epsilon) / math.expm1(epsilon) if k * epsilon < 700 else math.inf
        group_delta = ratio * delta
    return Guarantee(round_up(k * epsilon), min(1.0, round_up(group_delta, 16)), "group privacy")


def group_privacy_mechanism(
    mechanism, group_size: int, delta: float, *, count: int = 1, accuracy: float | None = None
) -> Guarantee:
    """Group privacy of a *known* mechanism, from its PLD: datasets that differ in ``k`` records
    change an L1/L2 sensitivity-``s`` query by at most ``k s`` (triangle inequality), so the
    group guarantee is that of the same mechanism with ``sensitivity * k`` (composed ``count``
    times), returned as certified bounds on epsilon at ``delta``.

    Supports mechanisms with a ``sensitivity`` field (``Gaussian``, ``Laplace``,
    ``DiscreteLaplace``, ``DiscreteGaussian``). Subsampled mechanisms are refused: a group is
    not sampled as a block, so scaling the sensitivity would not be a valid bound.
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a plda mechanism, got {type(mechanism).__name__}")
    if not hasattr(mechanism, "sensitivity"):
        raise TypeError(
            "mechanism must have a sensitivity (Gaussian, Laplace, DiscreteLaplace, "
            f"DiscreteGaussian), got {type(mechanism).__name__}; for an (epsilon, delta) "
            "guarantee use group_privacy"
        )
    k = count_value("group_size", group_size)
    target = delta_value("delta", delta)
    count = count_value("count", count)
    group = replace(mechanism, sensitivity=mechanism.sensitivity * k)
    options = {} if accuracy is None else {"accuracy": accuracy}
    pld = PrivacyLossDistribution.from_mechanism(group, count, **options)
    lower, upper = pld.epsilon_bounds(target)
    return Guarantee(float(upper), target, "group privacy (PLD)", float(lower))
