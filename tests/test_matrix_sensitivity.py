"""plda.matrix.sensitivity against brute-force enumeration (n <= 12), and its exact cases."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_settings import examples

import plda.matrix as pm
from plda.matrix import patterns
from plda.matrix.patterns import max_participations
from plda.matrix.sensitivity import METHODS


def brute_force(matrix: np.ndarray, k: int, s: int) -> float:
    """max ||C u|| over patterns of <= k steps pairwise >= s apart and u in {-1, 1}^S (the
    maximum over the box [-1, 1]^S: u^T G u is convex in each coordinate)."""
    gram = matrix.T @ matrix
    n = gram.shape[0]
    best = 0.0
    for size in range(1, k + 1):
        for steps in itertools.combinations(range(n), size):
            if any(b - a < s for a, b in itertools.pairwise(steps)):
                continue
            block = gram[np.ix_(steps, steps)]
            for signs in itertools.product((-1.0, 1.0), repeat=size - 1):
                u = np.array((1.0, *signs))
                best = max(best, float(u @ block @ u))
    return math.sqrt(best)


def banded(rng, n: int, bands: int, nonnegative: bool) -> np.ndarray:
    matrix = rng.normal(size=(n, n))
    if nonnegative:
        matrix = np.abs(matrix)
    offsets = np.subtract.outer(np.arange(n), np.arange(n))
    return np.where((offsets >= 0) & (offsets < bands), matrix, 0.0)


def cases(seed: int, count: int):
    rng = np.random.default_rng(seed)
    for _ in range(count):
        n = int(rng.integers(2, 10))
        bands = int(rng.integers(1, n + 1))
        s = int(rng.integers(1, n))
        k = int(rng.integers(1, max_participations(n, s) + 1))
        yield n, bands, s, k, rng


@pytest.mark.parametrize("nonnegative", [True, False], ids=["nonnegative", "mixed"])
def test_agrees_with_brute_force_on_random_banded_strategies(nonnegative):
    for n, bands, s, k, rng in cases(1 if nonnegative else 2, 40):
        matrix = banded(rng, n, bands, nonnegative)
        reference = brute_force(matrix, k, s)
        exact = pm.sensitivity(matrix, k, s)  # small: enumerated when nothing else is exact
        assert exact.exact and exact.value == pytest.approx(reference, rel=1e-12)
        assert exact.lower == exact.value
        forced = pm.sensitivity(matrix, k, s, exhaustive_limit=0)  # the structured paths
        if forced.exact:
            assert forced.value == pytest.approx(reference, rel=1e-12)
        else:
            assert forced.method == "row bound"
            assert forced.lower <= reference * (1 + 1e-12) <= forced.value * (1 + 1e-12)


def test_n_12_strategies_match_brute_force():
    rng = np.random.default_rng(12)
    for bands, s, k, nonnegative in ((3, 2, 4, True), (12, 3, 3, False), (5, 5, 3, False)):
        matrix = banded(rng, 12, bands, nonnegative)
        reference = brute_force(matrix, k, s)
        assert pm.sensitivity(matrix, k, s).value == pytest.approx(reference, rel=1e-12)
        assert pm.sensitivity(matrix, k, s, exhaustive_limit=0).value >= reference * (1 - 1e-12)


def test_toeplitz_earliest_pattern_is_exact():
    # non-negative non-increasing coefficients: 0, s, 2s, ... is optimal (proof in the docs)
    rng = np.random.default_rng(3)
    for n in range(2, 11):
        coefficients = np.sort(rng.exponential(size=n))[::-1]
        if n % 3 == 0:
            coefficients[n // 2 :] = 0.0  # banded Toeplitz
        toeplitz = pm.toeplitz_strategy(coefficients)
        for s in range(1, n):
            for k in range(1, (n - 1) // s + 2):
                found = pm.sensitivity(toeplitz, k, s, exhaustive_limit=0)
                reference = brute_force(toeplitz.dense(), k, s)
                assert found.exact and found.value == pytest.approx(reference, rel=1e-12)
                if k > 1:
                    assert found.method == "toeplitz" and found.pattern == tuple(range(0, k * s, s))


def test_a_dense_toeplitz_array_is_read_as_toeplitz_and_1d_coefficients_too():
    coefficients = 1 / np.sqrt(np.arange(1, 41))
    dense = pm.toeplitz_strategy(coefficients).dense()
    for strategy in (dense, coefficients, list(coefficients)):
        found = pm.sensitivity(strategy, 4, 10, exhaustive_limit=0)
        assert found.method == "toeplitz" and found.exact
    # sum of columns 0, 10, 20, 30 of the Toeplitz matrix
    direct = np.linalg.norm(dense[:, [0, 10, 20, 30]].sum(axis=1))
    assert found.value == pytest.approx(direct, rel=1e-13)


def test_increasing_or_signed_toeplitz_is_not_claimed_by_the_toeplitz_rule():
    for coefficients in ([1.0, 2.0, 0.5, 0.1, 0.0, 0.0], [1.0, -0.5, 0.25, -0.1, 0.05, 0.0]):
        dense = pm.toeplitz_strategy(coefficients).dense()
        found = pm.sensitivity(coefficients, 2, 2, exhaustive_limit=0)
        assert found.method != "toeplitz"
        assert found.value >= brute_force(dense, 2, 2) * (1 - 1e-12)


def test_separated_bands_are_exact_for_any_signs():
    # b-banded and s >= b: columns s apart touch disjoint rows, no cross terms
    rng = np.random.default_rng(4)
    matrix = banded(rng, 11, 3, nonnegative=False)
    found = pm.sensitivity(matrix, 3, 3, exhaustive_limit=0)
    assert found.method == "separated" and found.exact
    assert found.value == pytest.approx(brute_force(matrix, 3, 3), rel=1e-12)
    norms = np.linalg.norm(matrix, axis=0)
    assert found.value**2 == pytest.approx(sum(norms[list(found.pattern)] ** 2), rel=1e-12)


def test_identity_is_sqrt_k_and_single_participation_is_the_largest_column():
    assert pm.sensitivity(np.eye(10), 4, 3).value == 2.0
    assert pm.sensitivity(np.eye(10), 4, 3).squared == 4.0
    matrix = np.tril(np.ones((5, 5)))  # prefix sums: column 0 has norm sqrt(5)
    found = pm.sensitivity(matrix, 1, 1)
    assert found.method == "single" and found.value == math.sqrt(5) and found.pattern == (0,)
    # the prefix-sum (all-ones lower triangle) is Toeplitz non-increasing: k = 5, s = 1 is
    # every step, ||C 1||^2 = 1 + 4 + 9 + 16 + 25
    assert pm.sensitivity(matrix, 5, 1).value == pytest.approx(math.sqrt(55), rel=1e-15)


def test_tree_strategy_matches_the_tree_depth():
    for n in range(1, 13):
        tree = pm.tree_strategy(n)
        found = pm.sensitivity(tree, 1, 1, causal=False)
        assert found.value**2 == pytest.approx(pm.tree_depth(n)) == math.ceil(math.log2(n + 1))
        assert brute_force(tree, 1, 1) == pytest.approx(found.value)


def test_vectors_never_enumerate_signs_when_the_gram_has_negative_entries():
    # G = I - 0.4 (J - I): signs give at most 3 + 0.8; unit vectors 120 degrees apart 3 + 1.2
    gram = 1.4 * np.eye(3) - 0.4 * np.ones((3, 3))
    strategy = np.linalg.cholesky(gram).T  # C^T C = G, not lower-triangular
    scalar = pm.sensitivity(strategy, 3, 1, causal=False)
    vector = pm.sensitivity(strategy, 3, 1, causal=False, vectors=True)
    assert scalar.exact and scalar.value == pytest.approx(math.sqrt(3.8), rel=1e-12)
    assert not vector.exact and vector.method == "row bound"
    assert vector.value >= math.sqrt(4.2) and vector.lower <= scalar.value


def test_bound_is_certified_on_large_strategies():
    rng = np.random.default_rng(5)
    matrix = banded(rng, 300, 20, nonnegative=True)
    found = pm.sensitivity(matrix, 10, 7)
    assert found.method == "row bound" and not found.exact and found.pattern
    assert found.lower <= found.value
    # the bound is at least the value of any realized pattern
    steps = list(range(0, 70, 7))
    assert np.linalg.norm(matrix[:, steps].sum(axis=1)) <= found.value


@examples(40)
@given(
    n=st.integers(2, 9), bands=st.integers(1, 9), s=st.integers(1, 8), k=st.integers(1, 5),
    seed=st.integers(0, 2**32 - 1), nonnegative=st.booleans(),
)
def test_property_bounds_bracket_the_brute_force_value(n, bands, s, k, seed, nonnegative):
    k = min(k, (n - 1) // s + 1)
    matrix = banded(np.random.default_rng(seed), n, min(bands, n), nonnegative)
    reference = brute_force(matrix, k, s)
    for limit in (0, 10**6):
        found = pm.sensitivity(matrix, k, s, exhaustive_limit=limit)
        assert found.lower <= reference * (1 + 1e-12) + 1e-300
        assert found.value >= reference * (1 - 1e-12)
        if found.exact:
            assert found.value == pytest.approx(reference, rel=1e-12)


def test_methods_say_whether_they_are_exact():
    assert METHODS == {"single": True, "toeplitz": True, "separated": True,
                       "enumeration": True, "row bound": False}


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(strategy=np.ones((3, 4))), ValueError, "square"),
        (dict(strategy=np.ones((3, 3))), ValueError, "lower-triangular"),
        (dict(strategy=np.eye(3), participations=3, min_separation=2), ValueError,
         r"participations must be an integer in \[1, 2\]"),
        (dict(strategy=np.eye(3), participations=0), ValueError, "participations"),
        (dict(strategy=np.eye(3), min_separation=0), ValueError, "min_separation.*>= 1"),
        (dict(strategy=np.eye(3), min_separation=1.5), TypeError, "min_separation"),
        (dict(strategy=np.eye(3), participations=True), TypeError, "participations"),
        (dict(strategy=np.diag([1.0, np.nan, 1.0])), ValueError, "NaN"),
        (dict(strategy=np.diag([1.0, np.inf, 1.0])), ValueError, "finite"),
        (dict(strategy="eye"), TypeError, "strategy"),
        (dict(strategy=np.eye(3, dtype=bool)), TypeError, "strategy"),
        (dict(strategy=np.zeros((0, 0))), ValueError, "strategy"),
        (dict(strategy=np.ones((2, 2, 2))), ValueError, "strategy must be 1-D or 2-D"),
        (dict(strategy=np.eye(3), exhaustive_limit=-1), ValueError, "exhaustive_limit"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        pm.sensitivity(**kwargs)


def test_the_cheaper_row_bound_is_still_a_bound(monkeypatch):
    # past the operation budget, the k - 1 largest entries of a row replace its program
    monkeypatch.setattr(patterns, "ROW_PROGRAM_BUDGET", 0)
    for n, bands, s, k, rng in cases(6, 30):
        matrix = banded(rng, n, bands, nonnegative=bool(n % 2))
        reference = brute_force(matrix, k, s)
        found = pm.sensitivity(matrix, k, s, exhaustive_limit=0)
        assert found.lower <= reference * (1 + 1e-12)
        assert reference <= found.value * (1 + 1e-12)
