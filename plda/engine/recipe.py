"""A composition's recipe, ``((mechanism, count), ...)``, and what it gives per direction of
the relation: merged, read under add/remove, its realized recipes where a factor is not
``tight``, its laws, their two composed grid versions (:class:`GridPair`) and a query's maximum
over the directions (:func:`bounds_over_directions`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from plda._internal.errors import check_bracket
from plda.bounds import RELATIONS
from plda.discretization.discretize import discretize
from plda.engine.composer import compose
from plda.engine.plan import MAX_GRID, Plan
from plda.engine.tilt import compose_tilted
from plda.grid.discrete import DiscreteLoss
from plda.mechanisms.base import DIRECTIONS, Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.imported import GaussianDP


def merge(components) -> tuple:
    """Group equal mechanisms, adding their counts.

    Parameters
    ----------
    components
        ``(mechanism, count)`` pairs.

    Returns
    -------
    tuple
        ``((mechanism, count), ...)``, one per distinct mechanism, in first-seen order.
    """
    counts: dict = {}
    for mechanism, count in components:
        counts[mechanism] = counts.get(mechanism, 0) + count
    return tuple(counts.items())


#: the refusal of a mechanism whose pair is stated under another relation than add/remove
_DEFINED_UNDER = ("{0} is a pair stated under relation={1!r}: account it with "
                  "relation={1!r} (nothing is recorded under add_remove)")


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
        For an unknown ``relation``, or a mechanism whose pair is stated under replace-one
        (:attr:`~plda.Mechanism.defined_under`) read under add/remove.
    """
    if relation not in RELATIONS:  # (one comparison: every caller passes a checked relation)
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
    steps = []
    for mechanism, count in components:
        if count == 0:
            continue
        if relation == "replace_one":
            mechanism = mechanism.under_replace_one()
        elif mechanism.defined_under != "add_remove":
            raise ValueError(_DEFINED_UNDER.format(type(mechanism).__name__,
                                                   mechanism.defined_under))
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
    factors combine), so the largest of their lower bounds is certified.

    Parameters
    ----------
    steps
        ``(mechanism, count)`` pairs under add/remove semantics.

    Returns
    -------
    tuple of tuple
        The distinct recipes; empty when every factor is tight (the composition's own lower
        bound is then certified).
    """
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
        Gaussians and ``GaussianDP`` steps are merged exactly (``mu^2`` adds up under
        composition)."""
    factors = []
    gaussian_mu2 = 0.0
    for mechanism, count in steps:
        if count == 0:
            continue
        if type(mechanism) is Gaussian or (type(mechanism) is GaussianDP and mechanism.mu > 0):
            gaussian_mu2 += count * mechanism.mu**2
        else:
            factors.append((mechanism, count))
    if gaussian_mu2 > 0:
        factors.append((Gaussian(sigma=1.0 / math.sqrt(gaussian_mu2)), 1))
    directions = ("remove",) if all(m.symmetric for m, _ in factors) else DIRECTIONS
    return {d: [(m.privacy_loss(d), k) for m, k in factors] for d in directions}


# ---------------------------------------------------------- grid versions per direction
#: a pessimistic version longer than this composes its optimistic twin at once: the twin's
#: FFT length is about the same, and a grid too large for it must surface where the planner
#: catches it (when the plan is made), not in a later query
EAGER_LENGTH = MAX_GRID // 4


class GridPair:
    """The composed grid laws of one direction, the optimistic one composed when first read.

    Indexable as ``(upper, lower)``. Composition is deterministic, so two threads that read
    ``lower`` at once compose the same law twice and either result is kept; a pickle carries
    both laws.

    Parameters
    ----------
    upper
        The pessimistic version.
    compose_lower
        Composes the optimistic version (called at once for a long ``upper``, see
        :data:`EAGER_LENGTH`).
    """

    __slots__ = ("upper", "_lower", "_compose_lower")

    def __init__(self, upper: DiscreteLoss, compose_lower: Callable[[], DiscreteLoss]):
        self.upper, self._lower, self._compose_lower = upper, None, compose_lower
        if len(upper.probs) > EAGER_LENGTH:
            self._lower = compose_lower()

    @property
    def lower(self) -> DiscreteLoss:
        """The optimistic version, composed on first read."""
        found = self._lower
        if found is None:
            found = self._lower = self._compose_lower()
        return found

    def __getitem__(self, index: int) -> DiscreteLoss:
        if index in (0, -2):
            return self.upper
        if index in (1, -1):
            return self.lower
        raise IndexError(f"a GridPair has two versions (0: upper, 1: lower), got {index!r}")

    def __len__(self) -> int:
        return 2

    def __getstate__(self) -> dict:
        return {"upper": self.upper, "lower": self.lower}

    def __setstate__(self, state: dict) -> None:
        self.upper, self._lower, self._compose_lower = state["upper"], state["lower"], None


def grid_pair(laws: list, plan: Plan, leading: bool) -> GridPair:
    """The composition of one direction's laws to a plan, plainly or under its tilt.

    Parameters
    ----------
    laws
        ``[(law, count), ...]``.
    plan
        The grid step, tail and tilt.
    leading
        Whether this is the direction whose optimistic version every bounds query reads: its
        laws' optimistic versions are then discretized with the pessimistic ones (one pass over
        the cells).

    Returns
    -------
    GridPair
        The pessimistic version composed now, the optimistic one when first read.
    """

    def side(index: int) -> DiscreteLoss:
        both = leading or index == 1
        factors = [(discretize(law, plan.step, lower=both)[index], k) for law, k in laws]
        if plan.tilt:
            return compose_tilted(factors, plan.tilt, tail=plan.tail, max_size=MAX_GRID)
        return compose(factors, tail=plan.tail, max_size=MAX_GRID)

    return GridPair(side(0), lambda: side(1))


def grid_versions(laws: dict[str, list], plan: Plan) -> dict[str, GridPair]:
    """The one-shot composer: each direction's composition to ``plan``.

    Parameters
    ----------
    laws
        ``{direction: [(law, count), ...]}``, the leading direction first.
    plan
        The grid step (and tilt) to compose to.

    Returns
    -------
    dict
        ``{direction: GridPair}``: every pessimistic version composed now, the optimistic ones
        when first read (the leading direction's laws discretized on both sides at once).

    Raises
    ------
    GridTooLarge
        When a pessimistic version does not fit under the grid cap (here, where the planner
        catches it, not in a later query)."""
    lead = next(iter(laws))
    return {d: grid_pair(factors, plan, d == lead) for d, factors in laws.items()}


def bounds_over_directions(
    versions: dict,
    query: Callable[[DiscreteLoss], np.ndarray],
    *,
    lower: bool = True,
    margin: float | None = None,
    known: dict | None = None,
):
    """The bounds of a query maximized over the directions of the relation.

    Parameters
    ----------
    versions
        ``{direction: pair}``, each pair with an ``upper`` and a ``lower`` composed law.
    query
        A version's ``epsilon`` or ``delta`` at the targets.
    lower
        Whether to compute the lower bound (None otherwise).
    margin
        See below; None for the default rule.
    known
        Upper bounds already computed, by direction.

    Returns
    -------
    tuple
        ``(lower, upper)`` arrays shaped like the targets (``lower`` None unless ``lower``).

    Raises
    ------
    InvertedBracketError
        Where the lower bound exceeds the upper one.

    Optimistic versions are read in decreasing order of their direction's upper bound, and not
    at all where that upper bound lies below the lower bound found so far everywhere: such a
    direction's lower bound is at most its upper bound, so it cannot raise the maximum (a
    lower bound above its own direction's certified upper bound could only be an error, and is
    left out). With ``margin``, a direction after the first is read only where its upper bound
    reaches ``(1 - margin)`` times the maximum's: the cheaper rule of a refinement's trial
    grids, whose lower bound may then miss that direction's (it stays a lower bound)."""
    uppers = dict(known or {})
    for direction, pair in versions.items():
        if direction not in uppers:
            uppers[direction] = query(pair.upper)
    upper = np.max([uppers[direction] for direction in versions], axis=0)
    if not lower:
        return None, upper
    found = None
    for direction in sorted(versions, key=lambda name: -float(np.max(uppers[name]))):
        reach = found if margin is None else upper * (1 - margin)
        if found is not None and np.all(uppers[direction] < reach):
            continue
        below = query(versions[direction].lower)
        found = below if found is None else np.maximum(found, below)
    check_bracket(found, upper, query="bounds over directions")
    return found, upper
