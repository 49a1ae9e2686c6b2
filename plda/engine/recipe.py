"""Recipes of compositions: ``((mechanism, count), ...)`` tuples, merged and bracketed.

A mechanism whose own privacy-loss laws are those of a dominating pair that no pair of
datasets is known to realize (``tight`` False: :class:`~plda.Shuffled`, a truncating
:class:`~plda.TruncatedPoisson`) gives certified *upper* bounds only; its
``lower_bound_mechanism()`` gives a realized pair, whose *lower* bounds are certified for it.
:func:`lower_bound_components` is the recipe whose lower bounds a composition reports.
"""

from __future__ import annotations


def merge(components) -> tuple:
    """Group equal mechanisms, adding their counts (keeps first-seen order)."""
    counts: dict = {}
    for mechanism, count in components:
        counts[mechanism] = counts.get(mechanism, 0) + count
    return tuple(counts.items())


def lower_bound_components(components) -> tuple | None:
    """``components`` with every factor that is not ``tight`` replaced by its
    ``lower_bound_mechanism()`` (to be read under the same relation), merged; ``None`` when
    every factor is tight (the composition's own lower bound is then certified)."""
    if all(mechanism.tight for mechanism, _ in components):
        return None
    return merge(
        (mechanism if mechanism.tight else mechanism.lower_bound_mechanism(), count)
        for mechanism, count in components
    )
