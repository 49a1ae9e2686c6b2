"""One shuffled pass over the data (an epoch): an honest bracket, as no tight analysis is known."""

from __future__ import annotations

from dataclasses import dataclass

from plda._internal.errors import warn
from plda._internal.validation import count
from plda.mechanisms.allocation import RandomAllocation, allocation_supported
from plda.mechanisms.base import Mechanism
from plda.mechanisms.bracket import BracketedMechanism, SamplerAssumptionWarning
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.max_laplace_law import LaplaceMaxShiftLaw
from plda.mechanisms.max_shift_many_law import MaxShiftLaw
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

    **Lower bound: a worst-case input** (:meth:`lower_bound_mechanism`). Following Chua et al.,
    let the ``T = num_steps`` queries be fixed sums. Replace-one: every other record contributes
    ``-C``, x contributes ``+C`` and x' ``-C``; with x' every batch sum is the same constant,
    with x one uniformly random batch is shifted by ``2C``: the pair
    ``((1/T) sum_t N(2C e_t, sigma^2 I), N(0, sigma^2 I))`` on ``R^T``. Add/remove: others
    contribute 0, x contributes ``C`` (shift ``C``). This is the random-allocation
    (balls-in-bins) pair, realized by datasets: where :class:`~plda.RandomAllocation`
    supports it (a Gaussian base with shift / sigma up to ``1.45``, a Laplace base with shift /
    scale up to about 12, ``T <= 1e5``) plda computes its *full* ``T``-dimensional PLD with a
    certified lower bound, the strongest lower bound this input gives. Otherwise (smaller
    noise) plda takes the *maximum coordinate* of the output, a post-processing, whose pair
    :class:`MaxShiftLaw` (or its Laplace analogue) it computes exactly -- weaker, and much
    weaker for large ``T`` and moderate noise. Either way its ``epsilon`` is a
    certified lower bound on the shuffled epoch's. With ``T = 1`` both bounds coincide with
    the base.

    Parameters
    ----------
    mechanism
        ``plda.Gaussian`` or ``plda.Laplace`` with its add/remove sensitivity ``C`` (for DP-SGD
        the clipping norm). With Laplace noise the lower pair is the maximum of shifted Laplace
        coordinates (:class:`~plda.mechanisms.max_laplace_law.LaplaceMaxShiftLaw`).
    num_steps
        Steps (batches) per epoch, an integer ``>= 1``.

    Examples
    --------
    >>> import plda
    >>> epoch = plda.Shuffled(plda.Gaussian(sigma=1.0), num_steps=10)
    >>> epoch.lower_bound_mechanism()
    ShuffledLowerBound(mechanism=Gaussian(sigma=1.0, sensitivity=1.0), num_steps=10)
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
        """The post-processed worst-case pair (shift ``C`` under add/remove, ``2C`` once read
        under replace-one): use it with the same relation as this mechanism."""
        return ShuffledLowerBound(self.mechanism, self.num_steps)


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


@dataclass(frozen=True)
class ShuffledLowerBound(Mechanism):
    """The worst-case input's pair, shift ``C`` (add/remove) or, read under replace-one, ``2C``
    (see :class:`Shuffled`): the random-allocation pair itself where
    :class:`~plda.RandomAllocation` supports it (its laws, whose PLD lower bound is certified
    for that pair), else its post-processing by the maximum coordinate (:class:`MaxShiftLaw`).
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
