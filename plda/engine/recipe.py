"""A composition's recipe, ``((mechanism, count), ...)``, and what it gives per direction of
the relation: merged, read under add/remove, its realized recipes where a factor is not
``tight``, its laws, their two composed grid versions (:class:`GridPair`) and a query's maximum
over the directions (:func:`bounds_over_directions`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial

import numpy as np

from plda._internal.errors import GridTooLarge, check_bracket
from plda._internal.floats import union_probability
from plda.bounds import RELATIONS
from plda.discretization.discretize import discretize
from plda.engine.composer import Composer
from plda.engine.plan import MAX_GRID, Plan, pilot_step
from plda.engine.tilt import compose_tilted
from plda.grid.discrete import DiscreteLoss
from plda.mechanisms.base import DIRECTIONS, Mechanism
from plda.mechanisms.gaussian import MU_RANGE, Gaussian
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
    if relation not in RELATIONS:
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
    ``i``-th (its last one if it has fewer). Each recipe is realized by one pair of datasets
    (steps' queries may differ), so the largest of their lower bounds is certified.

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
    factors, gaussians = [], []
    gaussian_mu2 = 0.0
    for mechanism, count in steps:
        if count == 0:
            continue
        if type(mechanism) is Gaussian or (type(mechanism) is GaussianDP and mechanism.mu > 0):
            gaussian_mu2 += count * mechanism.mu**2
            gaussians.append((mechanism, count))
        else:
            factors.append((mechanism, count))
    if gaussian_mu2 > 0:
        # one Gaussian where the merged mu is one plda certifies (beyond 1e15, each step alone)
        merged = math.sqrt(gaussian_mu2)
        factors += ([(Gaussian(sigma=1.0 / merged), 1)] if merged <= MU_RANGE[1] else gaussians)
    directions = ("remove",) if all(m.symmetric for m, _ in factors) else DIRECTIONS
    return {d: [(m.privacy_loss(d), k) for m, k in factors] for d in directions}


# ---------------------------------------------------------- grid versions per direction
#: a pessimistic version longer than this composes its optimistic twin (about as long) at once:
#: a grid too large for it surfaces where the planner catches it, not in a later query
EAGER_LENGTH = MAX_GRID // 4


class GridPair:
    """The composed grid laws of one direction, the optimistic one composed when first read.

    Indexable as ``(upper, lower)``. Composition is deterministic, so two threads that read a
    version at once compose the same law twice and either result is kept; a pickle carries
    both laws.

    Parameters
    ----------
    upper
        The pessimistic version, or None for a screened direction (composed when first read).
    compose_lower
        Composes the optimistic version (called at once for a long ``upper``, see
        :data:`EAGER_LENGTH`).
    compose_upper
        Composes the pessimistic version of a screened direction.
    screen
        A screened direction's ``index -> version`` on its coarse grids, coarsest first
        (:meth:`Screen.version`), or empty: :func:`bounds_over_directions` reads their
        pessimistic versions first, and a version whose grid does not fit falls back to the
        finest of theirs that fits.
    """

    __slots__ = ("_upper", "_lower", "_compose_upper", "_compose_lower", "screen", "_infinity")

    def __init__(self, upper: DiscreteLoss | None, compose_lower: Callable[[], DiscreteLoss],
                 compose_upper: Callable[[], DiscreteLoss] | None = None,
                 screen: tuple = (), law_infinity: Callable[[], float] | None = None):
        self._upper, self._lower = upper, None
        self._compose_upper, self._compose_lower, self.screen = compose_upper, compose_lower, screen
        self._infinity = law_infinity
        if upper is not None and len(upper.probs) > EAGER_LENGTH:
            self._lower = compose_lower()

    def _composed(self, compose: Callable[[], DiscreteLoss], index: int) -> DiscreteLoss:
        """A version composed on the plan's grid or, where that grid does not fit (read after
        the plan was made), on a screen's coarser one, or (optimistic) a trivial one."""
        try:
            return compose()
        except GridTooLarge:
            for view in reversed(self.screen):
                if (found := view(index)) is not None:
                    return found
            if index == 0:
                raise
            # an optimistic window past the cap where the pessimistic one fit (2.5e11 sampled
            # Laplace steps): P = Q lies below every law (trivial bound; the gap warns of it)
            return DiscreteLoss(step=self.upper.step, offset=0, probs=np.ones(1), upper=False)

    @property
    def upper(self) -> DiscreteLoss:
        """The pessimistic version (a screened direction's composed on first read)."""
        found = self._upper
        if found is None:
            found = self._upper = self._composed(self._compose_upper, 0)
        return found

    @property
    def lower(self) -> DiscreteLoss:
        """The optimistic version, composed on first read."""
        found = self._lower
        if found is None:
            found = self._lower = self._composed(self._compose_lower, 1)
        return found

    def law_infinity(self) -> float | None:
        """The laws' own mass at ``+inf`` in the pessimistic version, or None where not known.

        Their tails beyond the grid count; the mass beyond the composition's window does not.

        Returns
        -------
        float or None
            The steps' union of it (see :func:`plda.engine.tilt.law_tail`)."""
        return None if self._infinity is None else self._infinity()

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
        self._upper, self._lower = state["upper"], state["lower"]
        self._compose_upper = self._compose_lower = None
        self.screen, self._infinity = (), None


#: a direction is screened on grids at least this many times coarser than the plan's (its
#: certified gap, about quadratic in the step, is then up to 16x the plan's; composing it costs
#: about a quarter of the plan's grid)
SCREEN_RATIO = 4.0


class Screen:
    """One direction's compositions on coarse grids, each composed at most once per query.

    A pessimistic version there is certified like any other, so where its bound lies at or below
    the leading direction's lower bound the direction cannot move either bound of the maximum
    over directions, and its composition on the plan's fine grid is never needed: for DP-SGD
    the add direction, 5-40% below the removal one (measured on B1-B3), costs a coarse
    composition of about 1 ms instead of a third of the query (:func:`bounds_over_directions`).

    Parameters
    ----------
    laws
        ``[(law, count), ...]`` of the direction.
    tail
        Composed mass allowed outside the FFT window on each side (it screens plans with
        this tail only).
    """

    __slots__ = ("laws", "tail", "_pilot", "_versions")

    def __init__(self, laws: list, tail: float = Plan.tail):
        self.laws, self.tail = laws, tail
        self._pilot = None
        self._versions: dict = {}

    def steps(self, fine: float) -> tuple[float, ...]:
        """The screen's steps for a plan on step ``fine``, coarsest first.

        The laws' coarsest pilot step (the law that sets it is already discretized there, and
        its grid is the cheapest), at least :data:`SCREEN_RATIO` times ``fine``; where that is
        over twice as coarse, then :data:`SCREEN_RATIO` times ``fine`` too, read only when the
        first does not settle it (directions within a few percent of each other: Poisson rate
        1e-4, whose pilot grid is 15x coarser than its plan's).

        Parameters
        ----------
        fine
            The plan's step.

        Returns
        -------
        tuple of float
            One or two steps.
        """
        if self._pilot is None:
            self._pilot = max(pilot_step(law) for law, _ in self.laws)
        least = SCREEN_RATIO * fine
        return (self._pilot, least) if self._pilot > 2 * least else (max(self._pilot, least),)

    def version(self, index: int, step: float) -> DiscreteLoss | None:
        """The pessimistic (``index`` 0) or optimistic (1) version on a coarse grid.

        Parameters
        ----------
        index
            0 or 1.
        step
            The coarse grid's step (:meth:`steps`).

        Returns
        -------
        DiscreteLoss or None
            The composed version (kept); None where even this grid does not fit.
        """
        key = (index, step)
        if key not in self._versions:
            factors = [(discretize(law, step, lower=index == 1)[index], k)
                       for law, k in self.laws]
            try:  # (a one-shot composer: see plda.engine.composer.compose)
                found = Composer(tail=self.tail, group=True).compose(factors, MAX_GRID)
            except GridTooLarge:
                found = None
            self._versions.setdefault(key, found)  # the same law, whichever thread wins
        return self._versions[key]


def grid_pair(laws: list, plan: Plan, leading: bool, screen: Screen | None = None) -> GridPair:
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
    screen
        The direction's :class:`Screen`, or None. Where the screen's coarse grid fits, the plan
        (tilted or not) composes both versions only when first read.

    Returns
    -------
    GridPair
        The pessimistic version composed now (or, screened, when first read), the optimistic
        one when first read.
    """

    def side(index: int) -> DiscreteLoss:
        both = leading or index == 1
        if plan.tilt:  # the laws in fine cells up to their kept tail, where the tilt looks
            factors = [(discretize(law, plan.step, both, plan.law_tail, plan.law_tail)[index], k)
                       for law, k in laws]
            return compose_tilted(factors, plan.tilt, tail=plan.tail, max_size=MAX_GRID)
        factors = [(discretize(law, plan.step, lower=both)[index], k) for law, k in laws]
        return Composer(tail=plan.tail, group=True).compose(factors, MAX_GRID)

    def law_infinity() -> float:
        tails = (plan.law_tail, plan.law_tail) if plan.tilt else ()
        return union_probability(
            ((discretize(law, plan.step, False, *tails)[0].infinity_mass, k) for law, k in laws),
            upper=True)

    # (a tilted plan too: the coarse grids' untilted versions are certified bounds as well, so
    # a direction they settle is composed under no tilt at all)
    if screen is not None and plan.tail == screen.tail:
        views = tuple(partial(screen.version, step=h) for h in screen.steps(plan.step))
        if views[0](0) is not None:
            return GridPair(None, lambda: side(1), compose_upper=lambda: side(0), screen=views,
                            law_infinity=law_infinity)
    return GridPair(side(0), lambda: side(1), law_infinity=law_infinity)


def grid_versions(laws: dict[str, list], plan: Plan,
                  screens: dict[str, Screen] | None = None) -> dict[str, GridPair]:
    """The one-shot composer: each direction's composition to ``plan``.

    Parameters
    ----------
    laws
        ``{direction: [(law, count), ...]}``, the leading direction first.
    plan
        The grid step (and tilt) to compose to.
    screens
        ``{direction: Screen}`` for the directions after the first, kept by the query (see
        :func:`grid_pair`), or None.

    Returns
    -------
    dict
        ``{direction: GridPair}``: every pessimistic version composed now (but a screened
        direction's), the optimistic ones when first read (the leading direction's laws
        discretized on both sides at once).

    Raises
    ------
    GridTooLarge
        When a pessimistic version composed now does not fit under the grid cap."""
    lead = next(iter(laws))
    screens = screens or {}
    return {d: grid_pair(factors, plan, d == lead, None if d == lead else screens.get(d))
            for d, factors in laws.items()}


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
    grids, whose lower bound may then miss that direction's (it stays a lower bound).

    A direction with a :class:`Screen` is read on the screen's coarse grids first, after the
    others: where such a certified bound lies at or below their lower bound (their upper bound,
    without ``lower``) at every target, the direction's true value does too, so it can raise
    neither bound of the maximum and its fine versions are never composed. The others' bounds
    are then the answer, equal to those with every direction read (a lower bound is never
    above its direction's true value). Otherwise it is read like any other direction."""
    uppers = dict(known or {})
    screened = [d for d, pair in versions.items()
                if d not in uppers and getattr(pair, "screen", ())]
    plain = [d for d in versions if d not in screened]
    for direction in plain:
        if direction not in uppers:
            uppers[direction] = query(versions[direction].upper)
    upper = np.max([uppers[direction] for direction in plain], axis=0)
    found = None
    if lower:
        for direction in sorted(plain, key=lambda name: -float(np.max(uppers[name]))):
            reach = found if margin is None else upper * (1 - margin)
            if found is not None and np.all(uppers[direction] < reach):
                continue
            below = query(versions[direction].lower)
            found = below if found is None else np.maximum(found, below)
    for direction in screened:
        pair = versions[direction]
        reach = found if lower else upper
        if any(law is not None and np.all(query(law) <= reach)
               for law in (view(0) for view in pair.screen)):
            continue
        uppers[direction] = query(pair.upper)
        upper = np.maximum(upper, uppers[direction])
        reach = found if margin is None else upper * (1 - margin)
        if lower and not np.all(uppers[direction] < reach):
            found = np.maximum(found, query(pair.lower))
    if not lower:
        return None, upper
    check_bracket(found, upper, query="bounds over directions")
    return found, upper
