"""Realized dataset pairs of each sampler, enumerated exactly on small datasets.

A dataset is a tuple of per-record contributions to the queried sum, in units of the
sensitivity ``C`` (values in ``{-1, 0, +1}``). A sampler turns a dataset into the output law of
one step (per-step samplers: the batch sum plus noise, ``d = 1``) or one epoch (epoch samplers:
the vector of the ``T`` batch sums plus noise, ``d = T``): a finite mixture of shifted noise, its
weights exact fractions from the sampler's combinatorics (:func:`output_mixture`).

The realized pairs of a relation (:func:`realized_pairs`):

- ``add_remove``: the larger dataset ``O + (x,)`` against ``O`` (``x = +1``; ``x = -1`` is its
  mirror image, which has the same privacy loss), for every multiset ``O`` of the other records
  and every dataset size the plda mechanism claims to cover; both orders (both directions).
  With ``group_size = K`` the protected unit is ``K`` records: ``O + G`` against ``O`` for every
  multiset ``G`` of ``K`` values other than all zeros (mixed signs included).
  :class:`~plda.Shuffled` under add/remove follows its docstring's slot semantics: the smaller
  dataset's batches are the larger's with ``x`` taken out, its slot left empty -- the same
  output law as ``x`` contributing 0.
- ``replace_one``: ``O + (x,)`` against ``O + (x',)`` for ``(x, x') = (+1, -1)`` and
  ``(+1, 0)`` (the others are mirror images), both orders; with ``group_size = K``,
  ``O + G`` against ``O + G'`` for every two distinct multisets of ``K`` values; a run may
  also flip the orientation at any step (an adaptive query that swaps what ``x`` and ``x'``
  contribute), so the battery composes ``k`` steps of one orientation with ``T - k`` of the
  other.

Pairs are reduced to a canonical form (translation, mirror image, permutation of the output
coordinates: each a bijection of the output space) so that equal pairs are computed once.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
from realized import (
    COARSE,
    Bracket,
    Mixture,
    Pair,
    clear_caches,
    delta_bracket,
    fine_resolution,
)

#: contributions a record may make to the queried sum (units of the sensitivity)
VALUES = (-1, 0, 1)


@dataclass(frozen=True)
class Sampler:
    """A sampler's parameters, as exact fractions / integers. ``kind`` is one of
    ``"poisson"``, ``"accumulated"`` (``micro_batches`` Poisson micro-batches, noise added once),
    ``"without-replacement"``, ``"truncated-poisson"``, ``"shuffled"``, ``"random-allocation"``."""

    kind: str
    sample_rate: Fraction | None = None
    batch_size: int | None = None
    max_batch_size: int | None = None
    dataset_size: int | None = None
    num_steps: int | None = None  # steps per epoch (epoch samplers)
    micro_batches: int | None = None
    #: records per protected unit (add/remove: the group is added or removed at once)
    group_size: int = 1
    #: "all": every multiset of the other records' values; "uniform": the others all share one
    #: value (large datasets, where every multiset would be too many pairs)
    others: str = "all"

    @property
    def dimension(self) -> int:
        return self.num_steps if self.kind in ("shuffled", "random-allocation") else 1

    def sizes(self, relation: str) -> tuple[int, ...]:
        """Sizes of the larger dataset of the pairs the plda mechanism claims to cover."""
        if self.kind in ("without-replacement", "truncated-poisson"):
            n = self.dataset_size
            # add/remove: both neighbours of the n-record dataset (plda's docstrings)
            return (n, n + 1) if relation == "add_remove" else (n,)
        if self.kind == "shuffled":
            return tuple(range(self.num_steps, 5))
        if self.kind == "accumulated":
            return (1, 2)  # (m + 1)^n terms; the others' counts are independent of x's anyway
        return (1, 2, 3, 4)


# ------------------------------------------------------------------ output laws
def _normalized(weights: dict) -> Mixture:
    mix = tuple(sorted((shift, w) for shift, w in weights.items() if w))
    if sum(w for _, w in mix) != 1:
        raise ValueError("the sampler's weights do not sum to 1")
    return mix


def _binomial(n: int, q: Fraction) -> list[tuple[int, Fraction]]:
    return [(k, math.comb(n, k) * q**k * (1 - q) ** (n - k)) for k in range(n + 1)]


def _draws(counts: dict[int, int], size: int):
    """``(taken, probability)``: how many records of each value a uniformly random ``size``-subset
    of the multiset ``counts`` takes (multivariate hypergeometric)."""
    values = sorted(counts)
    total = math.comb(sum(counts.values()), size)
    for taken in itertools.product(*(range(counts[v] + 1) for v in values)):
        if sum(taken) == size:
            ways = math.prod(math.comb(counts[v], k) for v, k in zip(values, taken, strict=True))
            yield dict(zip(values, taken, strict=True)), Fraction(ways, total)


def _poisson_counts(counts: dict[int, int], q: Fraction):
    """``(included, probability)`` per value of a Poisson sample of the multiset ``counts``."""
    values = sorted(counts)
    for choice in itertools.product(*(_binomial(counts[v], q) for v in values)):
        yield ({v: k for v, (k, _) in zip(values, choice, strict=True)},
               math.prod((w for _, w in choice), start=Fraction(1)))


def output_mixture(sampler: Sampler, dataset: tuple[int, ...]) -> Mixture:
    """The output law of one step (one epoch) of ``sampler`` on ``dataset``. Per-step samplers
    work on the multiset of values (records of equal value are exchangeable)."""
    weights: dict = defaultdict(Fraction)
    n, q = len(dataset), sampler.sample_rate
    counts = {v: dataset.count(v) for v in set(dataset)}

    def total(taken: dict) -> tuple[int]:
        return (sum(v * k for v, k in taken.items()),)

    if sampler.kind == "poisson":
        for taken, w in _poisson_counts(counts, q):
            weights[total(taken)] += w
    elif sampler.kind == "accumulated":
        # each record is in Binomial(m, q) micro-batches: a value's records in Binomial(c m, q)
        m = sampler.micro_batches
        for taken, w in _poisson_counts({v: c * m for v, c in counts.items()}, q):
            weights[total(taken)] += w
    elif sampler.kind == "without-replacement":
        for taken, w in _draws(counts, sampler.batch_size):
            weights[total(taken)] += w
    elif sampler.kind == "truncated-poisson":
        cap = sampler.max_batch_size
        for drawn, w in _poisson_counts(counts, q):
            if sum(drawn.values()) <= cap:
                weights[total(drawn)] += w
            else:  # a uniform B-subset of the oversized sample
                for taken, v in _draws(drawn, cap):
                    weights[total(taken)] += w * v
    elif sampler.kind == "shuffled":
        t = sampler.num_steps
        sizes = [n // t + (1 if i < n % t else 0) for i in range(t)]
        ends = list(itertools.accumulate(sizes))
        orders = list(itertools.permutations(range(n)))
        for order in orders:  # chunks of a uniformly random permutation
            sums = tuple(sum(dataset[i] for i in order[e - s:e])
                         for s, e in zip(sizes, ends, strict=True))
            weights[sums] += Fraction(1, len(orders))
    elif sampler.kind == "random-allocation":
        t = sampler.num_steps
        for steps in itertools.product(range(t), repeat=n):  # each record in one step
            sums = [0] * t
            for value, step in zip(dataset, steps, strict=True):
                sums[step] += value
            weights[tuple(sums)] += Fraction(1, t**n)
    else:
        raise ValueError(f"unknown sampler kind {sampler.kind!r}")
    return _normalized(weights)


# ------------------------------------------------------------------ canonical pairs
def _transform(mix: Mixture, sign: int, perm: tuple[int, ...], offset) -> Mixture:
    return tuple(sorted(
        (tuple(sign * s[perm[k]] - offset[k] for k in range(len(perm))), w) for s, w in mix))


def canonical(p: Mixture, q: Mixture) -> tuple[Mixture, Mixture]:
    """The smallest image of ``(p, q)`` under mirror, coordinate permutations and translation."""
    d = len(p[0][0])
    best = None
    for sign in (1, -1):
        for perm in itertools.permutations(range(d)):
            moved = [tuple(sign * s[perm[k]] for k in range(d)) for s, _ in p + q]
            offset = tuple(min(s[k] for s in moved) for k in range(d))
            image = (_transform(p, sign, perm, offset), _transform(q, sign, perm, offset))
            best = image if best is None or image < best else best
    return best


@dataclass(frozen=True)
class Realized:
    """A realized pair (canonical form) and the first dataset pair found to realize it.
    ``flippable``: a run may compose it with its reverse (replace-one)."""

    pair: Pair
    datasets: tuple[tuple[int, ...], tuple[int, ...]]
    flippable: bool

    @property
    def mirrored(self) -> bool:
        """Whether the reversed pair is the same pair up to a bijection of the outputs (then
        flipping orientations changes nothing)."""
        return canonical(self.pair.q, self.pair.p) == (self.pair.p, self.pair.q)


def realized_pairs(sampler: Sampler, noise: str, scale: float, relation: str
                   ) -> tuple[Realized, ...]:
    """Every distinct realized pair of ``sampler`` under ``relation`` (module docstring). Under
    replace-one each unordered pair appears once (``flippable``); under add/remove both orders."""
    found: dict = {}
    for size in sampler.sizes(relation):
        if sampler.others == "uniform":
            choices = [(v,) * (size - 1) for v in VALUES]
        else:
            choices = itertools.combinations_with_replacement(VALUES, size - 1)
        for others in choices:
            if relation == "add_remove" and sampler.group_size > 1:
                others = others[: len(others) - (sampler.group_size - 1)]
                if len(others) + sampler.group_size != size:
                    continue  # too small a dataset for the group
                groups = [g for g in itertools.combinations_with_replacement(
                    VALUES, sampler.group_size) if any(g)]
                cases = [c for g in groups for c in ((others + g, others), (others, others + g))]
            elif sampler.group_size > 1:  # replace-one: the group's K records replaced
                others = others[: len(others) - (sampler.group_size - 1)]
                if len(others) + sampler.group_size != size:
                    continue
                groups = list(itertools.combinations_with_replacement(VALUES,
                                                                      sampler.group_size))
                cases = [(others + g, others + h) for g in groups for h in groups if g < h]
            elif relation == "add_remove":
                absent = others + (0,) if sampler.kind == "shuffled" else others
                cases = [(others + (1,), absent), (absent, others + (1,))]
            else:
                cases = [(others + (1,), others + (x,)) for x in (-1, 0)]
            for first, second in cases:
                if sampler.kind == "without-replacement" and sampler.batch_size > min(
                        len(first), len(second)):
                    continue
                p, q = canonical(output_mixture(sampler, first), output_mixture(sampler, second))
                if relation == "replace_one":
                    p, q = min((p, q), canonical(q, p))
                found.setdefault((p, q), (first, second))
    return tuple(
        Realized(Pair(noise, scale, p, q), datasets, relation == "replace_one")
        for (p, q), datasets in sorted(found.items())
    )


# ------------------------------------------------------------------ the worst realized run
#: realized runs refined at the fine resolution (those the coarse screen cannot rule out, the
#: most promising first)
MAX_REFINED = 2


@dataclass(frozen=True)
class Worst:
    """Over every realized run of ``steps`` steps: ``lower`` is the largest certified realized
    ``delta(eps)`` (a value some pair of datasets attains), ``upper`` bounds every enumerated
    run's ``delta(eps)``; ``runs`` maps ``(pair, forward, reversed)`` to its bracket and
    ``datasets`` each pair to a pair of datasets realizing it."""

    lower: np.ndarray
    upper: np.ndarray
    argmax: tuple
    runs: dict
    datasets: dict

    def bracket(self, sampler: Sampler, first: tuple, second: tuple, steps: int) -> Bracket:
        """The bracket of ``steps`` runs on the datasets ``(first, second)``, either order (the
        larger of each end): a pair's two directions."""
        p, q = canonical(output_mixture(sampler, first), output_mixture(sampler, second))
        found = []
        for pair in self.datasets:
            for key in ((pair, steps, 0), (pair, 0, steps)):
                if key in self.runs and {(pair.p, pair.q), (pair.q, pair.p)} & {
                        (p, q), canonical(q, p)}:
                    found.append(self.runs[key])
        if not found:
            raise LookupError(f"the datasets {first} / {second} are not among the enumerated pairs")
        return Bracket(np.max([b.lower for b in found], axis=0),
                       np.max([b.upper for b in found], axis=0))


def runs_of(item: Realized, steps: int) -> list[tuple[int, int]]:
    """``(forward, reversed)`` step counts of the runs built on one realized pair: all splits
    for a flippable pair (up to 3 steps; for more, 0, 1, half, all but one, all)."""
    if not item.flippable or item.mirrored:
        return [(steps, 0)]
    ks = range(steps + 1) if steps <= 3 else sorted({0, 1, steps // 2, steps - 1, steps})
    return [(k, steps - k) for k in ks]


def _worst(sampler: Sampler, items: tuple[Realized, ...], steps: int, eps: np.ndarray) -> Worst:
    """The worst realized run of ``steps`` steps: every run bracketed coarsely, those whose
    upper end reaches the best lower end refined."""
    coarse = COARSE[sampler.dimension]
    runs, datasets = {}, {}
    for item in items:
        datasets[item.pair] = item.datasets
        for forward, reversed_ in runs_of(item, steps):
            runs[(item.pair, forward, reversed_)] = delta_bracket(item.pair, forward, reversed_,
                                                                  eps, coarse)
    best = np.max([b.lower for b in runs.values()], axis=0)
    open_runs = [key for key, b in runs.items() if np.any(b.upper > best)]
    open_runs.sort(key=lambda key: -float(np.max(runs[key].upper - best)))
    fine = fine_resolution(sampler.dimension, steps)
    for key in open_runs[:MAX_REFINED if sampler.dimension == 1 else 1]:
        pair, forward, reversed_ = key
        sharp = delta_bracket(pair, forward, reversed_, eps, fine)
        runs[key] = Bracket(np.maximum(sharp.lower, runs[key].lower),
                            np.minimum(sharp.upper, runs[key].upper))
    keys = list(runs)
    lowers = np.array([runs[k].lower for k in keys])
    top = keys[int(np.argmax(lowers.max(axis=1)))]
    return Worst(lowers.max(axis=0), np.max([runs[k].upper for k in keys], axis=0),
                 (datasets[top[0]], top[1], top[2]), runs, datasets)


@lru_cache(maxsize=64)
def worst_cases(sampler: Sampler, noise: str, scale: float, relation: str,
                steps: tuple[int, ...], epsilon: tuple[float, ...]) -> dict[int, Worst]:
    """:class:`Worst` for each number of steps (epochs) in ``steps``, at each ``epsilon``; the
    per-step grid laws are shared between them and dropped afterwards (memory)."""
    items = realized_pairs(sampler, noise, scale, relation)
    try:
        return {t: _worst(sampler, items, t, np.asarray(epsilon)) for t in steps}
    finally:
        clear_caches()
