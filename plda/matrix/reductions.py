"""Matrix mechanisms without sampling, reduced exactly to one Gaussian mechanism.

:class:`MultiEpochMF` (a strategy run over several epochs, participations at least
``min_separation`` apart) and :class:`TreeAggregation` (DP-FTRL's tree, one epoch) are each as
private as ``Gaussian(noise_multiplier, sensitivity)``; :class:`MatrixReduction` holds the
queries they share. What the reductions assume of the training loop: ``docs/howto/dp-ftrl.md``.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from plda._internal.caches import remembered
from plda._internal.errors import check_bracket
from plda._internal.validation import positive_float
from plda.bounds import Bounds
from plda.matrix.sensitivity import EXHAUSTIVE_LIMIT, Sensitivity, sensitivity
from plda.mechanisms import Gaussian
from plda.pld import DEFAULT_ACCURACY, PrivacyLossDistribution

__all__ = ["MatrixReduction", "MultiEpochMF", "TreeAggregation", "tree_depth"]


class MatrixReduction:
    """The privacy queries of a matrix mechanism that reduces to plda mechanisms.

    A subclass gives :meth:`pld` (whose upper bounds are certified for the matrix mechanism)
    and :meth:`lower_pld` (whose lower bounds are, the same PLD when the reduction is exact).
    """

    @property
    def exact(self) -> bool:
        """Whether :meth:`pld` is the mechanism's own privacy loss (both bounds hold).

        Raises
        ------
        NotImplementedError
            In the base class: each reduction says.
        """
        raise NotImplementedError

    def _build(self, which: str, relation: str, accuracy: float) -> PrivacyLossDistribution:
        raise NotImplementedError

    def _cached(self, which: str, relation: str, accuracy: float) -> PrivacyLossDistribution:
        # the project's one memo (thread-safe in the sense that matters: a race builds the
        # same PLD twice and stores it whole)
        return remembered(self, ("pld", which, relation, accuracy),
                          lambda: self._build(which, relation, accuracy))

    def pld(
        self, *, relation: str = "add_remove", accuracy: float = DEFAULT_ACCURACY
    ) -> PrivacyLossDistribution:
        """The PLD of the reduction: its upper bounds are certified for this mechanism.

        Parameters
        ----------
        relation : str, optional
            ``"add_remove"`` (default) or ``"replace_one"``.
        accuracy : float, optional
            Target relative gap of ``epsilon(delta)``, in (0, 1).

        Returns
        -------
        PrivacyLossDistribution
            Not yet discretized; remembered per ``(relation, accuracy)``.

        Raises
        ------
        ValueError
            If ``relation`` or ``accuracy`` is out of range.
        """
        return self._cached("upper", relation, accuracy)

    def lower_pld(
        self, *, relation: str = "add_remove", accuracy: float = DEFAULT_ACCURACY
    ) -> PrivacyLossDistribution:
        """A PLD whose lower bounds hold for this mechanism.

        :meth:`pld` when :attr:`exact`, else a realized pair (a pattern or a part of the data
        that the mechanism does run).

        Parameters
        ----------
        relation : str, optional
            ``"add_remove"`` (default) or ``"replace_one"``.
        accuracy : float, optional
            Target relative gap of ``epsilon(delta)``, in (0, 1).

        Returns
        -------
        PrivacyLossDistribution
            Not yet discretized.

        Raises
        ------
        ValueError
            If ``relation`` or ``accuracy`` is out of range.
        """
        if self.exact:
            return self.pld(relation=relation, accuracy=accuracy)
        return self._cached("lower", relation, accuracy)

    def epsilon(self, delta: float, *, relation: str = "add_remove") -> float:
        """Certified upper bound on epsilon at ``delta``.

        Parameters
        ----------
        delta : float
            In ``[0, 1]``.
        relation : str, optional
            ``"add_remove"`` (default) or ``"replace_one"``.

        Returns
        -------
        float
            ``pld(relation=relation).epsilon(delta)``.

        Raises
        ------
        ValueError
            If ``delta`` or ``relation`` is out of range.
        """
        return self.pld(relation=relation).epsilon(delta)

    def epsilon_bounds(self, delta: float, *, relation: str = "add_remove",
                       accuracy: float = DEFAULT_ACCURACY) -> Bounds:
        """Certified ``(lower, upper)`` bounds on the mechanism's epsilon at ``delta``.

        Parameters
        ----------
        delta : float
            In ``[0, 1]``.
        relation : str, optional
            ``"add_remove"`` (default) or ``"replace_one"``.
        accuracy : float, optional
            Target relative gap of each PLD's bounds, in (0, 1).

        Returns
        -------
        Bounds
            The upper bound of :meth:`pld` and the lower bound of :meth:`lower_pld`.

        Raises
        ------
        ValueError
            If ``delta``, ``relation`` or ``accuracy`` is out of range.
        InvertedBracketError
            If the lower bound exceeds the upper one (a defect, never clamped).
        """
        return self._bounds("epsilon", delta, relation, accuracy)

    def delta(self, epsilon: float, *, relation: str = "add_remove") -> float:
        """Certified upper bound on delta at ``epsilon``.

        Parameters
        ----------
        epsilon : float
            At least 0.
        relation : str, optional
            ``"add_remove"`` (default) or ``"replace_one"``.

        Returns
        -------
        float
            ``pld(relation=relation).delta(epsilon)``.

        Raises
        ------
        ValueError
            If ``epsilon`` or ``relation`` is out of range.
        """
        return self.pld(relation=relation).delta(epsilon)

    def delta_bounds(self, epsilon: float, *, relation: str = "add_remove",
                     accuracy: float = DEFAULT_ACCURACY) -> Bounds:
        """Certified ``(lower, upper)`` bounds on the mechanism's delta at ``epsilon``.

        Parameters
        ----------
        epsilon : float
            At least 0.
        relation : str, optional
            ``"add_remove"`` (default) or ``"replace_one"``.
        accuracy : float, optional
            Target relative gap of each PLD's bounds, in (0, 1).

        Returns
        -------
        Bounds
            The upper bound of :meth:`pld` and the lower bound of :meth:`lower_pld`.

        Raises
        ------
        ValueError
            If ``epsilon``, ``relation`` or ``accuracy`` is out of range.
        InvertedBracketError
            If the lower bound exceeds the upper one (a defect, never clamped).
        """
        return self._bounds("delta", epsilon, relation, accuracy)

    def _bounds(self, query: str, value, relation: str, accuracy: float) -> Bounds:
        """``query`` (``"epsilon"`` or ``"delta"``) bounds: the upper one from :meth:`pld`, the
        lower one from :meth:`lower_pld` (the same PLD when the reduction is exact)."""
        upper = self.pld(relation=relation, accuracy=accuracy)
        if self.exact:
            return getattr(upper, f"{query}_bounds")(value)
        lower_pld = self.lower_pld(relation=relation, accuracy=accuracy)
        bounds = Bounds(lower=getattr(lower_pld, f"{query}_bounds")(value).lower,
                        upper=getattr(upper, query)(value))
        check_bracket(bounds.lower, bounds.upper,
                      query=f"{type(self).__name__}.{query}_bounds")
        return bounds


@dataclass(frozen=True, eq=False)
class MultiEpochMF(MatrixReduction):
    """A matrix mechanism without sampling: one Gaussian at the min-separation sensitivity.

    Releasing ``C x + sigma z`` (``z`` standard Gaussian, each record's contribution to a
    step clipped to norm 1, at most ``participations`` steps pairwise ``min_separation``
    apart) is as private as ``Gaussian(sigma, sens)`` with ``sens`` from
    :func:`~plda.matrix.sensitivity` (with ``vectors=True``), so it is ``mu``-GDP with
    ``mu = sens / sigma`` exactly (Denisov et al. 2022 for adaptive inputs; Choquette-Choo et
    al. 2023, multi-epoch MF). When the sensitivity is only a certified upper bound,
    :meth:`pld` is an upper bound and :meth:`lower_pld` the Gaussian at the sensitivity of a
    realized pattern.

    Parameters
    ----------
    strategy : array_like or ToeplitzStrategy
        ``C``: a square lower-triangular array, Toeplitz coefficients or a
        :class:`~plda.matrix.ToeplitzStrategy`.
    noise_multiplier : float
        ``sigma``, the noise's standard deviation over the clipping norm, positive.
    participations : int, optional
        ``k``, the most steps a record takes part in (default 1).
    min_separation : int, optional
        ``s``, the least distance between two of them (default 1).
    exhaustive_limit : int, optional
        Passed to :func:`~plda.matrix.sensitivity`.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If an argument is out of range (see :func:`~plda.matrix.sensitivity`), or
        ``noise_multiplier`` is not positive and finite.
    """

    strategy: object
    noise_multiplier: float
    participations: int = 1
    min_separation: int = 1
    exhaustive_limit: int = EXHAUSTIVE_LIMIT
    _sensitivity: Sensitivity | None = field(default=None, repr=False)

    def __post_init__(self):
        sigma = positive_float("noise_multiplier", self.noise_multiplier)
        object.__setattr__(self, "noise_multiplier", sigma)
        found = sensitivity(self.strategy, self.participations, self.min_separation,
                            vectors=True, exhaustive_limit=self.exhaustive_limit)
        object.__setattr__(self, "_sensitivity", found)

    @property
    def sensitivity(self) -> Sensitivity:
        """The min-separation sensitivity (vector contributions), exact or a bound."""
        return self._sensitivity

    @property
    def exact(self) -> bool:
        """Whether the sensitivity, hence :meth:`pld`, is exact."""
        return self._sensitivity.exact

    @property
    def mu(self) -> float:
        """The Gaussian-DP ``mu = sens / noise_multiplier`` (an upper bound unless exact)."""
        return self._sensitivity.value / self.noise_multiplier

    @property
    def mechanism(self) -> Gaussian:
        """``Gaussian(sigma=noise_multiplier, sensitivity=sens)``."""
        return Gaussian(sigma=self.noise_multiplier, sensitivity=self._sensitivity.value)

    def _build(self, which, relation, accuracy):
        if which == "upper":
            mechanism = self.mechanism
        else:
            mechanism = Gaussian(sigma=self.noise_multiplier,
                                 sensitivity=self._sensitivity.lower)
        return PrivacyLossDistribution.from_mechanism(mechanism, relation=relation,
                                                      accuracy=accuracy)


def tree_depth(steps: int) -> int:
    """The number of tree nodes a record's step lies in at most: ``floor(log2 n) + 1``.

    Step 0 lies in the complete dyadic interval ``[0, 2^h)`` of every level ``h`` with
    ``2^h <= n`` and no step lies in two intervals of one level, so this is the exact largest
    count; it equals ``ceil(log2(n + 1))``.

    Parameters
    ----------
    steps : int
        The number of steps ``n >= 1`` of one tree.

    Returns
    -------
    int
        ``n.bit_length()``.

    Raises
    ------
    TypeError
        If ``steps`` is not an integer.
    ValueError
        If ``steps < 1``.
    """
    if isinstance(steps, bool) or not isinstance(steps, numbers.Integral):
        raise TypeError(f"steps must be an integer >= 1, got {steps!r}")
    if steps < 1:
        raise ValueError(f"steps must be an integer >= 1, got {steps!r}")
    return int(steps).bit_length()


@dataclass(frozen=True, eq=False)
class TreeAggregation(MatrixReduction):
    """Single-epoch tree aggregation (DP-FTRL): one Gaussian at the tree sensitivity.

    Kairouz et al. 2021: the sensitivity is ``sqrt(floor(log2 n) + 1)``.

    Every node of the binary tree over the steps (a dyadic interval's sum of clipped
    gradients) gets independent noise ``N(0, sigma^2)``; a record takes part in one step of
    one tree, so it enters at most :func:`tree_depth` nodes, and the adaptive composition of
    those Gaussian releases is exactly ``sqrt(depth) / sigma``-GDP (Dong, Roth & Su 2019,
    composition of GDP). With several trees (restarts), ``steps`` lists their lengths and the
    deepest counts (each record in one tree only, as dp_accounting's
    ``SingleEpochTreeAggregationDpEvent``).

    Parameters
    ----------
    steps : int or sequence of int
        The steps of the tree, or of each tree, each ``>= 1``.
    noise_multiplier : float
        ``sigma``, the per-node noise over the clipping norm, positive.

    Raises
    ------
    TypeError
        If ``steps`` holds a non-integer or ``noise_multiplier`` is not a real number.
    ValueError
        If ``steps`` is empty or holds a value below 1, or ``noise_multiplier`` is not
        positive and finite.
    """

    steps: object
    noise_multiplier: float
    _depth: int = field(default=0, repr=False)

    def __post_init__(self):
        sigma = positive_float("noise_multiplier", self.noise_multiplier)
        object.__setattr__(self, "noise_multiplier", sigma)
        counts = self.steps if isinstance(self.steps, (list, tuple, np.ndarray)) else [self.steps]
        if len(counts) == 0:
            raise ValueError("steps must hold at least one tree length")
        depths = [tree_depth(c) for c in counts]
        object.__setattr__(self, "steps", tuple(int(c) for c in counts)
                           if len(counts) > 1 else int(counts[0]))
        object.__setattr__(self, "_depth", max(depths))

    @property
    def depth(self) -> int:
        """The most nodes one record enters, over the trees."""
        return self._depth

    @property
    def sensitivity(self) -> float:
        """``sqrt(depth)``, the exact L2 sensitivity of the node releases."""
        return math.sqrt(self._depth)

    @property
    def exact(self) -> bool:
        """Always True: the reduction is exact."""
        return True

    @property
    def mu(self) -> float:
        """The Gaussian-DP ``mu = sqrt(depth) / noise_multiplier``."""
        return self.sensitivity / self.noise_multiplier

    @property
    def mechanism(self) -> Gaussian:
        """``Gaussian(sigma=noise_multiplier, sensitivity=sqrt(depth))``."""
        return Gaussian(sigma=self.noise_multiplier, sensitivity=self.sensitivity)

    def _build(self, which, relation, accuracy):
        return PrivacyLossDistribution.from_mechanism(self.mechanism, relation=relation,
                                                      accuracy=accuracy)
