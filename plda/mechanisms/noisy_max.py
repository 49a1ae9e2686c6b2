"""Report-noisy-max and permute-and-flip: selections bracketed between the dominating pair of
their guarantee and realized two-candidate pairs.

Why the upper bound is the randomized-response pair, and the enumeration behind the lower
pairs: ``docs/concepts/selection.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plda._internal.errors import warn
from plda._internal.floats import UNIT_ROUNDOFF
from plda._internal.validation import in_range, positive_float
from plda.mechanisms.approximate import ApproximateDP
from plda.mechanisms.base import BracketedMechanism, Mechanism, NotTightWarning, public_name
from plda.mechanisms.bounded_range import EPSILON_RANGE, BoundedRangeLaw, ExponentialMechanism
from plda.mechanisms.custom import CustomMechanism
from plda.mechanisms.imported import GaussianDP
from plda.mechanisms.law import AtomLaw, PrivacyLossLaw

__all__ = ["LOWER_LEADS", "NOISES", "PermuteAndFlip", "ReportNoisyMax", "TwoCandidatePair"]

#: the noises of report-noisy-max (each of scale ``2 Delta / epsilon``)
NOISES = ("laplace", "exponential", "gumbel")
#: the leads ``d`` (in units of the sensitivity) of the realized two-candidate pairs: the first
#: candidate trails by ``-d`` on one dataset and its lead grows by 2 on the other. ``d`` and
#: ``-2 - d`` are one pair read in its two directions, so ``d <= -1`` suffices; ``-1`` is the
#: worst at ``eps' = 0``, leads further behind at larger ``eps'`` (found by enumerating every
#: instance of 2 to 4 candidates with utilities in ``{-3, ..., 3}``; see the docs)
LOWER_LEADS = (-1.0, -1.5, -2.0, -3.0, -4.0)
#: the lattice the asymmetric realized pairs are moved onto: losses at multiples of
#: ``max |loss| / LATTICE`` (see :func:`inward_lattice_pair`)
LATTICE = 64


def _log_half_tail(noise: str, x: float) -> float:
    """``log P(the trailing candidate wins)`` when it trails by ``x >= 0`` noise scales.

    The difference of the two noises is what decides: for exponential noise it is Laplace,
    ``P = e^-x / 2``; for Laplace noise it is the difference of two Laplace variables,
    ``P = e^-x (1 + x/2) / 2``; for Gumbel noise it is logistic, ``P = 1 / (1 + e^x)``. In logs,
    so no tail underflows before the loss is formed.
    """
    if noise == "exponential":
        return -x - math.log(2.0)
    if noise == "laplace":
        return -x + math.log1p(x / 2.0) - math.log(2.0)
    return -(x + math.log1p(math.exp(-x)))  # gumbel: log(1/(1 + e^x)), no overflow


def log_win_lose(noise: str, epsilon: float, lead: float) -> tuple[float, float]:
    """``log P(first wins)`` and ``log P(second wins)`` of a two-candidate selection.

    Parameters
    ----------
    noise : str
        One of :data:`NOISES`.
    epsilon : float
        The noise scale is ``2 Delta / epsilon``.
    lead : float
        The first candidate's utility minus the second's, in units of ``Delta``.

    Returns
    -------
    tuple of float
        The two log-probabilities. The larger probability is ``1 - small``, formed by
        ``log1p(-small)`` (``small <= 1/2``), so neither loses accuracy.
    """
    x = epsilon * abs(lead) / 2.0  # the gap in noise scales
    small = _log_half_tail(noise, x)
    large = math.log1p(-math.exp(small))
    return (large, small) if lead >= 0 else (small, large)


@dataclass(frozen=True)
class TwoCandidatePair(Mechanism):
    r"""A selection between two candidates on two neighbouring datasets (a realized pair).

    On ``D`` the first candidate leads by ``lead`` (in units of the sensitivity ``Delta``);
    on ``D'`` its utility is up by ``Delta`` and the other's down by ``Delta``, so it leads by
    ``lead + 2``. The selection adds independent noise of scale ``2 Delta / epsilon`` and
    reports the larger (permute-and-flip is report-noisy-max with exponential noise, Ding et
    al. 2021; the exponential mechanism is report-noisy-max with Gumbel noise). The ``remove``
    law is ``P = D'``, ``Q = D``; the ``add`` law the other order.

    Parameters
    ----------
    epsilon
        The selection's parameter, in ``EPSILON_RANGE``.
    noise
        One of :data:`NOISES`.
    lead
        ``d``, a finite real number.

    Raises
    ------
    TypeError
        If ``epsilon`` or ``lead`` is not a real number.
    ValueError
        If ``epsilon`` is outside ``EPSILON_RANGE``, ``noise`` is unknown or ``lead`` is not
        finite.
    """

    epsilon: float
    noise: str = "laplace"
    lead: float = -1.0

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _checked_epsilon(self.epsilon))
        _check_noise(self.noise)
        if isinstance(self.lead, bool) or not isinstance(self.lead, (int, float, np.floating)):
            raise TypeError(f"lead must be a real number, got {type(self.lead).__name__}")
        if not math.isfinite(self.lead):
            raise ValueError(f"lead must be finite, got {self.lead!r}")
        object.__setattr__(self, "lead", float(self.lead))

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        """Whether ``lead = -1`` (the pair read backwards is the lead ``-2 - d``)."""
        return self.lead == -1.0

    def _law(self, first: float, second: float) -> AtomLaw:
        # P: the dataset where the first candidate leads by `first`; Q: by `second`
        p = log_win_lose(self.noise, self.epsilon, first)
        q = log_win_lose(self.noise, self.epsilon, second)
        losses = np.array([p[0] - q[0], p[1] - q[1]])
        probs = np.exp(np.array(p))
        order = np.argsort(losses)
        return AtomLaw(atom_losses=losses[order], atom_probs=probs[order])

    def _remove_law(self) -> PrivacyLossLaw:
        return self._law(self.lead + 2.0, self.lead)

    def _add_law(self) -> PrivacyLossLaw:
        return self._law(self.lead, self.lead + 2.0)

    def under_replace_one(self) -> Mechanism:
        """The pair is realized under either relation: the utilities move by ``Delta`` each.

        Returns
        -------
        TwoCandidatePair
            This mechanism.
        """
        return self


def inward_lattice_pair(pair: TwoCandidatePair) -> Mechanism:
    """A two-point pair dominated by ``pair`` whose losses lie on a lattice.

    A two-point pair is fixed by its losses ``a > 0 > b`` (``P(a) = expm1(-b) / (expm1(-b) -
    expm1(-a))``) and its tradeoff function is ``max(0, 1 - e^a alpha, e^b (1 - alpha))``; moving
    ``a`` down and ``b`` up raises it everywhere, so the moved pair is dominated by ``pair`` in
    both directions and its compositions' lower bounds stay certified lower bounds. On a lattice
    of ``LATTICE`` steps the engine composes it exactly and fast (two losses in an irrational
    ratio need a fine grid to reach the accuracy: a thousand steps took seconds, not
    milliseconds).

    Parameters
    ----------
    pair : TwoCandidatePair
        A realized pair.

    Returns
    -------
    Mechanism
        The two-point pair (:func:`two_point`) with losses ``+-a`` when ``pair`` is symmetric
        (a lattice already), otherwise with losses ``floor(a/h) h`` and ``ceil(b/h) h``, ``h =
        max(a, -b) / LATTICE`` (the pair without loss if one of them is 0); ``a`` and ``b``
        first moved inward by their rounding (:func:`_inward_losses`).
    """
    high, low = _inward_losses(pair)
    if pair.symmetric:  # the losses +-a of one pair read both ways: a lattice already
        a = min(high, -low)
        if a <= 0:
            return GaussianDP(0.0)
        return CustomMechanism(remove=two_point(a, -a), add=two_point(a, -a),
                               name=f"inward pair of {pair!r}")
    step = max(high, -low) / LATTICE
    up = math.floor(high / step)
    if (up + 1) * step <= high:  # the division rounded down across a lattice point
        up += 1
    down = math.ceil(low / step)
    if (down - 1) * step >= low:
        down -= 1
    if up <= 0 or down >= 0:
        # the smaller loss is below one step (far leads at large epsilon): the pair moved
        # inward is the pair without loss, the trivial lower bound
        return GaussianDP(0.0)
    high, low = up * step, down * step
    return CustomMechanism(remove=two_point(high, low), add=two_point(-low, -high),
                           name=f"inward lattice pair of {pair!r}")


def _inward_losses(pair: TwoCandidatePair) -> tuple[float, float]:
    """The losses ``a > 0 > b`` of ``pair``'s remove law, each moved toward 0 by its rounding.

    A loss is a difference of two log-probabilities, each a few ulps of its own size off: read
    as computed, the top loss of the lead ``-1`` pair was ``eps (1 + 9e-16)``, above what an
    ``eps``-DP selection allows, and a lower bound composed from it could exceed the truth.
    Moved inward by 8 ulps of the log-probabilities and clamped to ``[-eps, eps]``, the pair is
    dominated by the true one."""
    p = log_win_lose(pair.noise, pair.epsilon, pair.lead + 2.0)
    q = log_win_lose(pair.noise, pair.epsilon, pair.lead)
    losses = []
    for first, second in zip(p, q, strict=True):
        loss = first - second
        slack = 8 * UNIT_ROUNDOFF * (abs(first) + abs(second))
        losses.append(math.copysign(max(abs(loss) - slack, 0.0), loss))
    return min(max(losses), pair.epsilon), max(min(losses), -pair.epsilon)


def two_point(high: float, low: float) -> AtomLaw:
    """The law of the two-point pair with losses ``high > 0 > low``.

    ``E_Q[e^L] = 1`` fixes the masses: ``P(high) = expm1(-low) / (expm1(-low) - expm1(-high))``
    (a sum of two positive numbers below, no cancellation).

    Parameters
    ----------
    high, low : float
        The two losses.

    Returns
    -------
    AtomLaw
        Atoms ``low`` and ``high`` with their ``P`` probabilities.
    """
    down = -math.expm1(-high)
    if low > -700:
        up = math.expm1(-low)
        probs = [down / (up + down), up / (up + down)]
    else:  # e^{-low} overflows: both masses scaled by e^{low} (-expm1(low) is then 1)
        scaled = down * math.exp(low)
        probs = [scaled / (1.0 + scaled), 1.0 / (1.0 + scaled)]
    return AtomLaw(atom_losses=np.array([low, high]), atom_probs=np.array(probs))


def _checked_epsilon(epsilon) -> float:
    epsilon = positive_float("epsilon", epsilon)
    in_range("epsilon", epsilon, EPSILON_RANGE[0], EPSILON_RANGE[1],
             "the selection epsilon plda certifies")
    return epsilon


def _check_noise(noise) -> None:
    if not isinstance(noise, str):
        raise TypeError(f"noise must be a string, one of {NOISES}, got {type(noise).__name__}")
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {NOISES}, got {noise!r}")


class _PureSelection(BracketedMechanism):
    """Shared by the two epsilon-DP selections: the upper law of an epsilon-DP step, the
    realized two-candidate pairs below it, and the guarantee taken as stated."""

    epsilon: float
    noise: str

    def _remove_law(self) -> PrivacyLossLaw:
        # every epsilon-DP step is dominated by randomized response (Kairouz, Oh & Viswanath
        # 2015); no smaller pair is proved for these selections (docs/concepts/selection.md)
        return ApproximateDP(self.epsilon).privacy_loss("remove")

    def lower_bound_mechanisms(self) -> tuple[Mechanism, ...]:
        """The realized two-candidate pairs of every lead in :data:`LOWER_LEADS`.

        Returns
        -------
        tuple of Mechanism
            One per lead, each moved inward onto a lattice (:func:`inward_lattice_pair`).
        """
        return tuple(inward_lattice_pair(TwoCandidatePair(epsilon=self.epsilon, noise=self.noise,
                                                          lead=d)) for d in LOWER_LEADS)

    def lower_bound_mechanism(self) -> Mechanism:
        """The lead ``-1`` pair, the worst at ``eps' = 0``.

        Returns
        -------
        TwoCandidatePair
            ``TwoCandidatePair(epsilon, noise, -1)``.
        """
        return TwoCandidatePair(epsilon=self.epsilon, noise=self.noise, lead=-1.0)

    def under_replace_one(self) -> Mechanism:
        """The step under replace-one: the guarantee is taken as stated.

        The utility's sensitivity was stated for some neighbouring relation, and the
        ``epsilon``-DP guarantee holds for that relation.

        Returns
        -------
        Mechanism
            This mechanism.
        """
        return self

    def _coarsened(self) -> Mechanism:
        return self

    def _warn_about_analysis(self) -> None:
        warn(
            f"{public_name(self)}: the upper bound is the randomized response of its "
            "epsilon-DP guarantee, the lower bound from realized two-candidate pairs "
            "(m.lower_bound_mechanisms()); the interval includes that gap",
            NotTightWarning,
        )


@dataclass(frozen=True)
class PermuteAndFlip(_PureSelection):
    r"""Permute-and-flip (McKenna & Sheldon 2020), an ``epsilon``-DP selection.

    The candidates are visited in a random order and ``r`` is released with probability
    ``exp(epsilon (u(D, r) - u*) / (2 Delta))``, ``u*`` the best utility; it is
    report-noisy-max with exponential noise of scale ``2 Delta / epsilon`` (Ding et al. 2021).

    Upper bound: the randomized-response pair of an ``epsilon``-DP step. Lower bound: the
    realized two-candidate pairs (:data:`LOWER_LEADS`), composed with themselves; enumerating
    every instance of up to 4 candidates with small integer utilities found none worse, at
    ``eps' = 0`` the pair reaches ``1 - e^(-eps/2)`` against ``tanh(eps/2)`` for randomized
    response. The bracket includes that gap (:class:`NotTightWarning`).

    Parameters
    ----------
    epsilon
        The ``epsilon`` of its ``epsilon``-DP guarantee, in ``EPSILON_RANGE``.

    Raises
    ------
    TypeError
        If ``epsilon`` is not a real number.
    ValueError
        If ``epsilon`` is not positive and finite, or outside ``EPSILON_RANGE``.

    Examples
    --------
    >>> import warnings
    >>> import plda
    >>> warnings.simplefilter("ignore", plda.NotTightWarning)
    >>> pf = plda.PrivacyLossDistribution.from_mechanism(plda.PermuteAndFlip(1.0), 10)
    >>> bool(pf.epsilon_bounds(1e-6).lower < pf.epsilon_bounds(1e-6).upper)
    True
    """

    epsilon: float
    noise = "exponential"

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _checked_epsilon(self.epsilon))


@dataclass(frozen=True)
class ReportNoisyMax(_PureSelection):
    r"""Report-noisy-max: noise of scale ``2 Delta / epsilon`` on each utility, the argmax out.

    - ``noise="laplace"``: ``epsilon``-DP (Dwork & Roth 2014, Claim 3.9); bracketed like
      :class:`PermuteAndFlip`, with the realized Laplace two-candidate pairs below. With more
      candidates the realized loss grows (3 tied candidates exceed the 2-candidate pairs), so
      the gap is wider than for permute-and-flip.
    - ``noise="exponential"``: permute-and-flip, the same laws as :class:`PermuteAndFlip`.
    - ``noise="gumbel"``: the exponential mechanism, ``epsilon``-bounded range: the same laws
      as :class:`ExponentialMechanism`.

    Parameters
    ----------
    epsilon
        The noise scale is ``2 Delta / epsilon``; in ``EPSILON_RANGE``.
    noise
        One of :data:`NOISES` (default ``"laplace"``).

    Raises
    ------
    TypeError
        If ``epsilon`` is not a real number or ``noise`` not a string.
    ValueError
        If ``epsilon`` is outside ``EPSILON_RANGE`` or ``noise`` is unknown.
    """

    epsilon: float
    noise: str = "laplace"

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _checked_epsilon(self.epsilon))
        _check_noise(self.noise)

    def _remove_law(self) -> PrivacyLossLaw:
        if self.noise == "gumbel":
            return BoundedRangeLaw(epsilon=self.epsilon)
        return super()._remove_law()

    def lower_bound_mechanisms(self) -> tuple[Mechanism, ...]:
        """The realized pairs below the selection.

        Returns
        -------
        tuple of Mechanism
            The exponential mechanism's two-point pairs for Gumbel noise; otherwise the
            two-candidate pairs of every lead in :data:`LOWER_LEADS`.
        """
        if self.noise == "gumbel":
            return ExponentialMechanism(self.epsilon).lower_bound_mechanisms()
        return super().lower_bound_mechanisms()

    def lower_bound_mechanism(self) -> Mechanism:
        """The pair worst at ``eps' = 0``.

        Returns
        -------
        Mechanism
            The exponential mechanism's split-1/2 pair for Gumbel noise, otherwise the lead
            ``-1`` two-candidate pair.
        """
        if self.noise == "gumbel":
            return ExponentialMechanism(self.epsilon).lower_bound_mechanism()
        return super().lower_bound_mechanism()

    def _warn_about_analysis(self) -> None:
        if self.noise != "gumbel":
            super()._warn_about_analysis()
            return
        warn(
            f"{public_name(self)}: with Gumbel noise it is the exponential mechanism: the upper "
            "bound comes from the least pair above every epsilon-bounded-range step, the lower "
            "bound from realized two-point pairs (m.lower_bound_mechanisms()); the interval "
            "includes that gap",
            NotTightWarning,
        )
