"""k-ary randomized response: a replace-one pair whose law has three atoms."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from plda._internal.validation import probability
from plda.mechanisms.base import ReplaceOnePair
from plda.mechanisms.law import AtomLaw

#: most buckets accepted (the law has three atoms whatever ``k``; beyond this ``p / k`` loses
#: the precision of its masses to nothing, but 2**53 keeps ``k`` an exact float)
MAX_BUCKETS = 2**53


@dataclass(frozen=True)
class RandomizedResponse(ReplaceOnePair):
    r"""k-ary randomized response, a replace-one pair.

    Reports a record's value with probability ``1 - p``, else one of the ``k`` values drawn
    uniformly (Warner 1965; ``noise_parameter`` ``p`` and ``num_buckets`` ``k`` as in
    dp_accounting's ``RandomizedResponseDpEvent``).

    Replacing a record's value ``x`` by ``x'`` is the pair of output laws ``P(y = x) = a``,
    ``P(y = x') = b``, each other value ``b``, against the same with ``x`` and ``x'`` swapped,
    where ``a = 1 - p + p / k`` and ``b = p / k``. Its loss is ``+L`` (``P``-mass ``a``),
    ``-L`` (mass ``b``) or 0 (mass ``(k - 2) b``), ``L = log(a / b) = log(1 + (1 - p) k / p)``:
    an ``L``-DP step. At ``k = 2`` it is the pair of ``ApproximateDP(L)``; with more values
    its profile lies below that one (the mass at loss 0 reveals nothing). The pair is stated
    under replace-one, as dp_accounting states it: account it with ``relation="replace_one"``;
    under add/remove it is refused.

    Parameters
    ----------
    noise_parameter : float
        ``p``, the probability of a random answer, in ``(0, 1]`` (1: the output says nothing).
    num_buckets : int
        ``k``, the number of values, an integer in ``[2, MAX_BUCKETS]``.

    Raises
    ------
    TypeError
        If a parameter is not a real number (a bool included).
    ValueError
        If ``noise_parameter`` is outside ``(0, 1]`` or ``num_buckets`` is not an integer in
        ``[2, MAX_BUCKETS]``.
    """

    noise_parameter: float
    num_buckets: int = 2

    def __post_init__(self):
        p = probability("noise_parameter", self.noise_parameter, open_low=True)
        k = self.num_buckets
        if isinstance(k, bool) or not isinstance(k, numbers.Real):
            raise TypeError(f"num_buckets must be an integer in [2, {MAX_BUCKETS}], got "
                            f"{type(k).__name__}")
        if not (float(k).is_integer() and 2 <= k <= MAX_BUCKETS):
            raise ValueError(f"num_buckets must be an integer in [2, {MAX_BUCKETS}], got {k!r}")
        object.__setattr__(self, "noise_parameter", p)
        object.__setattr__(self, "num_buckets", int(k))

    @property
    def epsilon(self) -> float:
        """The largest loss ``L = log(1 + (1 - p) k / p)``: the step is ``L``-DP."""
        p, k = self.noise_parameter, self.num_buckets
        if p == 1.0:
            return 0.0
        # log a - log b, each to a few ulps: (1 - p) k / p overflows for p below 1e-308 / k
        return math.log1p(-(k - 1) * (p / k)) - (math.log(p) - math.log(k))

    def law(self) -> AtomLaw:
        """The loss law of ``x``'s outputs against ``x'``'s (symmetric: either order).

        Returns
        -------
        AtomLaw
            Atoms ``-L, 0, +L`` with ``P``-masses ``b, (k - 2) b, a`` (those of positive mass).
        """
        p, k, loss = self.noise_parameter, self.num_buckets, self.epsilon
        if loss == 0.0:  # every output equally likely under both: nothing is revealed
            return AtomLaw(atom_losses=np.array([0.0]), atom_probs=np.array([1.0]))
        b = p / k
        # a = 1 - (k - 1) b: the three masses sum to 1 up to rounding
        losses = np.array([-loss, 0.0, loss])
        masses = np.array([b, (k - 2) * b, 1.0 - (k - 1) * b])
        keep = masses > 0  # (k = 2: no output keeps both values' mass)
        return AtomLaw(atom_losses=losses[keep], atom_probs=masses[keep])
