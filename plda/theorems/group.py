"""Group privacy: an ``(epsilon, delta)``-DP guarantee for groups of ``k`` records (closed form),
or a known mechanism's group guarantee from its privacy-loss distribution."""

from __future__ import annotations

import math
import numbers
from dataclasses import replace

from plda._internal.deprecation import warn_moved
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.subsampled import PoissonSampled
from plda.pld import PrivacyLossDistribution
from plda.theorems.common import Guarantee, count_value, delta_value, epsilon_value, round_up


# ----------------------------------------------------------------------------- group privacy
def group_privacy(epsilon: float, delta: float, group_size: int) -> Guarantee:
    """Group privacy of an ``(epsilon, delta)``-DP mechanism for datasets differing in k records.

    ``(k epsilon, (e^{k epsilon} - 1) / (e^epsilon - 1) delta)``-DP, by the hybrid argument over
    ``x_0 ~ x_1 ~ ... ~ x_k`` (see Vadhan & Wang 2021, Section 2): a theorem, never worse than
    the textbook ``k e^{(k-1) epsilon} delta``.

    Parameters
    ----------
    epsilon : float
        The mechanism's epsilon, finite and ``>= 0``.
    delta : float
        Its delta, in [0, 1).
    group_size : int
        The number of records ``k`` in which the datasets differ, at least 1.

    Returns
    -------
    Guarantee
        The group guarantee, rounded up (delta at most 1).

    Raises
    ------
    TypeError
        If a value is not a real number.
    ValueError
        If a value is out of range.
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
    mechanism, delta: float, group_size: int, *, count: int = 1, accuracy: float | None = None
) -> Guarantee:
    """Group privacy of a known mechanism, as certified bounds from its PLD.

    Datasets that differ in ``k`` records change a query of sensitivity ``s`` by at most ``k s``
    (triangle inequality), so the group guarantee is that of the same mechanism with
    ``sensitivity * k``. A Poisson-sampled Gaussian's (or Laplace's) group is not sampled as a
    block: each of
    its ``k`` records is sampled on its own, and the group's pair is the mixture of
    ``PoissonSampled(..., group_size=k)`` (exact, far below the post-hoc theorem
    :func:`group_privacy` applied to the one-record guarantee). Other sampled mechanisms are
    refused.

    The arguments are in the order of :func:`group_privacy` (``delta``, then ``group_size``).
    The former order ``(mechanism, group_size, delta)``, told apart by its values (a group size
    is at least 1, a delta below 1), still works until plda 0.2.0 with a ``DeprecationWarning``.

    Parameters
    ----------
    mechanism : Mechanism
        A mechanism with a ``sensitivity`` field (:class:`~plda.Gaussian`,
        :class:`~plda.Laplace`, :class:`~plda.DiscreteLaplace`, :class:`~plda.DiscreteGaussian`)
        or a :class:`~plda.PoissonSampled` Gaussian or Laplace (its ``group_size`` multiplied by
        ``k``).
    delta : float
        Where epsilon is read, in [0, 1).
    group_size : int
        The number of records ``k`` in which the datasets differ, at least 1.
    count : int, optional
        How many times the mechanism runs (composed).
    accuracy : float, optional
        Target relative gap of the engine's bounds (its default: 1e-3).

    Returns
    -------
    Guarantee
        Certified epsilon at ``delta`` (``epsilon_lower`` the lower bound).

    Raises
    ------
    TypeError
        If ``mechanism`` is not a plda mechanism with a ``sensitivity``, or a value is not a
        real number.
    ValueError
        If a value is out of range.

    Warns
    -----
    DeprecationWarning
        For the former argument order ``(mechanism, group_size, delta)``.
    """
    if _former_order(delta, group_size):
        warn_moved("group_privacy_mechanism(mechanism, group_size, delta)",
                   "group_privacy_mechanism(mechanism, delta, group_size), the order of "
                   "group_privacy(epsilon, delta, group_size)")
        delta, group_size = group_size, delta
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a plda mechanism, got {type(mechanism).__name__}")
    poisson = type(mechanism) is PoissonSampled
    if poisson and type(mechanism.mechanism) not in (Gaussian, Laplace):
        raise TypeError(
            "a Poisson-sampled group has a certified law for a Gaussian or Laplace base only, got "
            f"PoissonSampled({type(mechanism.mechanism).__name__}); apply group_privacy to "
            "its (epsilon, delta) instead"
        )
    if not poisson and not hasattr(mechanism, "sensitivity"):
        raise TypeError(
            "mechanism must have a sensitivity (Gaussian, Laplace, DiscreteLaplace, "
            f"DiscreteGaussian), got {type(mechanism).__name__}; for an (epsilon, delta) "
            "guarantee use group_privacy"
        )
    k = count_value("group_size", group_size)
    target = delta_value("delta", delta)
    count = count_value("count", count)
    if poisson:
        group = replace(mechanism, group_size=mechanism.group_size * k)
    else:
        group = replace(mechanism, sensitivity=mechanism.sensitivity * k)
    options = {} if accuracy is None else {"accuracy": accuracy}
    pld = PrivacyLossDistribution.from_mechanism(group, count, **options)
    lower, upper = pld.epsilon_bounds(target)
    return Guarantee(float(upper), target, "group privacy (PLD)", float(lower))


def _former_order(delta, group_size) -> bool:
    """Whether ``(delta, group_size)`` is a call in the former order ``(group_size, delta)``: a
    group size (at least 1) where the delta goes and a delta (below 1) where the group size goes,
    which no valid call in the current order has."""
    def real(value):
        return isinstance(value, numbers.Real) and not isinstance(value, bool)

    return real(delta) and real(group_size) and delta >= 1 and 0 <= group_size < 1
