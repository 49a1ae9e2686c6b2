"""The exponential mechanism as an ``epsilon``-bounded-range mechanism, with the law of the
least dominating pair of that family and the realized two-point pairs below it.

The derivation (the supremum over the family's privacy profiles, the law in closed form, why
the two-point pairs are realized): ``docs/concepts/selection.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plda._internal.errors import warn
from plda._internal.validation import in_range, positive_float
from plda.mechanisms.base import BracketedMechanism, Mechanism, NotTightWarning, public_name
from plda.mechanisms.law import AtomLaw, PrivacyLossLaw

#: ``epsilon`` plda certifies for a bounded-range step (the law's support is ``[-eps, eps]``)
EPSILON_RANGE = (1e-8, 1e3)
#: the splits ``t`` of the realized two-point pairs whose compositions give the lower bound
#: (``t`` and ``1 - t`` are one pair read in its two directions, so ``t <= 1/2`` suffices;
#: ``1/2`` is the worst at ``eps' = 0``, smaller ``t`` at larger ``eps'``)
LOWER_SPLITS = (0.5, 0.4, 0.3, 0.2, 0.1)


@dataclass(frozen=True)
class ExponentialMechanism(BracketedMechanism):
    r"""The exponential mechanism, or any ``epsilon``-bounded-range (BR) step.

    A step is ``epsilon``-BR when, for every pair of neighbours, its privacy loss takes values
    in an interval of length ``epsilon``: ``L in [-t eps, (1 - t) eps]`` for some split
    ``t in [0, 1]`` that may differ from pair to pair and step to step (Durfee & Rogers 2019).
    The exponential mechanism that samples ``r`` with probability proportional to
    ``exp(eta u(D, r))`` for a utility of sensitivity ``Delta`` is ``2 eta Delta``-BR, and
    ``eta Delta``-BR when the utility is monotone in the dataset: pass that number.

    Upper bound: the least pair above every ``epsilon``-BR pair, whose profile is the supremum
    over ``t`` of the two-point pairs' profiles,
    ``delta(eps') = e^eps' (e^((eps - eps')/2) - 1)^2 / (e^eps - 1)`` for
    ``0 <= eps' <= eps`` (``tanh(eps/4)`` at ``eps' = 0``, against ``tanh(eps/2)`` for the
    ``eps``-DP randomized response). Its loss has density proportional to ``e^(x/2)`` on
    ``[-eps, eps]`` under ``P``. It dominates every BR step whatever its split, so adaptive
    compositions with splits chosen on the fly are covered. Lower bound: the two-point pair of
    each split in :data:`LOWER_SPLITS`, composed with itself, each realized by an exponential
    mechanism on two candidates (Dong, Durfee & Rogers 2020); the largest is reported, so the
    bracket includes the gap between adaptive and homogeneous composition
    (:class:`NotTightWarning`).

    Parameters
    ----------
    epsilon
        The bounded-range parameter, in ``EPSILON_RANGE``.

    Raises
    ------
    TypeError
        If ``epsilon`` is not a real number.
    ValueError
        If ``epsilon`` is not positive and finite, or outside ``EPSILON_RANGE``.

    Examples
    --------
    >>> import plda
    >>> em = plda.PrivacyLossDistribution.from_mechanism(plda.ExponentialMechanism(1.0), 10)
    >>> rr = plda.PrivacyLossDistribution.from_mechanism(plda.ApproximateDP(1.0), 10)
    >>> bool(em.delta(2.0) < rr.delta(2.0))
    True
    """

    epsilon: float

    def __post_init__(self):
        object.__setattr__(self, "epsilon", positive_float("epsilon", self.epsilon))
        in_range("epsilon", self.epsilon, EPSILON_RANGE[0], EPSILON_RANGE[1],
                 "the bounded-range epsilon plda certifies")

    def _remove_law(self) -> PrivacyLossLaw:
        return BoundedRangeLaw(epsilon=self.epsilon)

    def lower_bound_mechanisms(self) -> tuple[Mechanism, ...]:
        """The realized two-point pairs of every split in :data:`LOWER_SPLITS`.

        Returns
        -------
        tuple of BoundedRangePair
            One per split; each is an exponential mechanism on two candidates.
        """
        return tuple(BoundedRangePair(epsilon=self.epsilon, split=t) for t in LOWER_SPLITS)

    def lower_bound_mechanism(self) -> Mechanism:
        """The split-``1/2`` pair, the worst at ``eps' = 0``.

        Returns
        -------
        BoundedRangePair
            ``BoundedRangePair(epsilon, 0.5)``.
        """
        return BoundedRangePair(epsilon=self.epsilon, split=0.5)

    def under_replace_one(self) -> Mechanism:
        """The step under replace-one: the guarantee is taken as stated.

        The utility's sensitivity was stated for some neighbouring relation, and the BR
        parameter holds for that relation.

        Returns
        -------
        ExponentialMechanism
            This mechanism.
        """
        return self

    def _coarsened(self) -> Mechanism:
        return self

    def _warn_about_analysis(self) -> None:
        warn(
            f"{public_name(self)}: the upper bound comes from the least pair above every "
            "epsilon-bounded-range step (it covers splits chosen adaptively), the lower bound "
            "from realized homogeneous compositions of two-point pairs "
            "(m.lower_bound_mechanisms()); the interval includes that gap",
            NotTightWarning,
        )


@dataclass(frozen=True)
class BoundedRangePair(Mechanism):
    r"""The two-point ``epsilon``-bounded-range pair of split ``t``.

    Losses ``(1 - t) eps`` and ``-t eps``; under ``Q`` the first output has probability
    ``b = (e^(t eps) - 1) / (e^eps - 1)``, under ``P`` probability ``b e^((1 - t) eps)``. It is
    the worst ``epsilon``-BR pair of split ``t`` (Dong, Durfee & Rogers 2020) and is realized by
    the exponential mechanism on two candidates whose utilities move by ``+Delta`` and
    ``-Delta`` between the neighbours, for the base gap that sets ``t``.

    Parameters
    ----------
    epsilon
        The bounded-range parameter, in ``EPSILON_RANGE``.
    split
        ``t``, in ``(0, 1)``.

    Raises
    ------
    TypeError
        If an argument is not a real number.
    ValueError
        If ``epsilon`` is outside ``EPSILON_RANGE`` or ``split`` outside ``(0, 1)``.
    """

    epsilon: float
    split: float = 0.5

    def __post_init__(self):
        object.__setattr__(self, "epsilon", positive_float("epsilon", self.epsilon))
        in_range("epsilon", self.epsilon, EPSILON_RANGE[0], EPSILON_RANGE[1],
                 "the bounded-range epsilon plda certifies")
        split = positive_float("split", self.split)
        if not split < 1.0:
            raise ValueError(f"split must be in (0, 1), got {split!r}")
        object.__setattr__(self, "split", split)

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        """Whether the split is ``1/2`` (the pair read backwards is the split ``1 - t``)."""
        return self.split == 0.5

    def _remove_law(self) -> PrivacyLossLaw:
        return two_point_law(self.epsilon, self.split)

    def _add_law(self) -> PrivacyLossLaw:
        return two_point_law(self.epsilon, 1.0 - self.split)

    def under_replace_one(self) -> Mechanism:
        """As for :class:`ExponentialMechanism`: the guarantee is taken as stated.

        Returns
        -------
        BoundedRangePair
            This mechanism.
        """
        return self


def two_point_law(epsilon: float, split: float) -> AtomLaw:
    """The law of the two-point BR pair of split ``t`` (see :class:`BoundedRangePair`).

    Parameters
    ----------
    epsilon
        The bounded-range parameter.
    split
        ``t``, in ``(0, 1)``.

    Returns
    -------
    AtomLaw
        Atoms ``-t eps`` and ``(1 - t) eps`` with their ``P`` probabilities
        ``expm1((1 - t) eps) / expm1(eps)`` and ``e^((1 - t) eps) expm1(t eps) / expm1(eps)``
        (written without a difference of nearly equal numbers).
    """
    e, t = epsilon, split
    # P(high) = e^{(1-t)e} (e^{te} - 1)/(e^e - 1) = (1 - e^{-te}) / (1 - e^{-e}) and
    # P(low) = (e^{(1-t)e} - 1)/(e^e - 1) = e^{-te} (1 - e^{-(1-t)e}) / (1 - e^{-e}): both
    # ratios of -expm1 of negative arguments, accurate to a few ulps for every eps
    scale = -math.expm1(-e)
    high = -math.expm1(-t * e) / scale
    low = math.exp(-t * e) * -math.expm1(-(1.0 - t) * e) / scale
    return AtomLaw(atom_losses=np.array([-t * e, (1.0 - t) * e]), atom_probs=np.array([low, high]))


@dataclass(frozen=True, eq=False)
class BoundedRangeLaw(PrivacyLossLaw):
    r"""The least dominating pair of the ``epsilon``-bounded-range steps.

    Under ``P`` the loss has density ``e^((x - eps)/2) / (2 (1 - e^-eps))`` on ``[-eps, eps]``,
    so ``P(L <= x) = (e^((eps + x)/2) - 1) / (e^eps - 1)`` and
    ``Q(L > x) = (e^((eps - x)/2) - 1) / (e^eps - 1)``; the pair is symmetric. Its profile is
    ``delta(eps') = e^eps' (e^((eps - eps')/2) - 1)^2 / (e^eps - 1)``, the supremum of the
    two-point pairs' profiles over the split.

    Attributes
    ----------
    epsilon
        The bounded-range parameter.
    """

    epsilon: float = 1.0
    has_continuous_part = True

    @property
    def continuous_support(self) -> tuple[float, float]:  # type: ignore[override]
        """``(-epsilon, epsilon)``."""
        return (-self.epsilon, self.epsilon)

    def _terms(self, x):
        # every probability is a product of exp of a non-positive number and -expm1 of a
        # non-positive number over -expm1(-eps): no cancellation, no overflow for any eps
        e = self.epsilon
        x = np.clip(np.asarray(x, dtype=float), -e, e)
        scale = -math.expm1(-e)
        below = -np.expm1(-(e + x) / 2) / scale  # Q(L <= x)
        above = -np.expm1(-(e - x) / 2) / scale  # P(L > x)
        return x, below, above

    def _cont_cdf(self, x, hypothesis):
        x, below, _ = self._terms(x)
        return np.exp((x - self.epsilon) / 2) * below if hypothesis == "P" else below

    def _cont_sf(self, x, hypothesis):
        x, _, above = self._terms(x)
        return above if hypothesis == "P" else np.exp(-(x + self.epsilon) / 2) * above

    def _cont_pdf(self, x, hypothesis):
        e = self.epsilon
        x = np.asarray(x, dtype=float)
        inside = (x >= -e) & (x <= e)
        with np.errstate(over="ignore"):
            exponent = (x - e) / 2 if hypothesis == "P" else -(x + e) / 2
            density = np.exp(exponent) / (-2.0 * math.expm1(-e))
        return np.where(inside, density, 0.0)
