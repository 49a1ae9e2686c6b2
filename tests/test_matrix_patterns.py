"""plda.matrix.patterns: counts and the separated dynamic program against enumeration."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from plda.matrix.patterns import best_separated_sum, count_patterns, max_participations


def separated(n, k, s):
    for size in range(1, k + 1):
        for steps in itertools.combinations(range(n), size):
            if all(b - a >= s for a, b in itertools.pairwise(steps)):
                yield steps


def test_counts_and_the_dynamic_program_match_enumeration():
    rng = np.random.default_rng(0)
    for n in range(1, 11):
        for s in range(1, n + 1):
            most = max_participations(n, s)
            assert max(len(p) for p in separated(n, n, s)) == most
            for k in range(1, most + 1):
                patterns = list(separated(n, k, s))
                assert count_patterns(n, k, s) == len(patterns)
                weights = rng.normal(size=n)
                best, pattern = best_separated_sum(weights, k, s)
                top = max(weights[list(p)].sum() for p in patterns)
                assert best == pytest.approx(max(0.0, top))
                assert len(pattern) <= k and all(b - a >= s for a, b in itertools.pairwise(pattern))
                assert weights[list(pattern)].sum() == pytest.approx(best)


def test_max_participations_checks_its_arguments():
    assert max_participations(10, 3) == 4 and max_participations(1, 5) == 1
    with pytest.raises(ValueError, match="min_separation"):
        max_participations(3, 0)
    with pytest.raises(TypeError, match="steps"):
        max_participations(3.0, 1)
