"""Correlated noise: matrix-factorization mechanisms (DP-FTRL, BandMF, BLT, tree aggregation).

A matrix mechanism releases ``C x + z`` for a strategy ``C`` (columns index steps). This package
computes its multi-participation sensitivity, exact or certified (:func:`sensitivity`), and
reduces the mechanisms with an exact reduction to plda's own. The mathematics and what each
reduction assumes of the training loop: ``docs/howto/dp-ftrl.md``.
"""

from __future__ import annotations

from plda.matrix.amplified import CyclicPoissonBandMF
from plda.matrix.conditional import PoissonMatrixMechanism
from plda.matrix.reductions import MatrixReduction, MultiEpochMF, TreeAggregation, tree_depth
from plda.matrix.sensitivity import Sensitivity, sensitivity
from plda.matrix.strategies import (
    ToeplitzStrategy,
    column_norms,
    toeplitz_strategy,
    tree_strategy,
)

__all__ = [
    "CyclicPoissonBandMF",
    "MatrixReduction",
    "MultiEpochMF",
    "PoissonMatrixMechanism",
    "Sensitivity",
    "ToeplitzStrategy",
    "column_norms",
    "sensitivity",
    "toeplitz_strategy",
    "tree_depth",
    "tree_strategy",
    "TreeAggregation",
]
