"""The grid versions of plda.engine.recipe: a direction's optimistic version is composed only
when read."""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import plda
from plda._internal.errors import GridTooLarge
from plda.engine.plan import Plan
from plda.engine.recipe import GridPair, Screen, bounds_over_directions, grid_pair

PLD = plda.PrivacyLossDistribution


def dp_sgd(count=300):
    step = plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01)
    return PLD.from_mechanism(step, count)


def composed_lowers(pld):
    return {
        direction: pair._lower is not None
        for key, versions in pld._cache.items()
        if isinstance(key, tuple) and key[0] == "grid"
        for direction, pair in versions.items()
    }


def test_epsilon_bounds_never_compose_the_dominated_directions_optimistic_version():
    pld = dp_sgd()
    bounds = pld.epsilon_bounds(1e-5)
    # DP-SGD: removal leads, and the addition direction's upper bound is far below
    assert composed_lowers(pld) == {"remove": True, "add": False}
    # the bounds are those of every version composed (reading them composes the rest)
    uppers = pld.discrete("upper")
    lowers = pld.discrete("lower")
    assert bounds.upper == max(float(law.epsilon(1e-5)) for law in uppers.values())
    assert bounds.lower == min(
        max(float(law.epsilon(1e-5)) for law in lowers.values()), bounds.upper
    )
    assert all(composed_lowers(pld).values())


def test_a_direction_whose_upper_bound_reaches_the_lower_bound_is_read():
    class Law:  # stand-ins for composed laws: query(law) reads .value
        probs = np.zeros(1)

        def __init__(self, value):
            self.value = np.asarray(value, dtype=float)

    read = []

    def lazy(value, name):
        def compose():
            read.append(name)
            return Law(value)

        return compose

    def query(law):
        return law.value

    lead = GridPair(Law([5.0, 6.0]), lambda: Law([4.0, 5.0]))
    below = GridPair(Law([3.9, 4.9]), lazy([3.0, 3.0], "below"))
    lower, upper = bounds_over_directions({"a": lead, "b": below}, query)
    assert read == [] and list(lower) == [4.0, 5.0] and list(upper) == [5.0, 6.0]
    # an upper bound above the lower one at one target: that lower version is read
    reaching = GridPair(Law([3.9, 5.5]), lazy([3.0, 5.2], "reaching"))
    lower, upper = bounds_over_directions({"a": lead, "b": reaching}, query)
    assert read == ["reaching"] and list(lower) == [4.0, 5.2] and list(upper) == [5.0, 6.0]


def test_a_grid_pair_reads_like_the_tuple_it_replaces_and_pickles_both_laws():
    law = plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01).privacy_loss()
    pair = grid_pair([(law, 50)], Plan(step=2.0**-9), leading=False)
    assert pair._lower is None
    upper, lower = pair  # unpacking reads both
    assert upper is pair[0] is pair.upper and lower is pair[1] is pair.lower
    assert len(pair) == 2
    with pytest.raises(IndexError, match="two versions"):
        pair[2]
    fresh = grid_pair([(law, 50)], Plan(step=2.0**-9), leading=True)
    copy = pickle.loads(pickle.dumps(fresh))
    assert np.array_equal(copy.lower.probs, lower.probs)
    assert np.array_equal(copy.upper.probs, upper.probs)


def test_threads_reading_one_lazy_version_get_the_same_law():
    law = plda.PoissonSampled(plda.Gaussian(sigma=0.9), sample_rate=0.02).privacy_loss()
    pair = grid_pair([(law, 200)], Plan(step=2.0**-10), leading=False)
    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(lambda _: pair.lower, range(16)))
    reference = found[0].probs
    assert all(np.array_equal(f.probs, reference) for f in found)
    assert all(f.epsilon(1e-5) == found[0].epsilon(1e-5) for f in found)


class _Law:  # a stand-in for a composed law: query(law) reads .value
    probs = np.zeros(1)

    def __init__(self, value):
        self.value = np.asarray(value, dtype=float)


def _value(law):
    return law.value


def _lazy(value, name, read):
    def compose():
        read.append(name)
        return _Law(value)

    return compose


def _screened(fine_upper, fine_lower, screens, read, name="b"):
    """A screened pair: its fine versions composed (and logged) when read, its screen's
    pessimistic versions given per level (None: that level does not fit)."""
    views = tuple((lambda index, v=v: None if v is None or index else _Law(v)) for v in screens)
    return GridPair(None, _lazy(fine_lower, f"{name} lower", read),
                    compose_upper=_lazy(fine_upper, f"{name} upper", read), screen=views)


def test_a_screened_direction_at_or_below_the_lower_bound_is_never_composed():
    read = []
    lead = GridPair(_Law([5.0, 6.0]), lambda: _Law([4.0, 5.0]))
    # the coarse screen's certified bound reaches the lead's lower bound nowhere (4.0 at the
    # first target, equal counts as below): the fine versions are not needed
    screened = _screened([3.8, 4.8], [3.5, 4.5], [[4.0, 4.9]], read)
    lower, upper = bounds_over_directions({"a": lead, "b": screened}, _value)
    assert read == [] and list(lower) == [4.0, 5.0] and list(upper) == [5.0, 6.0]
    # without a lower bound asked, the screen is held against the upper bound
    _, upper = bounds_over_directions({"a": lead, "b": screened}, _value, lower=False)
    assert read == [] and list(upper) == [5.0, 6.0]
    # between the lead's bounds: the direction's own lower bound might raise the maximum's,
    # so its fine versions are read (and here they do raise it)
    between = _screened([4.8, 5.8], [4.5, 5.5], [[4.9, 5.9]], read)
    lower, upper = bounds_over_directions({"a": lead, "b": between}, _value)
    assert read == ["b upper", "b lower"]
    assert list(lower) == [4.5, 5.5] and list(upper) == [5.0, 6.0]
    _, upper = bounds_over_directions({"a": lead, "b": between}, _value, lower=False)
    assert list(upper) == [5.0, 6.0]


def test_a_screen_that_does_not_settle_it_reads_the_finer_screen_then_the_fine_grid():
    read = []
    lead = GridPair(_Law([5.0, 6.0]), lambda: _Law([4.0, 5.0]))
    # the coarsest screen reaches above the lower bound at the second target, the finer one
    # does not: settled without the fine grid
    two = _screened([3.8, 4.8], [3.5, 4.5], [[4.0, 5.5], [3.9, 4.95]], read)
    lower, upper = bounds_over_directions({"a": lead, "b": two}, _value)
    assert read == [] and list(lower) == [4.0, 5.0] and list(upper) == [5.0, 6.0]
    # neither settles it (and a level that does not fit is passed over): the direction is
    # read on the fine grid like an unscreened one, with the same bounds
    fine = _screened([4.5, 6.5], [4.2, 5.6], [None, [4.6, 7.0]], read)
    lower, upper = bounds_over_directions({"a": lead, "b": fine}, _value)
    assert read == ["b upper", "b lower"]
    plain = GridPair(_Law([4.5, 6.5]), lambda: _Law([4.2, 5.6]))
    expected = bounds_over_directions({"a": lead, "b": plain}, _value)
    assert list(lower) == list(expected[0]) == [4.2, 5.6]
    assert list(upper) == list(expected[1]) == [5.0, 6.5]


def test_a_screened_pair_whose_fine_grid_does_not_fit_takes_its_finest_fitting_screen():
    def too_large():
        raise GridTooLarge(1 << 30, 1 << 24)

    def view(upper, lower):
        return lambda index: _Law(lower if index else upper)

    pair = GridPair(None, too_large, compose_upper=too_large,
                    screen=(view([9.0], [1.0]), view([8.0], [2.0]), lambda index: None))
    assert list(pair.upper.value) == [8.0] and list(pair.lower.value) == [2.0]
    with pytest.raises(GridTooLarge):
        _ = GridPair(None, too_large, compose_upper=too_large, screen=()).upper


# (a delta far in the tail may miss the accuracy, with or without screens: equality is the point)
@pytest.mark.filterwarnings("ignore::plda.AccuracyWarning")
@pytest.mark.parametrize(("sigma", "rate", "count", "delta"), [
    (0.8, 0.001, 20_000, 1e-6),  # the add direction 2-10% below: the pilot grid settles it
    (1.0, 1e-4, 10_000, 1e-5),  # within 1%: the pilot grid does not settle it, the finer does
    (2.0, 0.3, 300, 1e-5),
])
def test_screening_changes_no_bound_and_skips_the_dominated_fine_grid(
        monkeypatch, sigma, rate, count, delta):
    mechanism = plda.PoissonSampled(plda.Gaussian(sigma), rate)
    screened = PLD.from_mechanism(mechanism, count)
    eps = screened.epsilon_bounds(delta)
    fine_uppers = {  # on every grid the query refined through
        direction: pair._upper is not None
        for key, versions in screened._cache.items()
        if isinstance(key, tuple) and key[0] == "grid"
        for direction, pair in versions.items()
    }
    targets = eps.upper * np.array([0.75, 1.0, 1.25])
    deltas = screened.delta_bounds(targets)
    plda.clear_caches()
    monkeypatch.setattr(Screen, "version", lambda self, index, step: None)  # screens off
    plain = PLD.from_mechanism(mechanism, count)
    assert screened.epsilon_bounds(delta) == plain.epsilon_bounds(delta) == eps
    expected = plain.delta_bounds(targets)
    assert np.array_equal(deltas.lower, expected.lower)
    assert np.array_equal(deltas.upper, expected.upper)
    if (sigma, rate) != (2.0, 0.3):  # a grid at most 4x finer than the pilot's: no screen
        assert fine_uppers == {"remove": True, "add": False}


def test_a_tilted_plan_is_screened_by_the_untilted_coarse_grids(monkeypatch):
    # delta 1e-8 after 1e4 steps lies below the rounding floor: the answer is the tilted
    # composition's, and the add direction's untilted coarse bound settles it there too
    mechanism = plda.PoissonSampled(plda.Gaussian(1.1), 0.001)
    screened = PLD.from_mechanism(mechanism, 10_000)
    eps = screened.epsilon_bounds(1e-8)
    tilted_uppers = {
        direction: pair._upper is not None
        for key, versions in screened._cache.items()
        if isinstance(key, tuple) and key[0] == "grid" and key[1].tilt
        for direction, pair in versions.items()
    }
    assert tilted_uppers == {"remove": True, "add": False}
    plda.clear_caches()
    monkeypatch.setattr(Screen, "version", lambda self, index, step: None)  # screens off
    assert PLD.from_mechanism(mechanism, 10_000).epsilon_bounds(1e-8) == eps
