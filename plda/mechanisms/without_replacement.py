"""Fixed-size batches drawn uniformly without replacement ("sampling without replacement")."""

from __future__ import annotations

from dataclasses import dataclass

from plda._internal.validation import MIN_SAMPLE_RATE, count, in_range
from plda.mechanisms.base import BracketedMechanism, Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.subsampled import PoissonSampled
from plda.mechanisms.symmetrized import SymmetrizedPoissonSampled

#: base mechanisms whose fixed-size-batch analysis plda certifies on both sides
SUPPORTED_BASES = (Gaussian, Laplace)


def check_base(name: str, mechanism) -> Mechanism:
    """``mechanism`` if it is a Gaussian or Laplace mechanism, else a TypeError saying so."""
    if type(mechanism) not in SUPPORTED_BASES:
        raise TypeError(
            f"mechanism must be plda.Gaussian or plda.Laplace for {name} (the bases whose "
            f"worst case plda certifies on both sides), got {type(mechanism).__name__}"
        )
    return mechanism


@dataclass(frozen=True)
class SampledWithoutReplacement(Mechanism):
    r"""Runs ``mechanism`` on a batch of exactly ``batch_size`` records drawn uniformly without
    replacement from a dataset of ``dataset_size`` records (``torch``'s ``RandomSampler`` with a
    fixed batch size, ``tf.data`` ``shuffle().batch()`` re-drawn every step).

    Pass the base mechanism with its *add/remove* sensitivity (for DP-SGD: the clipping norm
    ``C``); plda doubles it where the analysis requires, never the caller.

    **The analysis.** With ``q = batch_size / dataset_size``, let ``(P, Q)`` be the base's
    dominating pair under *replace-one* (for ``Gaussian(sigma, C)``: ``N(2C, sigma^2)`` vs
    ``N(0, sigma^2)``; for ``Laplace(b, C)``: ``Lap(2C, b)`` vs ``Lap(0, b)``). The step's
    privacy loss is that of ``(q P + (1-q) Q, Q)`` and of the reversed pair, the worse of the two
    reported — the law of :class:`PoissonSampled` of the base with *doubled* sensitivity:

    - *upper bound*, both relations: couple the batches of the two neighbouring datasets so that
      they are equal except, with probability ``q``, one record of the batch is *substituted* (a
      removed record's slot is taken by another record, since the batch size is fixed); advanced
      joint convexity then gives ``delta'(log(1 + q(e^eps - 1))) <= q delta_sub(eps)``
      (Balle, Barthe & Gaboardi 2018, sampling without replacement under substitution; Zhu,
      Dong & Wang 2022 for the dominating pair and its reversed direction);
    - *lower bound* (tightness, add/remove): the pair is realized by actual datasets. For a sum
      query, let every record contribute ``-C`` except the differing one, ``+C`` (absent from the
      neighbour). Then one dataset's batch sum is always ``-bC`` and the other's is
      ``-bC + 2C`` exactly when the differing record is drawn (probability ``q``): the output
      pair *is* ``((1-q) N(0) + q N(2C), N(0))`` shifted. Under add/remove the larger dataset
      is the same in every step, so every step is dominated by this pair *in this order*, and
      composing it ``T`` times is realized by keeping the datasets fixed: the composed bounds
      are tight.

    **Replace-one: the orientation can flip.** With ``x = +C`` against ``x' = -C`` the same
    pair occurs, and with ``x = -C`` against ``x' = +C`` its reverse; an adaptive run (DP-SGD's
    gradients change sign from step to step) can realize either at any step, and a symmetric
    input (other records at 0) realizes ``((1-q) N(0) + q N(C), (1-q) N(0) + q N(-C))``. The
    worst composition is then *not* the worse direction composed (Lebeda, Regehr, Kamath &
    Steinke 2024): two steps at ``q = 0.9``, ``sigma = 1`` have ``delta(0) >= 0.7763`` from the
    symmetric input against ``0.7709`` for either direction composed. plda composes the
    symmetric pair dominating both directions at every step
    (:class:`~plda.mechanisms.subsampled.SymmetrizedPoissonSampled`; its profile is the removal
    direction's for ``eps >= 0``), a certified upper bound, and reports as lower bound the
    largest of the realized compositions: the substitution pair in either fixed orientation, in
    alternating orientations, and (Gaussian base) the symmetric input's pair.

    So under add/remove plda's ``[lower, upper]`` is the tight bracket of the sampler, and
    under replace-one a certified bracket that contains the truth. Fixed-size batches are *not*
    Poisson sampling: under replace-one the Poisson-sampled Gaussian has the narrower mixture
    pair ``((1-q) N(0) + q N(C), (1-q) N(0) + q N(-C))`` (:meth:`PoissonSampled.under_replace_one`),
    whose ``epsilon`` is smaller, and under add/remove Poisson sampling has sensitivity ``C``,
    not ``2C``. Reporting either for a fixed-size sampler under-reports the privacy loss.

    **Dataset size under add/remove.** A neighbour has one record more or one fewer, so its
    sampling rate is ``b/(n+1)`` or ``b/n``; the analysis uses ``q = b / dataset_size``, the
    larger, which covers every neighbouring pair whose larger dataset holds at least
    ``dataset_size`` records (``delta`` grows with ``q``), in particular both neighbours of the
    dataset you trained on. Under replace-one both datasets hold ``dataset_size`` records.

    Parameters
    ----------
    mechanism
        ``plda.Gaussian`` or ``plda.Laplace`` with its add/remove sensitivity.
    batch_size
        Records per batch, an integer in ``[1, dataset_size]``.
    dataset_size
        Records in the dataset, an integer ``>= 1``.

    Examples
    --------
    >>> import plda
    >>> wor = plda.SampledWithoutReplacement(plda.Gaussian(sigma=1.0), 256, 60000)
    >>> wor.sample_rate
    0.004266666666666667
    >>> wor.equivalent_poisson()
    PoissonSampled(mechanism=Gaussian(sigma=1.0, sensitivity=2.0), sample_rate=0.004266666666666667)
    """

    mechanism: Mechanism
    batch_size: int
    dataset_size: int

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

    @property
    def sample_rate(self) -> float:
        """``batch_size / dataset_size``: the probability that a given record is in a batch."""
        return self.batch_size / self.dataset_size

    def equivalent_poisson(self) -> PoissonSampled:
        """The :class:`PoissonSampled` mechanism with the same privacy-loss laws (under
        add/remove): the base with its replace-one (doubled) sensitivity, at rate ``q``."""
        return PoissonSampled(self.mechanism.under_replace_one(), self.sample_rate)

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        return self.equivalent_poisson().symmetric

    def _remove_law(self):
        return self.equivalent_poisson().privacy_loss("remove")

    def _add_law(self):
        return self.equivalent_poisson().privacy_loss("add")

    def _coarsened(self) -> Mechanism:
        return self.equivalent_poisson()._coarsened()

    def under_replace_one(self) -> Mechanism:
        """The replace-one reading: the symmetrized substitution pair (upper bound) with the
        realized compositions as lower bound (see the class docstring). Nothing is doubled a
        second time: a fixed batch size already turns a removal into a substitution."""
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
