"""The worst case of an arbitrary (epsilon, delta)-DP step."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from plda._internal.validation import in_range, nonnegative_float
from plda.mechanisms.base import Mechanism
from plda.mechanisms.law import AtomLaw

#: largest step epsilon accounted: a grid's moments square the losses, and past about 1.3e154
#: the square overflows (an epsilon this large says nothing a smaller one does not)
MAX_EPSILON = 1e150


@dataclass(frozen=True)
class ApproximateDP(Mechanism):
    """Any ``(epsilon, delta)``-DP step, through the randomized response that dominates it.

    The pair ``RR_(eps, delta)`` dominates every ``(epsilon, delta)``-DP mechanism (Kairouz, Oh &
    Viswanath 2015, Thm. 2.1; Murtagh & Vadhan 2016). Its privacy loss is ``+eps`` w.p.
    ``(1-delta) e^eps / (1+e^eps)``, ``-eps`` w.p. ``(1-delta) / (1+e^eps)`` and ``+inf`` w.p.
    ``delta``; composed, it gives the optimal composition of black-box DP steps
    (``docs/concepts/privacy-loss-distributions.md``, "Pure and approximate DP steps").

    Parameters
    ----------
    epsilon : float
        The step's ``epsilon``, in ``[0, MAX_EPSILON]`` (1e150).
    delta : float, optional
        The step's ``delta``, in ``[0, 1]``.

    Raises
    ------
    TypeError
        If ``epsilon`` or ``delta`` is not a real number.
    ValueError
        If ``epsilon`` is negative, not finite or above ``MAX_EPSILON``, or ``delta`` is outside
        ``[0, 1]``.
    """

    epsilon: float
    delta: float = 0.0

    def __post_init__(self):
        epsilon = nonnegative_float("epsilon", self.epsilon)
        object.__setattr__(self, "epsilon", in_range(
            "epsilon", epsilon, 0.0, MAX_EPSILON, "the grid squares the losses"))
        object.__setattr__(self, "delta", nonnegative_float("delta", self.delta, upper=1.0))

    def _remove_law(self):
        e, d = self.epsilon, self.delta
        if e == 0:
            losses, probs = np.array([0.0]), np.array([1.0 - d])
        else:
            losses = np.array([-e, e])
            probs = (1.0 - d) * np.array([expit(-e), expit(e)])
            if probs[0] == 0.0 and probs[1] > 0:
                # the outcome at -eps: its P-mass underflows to 0 (eps beyond 709.78), and its
                # Q-mass, P-mass times e^eps, with it (0 * inf: NaN); a sampled pair, whose P
                # mixes in Q, lost it. Its Q-mass (probs[1]) at -inf, as in
                # plda.mechanisms.privacy_profile.envelope_law. A subnormal P-mass (eps from
                # 708.4) stays an atom: expit keeps 50+ bits there and e^eps is finite, so its
                # Q-mass is within 5 ulps; the discretization charges the subnormal cell to
                # +inf in the upper version only (at +inf in the law it raised the lower bound)
                return AtomLaw(atom_losses=losses[1:], atom_probs=probs[1:],
                               infinity_mass=d, neg_infinity_mass=math.fsum([d, probs[1]]))
        return AtomLaw(atom_losses=losses, atom_probs=probs, infinity_mass=d, neg_infinity_mass=d)

    def under_replace_one(self):
        """The same step under replace-one: the guarantee is taken as stated.

        The user analysed the step under some neighbouring relation, and plda keeps that
        relation: ``ApproximateDP(eps, delta)`` is ``(eps, delta)``-DP under either reading.

        Returns
        -------
        ApproximateDP
            This mechanism.
        """
        return self
