"""The grid versions of plda.engine.recipe: a direction's optimistic version is composed only
when read."""

from __future__ import annotations

import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import plda
from plda.engine.plan import Plan
from plda.engine.recipe import GridPair, bounds_over_directions, grid_pair

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
