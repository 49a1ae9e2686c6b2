"""plda.engine.query: the one driver the PLD and the accountant both call."""

from __future__ import annotations

import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import plda
from plda.engine.composer import FFT_FLOOR, RESOLUTION, rounding_floor
from plda.engine.gaps import monotone_envelope, probes
from plda.engine.query import realized_queries, recipe_query
from plda.engine.recipe import add_remove_steps, bounds_over_directions, laws_by_direction

PLD = plda.PrivacyLossDistribution


def test_a_recipe_query_answers_as_the_pld_of_the_recipe_bit_for_bit():
    # the accountant hands deltas below the FFT floor and its realized pairs to this driver:
    # its numbers must be the PLD's, tilted ones and realized lower bounds included
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        warnings.simplefilter("ignore", plda.SamplerAssumptionWarning)
        for mechanism, count, relation in [
            (plda.PoissonSampled(plda.Gaussian(1.0), 0.01), 300, "add_remove"),
            (plda.Shuffled(plda.Gaussian(1.5), 10), 2, "replace_one"),
        ]:
            steps = add_remove_steps(((mechanism, count),), relation)
            d, e = np.array([1e-3, 1e-6, 1e-11]), np.array([0.5, 6.0])
            for kind, targets in (("epsilon_bounds", d), ("delta_bounds", e)):
                ours = getattr(recipe_query(steps, 1e-3), kind)(targets)
                pld = PLD.from_mechanism(mechanism, count, relation=relation)
                theirs = getattr(pld, kind)(targets)
                assert all(np.array_equal(a, b) for a, b in zip(ours, theirs, strict=True))
            assert bool(realized_queries(steps, 1e-3)) == (not mechanism.tight)


def test_the_margin_rule_reads_fewer_optimistic_versions_and_known_uppers_are_not_recomputed():
    class Law:
        def __init__(self, value):
            self.value = np.asarray(value, dtype=float)

    class Pair:
        def __init__(self, upper, lower, name):
            self._upper, self._lower, self.name = Law(upper), Law(lower), name

        @property
        def upper(self):
            read.append(f"{self.name}.upper")
            return self._upper

        @property
        def lower(self):
            read.append(f"{self.name}.lower")
            return self._lower

    def query(law):
        return law.value

    versions = {"a": Pair([10.0], [9.0], "a"), "b": Pair([9.5], [9.4], "b")}
    read: list[str] = []
    lower, upper = bounds_over_directions(versions, query)  # b's upper reaches a's lower
    assert read == ["a.upper", "b.upper", "a.lower", "b.lower"] and lower[0] == 9.4
    read.clear()
    # within 1% of the upper bound only: b (5% below) is not read, the lower bound stays valid
    lower, upper = bounds_over_directions(versions, query, margin=0.01, known={"a": [10.0]})
    assert read == ["b.upper", "a.lower"] and lower[0] == 9.0 and upper[0] == 10.0
    read.clear()
    assert bounds_over_directions(versions, query, lower=False)[0] is None
    assert read == ["a.upper", "b.upper"]


def test_probes_and_the_floor():
    uppers = [np.array([0.5, 1e-3, 1e-12, 1.0]), np.array([0.4, 2e-3, 1e-11, 0.9])]
    assert list(probes(uppers)) == [0.5, 2e-3]  # above the refinement floor and below 1
    assert list(probes([np.geomspace(1e-9, 0.5, 64)])) == list(np.geomspace(1e-9, 0.5, 64)[::4])
    # the accountant and the PLD hand over at the same floor
    acct = plda.PLDAccountant()
    acct.step(noise_multiplier=1.0, sample_rate=0.01, count=200)
    below = FFT_FLOOR / 10
    assert acct.epsilon(below) == acct.pld.epsilon(below)


def test_laws_by_direction_merges_gaussians_and_keeps_one_direction_when_symmetric():
    steps = ((plda.Gaussian(2.0), 3), (plda.Gaussian(1.0), 1), (plda.Laplace(3.0), 0))
    laws = laws_by_direction(steps)
    assert list(laws) == ["remove"] and len(laws["remove"]) == 1
    sampled = plda.PoissonSampled(plda.Gaussian(1.0), 0.1)
    assert list(laws_by_direction(((sampled, 2),))) == ["remove", "add"]


def test_a_delta_on_the_rounding_floor_is_tilted_not_refined():
    # 1e4 steps at rate 1e-3: the untilted grid's rounding terms on delta are about 1e-9, so
    # at delta 1e-8 (exactly the old fixed FFT floor, so never tilted) refining only added
    # rounding: three grids up to 8e5 points, 0.4 s, and [0.585968, 0.588115] (gap 3.6e-3,
    # with an AccuracyWarning). Below the rounding floor the start grid is tilted instead.
    mechanism = plda.PoissonSampled(plda.Gaussian(1.1), 0.001)
    for delta in (3e-8, 1e-8, 9.9e-9):
        pld = PLD.from_mechanism(mechanism, 10000)
        first = pld.grid_step
        with warnings.catch_warnings():
            warnings.simplefilter("error", plda.AccuracyWarning)
            lower, upper = pld.epsilon_bounds(delta)
        assert 0 < lower <= upper and (upper - lower) / upper <= pld.accuracy
        assert pld.grid_step >= first  # not refined: refining cannot resolve it
        versions = {"upper": pld.discrete("upper"), "lower": pld.discrete("lower")}
        floor = rounding_floor(
            {d: SimpleNamespace(upper=law) for d, law in versions["upper"].items()},
            pld.accuracy,
        )
        assert FFT_FLOOR < floor and delta < floor
        # the untilted bounds on the same grid hold too: tilting may only tighten them
        d = np.array([delta])
        assert upper <= max(float(v.epsilon(d)[0]) for v in versions["upper"].values())
        assert lower >= max(float(v.epsilon(d)[0]) for v in versions["lower"].values())


def test_the_rounding_floor_rises_with_the_rounding_terms_and_the_accuracy():
    law = SimpleNamespace(probs=np.full(10**4, 1e-4), entry_error=1e-14, l2_error=1e-12)
    versions = {"remove": SimpleNamespace(upper=law)}
    # min(1e-14 * 1e4, 1e-12 * 100) = 1e-10, plus 4 n u
    rounding = 1e-10 + 4 * 10**4 * 2.0**-53
    assert rounding_floor(versions, 1e-3) == rounding / (RESOLUTION * 1e-3)
    assert rounding_floor(versions, 1e-4) == rounding / (RESOLUTION * 1e-4)
    tiny = SimpleNamespace(probs=np.ones(4), entry_error=0.0, l2_error=0.0)
    assert rounding_floor({"remove": SimpleNamespace(upper=tiny)}, 1e-3) == FFT_FLOOR
    broken = SimpleNamespace(probs=np.ones(4), entry_error=np.inf, l2_error=np.inf)
    assert rounding_floor({"remove": SimpleNamespace(upper=broken)}, 1e-3) == 1.0


def test_a_delta_answer_on_the_rounding_floor_is_tilted_on_the_grid_reached():
    # delta(0.587) is about 1e-8 for the composition above: the untilted grid gave
    # [9.55e-9, 1.046e-8] (a gap of 9%, and its epsilon at the delta reported missed 1e-3)
    pld = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(1.1), 0.001), 10000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", plda.AccuracyWarning)
        lower, upper = pld.delta_bounds(0.587)
    assert 0 < lower <= upper and (upper - lower) / upper <= 0.02
    e = np.array([0.587])
    assert upper <= max(float(v.delta(e)[0]) for v in pld.discrete("upper").values())
    assert lower >= max(float(v.delta(e)[0]) for v in pld.discrete("lower").values())


def test_the_monotone_envelope_tightens_each_bound_by_its_neighbours():
    # epsilon(delta) is non-increasing: an upper bound holds for every larger delta, a lower
    # bound for every smaller one (the targets in any order)
    targets = np.array([1e-5, 1e-10, 1e-2, 1e-8])
    lower = np.array([1.0, 1.5, 0.2, 1.6])  # 1e-8's lower beats 1e-10's
    upper = np.array([2.0, 1.9, 0.5, 2.5])  # 1e-10's upper beats 1e-8's and 1e-5's
    low, up = monotone_envelope(targets, lower, upper)
    assert list(up) == [1.9, 1.9, 0.5, 1.9] and list(low) == [1.0, 1.6, 0.2, 1.6]
    assert list(lower) == [1.0, 1.5, 0.2, 1.6]  # new arrays
    # a NaN never replaces a bound (and a bound that holds there replaces it)
    low, up = monotone_envelope(np.array([1e-3, 1e-6]), np.array([np.nan, 1.0]),
                                np.array([np.nan, 2.0]))
    assert np.isnan(low[0]) and low[1] == 1.0 and list(up) == [2.0, 2.0]


def test_an_answer_at_several_deltas_never_grows_as_delta_grows():
    # a one-way curve through randomized response's (eps = 0.5), 4 steps: delta 1e-10 is
    # tilted, delta 1e-5 is not, and the tilted upper bound (2.00015) was below the untilted
    # one at 1e-5 (2.00144)
    corner = 1 / (1 + math.exp(0.5))
    alpha = np.array([0.0, corner / 2, corner, (corner + 1) / 2, 1.0])
    beta = np.maximum.reduce([np.zeros(5), 1 - math.exp(0.5) * alpha,
                              math.exp(-0.5) * (1 - alpha)])
    pld = PLD.from_mechanism(plda.TradeoffCurve(alpha=alpha, beta=beta, symmetric=False), 4)
    deltas = np.array([1e-2, 1e-5, 1e-10])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.AccuracyWarning)
        lower, upper = pld.epsilon_bounds(deltas)
    assert np.all(np.diff(upper) >= 0) and np.all(np.diff(lower) >= 0)


def _tilted_grids(monkeypatch, tails: dict | None = None) -> list:
    """``(step, tilt)`` of every tilted composition the driver asks for, recorded (and the laws'
    kept tails asked per ``(step, tilt)`` into ``tails``, if given)."""
    import plda.engine.query as query

    asked = []
    versions = query.Query.versions

    def counted(self, step, tilt=0.0, *tail):
        if tilt:
            asked.append((step, tilt))
            if tails is not None:
                tails.setdefault((step, tilt), set()).add(tail)
        return versions(self, step, tilt, *tail)

    monkeypatch.setattr(query.Query, "versions", counted)
    return asked


def test_a_tilted_gap_that_a_finer_grid_does_not_shrink_stops_the_refinement(monkeypatch):
    # a tilted gap held at 1% on every grid (as a lower version's error terms once held it at
    # 4e-3 at epsilon 52): a near-miss round on a 2.7e6-point grid took 8 s for nothing. Two
    # tilted grids, then the answer (with its warning)
    import plda.engine.query as query

    asked = _tilted_grids(monkeypatch)
    tilted_at = query.Query._tilted_at

    def stuck(self, step, tilts, tails, index, targets, lower, upper, kind):
        tilted_at(self, step, tilts, tails, index, targets, lower, upper, kind)
        lower[index] = 0.99 * upper[index]

    monkeypatch.setattr(query.Query, "_tilted_at", stuck)
    pld = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(1.1), 0.001), 10000)
    with pytest.warns(plda.AccuracyWarning):
        lower, upper = pld.epsilon_bounds(1e-8)
    assert lower == pytest.approx(0.99 * upper) and len({step for step, _ in asked}) == 2


@pytest.mark.parametrize(
    "mechanism, count, delta, low, high, asked_ok",
    [
        # 1e5 steps at q = 0.01, sigma = 0.8: epsilon(1e-8) is about 52. The tilted lower
        # version's lowest losses are swamped by its error terms; its profile's envelope, taken
        # from the left, held the gap at 4e-3 on every grid ([52.058, 52.272], two tilted grids
        # and a warning). Now one tilted grid
        (plda.PoissonSampled(plda.Gaussian(0.8), 0.01), 100000, 1e-8, 52.2, 52.3,
         lambda asked: len({step for step, _ in asked}) == 1),
        # 20 steps at q = 1e-3, sigma = 3: the tilted mass of the Chernoff-optimal tilt (90.5)
        # sits on the rare large losses of a sampled step, far above epsilon(1e-20) ~ 0.019:
        # the bounds stayed [0.0124, 0.0340] (and a warning). Tilts up to 16 times larger are
        # tried while each narrows its own gap
        (plda.PoissonSampled(plda.Gaussian(3.0), 0.001), 20, 1e-20, 0.0124, 0.0340,
         lambda asked: max(t for _, t in asked) > 8 * min(t for _, t in asked)),
    ],
    ids=["huge-epsilon-one-grid", "sampled-step-climbs-tilts"],
)
def test_a_tiny_delta_meets_the_accuracy_by_tilting(monkeypatch, mechanism, count, delta, low,
                                                    high, asked_ok):
    asked = _tilted_grids(monkeypatch)
    pld = PLD.from_mechanism(mechanism, count)
    with warnings.catch_warnings():
        warnings.simplefilter("error", plda.AccuracyWarning)
        lower, upper = pld.epsilon_bounds(delta)
    assert low < lower <= upper < high and (upper - lower) / upper <= 1e-3
    assert asked_ok(asked)


# ---------------------------------------------------------------- laws kept further out
@pytest.mark.parametrize("delta", [1e-30, 1e-100, 1e-300])
def test_a_delta_below_the_laws_kept_tail_meets_the_accuracy(monkeypatch, delta):
    # each step's pessimistic version charges its mass beyond the grid (1e-32 here) to +inf:
    # 1000 steps held 1e-29 there, above these deltas, so only the Chernoff bound answered
    # ([9.34, 12.53] at 1e-30; below 1e-60 no tilt was tried at all). A tilted query keeps the
    # laws as far out as its delta needs, in cells of one step (the coarse tail cells had cost
    # three refinements at 1e-25): one tilted grid
    asked = _tilted_grids(monkeypatch)
    pld = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(1.0), 0.01), 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", plda.AccuracyWarning)
        lower, upper = pld.epsilon_bounds(delta)
        low, high = pld.delta_bounds(np.array([lower, upper]))
    assert (upper - lower) / upper <= 1e-3 and len({step for step, _ in asked}) == 1
    assert high[0] >= delta >= low[1]  # the delta query agrees (and raised no inversion)
    # and is tight: its first tails came from its untilted upper bounds (1e-220 at 1e-300),
    # then from its tilted ones
    assert high[1] <= 1.01 * delta and low[0] >= 0.99 * delta


@pytest.mark.parametrize("count, delta", [(100, 1e-100), (100, 1e-250), (1, 1e-300)])
def test_a_gaussian_at_a_tiny_delta_is_bracketed_as_mpmath_computes_it(count, delta):
    # the composition is one Gaussian law: composed once, it is exact as discretized, and no
    # tilt may lose its tilted masses that underflow (a delta query at 1e-250 under t = 90.5
    # gave an upper bound of 1.7e-257 against 9.9e-251: an inverted bracket)
    mu = math.sqrt(count) / 3.0
    pld = PLD.from_mechanism(plda.Gaussian(3.0), count)
    with warnings.catch_warnings():
        warnings.simplefilter("error", plda.AccuracyWarning)
        lower, upper = pld.epsilon_bounds(delta)
    exact = plda.testing.gaussian_epsilon(delta, mu, precise=True)
    assert lower <= exact <= upper and (upper - lower) / upper <= 1e-3
    epsilons = np.array([lower, exact, upper])
    low, high = pld.delta_bounds(epsilons)
    truth = np.array([plda.testing.gaussian_delta(e, mu, precise=True) for e in epsilons])
    assert np.all(low <= truth) and np.all(truth <= high)


@pytest.mark.parametrize("parameter", [0.3, 1.0, 2.0])
@pytest.mark.parametrize("delta", [1e-60, 1e-100])
def test_a_discrete_laplace_composition_at_a_tiny_delta_contains_the_exact_epsilon(parameter,
                                                                                  delta):
    # composed by the tilted FFT (at and below 1e-60 only the Chernoff bound answered); the
    # exact epsilon from plda.testing's enumeration
    pld = PLD.from_mechanism(plda.DiscreteLaplace(parameter), 100)
    with warnings.catch_warnings():
        warnings.simplefilter("error", plda.AccuracyWarning)
        lower, upper = pld.epsilon_bounds(delta)
    exact = plda.testing.discrete_laplace_composition_epsilon(delta, parameter=parameter,
                                                              count=100)
    assert lower <= exact <= upper and (upper - lower) / upper <= 1e-3


def test_a_laplace_composition_at_1e_200_brackets_its_delta():
    # at 1e-200 the tilt weights fall below 1e-154, where their squares underflowed and the L2
    # error term vanished: the delta query at the epsilon bounds found a lower bound 300 times
    # the delta, above its upper bound
    pld = PLD.from_mechanism(plda.Laplace(4.0), 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", plda.AccuracyWarning)
        lower, upper = pld.epsilon_bounds(1e-200)
        low, high = pld.delta_bounds(np.array([lower, upper]))
    assert (upper - lower) / upper <= 1e-3 and high[0] >= 1e-200 >= low[1]


def test_the_laws_kept_tail_leaves_their_mass_at_infinity_below_a_share_of_the_delta():
    from plda.discretization.discretize import UPPER_TAIL
    from plda.engine.tilt import DEEPEST_LAW_TAIL, INFINITY_SHARE, law_tail

    assert law_tail(None, 1e-30, 1e-3) == UPPER_TAIL  # nothing known: the default
    assert law_tail(1e-29, 1e-20, 1e-3) == UPPER_TAIL  # within its share: the default
    for infinity, delta in [(1e-29, 1e-30), (1e-27, 1e-100), (1e-29, 1e-280)]:
        tail = law_tail(infinity, delta, 1e-3)
        decades = -math.log10(tail)
        assert decades == pytest.approx(10 * round(decades / 10))  # ten decades a step
        # the mass at +inf scales with the tail it was kept to
        assert infinity * tail / UPPER_TAIL <= INFINITY_SHARE * 1e-3 * delta or (
            tail == DEEPEST_LAW_TAIL)
    assert law_tail(1e-29, 1e-300, 1e-3) == DEEPEST_LAW_TAIL


def test_one_law_composed_once_is_not_tilted():
    from plda.discretization.discretize import discretize
    from plda.engine.tilt import compose_tilted

    upper, lower = discretize(plda.Gaussian(1.0).privacy_loss("remove"), 2.0**-8)
    assert compose_tilted([(upper, 1)], 90.5) is upper
    assert compose_tilted([(lower, 1)], 4.0) is lower


def test_a_tilt_is_composed_on_one_kept_tail_for_all_its_targets(monkeypatch):
    # a delta query over eps in [0, 40] (a profile plot): its targets' deltas span 1e-30 to
    # 1e-110, and each asked for its own kept tail: one tilt was composed nine times, 12 s for
    # 400 points. The deepest tail its targets need serves them all (a delta query's second
    # pass, on the tails its tilted bounds ask for, may add one more)
    asked: dict = {}
    _tilted_grids(monkeypatch, asked)
    pld = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(1.0), 0.02), 200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.AccuracyWarning)
        pld.delta_bounds(np.linspace(0, 40, 400))
    assert asked and all(len(tails) <= 2 for tails in asked.values())


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
@pytest.mark.parametrize("count", [1, 2, 3, 10])
def test_tilted_tiny_deltas_agree_across_entry_points_and_counts(relation, count):
    # a one-step check misses composition pitfalls: laws kept further out, one law composed
    # once returned untilted, and the tilt-rounding charge, at 1, 2, 3 and 10 steps, through the
    # PLD and the accountant (which hands these deltas to the same driver), both relations.
    # The discrete Laplace steps also against their exact epsilon (add/remove)
    deltas = np.array([1e-60, 1e-100])
    for mechanism in (plda.DiscreteLaplace(1.0), plda.PoissonSampled(plda.Gaussian(1.0), 0.1)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", plda.AccuracyWarning)
            pld = PLD.from_mechanism(mechanism, count, relation=relation).epsilon_bounds(deltas)
            accountant = plda.PLDAccountant(relation=relation)
            accountant.compose(mechanism, count)
            theirs = accountant.epsilon_bounds(deltas)
        assert np.allclose(pld.lower, theirs.lower, rtol=1e-12)
        assert np.allclose(pld.upper, theirs.upper, rtol=1e-12)
        assert np.all(pld.lower <= pld.upper)
        if isinstance(mechanism, plda.DiscreteLaplace) and relation == "add_remove":
            exact = [plda.testing.discrete_laplace_composition_epsilon(d, parameter=1.0,
                                                                       count=count)
                     for d in deltas]
            assert np.all(pld.lower <= exact) and np.all(exact <= pld.upper)
