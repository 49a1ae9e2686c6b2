"""One shuffled pass over the data (an epoch): an honest bracket, as no tight analysis is known."""

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
    r"""One epoch of ``num_steps`` steps of ``mechanism``, each step on the next
    batch of a uniformly random partition of the data: every record is used exactly once.

    No tight analysis of shuffling is known (Chua et al., ICML 2024, "How private are DP-SGD
    implementations?"; NeurIPS 2024, "Scalable DP-SGD: shuffling vs. Poisson subsampling"), so
    plda reports a bracket, certified on both sides:

    **Upper bound: no amplification.** Under replace-one, couple the two shuffles so that x and
    x' take the same slot. Then all batches agree except the one holding x/x', which differs by
    one substitution; the other steps are the same (adaptively chosen) kernels under both
    datasets, so given the shuffle the epoch is a post-processing of one run of the base on
    substitution-neighbouring batches, and mixing over the shuffle (the same for both) keeps the
    bound (joint convexity): the epoch is dominated by ``mechanism.under_replace_one()``, i.e.
    ``N(2C, sigma^2)`` vs ``N(0, sigma^2)``. Under add/remove the same argument needs the
    smaller dataset's batches to be the larger's with x taken out (its slot left empty); then
    the epoch is dominated by one run of ``mechanism`` itself. A loader whose later batches
    *shift* when a record is removed (consecutive chunks of a permutation) breaks this
    coupling; account such a loader under replace-one.

    **Lower bound: worst-case inputs** (:meth:`lower_bound_mechanisms`). Following Chua et
    al., let the ``T = num_steps`` queries be fixed sums; subtract from each batch sum the
    constant it has without x. Two inputs, each realized by datasets under the slot coupling
    above:

    - *others at* ``-C``, *x at* ``+C`` (:class:`ShuffledOppositeLowerBound`, the default
      :meth:`lower_bound_mechanism`). With x one uniformly random batch is shifted by ``2C``;
      with x removed (slot left empty) the same batch is shifted by ``C``: the pair
      ``((1/T) sum_t N(2C e_t, sigma^2 I), (1/T) sum_t N(C e_t, sigma^2 I))``. Its likelihood
      ratio depends on two sums of the coordinates, so plda computes post-processings with
      exact laws: the largest batch sum
      (:class:`~plda.epochs.max_shift_pair.MaxShiftPairLaw`) and, for a Gaussian
      base with ``2C / sigma`` up to about 1.2, a sum over batches of discretized likelihood
      ratios (:class:`ShuffledOppositeSumLowerBound`). Under replace-one (x' at ``-C``) the
      batch is shifted by ``2C`` against nothing.
    - *others at 0*, *x at* ``+C`` (:class:`ShuffledLowerBound`): shift ``C`` against nothing,
      the random-allocation (balls-in-bins) pair. Where :class:`~plda.RandomAllocation`
      supports it (a Gaussian base with shift / sigma up to ``1.45``, a Laplace base with
      shift / scale up to about 12, ``T <= 1e5``) plda computes its full ``T``-dimensional PLD
      (certified lower bound); otherwise its largest coordinate (:class:`MaxShiftLaw`).

    None is larger at every ``epsilon``: on a CIFAR-sized epoch (``sigma = 1``, ``T = 195``,
    ``delta = 1e-5``) the largest batch sum of the first certifies ``epsilon >= 3.839`` (the
    full pair's value, computed outside plda, is 3.842) where the second gives 0.393, against
    the upper bound 4.377; with much noise and many epochs (``sigma = 5``, ``T = 100``, 100
    epochs) the largest batch sum gives 0.35, the second input 0.70 and the first input's sum
    over batches 0.79. A composition reports the largest of their lower bounds
    (:meth:`lower_bound_mechanisms`).
    Under replace-one the shift-``2C``-against-nothing pair is the only one used: the inputs
    with another record for x' (``0``, or others at 0 and x' at ``-C``, shifts ``C`` against
    ``-C``) give smaller values at every ``epsilon`` checked. Every ``epsilon`` so obtained is
    a certified lower bound on the shuffled epoch's. With ``T = 1`` both bounds coincide with
    the base.

    Parameters
    ----------
    mechanism
        ``plda.Gaussian`` or ``plda.Laplace`` with its add/remove sensitivity ``C`` (for DP-SGD
        the clipping norm). With Laplace noise the lower pairs are those of the largest of
        shifted Laplace coordinates
        (:class:`~plda.epochs.max_shift_pair.LaplaceMaxShiftPairLaw`) and the
        Laplace random-allocation pair.
    num_steps
        Steps (batches) per epoch, an integer ``>= 1``.

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
        """True for one step per epoch only."""
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
        """The replace-one reading: an epoch dominated by one run of the base at doubled
        sensitivity, with the lower bound at shift ``2C``."""
        return _ReplaceOneShuffled(self.mechanism, self.num_steps)

    def lower_bound_mechanism(self) -> Mechanism:
        """The pair of the input with the other records at ``-C``
        (:class:`ShuffledOppositeLowerBound`: shift ``2C`` against ``C`` under add/remove,
        ``2C`` against none once read under replace-one): use it with the same relation as
        this mechanism. :meth:`lower_bound_mechanisms` also holds the other input's pair."""
        return ShuffledOppositeLowerBound(self.mechanism, self.num_steps)

    def lower_bound_mechanisms(self) -> tuple[Mechanism, ...]:
        """Both realized inputs' pairs (class docstring), to be read under the same relation
        as this mechanism: others at ``-C`` through the largest batch sum
        (:class:`ShuffledOppositeLowerBound`) and, where supported, through a sum over batches
        (:class:`ShuffledOppositeSumLowerBound`), and others at 0 (:class:`ShuffledLowerBound`);
        none is larger at every ``epsilon``."""
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
    """The pair of the input with the other records at 0 and x at ``+C``: shift ``C`` against
    none (add/remove); read under replace-one, shift ``2C`` against none (the input with the
    others at ``-C`` and x' at ``-C``), see :class:`Shuffled`. The random-allocation pair
    itself where :class:`~plda.RandomAllocation` supports it (its laws, whose PLD lower bound
    is certified for that pair), else its post-processing by the maximum coordinate
    (:class:`MaxShiftLaw`).
    Both pairs are realized by datasets, so the lower bound of this mechanism's PLD is
    certified for the shuffled epoch."""

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
        return _ReplaceOneShuffledLowerBound(self.mechanism, self.num_steps)


@dataclass(frozen=True)
class _ReplaceOneShuffledLowerBound(ShuffledLowerBound):
    """Internal: the lower pair read under replace-one (shift ``2C``)."""

    shift = 2.0

    def under_replace_one(self) -> Mechanism:
        return self


@dataclass(frozen=True)
class ShuffledOppositeLowerBound(Mechanism):
    """The pair of the worst-case input with the other records at ``-C`` and x at ``+C``
    (see :class:`Shuffled`): one uniformly random batch shifted by ``2C`` with x against the
    same batch shifted by ``C`` without it (add/remove, slot left empty). Read under
    replace-one (x' at ``-C``) it is shift ``2C`` against none (:meth:`under_replace_one`;
    x' = 0 would give this same pair, a weaker one there). Its laws are those of the largest
    batch sum
    (:class:`~plda.epochs.max_shift_pair.MaxShiftPairLaw`, or its Laplace analogue),
    a post-processing of the realized pair: the lower bound of its PLD is certified for the
    shuffled epoch."""

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
        """The same input under replace-one, x replaced by a record at ``-C``: shift ``2C``
        against none (:class:`ShuffledLowerBound` read under replace-one)."""
        return _ReplaceOneShuffledLowerBound(self.mechanism, self.num_steps)


@dataclass(frozen=True)
class ShuffledOppositeSumLowerBound(Mechanism):
    """The pair of the input with the other records at ``-C`` (as
    :class:`ShuffledOppositeLowerBound`), post-processed instead to the sum over batches of the
    cell of each batch's ``e^(2 mu Y - 2 mu^2)`` (``mu = C / sigma``): exact discrete laws
    (:func:`~plda.epochs.cells.shifted_pair_cell_sum_laws`), nearly
    sufficient where the largest batch sum is a poor statistic (much noise, many epochs).
    Gaussian base with ``2C / sigma`` up to about 1.2 (:func:`shifted_pair_plan`), ``T >= 2``.
    Read under replace-one it is the shift-``2C``-against-none pair, like
    :class:`ShuffledOppositeLowerBound`."""

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
        return _ReplaceOneShuffledLowerBound(self.mechanism, self.num_steps)


def opposite_sum_supported(mechanism: Mechanism, num_steps: int) -> bool:
    """Whether :class:`ShuffledOppositeSumLowerBound` supports ``mechanism`` over
    ``num_steps`` batches (a Gaussian base, ``2 <= num_steps <= 1e5`` and a lattice that
    :func:`~plda.epochs.cells.shifted_pair_plan` accepts)."""
    return (type(mechanism) is Gaussian and 2 <= num_steps <= MAX_STEPS
            and shifted_pair_plan(mechanism.mu, num_steps) is not None)
