"""plda.engine.query: the one driver the PLD and the accountant both call."""

from __future__ import annotations

import warnings

import numpy as np

import plda
from plda.engine.gaps import FFT_FLOOR, probes
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
