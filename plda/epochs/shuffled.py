"""One shuffled pass over the data (an epoch): an honest bracket, as no tight analysis is known.

:class:`Shuffled` is bounded above by one run of its base (no amplification) and below by the
pairs of worst-case inputs (:meth:`Shuffled.lower_bound_mechanisms`). Why both hold:
``docs/howto/samplers.md`` ("How the shuffled bracket is certified").
"""

from __future__ import annotations

from dataclasses import dataclass

from plda._internal.errors import warn
from plda._internal.validation import count
from plda.epochs.allocation import MAX_STEPS, RandomAllocation, allocation_supported
from plda.epochs.cells import shifted_pair_cell_sum_laws, shifted_pair_plan
from plda.epochs.max_shift import LaplaceMaxShiftLaw, MaxShiftLaw
from plda.epochs.max_shift_pair import LaplaceMaxShiftPairLaw, MaxShiftPairLaw
from plda.mechanisms.base import BracketedMechanism, Mechanism, SamplerAssumptionWarning
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.without_replacement import check_base


@dataclass(frozen=True)
class Shuffled(BracketedMechanism):
    """One epoch of ``num_steps`` steps of ``mechanism`` on a shuffled dataset: each record once.

    Each step runs on the next batch of a uniformly random partition of the data. No tight
    analysis of shuffling is known (Chua et al., ICML 2024 and NeurIPS 2024), so plda reports a
    bracket certified on both sides:

    - **upper bound, no amplification**: the epoch is dominated by one run of ``mechanism``
      (under replace-one, at doubled sensitivity). Under add/remove this assumes the smaller
      dataset's batches are the larger's with the record taken out (its slot left empty); a
      loader whose later batches shift when a record is removed should be accounted under
      replace-one (plda warns with :class:`~plda.SamplerAssumptionWarning`);
    - **lower bound, worst-case inputs** (:meth:`lower_bound_mechanisms`): the pairs of inputs
      realized by datasets, the other records at ``-C``
      (:class:`ShuffledOppositeLowerBound`, :class:`ShuffledOppositeSumLowerBound`) or at 0
      (:class:`ShuffledLowerBound`); none is larger at every ``epsilon``, and a composition
      reports the largest of their lower bounds.

    With ``num_steps = 1`` both bounds are the base's. The coupling arguments and the numbers
    of a CIFAR-sized epoch: ``docs/howto/samplers.md`` ("Shuffled epochs").

    Parameters
    ----------
    mechanism : Mechanism
        ``plda.Gaussian`` or ``plda.Laplace`` with its add/remove sensitivity ``C`` (for DP-SGD
        the clipping norm). With Laplace noise the lower pairs are those of the largest of
        shifted Laplace coordinates
        (:class:`~plda.epochs.max_shift_pair.LaplaceMaxShiftPairLaw`) and the
        Laplace random-allocation pair.
    num_steps : int
        Steps (batches) per epoch, an integer ``>= 1``.

    Raises
    ------
    TypeError
        If ``mechanism`` is not a Gaussian or Laplace mechanism, or ``num_steps`` is not a
        number (a bool included).
    ValueError
        If ``num_steps`` is not an integer ``>= 1``.

    Examples
    --------
    >>> import plda
    >>> epoch = plda.Shuffled(plda.Gaussian(sigma=1.0), num_steps=10)
    >>> epoch.lower_bound_mechanism()
    ShuffledOppositeLowerBound(mechanism=Gaussian(sigma=1.0, sensitivity=1.0), num_steps=10)
    >>> [type(m).__name__ for m in epoch.lower_bound_mechanisms()]
    ['ShuffledOppositeLowerBound', 'ShuffledLowerBound']
    """

    mechanism: Mechanism
    num_steps: int

    def __post_init__(self):
        check_base("Shuffled", self.mechanism)
        object.__setattr__(self, "num_steps", count("num_steps", self.num_steps, minimum=1))

    @property
    def tight(self) -> bool:  # type: ignore[override]
        """Whether the laws are the epoch's own pair: for one step per epoch only."""
        return self.num_steps == 1

    def _warn_about_analysis(self) -> None:
        self._warn_not_tight()
        if self.num_steps > 1:
            warn(
                "Shuffled under add/remove assumes that removing a record leaves its slot "
                "empty and the other batches unchanged; if your loader re-chunks a permutation "
                "(later batches shift), use relation='replace_one'",
                SamplerAssumptionWarning,
            )

    def _remove_law(self):
        return self.mechanism.privacy_loss("remove")

    def _coarsened(self) -> Mechanism:
        return self.mechanism._coarsened()

    def under_replace_one(self) -> Mechanism:
        """This epoch read under replace-one.

        Returns
        -------
        Mechanism
            An epoch dominated by one run of the base at doubled sensitivity, whose lower
            bound mechanism is the shift-``2C``-against-none pair.
        """
        return _ReplaceOneShuffled(self.mechanism, self.num_steps)

    def lower_bound_mechanism(self) -> Mechanism:
        """The pair of the input with the other records at ``-C``, for the lower bound.

        Use it with the same relation as this mechanism; :meth:`lower_bound_mechanisms` also
        holds the other inputs' pairs.

        Returns
        -------
        ShuffledOppositeLowerBound
            Shift ``2C`` against ``C`` under add/remove, ``2C`` against none once read under
            replace-one.
        """
        return ShuffledOppositeLowerBound(self.mechanism, self.num_steps)

    def lower_bound_mechanisms(self) -> tuple[Mechanism, ...]:
        """The pairs of both realized inputs, whose largest lower bound is certified.

        Read them under the same relation as this mechanism; none is larger at every
        ``epsilon``.

        Returns
        -------
        tuple of Mechanism
            Others at ``-C`` through the largest batch sum
            (:class:`ShuffledOppositeLowerBound`) and, where supported, through a sum over
            batches (:class:`ShuffledOppositeSumLowerBound`), then others at 0
            (:class:`ShuffledLowerBound`).
        """
        opposite = ShuffledOppositeLowerBound(self.mechanism, self.num_steps)
        zero = ShuffledLowerBound(self.mechanism, self.num_steps)
        if opposite_sum_supported(self.mechanism, self.num_steps):
            return (opposite, ShuffledOppositeSumLowerBound(self.mechanism, self.num_steps), zero)
        return (opposite, zero)


@dataclass(frozen=True)
class _ReplaceOneShuffled(Shuffled):
    """Internal: a shuffled epoch read under replace-one (laws at doubled sensitivity)."""

    def _warn_about_analysis(self) -> None:
        self._warn_not_tight()  # no slot assumption under replace-one

    def _remove_law(self):
        return self.mechanism.under_replace_one().privacy_loss("remove")

    def under_replace_one(self) -> Mechanism:
        return self

    def _coarsened(self) -> Mechanism:
        return self.mechanism.under_replace_one()._coarsened()

    def lower_bound_mechanism(self) -> Mechanism:
        return _ReplaceOneShuffledLowerBound(self.mechanism, self.num_steps)

    def lower_bound_mechanisms(self) -> tuple[Mechanism, ...]:
        """Shift ``2C`` against none only: it beats the other inputs' replace-one pairs."""
        return (self.lower_bound_mechanism(),)


@dataclass(frozen=True)
class ShuffledLowerBound(Mechanism):
    """The pair of the input with the other records at 0 and x at ``+C``: a lower pair of a shuffle.

    Shift ``C`` against none under add/remove; read under replace-one, shift ``2C`` against
    none (others at ``-C``, x' at ``-C``). Its laws are the random-allocation pair itself where
    :class:`~plda.RandomAllocation` supports it, else its largest coordinate
    (:class:`MaxShiftLaw`); either way the lower bound of this mechanism's PLD is certified
    for the shuffled epoch.

    Attributes
    ----------
    mechanism : Mechanism
        The Gaussian or Laplace base, with its sensitivity ``C``.
    num_steps : int
        Steps (batches) per epoch, ``>= 1``.

    Raises
    ------
    TypeError
        If ``mechanism`` is not a Gaussian or Laplace mechanism, or ``num_steps`` is not a
        number.
    ValueError
        If ``num_steps`` is not an integer ``>= 1``.
    """

    mechanism: Mechanism
    num_steps: int

    shift = 1.0
    symmetric = False

    def __post_init__(self):
        check_base("ShuffledLowerBound", self.mechanism)
        object.__setattr__(self, "num_steps", count("num_steps", self.num_steps, minimum=1))

    def _allocation(self) -> RandomAllocation | None:
        """The full pair as a :class:`~plda.RandomAllocation` epoch, if supported."""
        base = self.mechanism
        if self.num_steps == 1:
            return None
        if type(base) is Laplace:
            shifted = Laplace(base.scale, self.shift * base.sensitivity)
            try:
                return RandomAllocation(shifted, self.num_steps)
            except ValueError:  # beyond RandomAllocation's range for a Laplace base
                return None
        shifted = Gaussian(base.sigma, self.shift * base.sensitivity)
        return RandomAllocation(shifted, self.num_steps) if allocation_supported(
            shifted.mu, self.num_steps) else None

    def _remove_law(self):
        base = self.mechanism
        if self.num_steps == 1:  # the maximum of one coordinate is the output itself
            return type(base)(base.scale if type(base) is Laplace else base.sigma,
                              self.shift * base.sensitivity).privacy_loss("remove")
        allocation = self._allocation()
        if allocation is not None:
            return allocation.privacy_loss("remove")
        if type(base) is Laplace:
            return LaplaceMaxShiftLaw(m=self.shift * base.epsilon, num_steps=self.num_steps)
        return MaxShiftLaw(mu=self.shift * base.mu, num_steps=self.num_steps)

    def _add_law(self):
        allocation = self._allocation()
        if allocation is not None:  # its add law is its own (computed with the remove one)
            return allocation.privacy_loss("add")
        return super()._add_law()

    def under_replace_one(self) -> Mechanism:
        """This pair read under replace-one.

        Returns
        -------
        Mechanism
            Shift ``2C`` against none.
        """
        return _ReplaceOneShuffledLowerBound(self.mechanism, self.num_steps)


@dataclass(frozen=True)
class _ReplaceOneShuffledLowerBound(ShuffledLowerBound):
    """Internal: the lower pair read under replace-one (shift ``2C``)."""

    shift = 2.0

    def under_replace_one(self) -> Mechanism:
        return self


@dataclass(frozen=True)
class ShuffledOppositeLowerBound(Mechanism):
    """The pair of the input with the other records at ``-C``, through the largest batch sum.

    With x one uniformly random batch is shifted by ``2C``, without it (add/remove, slot left
    empty) the same batch by ``C``; read under replace-one (x' at ``-C``) it is shift ``2C``
    against none (:meth:`under_replace_one`). Its laws are those of the largest batch sum
    (:class:`~plda.epochs.max_shift_pair.MaxShiftPairLaw`, or its Laplace analogue), a
    post-processing of the realized pair: the lower bound of its PLD is certified for the
    shuffled epoch.

    Attributes
    ----------
    mechanism : Mechanism
        The Gaussian or Laplace base, with its sensitivity ``C``.
    num_steps : int
        Steps (batches) per epoch, ``>= 1``.

    Raises
    ------
    TypeError
        If ``mechanism`` is not a Gaussian or Laplace mechanism, or ``num_steps`` is not a
        number.
    ValueError
        If ``num_steps`` is not an integer ``>= 1``.
    """

    mechanism: Mechanism
    num_steps: int

    symmetric = False

    def __post_init__(self):
        check_base("ShuffledOppositeLowerBound", self.mechanism)
        object.__setattr__(self, "num_steps", count("num_steps", self.num_steps, minimum=1))

    def _remove_law(self):
        base = self.mechanism
        if self.num_steps == 1:  # N(2C) against N(C): the base itself
            return base.privacy_loss("remove")
        if type(base) is Laplace:
            return LaplaceMaxShiftPairLaw(m=2 * base.epsilon, num_steps=self.num_steps,
                                          m_q=base.epsilon)
        return MaxShiftPairLaw(mu=2 * base.mu, num_steps=self.num_steps, mu_q=base.mu)

    def under_replace_one(self) -> Mechanism:
        """The same input under replace-one, x replaced by a record at ``-C``.

        Returns
        -------
        Mechanism
            Shift ``2C`` against none (:class:`ShuffledLowerBound` read under replace-one).
        """
        return _ReplaceOneShuffledLowerBound(self.mechanism, self.num_steps)


@dataclass(frozen=True)
class ShuffledOppositeSumLowerBound(Mechanism):
    """The pair of the input with the other records at ``-C``, through a sum over batches.

    The statistic is the sum over batches of the cell of each batch's ``e^(2 mu Y - 2 mu^2)``
    (``mu = C / sigma``), with exact discrete laws
    (:func:`~plda.epochs.cells.shifted_pair_cell_sum_laws`): nearly sufficient where the
    largest batch sum is a poor statistic (much noise, many epochs). Read under replace-one it
    is the shift-``2C``-against-none pair, like :class:`ShuffledOppositeLowerBound`.

    Attributes
    ----------
    mechanism : Gaussian
        The Gaussian base, with ``2C / sigma`` up to about 1.2 (:func:`shifted_pair_plan`).
    num_steps : int
        Steps (batches) per epoch, ``>= 2``.

    Raises
    ------
    TypeError
        If ``mechanism`` is not a Gaussian or Laplace mechanism, or ``num_steps`` is not a
        number.
    ValueError
        If ``num_steps`` is not an integer ``>= 2``, or the pair is not supported
        (:func:`opposite_sum_supported`).
    """

    mechanism: Mechanism
    num_steps: int

    symmetric = False

    def __post_init__(self):
        check_base("ShuffledOppositeSumLowerBound", self.mechanism)
        object.__setattr__(self, "num_steps", count("num_steps", self.num_steps, minimum=2))
        if not opposite_sum_supported(self.mechanism, self.num_steps):
            raise ValueError(
                "ShuffledOppositeSumLowerBound needs a Gaussian base with 2 sensitivity / sigma "
                "up to about 1.2 (its cells of the likelihood ratio must fit the lattice), got "
                f"{self.mechanism!r} with num_steps={self.num_steps}")

    def _laws(self):
        return shifted_pair_cell_sum_laws(self.mechanism.mu, self.num_steps)

    def _remove_law(self):
        return self._laws()[0]

    def _add_law(self):
        return self._laws()[1]

    def under_replace_one(self) -> Mechanism:
        """This input under replace-one.

        Returns
        -------
        Mechanism
            Shift ``2C`` against none (:class:`ShuffledLowerBound` read under replace-one).
        """
        return _ReplaceOneShuffledLowerBound(self.mechanism, self.num_steps)


def opposite_sum_supported(mechanism: Mechanism, num_steps: int) -> bool:
    """Whether :class:`ShuffledOppositeSumLowerBound` supports ``mechanism`` over ``num_steps``.

    Parameters
    ----------
    mechanism : Mechanism
        The base of the shuffled epoch.
    num_steps : int
        Steps (batches) per epoch.

    Returns
    -------
    bool
        True for a Gaussian base, ``2 <= num_steps <= 1e5`` and a lattice that
        :func:`~plda.epochs.cells.shifted_pair_plan` accepts.
    """
    return (type(mechanism) is Gaussian and 2 <= num_steps <= MAX_STEPS
            and shifted_pair_plan(mechanism.mu, num_steps) is not None)
