"""The one engine (issue 13): one composer, one planner, lower bounds of non-tight mechanisms."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest

import plda
from plda.accounting.ladder import halved_step, ladder_step
from plda.discretization.discretize import discretize
from plda.engine import composer as composer_module
from plda.engine.composer import Composer, compose
from plda.engine.plan import PilotSteps, Plan, StepPredictor, pilot, refine
from plda.pld import direction_laws

PLD = plda.PrivacyLossDistribution


def _step_laws(count, step=2.0**-9):
    """Discretized upper laws of ``count`` distinct DP-SGD steps (a noise schedule)."""
    return [
        discretize(plda.PoissonSampled(plda.Gaussian(0.8 + 0.01 * i), 0.02).privacy_loss("remove"),
                   step)[0]
        for i in range(count)
    ]


def test_history_composer_multiplies_in_only_appended_factors(monkeypatch):
    laws = _step_laws(12)
    computed = []
    original = composer_module.spectrum_of

    def counting(law, n):
        computed.append(id(law))
        return original(law, n)

    monkeypatch.setattr(composer_module, "spectrum_of", counting)
    kept = Composer(tail=1e-14, ladder=True, keep=True, from_zero=True)
    first = kept.compose([(law, 1) for law in laws[:10]], 1 << 22, length=4096)
    computed.clear()
    grown = kept.compose([(law, 1) for law in laws], 1 << 22, length=4096)
    assert sorted(computed) == sorted(id(law) for law in laws[10:])  # the two new ones only
    # bit for bit what a fresh composer computes from scratch
    fresh = Composer(tail=1e-14, ladder=True, keep=True, from_zero=True)
    again = fresh.compose([(law, 1) for law in laws], 1 << 22, length=4096)
    assert np.array_equal(grown.probs, again.probs) and grown.offset == again.offset
    assert grown.entry_error == again.entry_error and grown.l2_error == again.l2_error
    assert first.probs.sum() <= 1 + 1e-9


def test_repeated_factor_after_distinct_ones_resumes_from_their_product(monkeypatch):
    laws = _step_laws(6)
    computed = []
    original = composer_module.spectrum_of

    def counting(law, n):
        computed.append(id(law))
        return original(law, n)

    monkeypatch.setattr(composer_module, "spectrum_of", counting)
    kept = Composer(tail=1e-14, ladder=True, keep=True, from_zero=True)
    kept.compose([(law, 1) for law in laws[1:5]] + [(laws[0], 8)], 1 << 22, length=4096)
    computed.clear()
    kept.compose([(law, 1) for law in laws[1:]] + [(laws[0], 9)], 1 << 22, length=4096)
    assert computed == [id(laws[5])]  # the distinct laws' product and the powers are reused


def test_one_shot_and_history_composers_agree():
    laws = _step_laws(3)
    factors = [(laws[0], 40), (laws[1], 1), (laws[2], 7)]
    one_shot = compose(factors)
    kept = Composer(keep=True, ladder=True).compose(factors, 1 << 22)
    eps = np.array([0.0, 0.5, 1.0, 2.0])
    # both certified upper bounds; they differ only in their error terms (exp-log vs binary
    # powers, FFT lengths)
    assert np.allclose(one_shot.delta(eps), kept.delta(eps), rtol=1e-6, atol=1e-15)


def test_plan_is_a_frozen_value_built_by_keyword():
    plan = Plan(step=2.0**-10, length=4096, tail=1e-14)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.step = 1.0  # type: ignore[misc]
    assert plan == Plan(step=2.0**-10, length=4096, tail=1e-14) and plan.tilt == 0.0
    assert ladder_step(0.3, None) == 0.25 and ladder_step(0.3, 0.5) == 0.25
    assert halved_step(0.25, 0.002, 1e-3, None) == 0.125  # close: halve
    assert halved_step(0.25, 1.0, 1e-3, None) == 0.0625  # far off: quarter


def test_refinement_loop_stops_at_the_floor_and_at_the_cap():
    gaps = {1.0: 0.1, 0.5: 0.03, 0.25: 0.029}  # stops shrinking: floating-point floor

    step, gap = refine(1.0, gaps[1.0], gaps.__getitem__, 1e-3, lambda h, g: h / 2)
    # 0.25 did not improve the gap by 30%: kept (it is no worse), and 0.125 is never asked for
    assert (step, gap) == (0.25, 0.029)

    def too_large(h):
        raise plda._internal.errors.GridTooLarge(1 << 30, 1 << 22)

    assert refine(1.0, 0.1, too_large, 1e-3, lambda h, g: h / 2) == (1.0, 0.1)


def test_refinement_gives_a_near_miss_one_more_round():
    """A gap that barely shrinks (or grows) but is within ten times the accuracy (epsilon on
    an atom of a Laplace mixture: 1.27e-3, then 1.23e-3, then 4.0e-4) gets one more grid; a
    second stall stops."""
    gaps = {1.0: 1.27e-3, 0.5: 1.23e-3, 0.25: 4.0e-4}
    assert refine(1.0, gaps[1.0], gaps.__getitem__, 1e-3, lambda h, g: h / 2) == (0.25, 4.0e-4)
    stalls = {1.0: 1.27e-3, 0.5: 1.23e-3, 0.25: 1.2e-3, 0.125: 1e-4}
    assert refine(1.0, stalls[1.0], stalls.__getitem__, 1e-3, lambda h, g: h / 2) == (
        0.25, 1.2e-3)
    far = {1.0: 0.9, 0.5: 0.89, 0.25: 1e-4}  # far above the accuracy: the floor, no retry
    grew = {1.0: 0.128, 0.5: 2.95e-3, 0.25: 7.8e-3, 0.125: 8.1e-4}  # a sampled Laplace's grids
    assert refine(1.0, grew[1.0], grew.__getitem__, 1e-3, lambda h, g: h / 2) == (0.125, 8.1e-4)
    # the retry is no better: the finest grid is kept (later queries at other deltas start from
    # it, and a finer grid serves them better than the one with the smallest gap here)
    worse = {1.0: 0.128, 0.5: 2.95e-3, 0.25: 7.8e-3, 0.125: 6e-3}
    assert refine(1.0, worse[1.0], worse.__getitem__, 1e-3, lambda h, g: h / 2) == (
        0.125, 6e-3)
    assert refine(1.0, far[1.0], far.__getitem__, 1e-3, lambda h, g: h / 2) == (0.5, 0.89)


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_non_tight_lower_bound_comes_from_the_lower_bound_mechanism(relation):
    shuffled = plda.Shuffled(plda.Gaussian(0.9), 20)
    assert not shuffled.tight
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        warnings.simplefilter("ignore", plda.SamplerAssumptionWarning)
        pld = PLD.from_mechanism(shuffled, 3, relation=relation)
        ours = pld.epsilon_bounds(1e-6)
        realized = PLD.from_mechanism(shuffled.lower_bound_mechanism(), 3, relation=relation)
        assert ours.lower == realized.epsilon_bounds(1e-6).lower
        # the upper bound is the dominating pair's, as before
        own = max(float(law.epsilon(1e-6)) for law in pld.discrete("upper").values())
        assert ours.upper == own
        expected = {"add_remove": 10.4986727660539, "replace_one": 25.0550748341796}[relation]
        assert ours.upper == pytest.approx(expected, rel=1e-6)
        d_ours, d_realized = pld.delta_bounds(1.0), realized.delta_bounds(1.0)
        assert d_ours.lower == d_realized.lower and d_ours.lower <= d_ours.upper
        accountant = plda.PLDAccountant(relation=relation)
        accountant.compose(shuffled, 3)
        bounds = accountant.epsilon_bounds(1e-6)
    assert bounds.lower == ours.lower
    assert bounds.upper == pytest.approx(ours.upper, rel=1e-3)


def test_tight_mechanisms_keep_their_own_lower_bound():
    pld = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(1.0), 0.01), 100)
    assert pld._realized == ()
    bounds = pld.epsilon_bounds(1e-5)
    assert bounds.upper - bounds.lower <= 1e-3 * bounds.upper


def test_approximate_dp_with_delta_one_raises_no_warning():
    # the all-zero finite part of ApproximateDP(0, delta=1) divided by zero in the accountant
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        accountant = plda.PLDAccountant()
        accountant.compose(plda.ApproximateDP(0, delta=1))
        assert accountant.epsilon(1e-5) == np.inf
        accountant.compose(plda.ApproximateDP(0, delta=1), count=3)
        accountant.step(noise_multiplier=1.0, sample_rate=0.01, count=5)
        assert accountant.epsilon_bounds(0.5).upper == np.inf
        bounds = accountant.delta_bounds(1.0)
        assert bounds.lower == 1.0 and bounds.upper == 1.0
        assert accountant.delta(0.0) == 1.0
        pld = PLD.from_mechanism(plda.ApproximateDP(0, delta=1), 3)
        assert pld.epsilon_bounds(0.5).lower == np.inf


# ----------------------------------------------------------- the PLD's step prediction
def test_step_predictor_assumes_first_order_for_atoms_off_the_grid():
    # Laplace atoms at multiples of 2e-4, grid step 1e-2 (not a divisor): the gap falls like h
    first_order = StepPredictor(accuracy=1e-3, unit=2e-4)(1.0e-2, 1.25e-2)
    assert first_order == pytest.approx(1.0e-2 * 0.8 * 1e-3 / 1.25e-2)
    # no atoms: like h^2
    second_order = StepPredictor(accuracy=1e-3, unit=None)(1.0e-2, 1.25e-2)
    assert second_order == pytest.approx(1.0e-2 * 0.8 * (1e-3 / 1.25e-2) ** 0.5)
    # atoms on the grid (the step divides the unit): second order too
    on_grid = StepPredictor(accuracy=1e-3, unit=2e-3)(1.0e-3, 4e-3)
    assert on_grid == pytest.approx(1.0e-3 * 0.8 * (1e-3 / 4e-3) ** 0.5)


def test_step_predictor_learns_the_order_from_two_grids():
    predict = StepPredictor(accuracy=1e-4, unit=None)
    predict(1e-2, 1e-2)
    # the gap fell 8x for a 2x finer step: third order, so a 10x smaller gap needs 10^(1/3)
    assert predict(5e-3, 1.25e-3) == pytest.approx(5e-3 * 0.8 * (1e-4 / 1.25e-3) ** (1 / 3))


def test_laplace_atoms_off_the_grid_meet_the_accuracy_on_a_coarse_grid():
    # benchmark B6: 50 Gaussians (one merged Gaussian) and 50 Laplace laws whose atoms share a
    # fine unit (0.01 / 49); the gap falls like the step, and is met without a grid on the unit
    mu = float(np.sqrt(np.sum(1 / np.linspace(1, 5, 50) ** 2)))
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=1 / mu))
    for eps0 in np.linspace(0.01, 0.1, 50):
        laplace = plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(scale=float(1 / eps0)))
        pld = pld.compose(laplace)
    lower, upper = pld.epsilon_bounds(1e-6)
    assert 0 < (upper - lower) / upper <= 1e-3
    assert lower <= 20.0576547 <= upper  # the bracket of a 1e-7 run (benchmarks/RESULTS.md)
    assert pld.grid_step > 2 * 0.01 / 49  # a 3x coarser grid than the unit


def test_refinement_starts_coarse_where_the_steps_are_narrow():
    # B3-like: one step's bulk is ~0.002 wide, so the width-based pilot step is far too fine;
    # the second-order gap model starts the refinement coarser, and the gap still meets it
    pld = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(0.8), 0.001), 100000,
                             accuracy=6e-3)
    found = pilot(direction_laws(pld), 6e-3)
    steps = PilotSteps(accuracy=6e-3, pilot=found)  # the first steps, as a query takes them
    assert steps.current(None, refined=True) >= 2 * steps.current(None, refined=False)
    bounds = pld.epsilon_bounds(1e-6)
    assert (bounds.upper - bounds.lower) / bounds.upper <= 6e-3
    assert pld.grid_step <= steps.current(None, refined=False)  # delta and conversions: as before


def test_second_order_step_is_zero_without_spread():
    from plda.engine.plan import second_order_step

    point = discretize(plda.Laplace(scale=1.0).privacy_loss("remove"), 0.5)[0]
    assert second_order_step([(point, 0)], 1e-3) == 0.0
    gauss = discretize(plda.Gaussian(1.0).privacy_loss("remove"), 0.01)[0]
    assert 0 < second_order_step([(gauss, 100)], 1e-3) < 1


def test_history_composer_adds_the_chernoff_moments_of_appended_factors_only(monkeypatch):
    # a noise schedule's query used to sum every step's ladder moments again (a third of
    # S1's time); the kept sums are extended by the new factors, in the same order, so the
    # composed law is bit for bit the one from scratch
    from plda.grid import moments
    from plda.grid.discrete import DiscreteLoss

    laws = _step_laws(12)
    histories = [[(law, 1) for law in laws[:10]], [(law, 1) for law in laws[:11]],
                 [(law, 1) for law in laws[:11]] + [(laws[11], 2)]]
    spans = {moments.ladder_range(moments.composed_variance(h), (0.25, 64.0), laws[0].step)
             for h in histories}
    assert len(spans) == 1  # the fixture keeps the ladder range put
    read = []
    original = DiscreteLoss.ladder_log_mgf

    def counting(self, j0, j1, batch=None):
        read.append(id(self))
        return original(self, j0, j1, batch)

    monkeypatch.setattr(DiscreteLoss, "ladder_log_mgf", counting)
    kept = Composer(tail=1e-14, ladder=True, keep=True, from_zero=True)
    results = []
    for history in histories:
        read.clear()
        results.append(kept.compose(history, 1 << 22, length=4096))
    # the eleven distinct laws' sums were kept (at each order the walk visits)
    assert read and set(read) == {id(laws[11])}
    read.clear()
    kept.compose(histories[2], 1 << 22, length=4096)
    assert read == []  # asked again: nothing added
    for history, result in zip(histories, results, strict=True):
        fresh = Composer(tail=1e-14, ladder=True, keep=True, from_zero=True)
        again = fresh.compose(history, 1 << 22, length=4096)
        assert np.array_equal(result.probs, again.probs) and result.offset == again.offset
        assert result.infinity_mass == again.infinity_mass


def test_history_composer_computes_new_moments_near_the_orders_its_last_walk_visited(
        monkeypatch):
    # the whole ladder range held about twice the orders S1's walks ever visit: a new law's
    # moments are computed at the last walk's orders and one more on either side (bit for bit
    # the same bounds: a law's moment at an order does not depend on which others it computes)
    from plda.grid import discrete, moments

    visited, computed = [], {}
    walk, ladder = composer_module.ladder_walk, discrete.log_mgf_ladder

    def recording_walk(sums_at, *args):
        visited.append([])
        return walk(lambda j: visited[-1].append(j) or sums_at(j), *args)

    def recording_ladder(law, j0, j1):
        computed.setdefault(id(law), set()).update(range(j0, j1 + 1))
        return ladder(law, j0, j1)

    monkeypatch.setattr(composer_module, "ladder_walk", recording_walk)
    monkeypatch.setattr(discrete, "log_mgf_ladder", recording_ladder)
    laws = _step_laws(14)
    kept = Composer(tail=1e-14, ladder=True, keep=True, from_zero=True)
    kept.compose([(law, 1) for law in laws[:12]], 1 << 22, length=4096)
    low, high = min(visited[-1]), max(visited[-1])
    history = [(law, 1) for law in laws[:13]]
    grown = kept.compose(history, 1 << 22, length=4096)
    j0, j1 = moments.ladder_range(moments.composed_variance(history), (0.25, 64.0),
                                  laws[0].step)
    orders = computed[id(laws[12])]
    assert min(orders) >= low - 1 and max(orders) <= high + 1 and len(orders) < j1 - j0 + 1
    fresh = Composer(tail=1e-14, ladder=True, keep=True, from_zero=True)
    again = fresh.compose(history, 1 << 22, length=4096)
    assert np.array_equal(grown.probs, again.probs) and grown.infinity_mass == again.infinity_mass


def test_kept_running_products_are_not_changed_by_the_histories_that_extend_them():
    # a history's running product is extended in place once a query owns its arrays: histories
    # branching from one kept prefix (and asked again) must each get what a fresh composer
    # computes, so no kept product may be written by a later extension
    laws = _step_laws(14)
    base = [(law, 1) for law in laws[:10]]
    branches = [base, base + [(laws[10], 1), (laws[11], 1)], base + [(laws[12], 1)],
                base + [(laws[10], 1), (laws[11], 1)], base + [(laws[13], 1), (laws[0], 5)],
                # resumes from the product kept after the last single step of the one before
                base + [(laws[13], 1), (laws[0], 6)]]
    kept = Composer(tail=1e-14, ladder=True, keep=True, from_zero=True)
    for history in branches:
        result = kept.compose(history, 1 << 22, length=4096)
        fresh = Composer(tail=1e-14, ladder=True, keep=True, from_zero=True)
        again = fresh.compose(history, 1 << 22, length=4096)
        assert np.array_equal(result.probs, again.probs) and result.offset == again.offset
        assert result.entry_error == again.entry_error and result.l2_error == again.l2_error


def test_the_error_sum_bound_takes_the_smaller_of_its_two_norms():
    from plda._internal.floats import error_sum_bound

    # |e_i| <= 1e-3 and ||e||_2 <= 1e-2 over 400 entries: sum |e_i| <= min(0.4, 0.2)
    assert error_sum_bound(1e-3, 1e-2, 400) == 1e-2 * 20.0  # the L2 bound
    assert error_sum_bound(1e-2, 1e-4, 400) == 1e-4 * 20.0
    assert error_sum_bound(1e-5, 1e-2, 400) == 1e-5 * 400  # the entrywise bound
    # weighted: sum w |e_i| <= min(e sum w, e2 sqrt(sum w^2)), elementwise on arrays
    got = error_sum_bound(1e-3, 1e-2, np.array([4.0, 400.0]), np.array([16.0, 1e4]))
    assert np.allclose(got, [4e-3, 0.4]) and isinstance(got, np.ndarray)
    assert isinstance(error_sum_bound(1e-3, 1e-2, 9), float)  # scalars stay scalar
    # an empty sum has no error, even where the error terms overflowed (inf * 0 was NaN, and
    # the composed law's delta(0) with it)
    assert error_sum_bound(math.inf, math.inf, 0) == 0.0
    got = error_sum_bound(math.inf, math.inf, np.array([3.0, 0.0]))
    assert got[0] == math.inf and got[1] == 0.0


def test_a_composer_without_binary_powers_keeps_the_spectra_and_gives_the_same_bits(monkeypatch):
    # the accountant plans on a composer of few laws with large counts: their binary powers
    # took most of its bytes, so that its spectra were evicted (99% misses on a rate schedule)
    laws = _step_laws(4)
    factors = [(law, 32 + i) for i, law in enumerate(laws)]
    budget = 4 * 2 * (8192 // 2 + 1) * 16  # X and its two real arrays, per law, to n = 8192
    computed = []
    original = composer_module.spectrum_of
    monkeypatch.setattr(composer_module, "spectrum_of",
                        lambda law, n: computed.append(n) or original(law, n))
    results = {}
    for powers in (False, True):
        composer = Composer(tail=1e-14, ladder=True, keep=True, from_zero=True,
                            cache_bytes=budget, prefixes=0, keep_powers=powers)
        first = composer.compose(factors, 1 << 22, length=4096)
        computed.clear()
        results[powers] = (first, composer.compose(factors, 1 << 22, length=4096), computed[:])
    assert results[False][2] == []  # every spectrum kept
    assert len(results[True][2]) > 0  # with their powers, the same bytes do not hold them
    reference = results[True][0]
    for result in (*results[False][:2], results[True][1]):
        assert np.array_equal(result.probs, reference.probs)
        assert result.entry_error == reference.entry_error


@pytest.mark.parametrize("mu", [1e9, 1e12, 1e15])
def test_the_pilot_step_of_a_law_wider_than_1e12_is_not_floored_to_the_grid_cap(mu):
    # the error model's sum of count / loss scale was floored at 1e-12 (to keep 0 out): a law
    # 1e18-1e30 wide (the max-shift law of a shuffled Gaussian epoch spans mu^2) got a step a
    # thousand times too fine, the grid cap's, and a query took minutes at mu 1e12-1e15
    from plda.engine.plan import pilot
    from plda.epochs.max_shift import MaxShiftLaw

    found = pilot({"remove": [(MaxShiftLaw(mu=mu, num_steps=100), 3)]}, 1e-3)
    assert found.step >= found.window_width / 4096
    bounds = plda.PrivacyLossDistribution.from_mechanism(
        plda.Shuffled(plda.Gaussian(1.0 / mu), 100), 3).epsilon_bounds(1e-5)
    assert 1.5 * mu**2 * (1 - 1e-3) <= bounds.lower <= bounds.upper <= 1.5 * mu**2 * (1 + 1e-3)
