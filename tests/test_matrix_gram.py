"""plda.matrix.gram: the banded Gram matrix against the dense product."""

from __future__ import annotations

import numpy as np

import plda.matrix as pm
from plda.matrix.gram import DENSE_PRODUCT_BANDS, banded_gram
from plda.matrix.strategies import check_strategy


def dense_from(gram) -> np.ndarray:
    n = gram.steps
    i, j = np.meshgrid(np.arange(n), np.arange(n), indexing="ij")
    return gram.entries(i, j)


def test_banded_gram_equals_the_dense_product():
    rng = np.random.default_rng(0)
    for n, bands in ((1, 1), (7, 1), (9, 3), (30, 30), (80, DENSE_PRODUCT_BANDS + 5)):
        offsets = np.subtract.outer(np.arange(n), np.arange(n))
        matrix = np.where((offsets >= 0) & (offsets < bands), rng.normal(size=(n, n)), 0.0)
        gram = banded_gram(check_strategy(matrix))
        assert gram.width <= bands
        assert np.allclose(dense_from(gram), matrix.T @ matrix, rtol=1e-12, atol=1e-12)


def test_toeplitz_gram_equals_the_dense_product():
    coefficients = np.array([1.0, -0.7, 0.3, 0.0, 0.2])
    for steps in (3, 5, 12):
        toeplitz = pm.toeplitz_strategy(coefficients, steps)
        gram = banded_gram(check_strategy(toeplitz))
        dense = toeplitz.dense()
        assert np.allclose(dense_from(gram), dense.T @ dense, rtol=1e-13, atol=1e-14)
        assert not gram.nonnegative
    assert banded_gram(check_strategy(np.tril(np.ones((4, 4))))).nonnegative
