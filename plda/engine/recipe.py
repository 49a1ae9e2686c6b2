"""Recipes of compositions: ``((mechanism, count), ...)`` tuples, merged and bracketed.

A mechanism whose own privacy-loss laws are those of a dominating pair that no pair of
datasets is known to realize (``tight`` False: :class:`~plda.Shuffled`, a truncating
:class:`~plda.TruncatedPoisson`, fixed-size batches under replace-one) gives certified *upper*
bounds only; its ``lower_bound_mechanisms()`` give realized pairs, whose *lower* bounds are
certified for it. :func:`realized_recipes` are the recipes whose lower bounds a composition
reports (the largest of them). :func:`add_remove_steps` reads a recipe under add/remove
semantics (the replace-one mapping), and :func:`laws_by_direction` gives the privacy-loss laws
it multiplies, per direction of the relation.
"""

from __future__ import annotations

import math

from plda.bounds import RELATIONS
from plda.mechanisms.base import DIRECTIONS, Mechanism
from plda.mechanisms.gaussian import Gaussian


def merge(components) -> tuple:
    """Group equal mechanisms, adding their counts (keeps first-seen order)."""
    counts: dict = {}
    for mechanism, count in components:
        counts[mechanism] = counts.get(mechanism, 0) + count
    return tuple(counts.items())


def add_remove_steps(components, relation: str = "add_remove") -> tuple[tuple[Mechanism, int], ...]:
    """The ``(mechanism, count)`` pairs of a composition, read under add/remove semantics.

    Parameters
    ----------
    components : iterable
        ``(mechanism, count)`` pairs.
    relation : {"add_remove", "replace_one"}, optional
        The relation the components are accounted under; ``"replace_one"`` maps each mechanism
        through :meth:`~plda.Mechanism.under_replace_one`.

    Returns
    -------
    tuple
        ``((mechanism, count), ...)``, steps run zero times left out.

    Raises
    ------
    ValueError
        For an unknown ``relation``.
    """
    if relation not in RELATIONS:  # (one comparison: every caller passes a checked relation)
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
    steps = []
    for mechanism, count in components:
        if count == 0:
            continue
        if relation == "replace_one":
            mechanism = mechanism.under_replace_one()
        steps.append((mechanism, count))
    return tuple(steps)


def realized_recipes(steps) -> tuple[tuple, ...]:
    """The recipes of realized pairs whose lower bounds are certified for ``steps``.

    ``steps`` are ``(mechanism, count)`` pairs under add/remove semantics (a replace-one
    composition mapped through :meth:`~plda.Mechanism.under_replace_one` first), and so are
    the recipes: read them under ``"add_remove"``. Every factor that is not ``tight`` is
    replaced by one of its ``lower_bound_recipes(count)``: recipe ``i`` takes each factor's
    ``i``-th (its last one if it has fewer). Each recipe is realized by one pair of neighbouring
    datasets (the queries of different steps may differ, so the realized pairs of different
    factors combine), so the largest of their lower bounds is certified. Empty when every factor
    is tight (the composition's own lower bound is then certified)."""
    steps = tuple(steps)
    if all(mechanism.tight for mechanism, _ in steps):
        return ()
    choices = [
        (((mechanism, count),),) if mechanism.tight else mechanism.lower_bound_recipes(count)
        for mechanism, count in steps
    ]
    width = max(len(options) for options in choices)
    recipes = (
        merge(part for options in choices for part in options[min(i, len(options) - 1)])
        for i in range(width)
    )
    # alternatives that coincide once the relation is applied are composed once
    return tuple(dict.fromkeys(recipes))


def laws_by_direction(steps) -> dict[str, list]:
    """The privacy-loss laws a composition multiplies, per direction of the relation.

    Parameters
    ----------
    steps
        ``(mechanism, count)`` pairs under add/remove semantics (a replace-one composition
        mapped through :meth:`~plda.Mechanism.under_replace_one` first).

    Returns
    -------
    dict
        ``{direction: [(law, count), ...]}``, the leading direction (``"remove"``) first; one
        direction when every factor is symmetric. Steps run zero times are left out, and plain
        Gaussians are merged exactly (``mu^2`` adds up under composition)."""
    factors = []
    gaussian_mu2 = 0.0
    for mechanism, count in steps:
        if count == 0:
            continue
        if type(mechanism) is Gaussian:
            gaussian_mu2 += count * mechanism.mu**2
        else:
            factors.append((mechanism, count))
    if gaussian_mu2 > 0:
        factors.append((Gaussian(sigma=1.0 / math.sqrt(gaussian_mu2)), 1))
    directions = ("remove",) if all(m.symmetric for m, _ in factors) else DIRECTIONS
    return {d: [(m.privacy_loss(d), k) for m, k in factors] for d in directions}
