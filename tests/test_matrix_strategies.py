"""plda.matrix.strategies: Toeplitz and tree strategies, column norms, checks."""

from __future__ import annotations

import numpy as np
import pytest

import plda.matrix as pm
from plda.matrix.strategies import check_strategy


def test_toeplitz_strategy_pads_cuts_and_densifies():
    toeplitz = pm.toeplitz_strategy([3.0, 2.0, 1.0], 5)
    assert toeplitz.steps == 5 and toeplitz.bands == 3
    dense = toeplitz.dense()
    assert np.array_equal(dense[:, 0], [3, 2, 1, 0, 0])
    assert np.array_equal(dense[4], [0, 0, 1, 2, 3])
    assert np.array_equal(np.triu(dense, 1), np.zeros((5, 5)))
    assert pm.toeplitz_strategy([1.0, 2.0, 3.0, 4.0], 2).coefficients.tolist() == [1.0, 2.0]
    assert pm.toeplitz_strategy([0.0, 0.0]).bands == 1
    with pytest.raises(ValueError):
        toeplitz.coefficients[0] = 1.0  # read-only


def test_column_norms_of_every_form_agree():
    coefficients = np.array([1.0, 0.5, -0.25, 0.125])
    dense = pm.toeplitz_strategy(coefficients, 6).dense()
    expected = np.linalg.norm(dense, axis=0)
    for strategy in (dense, pm.toeplitz_strategy(coefficients, 6)):
        assert np.allclose(pm.column_norms(strategy), expected, rtol=1e-15)
    assert np.allclose(pm.column_norms(coefficients), np.linalg.norm(
        pm.toeplitz_strategy(coefficients).dense(), axis=0))


def test_tree_strategy_rows_are_the_complete_dyadic_intervals():
    tree = pm.tree_strategy(5)
    # 5 leaves, [0,2) and [2,4), [0,4)
    assert tree.shape == (8, 5)
    assert tree.sum(axis=1).tolist() == [1, 1, 1, 1, 1, 2, 2, 4]
    assert tree.sum(axis=0).tolist() == [3, 3, 3, 3, 1]


def test_checked_strategies_know_their_bands():
    assert check_strategy(np.eye(4)).bands == 1
    assert check_strategy(np.tril(np.ones((4, 4)))).bands == 4
    assert check_strategy(np.ones((6, 4)), causal=False).bands is None


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: pm.toeplitz_strategy([]), ValueError, "coefficients must not be empty"),
        (lambda: pm.toeplitz_strategy([[1.0]]), ValueError, "coefficients must be 1-D"),
        (lambda: pm.toeplitz_strategy([1.0, np.nan]), ValueError, "NaN"),
        (lambda: pm.toeplitz_strategy(["a"]), TypeError, "coefficients"),
        (lambda: pm.toeplitz_strategy([1.0], 0), ValueError, r"steps must be an integer in \[1"),
        (lambda: pm.toeplitz_strategy([1.0], 2.0), TypeError, "steps"),
        (lambda: pm.tree_strategy(0), ValueError, "steps"),
        (lambda: pm.column_norms(np.ones((2, 3))), ValueError, "square"),
        (lambda: pm.column_norms(None), TypeError, "strategy"),
    ],
)
def test_bad_input_names_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
