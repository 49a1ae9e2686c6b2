"""The battery's reference (``realized.py``, ``realized_pairs.py``) checked on its own: against
closed forms (plda.testing's exact Gaussian, Poisson-Gaussian and Laplace profiles), an mpmath
integral, products of pairs (a 2-D product pair is a 2-step composition), and brute-force
enumerations of the samplers. Nothing here runs plda's discretization or composition."""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_settings import examples
from realized import COARSE, FINE, Pair, delta_bracket, fine_resolution
from realized_pairs import Sampler, canonical, output_mixture, realized_pairs

from plda.testing import gaussian_delta, laplace_delta, poisson_gaussian_delta

EPS = np.array([0.0, 0.5, 1.0, 2.0])
ONE = Fraction(1)


def point(*shift):
    return tuple(shift)


def pair(noise, p, q, scale=1.0):
    return Pair(noise, scale, tuple(p), tuple(q))


GAUSS = pair("gaussian", [((1,), ONE)], [((0,), ONE)])
POISSON = pair("gaussian", [((0,), Fraction(1, 2)), ((1,), Fraction(1, 2))], [((0,), ONE)])
LAPLACE_MIX = pair("laplace", [((0,), Fraction(1, 4)), ((1,), Fraction(3, 4))],
                   [((-1,), Fraction(3, 4)), ((0,), Fraction(1, 4))])


def product(a: Pair, b: Pair) -> Pair:
    """The pair on R^2 of running ``a`` then ``b``."""
    def mix(x, y):
        return tuple(sorted(((s[0], t[0]), w * v) for (s, w), (t, v) in itertools.product(x, y)))
    return Pair(a.noise, a.scale, mix(a.p, b.p), mix(a.q, b.q))


def within(bracket, exact, width):
    """``lower <= exact <= upper`` (the reference's promise) and ``upper - lower <= width``."""
    assert np.all(bracket.lower <= exact), (bracket.lower, exact)
    assert np.all(exact <= bracket.upper), (exact, bracket.upper)
    assert np.all(bracket.upper - bracket.lower <= width), bracket.upper - bracket.lower


@pytest.mark.parametrize("steps", [1, 3, 10])
def test_gaussian_composition_matches_gdp(steps):
    """``T`` runs of ``N(1, 1)`` vs ``N(0, 1)`` are ``sqrt(T)``-GDP (Dong, Roth & Su 2019)."""
    exact = np.array([float(gaussian_delta(e, math.sqrt(steps), precise=True)) for e in EPS])
    within(delta_bracket(GAUSS, steps, 0, EPS, COARSE[1]), exact, 3e-3)
    within(delta_bracket(GAUSS, steps, 0, EPS, fine_resolution(1, steps)), exact, 1e-4)


def test_laplace_step_matches_closed_form():
    """One Laplace run: ``delta = 1 - e^((eps - eps0) / 2)`` below ``eps0``."""
    laplace = pair("laplace", [((1,), ONE)], [((0,), ONE)])
    exact = np.asarray(laplace_delta(EPS, 1.0))
    within(delta_bracket(laplace, 1, 0, EPS, FINE[1]), exact, 3e-5)


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_poisson_gaussian_step_matches_closed_form(direction):
    """``(1/2 N(1) + 1/2 N(0), N(0))`` (remove) and its reverse (add): Zhu, Dong & Wang 2022."""
    runs = (1, 0) if direction == "remove" else (0, 1)
    exact = np.asarray(poisson_gaussian_delta(EPS, 1.0, 0.5, direction=direction))
    within(delta_bracket(POISSON, *runs, EPS, FINE[1]), exact, 3e-5)


def test_laplace_mixture_matches_mpmath_integral():
    """A replace-one Laplace mixture pair: ``delta = int (p - e^eps q)_+``, integrated in mpmath
    between the kinks and the crossings of ``p = e^eps q`` (found by bisection)."""
    mpmath.mp.dps = 30

    def density(mix, y):
        return sum(mpmath.mpf(w.numerator) / w.denominator * mpmath.exp(-abs(y - s[0])) / 2
                   for s, w in mix)

    def exact(eps):
        f = lambda y: density(LAPLACE_MIX.p, y) - mpmath.exp(eps) * density(LAPLACE_MIX.q, y)  # noqa: E731
        cuts = [-mpmath.inf, -1, 0, 1, mpmath.inf]
        pieces = []
        for a, b in itertools.pairwise(cuts):
            lo, hi = max(a, -40), min(b, 40)
            grid = [lo + (hi - lo) * mpmath.mpf(i) / 400 for i in range(401)]
            points = [a]
            for u, v in itertools.pairwise(grid):
                if f(u) * f(v) < 0:
                    points.append(mpmath.findroot(f, (u, v), solver="bisect"))
            points.append(b)
            pieces += list(itertools.pairwise(points))
        return float(sum(mpmath.quad(lambda y: max(f(y), 0), [u, v]) for u, v in pieces))

    reference = np.array([exact(e) for e in EPS])
    within(delta_bracket(LAPLACE_MIX, 1, 0, EPS, FINE[1]), reference, 3e-5)


@pytest.mark.parametrize("noise", ["gaussian", "laplace"])
def test_two_dimensional_product_is_the_two_step_composition(noise):
    """The partition of the plane (epoch samplers) against the line: ``(P x P, Q x Q)`` is two
    runs of ``(P, Q)``, and ``(P x Q, Q x P)`` a run of each orientation."""
    base = POISSON if noise == "gaussian" else LAPLACE_MIX
    plane = product(base, base)
    line = delta_bracket(base, 2, 0, EPS, fine_resolution(1, 2))
    for resolution, width in ((COARSE[2], 5e-3), (FINE[2], 1e-3)):
        two = delta_bracket(plane, 1, 0, EPS, resolution)
        assert np.all(two.lower <= line.upper) and np.all(line.lower <= two.upper)
        assert np.all(two.upper - two.lower <= width)
    flipped = Pair(base.noise, base.scale, product(base, base.reversed()).p,
                   product(base.reversed(), base).p)
    assert flipped.q == product(base.reversed(), base).p
    line = delta_bracket(base, 1, 1, EPS, fine_resolution(1, 2))
    two = delta_bracket(flipped, 1, 0, EPS, COARSE[2])
    assert np.all(two.lower <= line.upper) and np.all(line.lower <= two.upper)


# ------------------------------------------------------------------ the enumerations
def brute_force(sampler: Sampler, dataset: tuple[int, ...]) -> dict:
    """The per-step output law by enumerating records (not values): subsets, micro-batches."""
    out: dict = defaultdict(Fraction)
    n, q = len(dataset), sampler.sample_rate
    if sampler.kind == "accumulated":
        m = sampler.micro_batches
        for picks in itertools.product((0, 1), repeat=n * m):
            w = math.prod((q if b else 1 - q for b in picks), start=ONE)
            out[(sum(dataset[i // m] for i in range(n * m) if picks[i]),)] += w
        return {k: v for k, v in out.items() if v}
    for included in itertools.product((0, 1), repeat=n):
        chosen = [i for i in range(n) if included[i]]
        w = math.prod((q if b else 1 - q for b in included), start=ONE) if q else None
        if sampler.kind == "poisson":
            out[(sum(dataset[i] for i in chosen),)] += w
        elif sampler.kind == "truncated-poisson":
            batches = list(itertools.combinations(chosen, min(len(chosen),
                                                              sampler.max_batch_size)))
            for batch in batches:
                out[(sum(dataset[i] for i in batch),)] += w / len(batches)
        elif sampler.kind == "without-replacement" and len(chosen) == sampler.batch_size:
            out[(sum(dataset[i] for i in chosen),)] += Fraction(1, math.comb(n, len(chosen)))
    return {k: v for k, v in out.items() if v}


@pytest.mark.parametrize("sampler", [
    Sampler("poisson", Fraction(9, 10)),
    Sampler("accumulated", Fraction(1, 3), micro_batches=2),
    Sampler("without-replacement", batch_size=2, dataset_size=4),
    Sampler("truncated-poisson", Fraction(9, 10), max_batch_size=2, dataset_size=4),
], ids=lambda s: s.kind)
def test_per_step_laws_match_brute_force(sampler):
    for dataset in [(1, 0, -1), (1, 1, -1, 0), (-1, -1, -1, 1)]:
        assert dict(output_mixture(sampler, dataset)) == brute_force(sampler, dataset)


@examples(40)
@given(dataset=st.lists(st.sampled_from((-1, 0, 1)), min_size=1, max_size=4).map(tuple),
       kind=st.sampled_from(("poisson", "accumulated", "without-replacement",
                             "truncated-poisson")),
       rate=st.fractions(min_value=Fraction(1, 10), max_value=1, max_denominator=10),
       size=st.integers(1, 4))
@example(dataset=(-1,), kind="poisson", rate=Fraction(1), size=1)  # rate 1: no zero weights
def test_per_step_laws_match_brute_force_everywhere(dataset, kind, rate, size):
    """The value-count shortcuts of ``output_mixture`` against record-by-record enumeration."""
    size = min(size, len(dataset))
    sampler = Sampler(kind, rate, batch_size=size, max_batch_size=size,
                      micro_batches=2 if len(dataset) <= 3 else 1)
    assert dict(output_mixture(sampler, dataset)) == brute_force(sampler, dataset)


def test_epoch_laws():
    """Shuffled: chunks of a uniform permutation (sizes 2 and 1 for three records); random
    allocation: each record in a uniform step, independently."""
    shuffled = dict(output_mixture(Sampler("shuffled", num_steps=2), (1, 0, 0)))
    assert shuffled == {(0, 1): Fraction(1, 3), (1, 0): Fraction(2, 3)}
    allocation = dict(output_mixture(Sampler("random-allocation", num_steps=2), (1, 1)))
    assert allocation == {(0, 2): Fraction(1, 4), (1, 1): Fraction(1, 2), (2, 0): Fraction(1, 4)}


def test_canonical_form_is_invariant():
    p = (((0, 2), Fraction(1, 2)), ((1, 0), Fraction(1, 2)))
    q = (((0, 1), ONE),)
    moved = lambda mix: tuple(sorted(((-s[1] + 5, -s[0] - 3), w) for s, w in mix))  # noqa: E731
    assert canonical(p, q) == canonical(moved(p), moved(q))


def test_realized_pairs_include_both_orders_under_add_remove():
    pairs = realized_pairs(Sampler("poisson", Fraction(1, 2)), "gaussian", 1.0, "add_remove")
    found = {(r.pair.p, r.pair.q) for r in pairs}
    assert all(canonical(q, p) in found for p, q in found)
