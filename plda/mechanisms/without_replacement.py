"""Fixed-size batches drawn uniformly without replacement ("sampling without replacement")."""

from __future__ import annotations

from dataclasses import dataclass

from plda._internal.binomial import hypergeometric_probabilities
from plda._internal.caches import remembered
from plda._internal.validation import MIN_SAMPLE_RATE, count, in_range
from plda.mechanisms.base import BracketedMechanism, Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.gaussian_mixture import MAX_GROUP_SIZE, GaussianMixture
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.laplace_mixture import LaplaceMixture
from plda.mechanisms.mixture_range import check_sampled_mu
from plda.mechanisms.subsampled import PoissonSampled
from plda.mechanisms.symmetrized import SymmetrizedPoissonSampled

#: base mechanisms whose fixed-size-batch analysis plda certifies on both sides
SUPPORTED_BASES = (Gaussian, Laplace)


def check_base(name: str, mechanism) -> Mechanism:
    """``mechanism`` if it is a Gaussian or Laplace mechanism, else a TypeError saying so.

    Parameters
    ----------
    name : str
        The sampler's class name, for the message.
    mechanism : Mechanism
        The base mechanism to check.

    Returns
    -------
    Mechanism
        ``mechanism``, unchanged.

    Raises
    ------
    TypeError
        If ``mechanism`` is not exactly a ``plda.Gaussian`` or ``plda.Laplace`` (the bases
        whose worst case plda certifies on both sides).
    """
    if type(mechanism) not in SUPPORTED_BASES:
        raise TypeError(
            f"mechanism must be plda.Gaussian or plda.Laplace for {name} (the bases whose "
            f"worst case plda certifies on both sides), got {type(mechanism).__name__}"
        )
    return mechanism


@dataclass(frozen=True)
class SampledWithoutReplacement(Mechanism):
    """Runs ``mechanism`` on a batch of ``batch_size`` records drawn without replacement.

    The batch is drawn uniformly from a dataset of ``dataset_size`` records, afresh at every
    step (``torch``'s ``RandomSampler`` with a fixed batch size, ``tf.data``
    ``shuffle().batch()`` re-drawn every step). Pass the base with its *add/remove* sensitivity
    (for DP-SGD: the clipping norm ``C``); plda doubles it where the analysis requires.

    A fixed batch size turns a removal into a substitution: under add/remove the step's laws
    are those of ``PoissonSampled`` of the base at doubled sensitivity and rate
    ``q = batch_size / dataset_size`` (:meth:`equivalent_poisson`), a tight bracket (Balle,
    Barthe & Gaboardi 2018; Zhu, Dong & Wang 2022). Under replace-one the substitution's
    orientation can flip within a run (Lebeda, Regehr, Kamath & Steinke 2024): plda composes
    the symmetrized pair above and realized compositions below (:meth:`under_replace_one`).
    ``q`` is the larger of the two neighbours' rates, so both neighbours of your dataset are
    covered. Fixed-size batches are *not* Poisson sampling, and how the bracket is certified:
    ``docs/howto/samplers.md`` ("Fixed-size batches are not Poisson sampling").

    With ``group_size=K`` the protected unit is a group of ``K`` records of the dataset: a
    batch holds ``k ~ Hypergeometric(dataset_size, K, batch_size)`` of them, each swapped for
    another record when the group is removed, so the pair is ``sum_k h_k N(2 k Δ, σ^2)``
    against ``N(0, σ^2)`` (a Laplace base alike), realized and dominating under add/remove
    (:meth:`group_mixture`; the proof is in ``docs/howto/user-level-privacy.md``). Replace-one
    is refused for groups.

    Parameters
    ----------
    mechanism : Gaussian or Laplace
        ``plda.Gaussian`` or ``plda.Laplace`` with its add/remove sensitivity.
    batch_size : int
        Records per batch, an integer in ``[1, dataset_size]``.
    dataset_size : int
        Records in the dataset, an integer in ``[1, 1e12]``.
    group_size : int, optional
        Records per protected unit, an integer in ``[1, min(dataset_size, 10000)]``
        (default 1: one record).

    Raises
    ------
    TypeError
        If ``mechanism`` is not a ``plda.Gaussian`` or ``plda.Laplace``, or ``batch_size``,
        ``dataset_size`` or ``group_size`` is not a number (a bool included).
    ValueError
        If ``dataset_size`` is not an integer in ``[1, 1e12]``, ``batch_size`` not an integer
        in ``[1, dataset_size]``, ``batch_size / dataset_size`` is below ``1e-12``, or
        ``group_size`` not an integer in ``[1, min(dataset_size, 10000)]``; an
        :class:`~plda.UncoveredParametersError` if ``2 group_size sensitivity / sigma`` of a
        Gaussian base exceeds ``1e8`` (with ``batch_size < dataset_size``).

    Examples
    --------
    >>> import plda
    >>> wor = plda.SampledWithoutReplacement(plda.Gaussian(sigma=1.0), 256, 60000)
    >>> wor.sample_rate
    0.004266666666666667
    >>> poisson = wor.equivalent_poisson()
    >>> poisson.mechanism, poisson.sample_rate
    (Gaussian(sigma=1.0, sensitivity=2.0), 0.004266666666666667)
    """

    mechanism: Mechanism
    batch_size: int
    dataset_size: int
    group_size: int = 1

    def __post_init__(self):
        check_base("SampledWithoutReplacement", self.mechanism)
        size = count("dataset_size", self.dataset_size, minimum=1)
        object.__setattr__(self, "dataset_size", size)
        size = count("batch_size", self.batch_size, minimum=1)
        if size > self.dataset_size:
            raise ValueError(
                f"batch_size must be an integer in [1, dataset_size={self.dataset_size}], "
                f"got {self.batch_size!r}"
            )
        object.__setattr__(self, "batch_size", size)
        in_range("batch_size / dataset_size", self.sample_rate, MIN_SAMPLE_RATE, 1.0,
                 "smaller rates give only loose bounds on the grid")
        group = count("group_size", self.group_size, minimum=1,
                      maximum=min(self.dataset_size, MAX_GROUP_SIZE))
        object.__setattr__(self, "group_size", group)
        # a removal is a substitution: the Poisson-sampled base at doubled sensitivity
        check_sampled_mu(self.mechanism, self.sample_rate, group, factor=2)

    @property
    def sample_rate(self) -> float:
        """``batch_size / dataset_size``: the probability that a given record is in a batch."""
        return self.batch_size / self.dataset_size

    def equivalent_poisson(self) -> PoissonSampled:
        """The :class:`PoissonSampled` mechanism with the same privacy-loss laws (add/remove).

        Returns
        -------
        PoissonSampled
            ``PoissonSampled(mechanism.under_replace_one(), sample_rate)``: the base with its
            replace-one (doubled) sensitivity, at rate ``q``.

        Raises
        ------
        ValueError
            For ``group_size > 1``: a group's laws are the hypergeometric mixture
            (:meth:`group_mixture`), not a Poisson-sampled law.
        """
        if self.group_size > 1:
            raise ValueError(
                f"SampledWithoutReplacement(group_size={self.group_size}) has no equivalent "
                "PoissonSampled mechanism (a fixed-size batch holds a hypergeometric count of "
                "the group's records): use group_mixture()"
            )
        return PoissonSampled(self.mechanism.under_replace_one(), self.sample_rate)

    def group_mixture(self) -> GaussianMixture | LaplaceMixture:
        """The group's add/remove pair as a mixture (any ``group_size``).

        A batch holds ``k ~ Hypergeometric(dataset_size, group_size, batch_size)`` of the
        group's records; removing the group swaps each for another record, which moves the sum
        by at most ``2 k Δ``.

        Returns
        -------
        GaussianMixture or LaplaceMixture
            ``sum_k h_k N(2 k Δ, σ^2)`` against ``N(0, σ^2)`` (``sum_k h_k Lap(2 k Δ, b)``
            against ``Lap(0, b)`` for a Laplace base), the weights rounded so that ``k`` only
            grows stochastically.
        """
        return remembered(self, "group_mixture", self._group_mixture)

    def _group_mixture(self) -> GaussianMixture | LaplaceMixture:
        doubled = self.mechanism.under_replace_one()
        counts, weights = hypergeometric_probabilities(self.dataset_size, self.group_size,
                                                       self.batch_size)
        shifts = tuple(float(k) * doubled.sensitivity for k in counts)
        if type(doubled) is Laplace:
            return LaplaceMixture(scale=doubled.scale, sensitivities=shifts,
                                  probabilities=weights)
        return GaussianMixture(sigma=doubled.sigma, sensitivities=shifts, probabilities=weights)

    def _laws(self) -> Mechanism:
        """The mechanism whose laws are this one's: the mixture, or the Poisson equivalent."""
        if self.group_size > 1:
            return self.group_mixture()
        return self.equivalent_poisson()

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        """Whether both directions have one law: as for the laws' mechanism."""
        return self._laws().symmetric

    def _remove_law(self):
        return self._laws().privacy_loss("remove")

    def _add_law(self):
        return self._laws().privacy_loss("add")

    def _coarsened(self) -> Mechanism:
        return self._laws()._coarsened()

    def under_replace_one(self) -> Mechanism:
        """The sampler under replace-one: a symmetrized upper pair, realized pairs below.

        The upper bound composes the symmetrized substitution pair
        (:class:`~plda.mechanisms.symmetrized.SymmetrizedPoissonSampled`); the lower bound is
        the largest of the realized compositions (the substitution pair in either fixed or in
        alternating orientations and, for a Gaussian base, the symmetric input's pair). Nothing
        is doubled a second time: a fixed batch size already turns a removal into a
        substitution.

        Returns
        -------
        Mechanism
            The replace-one reading, whose laws warn with ``NotTightWarning``; with
            ``batch_size == dataset_size`` the base at doubled sensitivity
            (:meth:`equivalent_poisson`, exact).

        Raises
        ------
        ValueError
            For ``group_size > 1`` (no replace-one analysis of a group).
        """
        if self.group_size > 1:
            raise ValueError(
                f"SampledWithoutReplacement(group_size={self.group_size}) has no replace-one "
                "analysis (relation='replace_one') in plda: its add/remove pair (a "
                "hypergeometric mixture) is proven to dominate, but no substitution pair of a "
                "group is known to; plda.theorems.group_privacy(epsilon, delta, "
                f"{self.group_size}) on one record's replace-one guarantee (group_size=1) "
                "bounds it"
            )
        if self.sample_rate == 1.0:  # the whole dataset in every batch: the base, doubled
            return self.equivalent_poisson()
        return _ReplaceOneWithoutReplacement(self.mechanism, self.batch_size, self.dataset_size)


@dataclass(frozen=True)
class _ReplaceOneWithoutReplacement(BracketedMechanism, SampledWithoutReplacement):
    """Internal: fixed-size batches read under replace-one (add/remove semantics of its laws):
    the symmetrized substitution pair above, realized pairs below."""

    symmetric = True

    def _remove_law(self):
        self._warn_not_tight()
        return self._dominating().privacy_loss("remove")

    def _add_law(self):
        return self._remove_law()

    def _dominating(self) -> SymmetrizedPoissonSampled:
        return SymmetrizedPoissonSampled(self.mechanism.under_replace_one(), self.sample_rate)

    def _coarsened(self) -> Mechanism:
        return self._dominating().coarsened()

    def lower_bound_mechanism(self) -> Mechanism:
        """The substitution pair in a fixed orientation (its two directions are the two
        orientations), realized by the other records at ``-C``, ``x = +C`` and ``x' = -C``."""
        return self.equivalent_poisson()

    def lower_bound_mechanisms(self) -> tuple[Mechanism, ...]:
        """The fixed-orientation substitution pair and, for a Gaussian base, the symmetric
        input's mixture pair (other records at 0, ``x = +C``, ``x' = -C``), which is the
        larger after composition at some ``epsilon`` (e.g. ``delta(0)`` of two steps at
        ``q = 0.9``)."""
        substitution = self.equivalent_poisson()
        if type(self.mechanism) is not Gaussian:
            return (substitution,)
        symmetric = PoissonSampled(self.mechanism, self.sample_rate).under_replace_one()
        return (substitution, symmetric)

    def lower_bound_recipes(self, count: int) -> tuple[tuple[tuple[Mechanism, int], ...], ...]:
        """Each of :meth:`lower_bound_mechanisms` run ``count`` times and, for two steps or
        more, the substitution pair in alternating orientations (half the steps each way: a
        query that negates the records realizes the reverse), which beats either fixed
        orientation at some ``epsilon`` (e.g. a Laplace base at ``eps = 1``, two steps)."""
        recipes = super().lower_bound_recipes(count)
        if count < 2:
            return recipes
        substitution = self.equivalent_poisson()
        flipped = ((substitution, count - count // 2), (substitution.reversed(), count // 2))
        return (*recipes, flipped)

    def under_replace_one(self) -> Mechanism:
        return self
