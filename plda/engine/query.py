"""The one query driver: a :class:`Query` refines the grid, composes, takes the maximum over
directions, tilts below the FFT's floor and takes realized lower bounds. The PLD hands it
:class:`PilotSteps`, the accountant its ladder steps and caching composer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from operator import methodcaller

import numpy as np

from plda._internal import errors
from plda._internal.errors import GridTooLarge, check_bracket, inaccurate, warn_if_inaccurate
from plda._internal.floats import relative_gap
from plda.discretization.discretize import UPPER_TAIL
from plda.engine.composer import rounding_floor
from plda.engine.gaps import (
    ABOVE_TILT_FLOOR,
    TILT_FLOOR,
    TILT_REFINE,
    monotone_envelope,
    probes,
    warn_where_delta_misses,
)
from plda.engine.plan import MAX_GRID, PilotSteps, Plan, StepPredictor, pilot, refine
from plda.engine.realized import realized_lower
from plda.engine.recipe import (
    Screen,
    bounds_over_directions,
    grid_versions,
    laws_by_direction,
    realized_recipes,
)
from plda.engine.tilt import chernoff_tilts, law_tails, tilt_attempts

__all__ = ["Query", "one_shot", "realized_queries", "recipe_query"]

@dataclass(frozen=True)
class Query:
    """Certified bounds of one composition, by the stages every answer takes.

    Parameters
    ----------
    accuracy
        Target relative gap ``(upper - lower) / upper`` of ``epsilon(delta)``.
    policy
        The step policy: :class:`PilotSteps`, or the accountant's ladder
        (:class:`plda.accounting.ladder.LadderSteps`). It gives ``current(plan,
        refined)``, ``next_step(step, gap)``, ``coarser(step, exc)``, ``fixed`` (a step never
        refined, or None) and ``margin`` (None, or the margin within which a trial grid reads
        a non-leading direction's optimistic version).
    composer
        ``plan -> {direction: pair}``, each pair with an ``upper`` and a ``lower`` composed
        grid law, the leading direction first (:func:`plda.engine.recipe.grid_versions`, or
        the accountant's caching composer).
    cache
        The versions per plan and the current plan (key ``"plan"``), kept across queries (a
        PLD's own cache).
    realized
        Queries of the realized compositions whose lower bounds are certified for this one
        (:func:`plda.engine.recipe.realized_recipes`); empty when every factor is tight.
    """

    accuracy: float
    policy: object
    composer: Callable[[Plan], dict]
    cache: dict = field(default_factory=dict)
    realized: tuple = ()

    # ------------------------------------------------------------------ the grid
    def versions(self, step: float, tilt: float = 0.0, law_tail: float = UPPER_TAIL) -> dict:
        """The composition's versions on a grid, kept per plan.

        Parameters
        ----------
        step
            The grid step.
        tilt
            The exponential tilt (0: none).
        law_tail
            The continuous mass each law leaves out above its grid (:func:`~.tilt.law_tail`).

        Returns
        -------
        dict
            ``{direction: pair}``, each with an ``upper`` and a ``lower`` composed law.

        Raises
        ------
        GridTooLarge
            When the composition does not fit under the grid cap."""
        key = ("grid", Plan(step=step, tilt=tilt, law_tail=law_tail))
        if key not in self.cache:
            self.cache[key] = self.composer(key[1])
        return self.cache[key]

    def grid(self, targets: np.ndarray | None = None, start: float | None = None) -> tuple:
        """The versions on a grid that fits, refined for ``targets`` if given.

        A pure function of the composition, ``targets`` and ``start``, with no side effect but
        the shared compositions: equal queries get equal answers in any order and thread.

        Parameters
        ----------
        targets
            Deltas at which the epsilon gap must meet the accuracy (the grid is refined until
            it does), or None (no refinement).
        start
            The step to start from; default: the policy's first step (its coarse start when
            refining).

        Returns
        -------
        tuple
            ``(versions, step)``: ``{direction: pair}`` on the grid reached, and its step.

        Raises
        ------
        UncoveredParametersError
            When no coarsening fits (:func:`~plda._internal.errors.grid_cap_refusal`).
        """
        if start is None:
            start = self.policy.current(None, refined=targets is not None)
        versions, step = self._fitting(start)
        if targets is not None and self.policy.fixed is None:
            versions, step = self.refined(step, targets)
        return versions, step

    def latest(self) -> tuple:
        """The versions on the grid the latest epsilon or delta query reached, for inspection.

        Returns
        -------
        tuple
            ``(versions, step)``, never coarser than the policy's first unrefined step.

        Raises
        ------
        UncoveredParametersError
            When no coarsening fits (:func:`~plda._internal.errors.grid_cap_refusal`)."""
        return self._fitting(self.policy.current(self.cache.get("plan")))

    def _fitting(self, step: float) -> tuple:
        """``(versions, step)`` on ``step``, coarsened by the policy until the composition fits."""
        for _ in range(16):
            try:
                return self.versions(step), step
            except GridTooLarge as exc:
                step = self.policy.coarser(step, exc)
        raise errors.grid_cap_refusal(MAX_GRID)  # each retry shrank the grid 1.25x

    def refined(self, step: float, targets: np.ndarray) -> tuple:
        """The grid the refinement loop (:func:`plda.engine.plan.refine`) reaches.

        Parameters
        ----------
        step
            The step it starts from.
        targets
            Deltas at which the epsilon gap is measured.

        Returns
        -------
        tuple
            ``(versions, step)``: ``step`` itself if its gap meets the accuracy, else the last
            step refined to, and the composition's versions there.

        Raises
        ------
        GridTooLarge
            When the composition on ``step`` itself does not fit."""
        gap = self.gap(step, targets)
        if gap > self.accuracy:  # (refine's own first test: the grid as it is may meet it)
            step = refine(step, gap, partial(self.gap, targets=targets), self.accuracy,
                          self.policy.next_step)[0]
        return self.versions(step), step

    def gap(self, step: float, targets: np.ndarray) -> float:
        """The largest relative epsilon gap on a grid.

        With a policy ``margin`` (the accountant's trial grids), a leading direction whose own
        gap misses the accuracy fails the grid without composing the others; otherwise the
        maximum over the directions decides, reading a non-leading direction's optimistic
        version only within ``margin`` of the upper bound.

        Parameters
        ----------
        step
            The grid step.
        targets
            Deltas at which the gap is measured.

        Returns
        -------
        float
            The largest ``(upper - lower) / upper`` of epsilon there.
        """
        versions = self.versions(step)
        margin, known = self.policy.margin, None
        if margin is not None:
            lead, pair = next(iter(versions.items()))
            upper = pair.upper.epsilon(targets)
            gap = np.max(relative_gap(np.minimum(pair.lower.epsilon(targets), upper), upper),
                         initial=0.0)
            if gap > self.accuracy and len(versions) > 1:
                return float(gap)
            known = {lead: upper}
        lower, upper = bounds_over_directions(versions, methodcaller("epsilon", targets),
                                              margin=margin, known=known)
        return float(np.max(relative_gap(lower, upper), initial=0.0))

    # ----------------------------------------------------------------- the flows
    def epsilon_bounds(self, d: np.ndarray, cap: Callable | None = None, cap_all: bool = False
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Certified bounds on ``epsilon`` at deltas.

        Refines for the deltas above the refinement floor (the largest at least), takes the
        maximum over directions, tilts below the FFT's floor, then the realized lower bound.

        Parameters
        ----------
        d
            Deltas in ``[0, 1]``, any shape (validated by the caller).
        cap
            ``(upper, d, missed=mask) -> upper`` no looser (a conversion of the whole
            composition), or None; called where the bracket misses the accuracy (``mask``).
        cap_all
            Call ``cap`` whatever the gaps (a composition stated in another currency).

        Returns
        -------
        tuple of numpy.ndarray
            ``(lower, upper)``, shaped like ``d``; warns (:class:`~plda.AccuracyWarning`)
            where their relative gap misses the accuracy. ``lower`` is checked against the
            upper bound before ``cap``, which may undercut a pair that is not tight.

        Raises
        ------
        InvertedBracketError
            Where the lower bound exceeds the upper one (a defect, never hidden)."""
        flat = np.ravel(d)
        versions, step = self._fitting(self.policy.current(None, refined=True))
        # refining cannot resolve a delta below the rounding floor: those are left to the tilt
        resolved = flat[flat >= rounding_floor(versions, self.accuracy)]
        if resolved.size and self.policy.fixed is None:  # the grid that fits, refined for them
            versions, step = self.refined(step, resolved)
        self.cache["plan"] = Plan(step=step)  # for inspection (latest) only
        lower, upper = bounds_over_directions(versions, methodcaller("epsilon", d))
        lower, upper = np.ravel(lower), np.ravel(upper)
        if np.any((flat > 0) & (flat <= TILT_FLOOR) & (lower < upper * (1 - self.accuracy))):
            # nothing below TILT_FLOOR is tilted, but epsilon(delta) is non-increasing: a lower
            # bound just above it holds at every smaller delta (the envelope carries it down)
            flat = np.append(flat, ABOVE_TILT_FLOOR)
            low, up = bounds_over_directions(versions, methodcaller("epsilon", flat[-1:]))
            lower, upper = np.append(lower, np.ravel(low)), np.append(upper, np.ravel(up))
        # (the floor of the grid reached: a finer grid rounds more)
        small = (flat > TILT_FLOOR) & (flat < rounding_floor(versions, self.accuracy))
        small &= relative_gap(lower, upper) > self.accuracy
        if small.any():
            lower, upper = self.tilted(versions, step, small, flat, lower, upper, "epsilon")
            lower, upper = monotone_envelope(flat, lower, upper)
        lower, upper = lower[:d.size].reshape(d.shape), upper[:d.size].reshape(d.shape)
        # the caller's conversion of the whole composition, before the warning that quotes it
        missed = inaccurate(lower, upper, self.accuracy)
        capped = cap(upper, d, missed=missed) if cap and (cap_all or missed.any()) else upper
        warn_if_inaccurate(lower, capped, self.accuracy, query="epsilon_bounds")
        if self.realized:
            lower = realized_lower(self.realized, "epsilon", d)
        check_bracket(lower, upper, query="epsilon_bounds")
        return lower, capped

    def delta_bounds(self, e: np.ndarray, cap: Callable | None = None, cap_all: bool = False
                     ) -> tuple[np.ndarray, np.ndarray]:
        """Certified bounds on ``delta`` at epsilons.

        Refines for the epsilon gap at the deltas reported (:func:`probes`), takes the maximum
        over directions, tilts below the FFT's floor, then the realized lower bound.

        Parameters
        ----------
        e
            Epsilons in ``[0, inf]``, any shape (validated by the caller).
        cap, cap_all
            As :meth:`epsilon_bounds`'s, the mask where the delta bracket misses the accuracy.

        Returns
        -------
        tuple of numpy.ndarray
            ``(lower, upper)``, shaped like ``e``; warns (:class:`~plda.AccuracyWarning`)
            where the epsilon gap at the deltas reported misses the accuracy.

        Raises
        ------
        InvertedBracketError
            Where the lower bound exceeds the upper one (a defect, never hidden)."""
        versions, step = self.grid()
        known = None
        if self.policy.fixed is None:
            known = {d: pair.upper.delta(e) for d, pair in versions.items()}
            probe = probes(list(known.values()))
            # refining cannot resolve a delta below the rounding floor: those are left to the tilt
            probe = probe[probe >= rounding_floor(versions, self.accuracy)]
            if probe.size:
                (versions, step), known = self.grid(probe, start=step), None
        self.cache["plan"] = Plan(step=step)  # for inspection (latest) only
        lower, upper = bounds_over_directions(versions, methodcaller("delta", e), known=known)
        flat, lower, upper = np.ravel(e), np.ravel(lower), np.ravel(upper)
        floor = rounding_floor(versions, self.accuracy)  # of the grid reached
        warn_where_delta_misses(versions, lower, upper, self.accuracy, floor=floor)
        small = (upper > TILT_FLOOR) & (upper < floor) & (lower < upper * (1 - self.accuracy))
        if small.any():
            lower, upper = self.tilted(versions, step, small, flat, lower, upper, "delta")
            lower, upper = monotone_envelope(flat, lower, upper)
        lower, upper = lower.reshape(e.shape), upper.reshape(e.shape)
        missed = inaccurate(lower, upper, self.accuracy)
        if self.realized:
            lower = realized_lower(self.realized, "delta", e)
        check_bracket(lower, upper, query="delta_bounds")
        if cap and (cap_all or missed.any()):
            upper = cap(upper, e, missed=missed)
        return lower, upper

    # ------------------------------------------------------------ below the floor
    def tilted(self, versions: dict, step: float, small, targets, lower, upper, kind: str):
        """Below the FFT's rounding floor, the bounds recomposed under an exponential tilt.

        Each ``small`` target gets the tilt aimed at it (:func:`plda.engine.tilt.chernoff_tilts`
        from the untilted ``versions``), on laws kept as far out as its delta needs
        (:func:`plda.engine.tilt.law_tails`; a delta query recomposes once on the tails its
        tilted bounds ask for); the tightest certified bounds are kept. An epsilon whose
        tilted gap misses the accuracy is refined under its tilt (a predictor of its own); a
        delta is not (its relative gap is 20-40 times the epsilon gap a delta query refines for).

        Parameters
        ----------
        versions
            ``{direction: pair}``, untilted.
        step
            The grid step to recompose on first.
        small
            Boolean mask of the targets to tilt for.
        targets
            Deltas (``kind="epsilon"``) or epsilons (``kind="delta"``), flat.
        lower
            The untilted lower bounds, flat.
        upper
            The untilted upper bounds, flat.
        kind
            ``"epsilon"`` or ``"delta"``: the query.

        Returns
        -------
        tuple of numpy.ndarray
            ``(lower, upper)``, new arrays.
        """
        index = np.nonzero(small)[0]
        tilts = chernoff_tilts(versions, targets[index], kind)
        # the laws kept as far out as the smallest delta to resolve needs: an epsilon query's
        # target; a delta query's upper bound's millionth
        smallest = targets[index] if kind == "epsilon" else upper[index] * 1e-6
        tails = law_tails(versions, tilts, smallest, self.accuracy)
        lower, upper = lower.copy(), upper.copy()
        self._tilted_at(step, tilts, tails, index, targets, lower, upper, kind)
        if kind == "delta":
            # a delta query's first tails came from the untilted upper bounds, which may sit far
            # above the delta (B1 at eps 85.5: 1e-220 against 1e-300): the tilted ones say more
            found = np.where(lower[index] > 0, lower[index], upper[index] * 1e-6)
            again = law_tails(versions, tilts, found, self.accuracy)
            redo = again < tails
            if redo.any():
                tails = np.where(redo, again, tails)
                self._tilted_at(step, tilts[redo], tails[redo], index[redo], targets, lower,
                                upper, kind)
        gap = relative_gap(lower[index], upper[index])  # (past TILT_REFINE: the tilt's own)
        missing = (gap > self.accuracy) & (gap <= TILT_REFINE)
        predictor = getattr(self.policy, "predictor", None)
        if kind == "epsilon" and missing.any() and self.policy.fixed is None and predictor:
            index, tilts, tails = index[missing], tilts[missing], tails[missing]
            own = replace(self.policy, predictor=StepPredictor(self.accuracy, unit=predictor.unit))
            seen: list = []

            def gap_at(finer: float) -> float:
                self._tilted_at(finer, tilts, tails, index, targets, lower, upper, kind)
                return float(np.max(relative_gap(lower[index], upper[index])))

            def finer(at: float, gap: float) -> float | None:
                # a tilted gap that a finer grid did not shrink is not the discretization's (a
                # lower version's error terms at a huge epsilon): no near-miss round for it
                if seen and gap > 0.7 * seen[-1]:
                    return None
                seen.append(gap)
                return own.next_step(at, gap)

            refine(step, float(np.max(relative_gap(lower[index], upper[index]))), gap_at,
                   self.accuracy, finer)
        return lower, upper

    def _tilted_at(self, step: float, tilts, tails, index, targets, lower, upper, kind: str
                   ) -> None:
        """Tighten ``lower`` and ``upper`` (in place) at ``targets[index]`` by the compositions
        on ``step`` under ``tilts``, of the laws kept to ``tails`` (one of each per target)."""
        for tilt, tail in sorted(set(zip(tilts, tails, strict=True))):
            pick = index[(tilts == tilt) & (tails == tail)]
            gap = math.inf  # larger tilts are tried while each narrows its own gap
            for attempt in tilt_attempts(tilt):
                try:
                    tilted = self.versions(step, float(attempt), float(tail))
                except MemoryError:  # beyond a larger tilt that does not fit, none helped
                    if attempt > tilt:
                        break
                    continue
                lo, up = bounds_over_directions(tilted, methodcaller(kind, targets[pick]))
                # fmin/fmax ignore a NaN from the tilted side: the other bound stands then
                upper[pick] = np.fmin(upper[pick], up)
                lower[pick] = np.fmax(lower[pick], lo)
                last, gap = gap, float(np.max(relative_gap(lo, up)))  # this tilt's own gap
                if np.all(relative_gap(lower[pick], upper[pick]) <= self.accuracy) or (
                        attempt > 2 * tilt and gap >= min(last, 1.0)):
                    break


def one_shot(laws: dict[str, list], accuracy: float, *, step: float | None = None,
             cache: dict | None = None, realized: tuple = ()) -> Query:
    """The driver of a one-shot composition (what a PrivacyLossDistribution runs).

    Parameters
    ----------
    laws
        ``{direction: [(law, count), ...]}`` (:func:`plda.engine.recipe.laws_by_direction`).
    accuracy
        Target relative gap of ``epsilon(delta)``.
    step
        A fixed grid step, or None to plan it from the pilot.
    cache
        Where the pilot, the versions per plan and the current plan are kept (a new dict if
        None): a PLD's, so that its queries plan once.
    realized
        The queries of its realized compositions (:func:`realized_queries`).

    Returns
    -------
    Query
        With :class:`PilotSteps` and :func:`plda.engine.recipe.grid_versions` of ``laws``,
        each direction after the first with its :class:`~plda.engine.recipe.Screen`."""
    cache = {} if cache is None else cache
    if step is not None:
        policy = PilotSteps(accuracy=accuracy, fixed=step)
    else:
        if "pilot" not in cache:  # (two threads may both plan: the same pilot either way)
            cache["pilot"] = pilot(laws, accuracy)
        found = cache["pilot"]
        predictor = StepPredictor(accuracy=accuracy, unit=found.atom_unit)
        policy = PilotSteps(accuracy=accuracy, pilot=found, predictor=predictor)
    # the directions after the first, each screened on coarse grids composed once per query
    screens = {d: Screen(factors) for d, factors in list(laws.items())[1:]}
    return Query(accuracy=accuracy, policy=policy, cache=cache, realized=realized,
                 composer=partial(grid_versions, laws, screens=screens))


def recipe_query(steps, accuracy: float) -> Query:
    """The one-shot driver of a recipe, with the drivers of its realized compositions.

    Parameters
    ----------
    steps
        ``((mechanism, count), ...)`` under add/remove semantics, merged (a replace-one recipe
        mapped by :func:`plda.engine.recipe.add_remove_steps` first).
    accuracy
        Target relative gap of ``epsilon(delta)``.

    Returns
    -------
    Query
        What a :class:`~plda.pld.PrivacyLossDistribution` of ``steps`` runs, on a cache of
        its own."""
    steps = tuple((mechanism, count) for mechanism, count in steps if count)
    realized = realized_queries(steps, accuracy)
    return one_shot(laws_by_direction(steps), accuracy, realized=realized)


def realized_queries(steps, accuracy: float) -> tuple[Query, ...]:
    """The drivers of the realized compositions of ``steps``.

    Parameters
    ----------
    steps
        ``((mechanism, count), ...)`` under add/remove semantics, merged.
    accuracy
        Target relative gap of ``epsilon(delta)``.

    Returns
    -------
    tuple of Query
        One :func:`recipe_query` per :func:`plda.engine.recipe.realized_recipes` recipe;
        empty when every factor is tight."""
    return tuple(recipe_query(recipe, accuracy) for recipe in realized_recipes(steps))
