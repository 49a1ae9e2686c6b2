"""Poisson sampling with the batch truncated at a maximum size."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plda._internal.validation import MIN_SAMPLE_RATE, count, in_range, probability
from plda.mechanisms.base import BracketedMechanism, Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.mixture_range import check_sampled_mu
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
    """Runs ``mechanism`` on a Poisson sample cut down to at most ``max_batch_size`` records.

    Each record is kept with probability ``sample_rate`` q; a sample larger than B =
    ``max_batch_size`` is cut down to a uniformly random subset of B records (the "truncated
    subsampled Gaussian" of dp_accounting 0.6; Chua et al. 2024/2025). Pass the base with its
    add/remove sensitivity and the number of records n of your dataset; under add/remove the
    guarantee covers both neighbours (the larger dataset holding ``n`` or ``n + 1`` records).

    No pair is known to be both dominating and realized, so plda brackets the sampler: its own
    laws are a dominating mixture that reveals the number ``K`` of other records drawn (a
    certified upper bound; truncated components are substitutions, symmetrized under
    replace-one), and :meth:`lower_bound_mechanism` is ``PoissonSampled(mechanism, q_eff)`` at
    the rate ``q_eff = q E[min(1, B/(K+1))]`` realized by datasets. With ``B > n`` nothing is
    truncated and both equal :class:`~plda.PoissonSampled`. The two bounds are close when ``B``
    sits a few standard deviations above ``q n``. How both are certified:
    ``docs/howto/samplers.md`` ("Truncated Poisson sampling").

    Parameters
    ----------
    mechanism : Gaussian or Laplace
        ``plda.Gaussian`` or ``plda.Laplace`` with its add/remove sensitivity.
    sample_rate : float
        Poisson sampling probability q, in ``[1e-12, 1]``.
    max_batch_size : int
        The cap B, an integer in ``[1, 1e12]``.
    dataset_size : int
        n, an integer in ``[1, 1e12]``.

    Raises
    ------
    TypeError
        If ``mechanism`` is not a ``plda.Gaussian`` or ``plda.Laplace``, ``sample_rate`` is not
        a real number, or ``max_batch_size`` or ``dataset_size`` is not a number (a bool
        included).
    ValueError
        If ``sample_rate`` is outside ``[1e-12, 1]``, or ``max_batch_size`` or
        ``dataset_size`` is not an integer in ``[1, 1e12]``; an
        :class:`~plda.UncoveredParametersError` if ``2 sensitivity / sigma`` of a Gaussian
        base exceeds ``1e8`` (with ``sample_rate < 1``).

    Warns
    -----
    NotTightWarning
        When its laws are requested (``privacy_loss``) and a batch can be truncated: they are
        a dominating pair, and the lower bound comes from :meth:`lower_bound_mechanisms`.

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
        # truncated batches are substitutions: the sampled base at doubled sensitivity
        check_sampled_mu(self.mechanism, rate, 1, factor=2)

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
        """Dominating components and their weights (``docs/howto/samplers.md``, "How the
        truncated bracket is certified")."""
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
        """Whether both directions have one law: untruncated, of a symmetric Poisson step."""
        return not self.truncates and self._poisson().symmetric

    def _add_law(self):
        if not self.truncates:
            return self._poisson().privacy_loss("add")
        # the reversed pair of a revealed mixture is the revealed mixture of reversed pairs
        return self.privacy_loss("remove").reversed()

    def effective_sample_rate(self) -> float:
        """The probability that a given record of the dataset is in the truncated batch.

        ``q_eff = q E[min(1, B/(K+1))]`` with ``K ~ Binomial(n-1, q)``, the sum cut after
        ``MAX_TERMS`` batch sizes (which only lowers it).

        Returns
        -------
        float
            ``q_eff``, rounded down (a lower bound); ``q`` when ``B > n - 1``.
        """
        q, b, others = self.sample_rate, self.max_batch_size, self.dataset_size - 1
        if b > others:
            return q
        inside = float(_binom().cdf(b - 1, others, q))
        k = np.arange(b, min(others, b + MAX_TERMS - 1) + 1)
        beyond = math.fsum(_binom().pmf(k, others, q) * (b / (k + 1.0)))
        # each term rounded down by the binomial tolerance, the sum by its few ulps
        return q * (inside + beyond) * (1 - BINOM_RTOL - 1e-15)

    def lower_bound_mechanism(self) -> Mechanism:
        """The realized pair whose PLD lower bound is certified for this sampler.

        Every other record contributes 0 and the differing one ``C``: the record reaches the
        batch with probability :meth:`effective_sample_rate` and the outputs are exactly that
        Poisson step's pair.

        Returns
        -------
        Mechanism
            ``PoissonSampled(mechanism, effective_sample_rate())``; the Poisson step itself
            when nothing is truncated.
        """
        if not self.truncates:
            return self._poisson()
        return PoissonSampled(self.mechanism, self.effective_sample_rate())

    def _coarsened(self) -> Mechanism:
        return self if self.truncates else self._poisson()._coarsened()

    def under_replace_one(self) -> Mechanism:
        """The sampler under replace-one (Gaussian base only).

        The same mixture with the untruncated component read under replace-one
        (:meth:`PoissonSampled.under_replace_one`, the mixture pair); the truncated ones are
        substitutions already, symmetrized as their orientation can flip. The lower pair
        (others 0, ``x = C`` vs ``x' = -C``) is ``PoissonSampled(mechanism, q_eff)`` read under
        replace-one.

        Returns
        -------
        Mechanism
            The replace-one reading, with the same parameters.

        Raises
        ------
        ValueError
            If ``mechanism`` is not a ``plda.Gaussian``.
        """
        if type(self.mechanism) is not Gaussian:
            raise ValueError(
                "relation='replace_one' with TruncatedPoisson is supported for Gaussian base "
                f"mechanisms only, got {type(self.mechanism).__name__}; a substitution is a "
                "removal and an insertion, so plda.theorems.group_privacy(epsilon, delta, 2) on "
                "the relation='add_remove' guarantee bounds it"
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
