"""A mechanism known only through (epsilon, delta) guarantees: the discrete pair whose tradeoff
function is the largest one those guarantees allow. The construction, and why it is tight and
certified: ``docs/concepts/imported-guarantees.md``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from plda._internal.validation import real_sequence
from plda.mechanisms.approximate import MAX_EPSILON
from plda.mechanisms.base import Mechanism
from plda.mechanisms.law import AtomLaw

#: most points a profile (or a curve) may hold
MAX_POINTS = 100_000


def _log_meet(eps, delta, i: int, j: int) -> float:
    """``log alpha`` where the shallower line ``j`` (``eps_j < eps_i``) overtakes line ``i`` of
    the envelope, ``alpha = (delta_j - delta_i) / (e^eps_i - e^eps_j)`` (``-inf`` when line ``j``
    is above line ``i`` from ``alpha = 0`` on). In logs: for large epsilons ``alpha`` is far
    below the smallest float while ``e^eps alpha``, the mirrored outcome's mass, is not."""
    gap = delta[j] - delta[i]
    if gap <= 0:
        return -np.inf
    x = eps[i] - eps[j]
    log_expm1 = np.log(np.expm1(x)) if x < 700 else x + np.log1p(-np.exp(-x))
    return float(np.log(gap) - eps[j] - log_expm1)


def _scaled_meet(eps, delta, k: int, other: int) -> float:
    """``e^eps_k`` times the meeting point of line ``k`` with line ``other``."""
    if eps[other] > eps[k]:  # other is steeper: it comes before k
        with np.errstate(over="ignore"):  # a gap beyond 709: e^gap is inf, the point 0
            return (delta[k] - delta[other]) / np.expm1(eps[other] - eps[k])
    return (delta[other] - delta[k]) / -np.expm1(eps[other] - eps[k])


def envelope_law(epsilons, deltas) -> AtomLaw:
    """The privacy-loss law of the symmetric pair whose tradeoff is ``max_i f_(eps_i, delta_i)``.

    ``f_(eps, delta)(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha))``
    (Kairouz, Oh & Viswanath 2015; Dong, Roth & Su 2022, Prop. 2.5). The maximum is convex,
    symmetric and piecewise linear; left of its fixed point ``f(a*) = a*`` it is the upper
    envelope of the lines ``1 - delta_i - e^eps_i alpha``, and each piece of slope ``-e^eps_i``
    over an ``alpha``-interval of length ``w`` is an outcome of loss ``-eps_i`` with ``P``-mass
    ``w``; its mirror image (right of ``a*``) is an outcome of loss ``+eps_i`` with ``P``-mass
    ``e^eps_i w``. ``f(0) = 1 - min delta`` gives the masses ``min delta`` at ``+-inf``. For one
    point the law is :class:`~plda.ApproximateDP`'s, bit for bit.

    Parameters
    ----------
    epsilons : array_like of float
        The ``eps_i``, finite and ``>= 0``, in any order (repeats allowed).
    deltas : array_like of float
        The ``delta_i`` in ``[0, 1]``, one per epsilon; need not be monotone (a point implied
        by the others gets no outcome).

    Returns
    -------
    AtomLaw
        Atoms at ``-eps_i`` and ``+eps_i`` for the points on the envelope (one atom at 0 for
        ``eps_i = 0``), masses ``min delta`` at ``+inf`` and ``-inf``; a low-side outcome whose
        ``P``-mass is below the smallest normal double is a ``Q``-only mass at ``-inf`` instead
        (its ``P``-mass at ``+inf``).

    Raises
    ------
    ValueError
        If the arrays are empty or of different lengths.
    """
    eps = np.asarray(epsilons, dtype=float).ravel()
    delta = np.asarray(deltas, dtype=float).ravel()
    if eps.size == 0 or eps.shape != delta.shape:
        raise ValueError("epsilons and deltas must be non-empty and of the same length")
    # steepest line first; of equal slopes the lowest delta (highest line) alone
    order = np.lexsort((delta, -eps))
    eps, delta = eps[order], delta[order]
    keep = np.ones(eps.size, dtype=bool)
    keep[1:] = eps[1:] != eps[:-1]
    eps, delta = eps[keep], delta[keep]
    stack: list[int] = []
    starts: list[float] = []  # log alpha where each stacked line becomes the envelope
    for j in range(eps.size):
        start = -np.inf
        while stack:
            start = _log_meet(eps, delta, stack[-1], j)
            if start > starts[-1]:
                break
            stack.pop()
            starts.pop()
            start = -np.inf
        stack.append(j)
        starts.append(start)
    # the envelope crosses the diagonal on the line with the largest crossing (1-delta)/(1+e^eps)
    with np.errstate(divide="ignore"):
        log_crossing = [np.log1p(-delta[k]) - np.logaddexp(0.0, eps[k]) for k in stack]
    last = int(np.argmax(log_crossing))
    stack = stack[: last + 1]
    losses_low, probs_low, losses_high, probs_high = [], [], [], []
    q_only, p_moved = [], []  # low-side outcomes whose P-mass underflows: Q- and P-masses
    for n, k in enumerate(stack):
        left = float(np.exp(starts[n]))
        left_scaled = 0.0 if n == 0 else _scaled_meet(eps, delta, k, stack[n - 1])
        if n == last:  # ApproximateDP's masses, in its form
            right = (1.0 - delta[k]) * expit(-eps[k])
            right_scaled = (1.0 - delta[k]) * expit(eps[k])
        else:
            right = float(np.exp(starts[n + 1]))
            right_scaled = _scaled_meet(eps, delta, k, stack[n + 1])
        # the low side's P-mass may underflow (below 1e-308 at loss -eps_k; see below)
        low, high = max(right - left, 0.0), max(right_scaled - left_scaled, 0.0)
        if eps[k] == 0:  # the slope -1 piece straddles the diagonal: one outcome, loss 0
            losses_low.append(0.0)
            probs_low.append(low + high)
            continue
        losses_high.append(eps[k])
        probs_high.append(high)
        if low < np.finfo(float).tiny and high > 0:
            # its Q-mass e^eps_k low is the mirror's P-mass `high`, but an underflowed or
            # subnormal P-mass times e^eps_k read it as 0, a few digits, or NaN / inf past
            # eps_k = 709: a sampled pair (whose P mixes in Q) and the reversed pair lost it
            # (up to all of Q). Read from the mirror, high e^-eps_k keeps 50+ bits down to
            # tiny / 4 (eps_k up to 709.78 at high ~ 1): an atom whose Q-mass reads back as
            # `high` within a few ulps (the upper discretization sends its subnormal cell to
            # +inf, the lower one keeps it: at +inf here it raised the lower bounds past the
            # truth). Below, a Q-only outcome (loss -inf); its P-mass, below tiny / 4, goes to
            # +inf (only a larger loss: still dominating)
            mirror = high * math.exp(-eps[k])
            if mirror >= np.finfo(float).tiny / 4:
                losses_low.append(-eps[k])
                probs_low.append(mirror)
                continue
            q_only.append(high)
            p_moved.append(low)
            continue
        losses_low.append(-eps[k])
        probs_low.append(low)
    losses = np.array(losses_low + losses_high[::-1])
    probs = np.array(probs_low + probs_high[::-1])
    floor = float(np.min(delta))
    return AtomLaw(atom_losses=losses, atom_probs=probs, infinity_mass=math.fsum([floor, *p_moved]),
                   neg_infinity_mass=math.fsum([floor, *q_only]))


def profile_points(epsilons, deltas, *, increasing: bool = True):
    """Checked ``(epsilons, deltas)`` of a privacy profile, as tuples of floats.

    Parameters
    ----------
    epsilons : sequence of float
        In ``[0, MAX_EPSILON]`` (1e150); strictly increasing when ``increasing``.
    deltas : sequence of float
        In ``[0, 1]``, one per epsilon; non-increasing when ``increasing``.
    increasing : bool, optional
        Whether to ask for a profile in order (``PrivacyProfile``) or any set of points.

    Returns
    -------
    tuple of tuple of float
        ``(epsilons, deltas)``.

    Raises
    ------
    TypeError
        If an argument is not a sequence of real numbers.
    ValueError
        If a value is NaN, infinite or out of range, the lengths differ, or (``increasing``)
        the epsilons are not strictly increasing or the deltas grow with epsilon.
    """
    eps = real_sequence("epsilons", epsilons, max_length=MAX_POINTS)
    delta = real_sequence("deltas", deltas, max_length=MAX_POINTS)
    if len(eps) != len(delta):
        raise ValueError(
            f"epsilons and deltas must have the same length, got {len(eps)} and {len(delta)}"
        )
    for i, (e, d) in enumerate(zip(eps, delta, strict=True)):
        if not 0 <= e <= MAX_EPSILON:
            # ApproximateDP's and RenyiDP's cap: the engine squares the losses, and past ~1e154
            # they overflow (a bare 'math domain error' from the pilot's moments)
            raise ValueError(
                f"epsilons must be in [0, {MAX_EPSILON:g}] (the grid squares the losses), got "
                f"epsilons[{i}] = {e!r}"
            )
        if not 0 <= d <= 1:
            raise ValueError(f"deltas must be in [0, 1], got deltas[{i}] = {d!r}")
    if increasing:
        for i in range(len(eps) - 1):
            if not eps[i] < eps[i + 1]:
                raise ValueError(
                    f"epsilons must be strictly increasing, got epsilons[{i}] = {eps[i]!r} "
                    f"then epsilons[{i + 1}] = {eps[i + 1]!r}"
                )
            if delta[i + 1] > delta[i]:
                raise ValueError(
                    f"deltas must be non-increasing in epsilon (a mechanism's delta(eps) never "
                    f"grows with eps), got deltas[{i}] = {delta[i]!r} at eps {eps[i]!r} and "
                    f"deltas[{i + 1}] = {delta[i + 1]!r} at eps {eps[i + 1]!r}"
                )
    return eps, delta


@dataclass(frozen=True)
class PrivacyProfile(Mechanism):
    """A step known to be ``(eps_i, delta_i)``-DP for every ``i``, through its tightest pair.

    A step is ``(eps, delta)``-DP iff its tradeoff function is at least ``f_(eps, delta)``
    (Dong, Roth & Su 2022, Prop. 2.5), so it is all of them iff its tradeoff is at least
    ``f = max_i f_(eps_i, delta_i)``; the pair whose tradeoff is exactly ``f`` dominates every
    such step and is one of them (:func:`envelope_law`). Composed, it gives the optimal
    composition of black-box steps with these profiles; one point is :class:`ApproximateDP`.
    The construction: ``docs/concepts/imported-guarantees.md``.

    Parameters
    ----------
    epsilons : sequence of float
        The ``eps_i``: in ``[0, 1e150]``, strictly increasing.
    deltas : sequence of float
        The ``delta_i`` in ``[0, 1]``, one per epsilon, non-increasing (a mechanism's
        ``delta(eps)`` never grows with ``eps``).

    Raises
    ------
    TypeError
        If ``epsilons`` or ``deltas`` is not a sequence of real numbers.
    ValueError
        If they differ in length, hold NaN or infinities, an epsilon is outside ``[0, 1e150]``,
        a delta is outside ``[0, 1]``, the epsilons are not strictly increasing, or the deltas
        grow with epsilon; the message names the argument and the entry.

    Examples
    --------
    >>> import plda
    >>> step = plda.PrivacyProfile(epsilons=(0.5, 1.0, 2.0), deltas=(1e-3, 1e-5, 1e-8))
    >>> pld = plda.PrivacyLossDistribution.from_mechanism(step, 10)
    """

    epsilons: tuple[float, ...]
    deltas: tuple[float, ...]

    def __post_init__(self):
        eps, delta = profile_points(self.epsilons, self.deltas)
        object.__setattr__(self, "epsilons", eps)
        object.__setattr__(self, "deltas", delta)

    def _remove_law(self):
        return envelope_law(self.epsilons, self.deltas)

    def under_replace_one(self) -> PrivacyProfile:
        """The same step under replace-one: the guarantees are taken as stated.

        Returns
        -------
        PrivacyProfile
            This mechanism (the guarantees hold under the relation they were proven for).
        """
        return self
