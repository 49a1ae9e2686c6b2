"""The certified lower bound of a composition whose factors are not all ``tight``: the largest
of its realized compositions' lower bounds (:func:`realized_lower`)."""

from __future__ import annotations

import numpy as np

from plda._internal.errors import quiet_accuracy

__all__ = ["realized_lower"]


def realized_lower(realized: tuple, kind: str, targets: np.ndarray) -> np.ndarray:
    """The certified lower bound of a composition whose factors are not all ``tight``.

    Each realized composition is realized by one pair of neighbouring datasets, so its lower
    bound is certified, while the composition's own lower bound brackets a dominating pair
    that no datasets are known to realize.

    Parameters
    ----------
    realized
        The :class:`~plda.engine.query.Query` of each realized composition
        (:func:`plda.engine.query.realized_queries`).
    kind
        ``"epsilon"`` (``targets`` are deltas) or ``"delta"`` (``targets`` are epsilons).
    targets
        Where the bound is asked for.

    Returns
    -------
    numpy.ndarray
        The largest of their lower bounds, shaped like ``targets``."""
    with quiet_accuracy():  # the caller warns once, for its own answer
        found = [
            r.epsilon_bounds(targets) if kind == "epsilon" else r.delta_bounds(targets)
            for r in realized
        ]
    return np.max([lower for lower, _ in found], axis=0)
