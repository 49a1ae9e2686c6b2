"""Poisson sampling with the batch truncated at a maximum size."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plda._internal.validation import MIN_SAMPLE_RATE, count, in_range, probability
from plda.mechanisms.base import BracketedMechanism, Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.revealed_mixture import RevealedMixtureLaw
from plda.mechanisms.subsampled import PoissonSampled
from plda.mechanisms.symmetrized import SymmetrizedPoissonSampled
from plda.mechanisms.without_replacement import check_base

#: relative accuracy assumed of scipy's binomial cdf/sf/pmf (Boost's incomplete beta is accurate
#: to a few ulps; the margin is a thousand times wider); weights are rounded down by it
BINOM_RTOL = 1e-12
#: most truncated components kept apart; the rest of their weight goes to the dominating one
MAX_BUCKETS = 8
#: most batch sizes summed for the effective sampling rate of the lower bound (cutting the sum
#: short only lowers that rate, which keeps the lower bound sound)
MAX_TERMS = 1 << 20


def _binom():
    """``scipy.stats.binom``, imported on first use: importing ``scipy.stats`` costs ~27 MB of
    memory, and of plda only this mechanism needs it."""
    from scipy.stats import binom

    return binom


@dataclass(frozen=True)
class TruncatedPoisson(BracketedMechanism):
    r"""Runs ``mechanism`` on a Poisson sample (each record kept with ``sample_rate`` q) that is
    cut down to a uniformly random subset of ``max_batch_size`` B records when it is larger (the
    "truncated subsampled Gaussian" of dp_accounting 0.6; Chua et al. 2024/2025).

    Pass the base with its add/remove sensitivity ``C`` and the number of records ``n`` of your
    dataset as ``dataset_size``. Under add/remove the guarantee covers both of its neighbours:
    the pairs whose larger dataset (the one holding the differing record x) has ``N = n`` or
    ``N = n + 1`` records.

    **Upper bound** (a dominating pair). Let ``K ~ Binomial(N-1, q)`` be the number of other
    records drawn, which both datasets share under the natural coupling. If ``K < B`` nothing is
    truncated and the step is a Poisson-sampled step: pair ``PoissonSampled(base, q)``. If
    ``K >= B``, x survives truncation with probability ``B/(K+1)`` and then *replaces* one of the
    other records (the batch size is capped): pair ``PoissonSampled(base_sub, q B/(K+1))`` with
    ``base_sub`` the base at doubled sensitivity (as for :class:`SampledWithoutReplacement`).
    Revealing ``K`` to the adversary gives the dominating pair ``sum_k P(K=k) (k, pair_k)``
    (joint convexity); plda groups ``K >= B`` into doubling buckets, each at its largest rate,
    weighs each component by the smaller of its probabilities for ``N = n`` and ``N = n + 1``
    (rounded down), and gives the remaining weight to ``PoissonSampled(base_sub, q)``, which
    dominates every component: the mixture dominates the pairs of both sizes, and every
    rounding errs on the safe side.

    **Lower bound** (:meth:`lower_bound_mechanism`). Let every other record contribute 0 and x
    contribute ``C``: x reaches the batch with probability ``q_eff = q E[min(1, B/(K+1))]``
    (``N = n``) and the outputs are exactly ``PoissonSampled(base, q_eff)``'s pair. ``q_eff`` is
    summed and rounded down.

    **Replace-one** (Gaussian base only; both datasets hold n records): the same mixture, with
    the untruncated component read as :meth:`PoissonSampled.under_replace_one` (the mixture
    pair) and every truncated component symmetrized
    (:class:`~plda.mechanisms.subsampled.SymmetrizedPoissonSampled`): a substitution can occur
    in either orientation, and an adaptive run can realize both within one run, so only a pair
    dominating both directions at every step composes soundly (Lebeda, Regehr, Kamath & Steinke
    2024). The lower pair (others 0, x = C vs x' = -C) is ``PoissonSampled(base, q_eff)`` read
    under replace-one.

    With ``B > n`` nothing is ever truncated and both equal :class:`PoissonSampled` exactly;
    with ``B = n`` only the add-neighbour's batch can be truncated (when all its ``n + 1``
    records are drawn), and under replace-one ``B >= n`` is exactly Poisson.
    When truncation is rare (``B`` a few standard deviations above ``q n``), the two bounds are
    close; when it is frequent the upper bound pays for revealing ``K``.

    Parameters
    ----------
    mechanism
        ``plda.Gaussian`` or ``plda.Laplace`` with its add/remove sensitivity.
    sample_rate
        Poisson sampling probability q in (0, 1].
    max_batch_size
        The cap B, an integer ``>= 1``.
    dataset_size
        n, an integer ``>= 1``.

    Examples
    --------
    >>> import plda
    >>> g = plda.Gaussian(sigma=1.0)
    >>> plda.TruncatedPoisson(g, 256 / 60000, 60001, 60000).tight
    True
    >>> trunc = plda.TruncatedPoisson(g, 256 / 60000, 512, 60000)
    >>> trunc.tight, round(trunc.lower_bound_mechanism().sample_rate * 60000, 6)
    (False, 256.0)
    """

    mechanism: Mechanism
    sample_rate: float
    max_batch_size: int
    dataset_size: int

    def __post_init__(self):
        check_base("TruncatedPoisson", self.mechanism)
        rate = probability("sample_rate", self.sample_rate, open_low=True)
        in_range("sample_rate", rate, MIN_SAMPLE_RATE, 1.0,
                 "tighter rates give only loose bounds on the grid")
        object.__setattr__(self, "sample_rate", rate)
        object.__setattr__(self, "max_batch_size",
                           count("max_batch_size", self.max_batch_size, minimum=1))
        object.__setattr__(self, "dataset_size",
                           count("dataset_size", self.dataset_size, minimum=1))

    @property
    def tight(self) -> bool:  # type: ignore[override]
        """Whether the upper and lower pairs coincide: exactly when nothing is truncated."""
        return not self.truncates

    def _others(self) -> tuple[int, ...]:
        """Possible numbers of records besides x: ``n - 1`` and ``n`` (the add-neighbour)."""
        return (self.dataset_size - 1, self.dataset_size)

    @property
    def truncates(self) -> bool:
        """Whether a batch can exceed ``max_batch_size`` (some ``K >= B`` is possible)."""
        return self.max_batch_size <= max(self._others())

    def _poisson(self) -> PoissonSampled:
        return PoissonSampled(self.mechanism, self.sample_rate)

    def _untruncated(self) -> Mechanism:
        """The component for ``K < B`` (nothing truncated)."""
        return self._poisson()

    def _substituted(self, rate: float) -> Mechanism:
        """A component where x, drawn with probability ``rate``, replaces another record: the
        substitution pair in the order of the add/remove relation (x's dataset first)."""
        return PoissonSampled(self.mechanism.under_replace_one(), rate)

    def _components(self) -> tuple[tuple[Mechanism, ...], tuple[float, ...]]:
        """Dominating components and their weights (see the class docstring)."""
        q, b, sizes = self.sample_rate, self.max_batch_size, self._others()
        # P(K <= B-1), rounded down, the smaller over the sizes
        mechanisms = [self._untruncated()]
        weights = [min(float(_binom().cdf(b - 1, k, q)) for k in sizes) * (1 - BINOM_RTOL)]
        edges = []
        start = b
        while start <= max(sizes):
            edges.append(start)
            start *= 2
        edges.append(max(sizes) + 1)
        buckets = []
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            # P(lo <= K < hi) rounded down: the smaller tail rounded up, the larger down
            mass = min(
                _binom().sf(lo - 1, k, q) * (1 - BINOM_RTOL)
                - _binom().sf(hi - 1, k, q) * (1 + BINOM_RTOL)
                for k in sizes
            )
            if mass > 0:
                buckets.append((float(mass), self._substituted(q * b / (lo + 1))))
        buckets.sort(key=lambda item: -item[0])
        for mass, mech in buckets[:MAX_BUCKETS]:
            weights.append(mass)
            mechanisms.append(mech)
        top = 1.0 - math.fsum(weights)
        if top > 0:
            mechanisms.append(self._substituted(q))
            weights.append(top)
        return tuple(mechanisms), tuple(weights)

    def _remove_law(self):
        if not self.truncates:
            return self._poisson().privacy_loss("remove")
        mechanisms, weights = self._components()
        # the weights sum to 1 up to the rounding of fsum's last addition
        return RevealedMixtureLaw(
            components=tuple(m.privacy_loss("remove") for m in mechanisms), weights=weights
        )

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        return not self.truncates and self._poisson().symmetric

    def _add_law(self):
        if not self.truncates:
            return self._poisson().privacy_loss("add")
        # the reversed pair of a revealed mixture is the revealed mixture of reversed pairs
        return self.privacy_loss("remove").reversed()

    def effective_sample_rate(self) -> float:
        """``q E[min(1, B/(K+1))]``, ``K ~ Binomial(n-1, q)``: the probability that a given
        record of the dataset is in the truncated batch, rounded down (a lower bound)."""
        q, b, others = self.sample_rate, self.max_batch_size, self.dataset_size - 1
        if b > others:
            return q
        inside = float(_binom().cdf(b - 1, others, q))
        k = np.arange(b, min(others, b + MAX_TERMS - 1) + 1)
        beyond = math.fsum(_binom().pmf(k, others, q) * (b / (k + 1.0)))
        # each term rounded down by the binomial tolerance, the sum by its few ulps
        return q * (inside + beyond) * (1 - BINOM_RTOL - 1e-15)

    def lower_bound_mechanism(self) -> Mechanism:
        """``PoissonSampled(mechanism, effective_sample_rate())``: realized by the dataset pair
        in the class docstring, so its PLD lower bound is certified for this sampler."""
        if not self.truncates:
            return self._poisson()
        return PoissonSampled(self.mechanism, self.effective_sample_rate())

    def _coarsened(self) -> Mechanism:
        return self if self.truncates else self._poisson()._coarsened()

    def under_replace_one(self) -> Mechanism:
        """Replace-one (Gaussian base): the same mixture with the untruncated component read
        under replace-one (:meth:`PoissonSampled.under_replace_one`, the mixture pair); the
        truncated ones are substitutions already, symmetrized as their orientation can flip.
        The lower pair (others 0, x = C vs x' = -C) is ``PoissonSampled(mechanism, q_eff)``
        read under replace-one."""
        if type(self.mechanism) is not Gaussian:
            raise ValueError(
                "relation='replace_one' with TruncatedPoisson is supported for Gaussian base "
                f"mechanisms only, got {type(self.mechanism).__name__}; use "
                "relation='add_remove'"
            )
        return _ReplaceOneTruncatedPoisson(
            self.mechanism, self.sample_rate, self.max_batch_size, self.dataset_size
        )


@dataclass(frozen=True)
class _ReplaceOneTruncatedPoisson(TruncatedPoisson):
    """Internal: a truncated Poisson step read under replace-one. Every component is symmetric
    (the untruncated one is the mixture pair, the truncated ones are symmetrized), so the step
    is. ``SymmetrizedPoissonSampled(sub, q)``, the component that takes the rounding slack,
    dominates the mixture pair too (it is the advanced-joint-convexity bound of every coupled
    substitution pair, in either orientation)."""

    @property
    def symmetric(self) -> bool:  # type: ignore[override]
        return True

    def _others(self) -> tuple[int, ...]:
        return (self.dataset_size - 1,)  # both datasets hold n records

    def _substituted(self, rate: float) -> Mechanism:
        return SymmetrizedPoissonSampled(self.mechanism.under_replace_one(), rate)

    def _add_law(self):
        return self._remove_law()

    def _poisson(self) -> Mechanism:
        return PoissonSampled(self.mechanism, self.sample_rate).under_replace_one()

    def lower_bound_mechanism(self) -> Mechanism:
        return PoissonSampled(self.mechanism, self.effective_sample_rate()).under_replace_one()

    def _coarsened(self) -> Mechanism:
        return self

    def under_replace_one(self) -> Mechanism:
        return self
