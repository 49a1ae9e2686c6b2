"""The accountant's query path: what a growing history adds to the driver's stages.

Each answer takes the stages of :class:`plda.engine.query.Query`; a history adds its caching
composer (:class:`~plda.accounting.composer.HistoryComposer`), its step policy on a ladder set
by the *horizon* (:class:`~plda.accounting.ladder.LadderSteps`), checkpoint dominance (a
direction a longer history's bound shows dominated is not composed) and the hand-off of deltas
below the FFT's rounding floor to the one-shot driver. Every choice depends on the history and
the query alone, so a reloaded accountant answers bit for bit like the original. Why each
holds: ``docs/accountant.md``.
"""

from __future__ import annotations

from operator import methodcaller

import numpy as np

from plda._internal.errors import GridTooLarge, check_bracket, quiet_accuracy
from plda.accounting.composer import HistoryComposer
from plda.accounting.history import (
    CACHE_BYTES,
    DOMINANCE,
    ORDER_RANGE,
    PLANNING_BYTES,
    PREFIXES_KEPT,
    TAIL,
    checkpoint,
    coarsened,
    grew_from,
)
from plda.accounting.history import horizon as horizon_of
from plda.accounting.ladder import LadderSteps, ladder_step
from plda.conversions.capped import currency_capped
from plda.engine.composer import FFT_FLOOR, Composer, rounding_floor
from plda.engine.gaps import monotone_envelope, probes, warn_where_delta_misses
from plda.engine.plan import pilot
from plda.engine.query import Query, realized_queries, recipe_query
from plda.engine.recipe import add_remove_steps, bounds_over_directions
from plda.engine.recipe import merge as merge_runs
from plda.mechanisms.base import DIRECTIONS


class HistoryComposition:
    """Certified epsilon / delta bounds of a history, with everything reusable kept.

    Not thread-safe by itself: :class:`plda.PLDAccountant` calls it under its lock.

    Parameters
    ----------
    relation : str
        The neighbouring relation.
    accuracy : float
        Target relative gap of ``epsilon(delta)``.
    """

    def __init__(self, relation: str, accuracy: float):
        self._relation, self._accuracy = relation, accuracy
        settings = dict(tail=TAIL, order_range=ORDER_RANGE, ladder=True, from_zero=True, keep=True)
        self._composer = Composer(cache_bytes=CACHE_BYTES, prefixes=PREFIXES_KEPT, **settings)
        # the horizon and checkpoint histories (they only plan and bound) on a small budget: a
        # schedule's horizon laws change as it grows, and would hold more than the history's
        self._planning = Composer(cache_bytes=PLANNING_BYTES, prefixes=1, keep_powers=False,
                                  **settings)
        self.store = HistoryComposer(relation, self._composer, self._planning)
        self._steps, self._refined, self._checkpoints = {}, {}, {}
        self._coarse: list = []  # (components, coarsened, horizon) of the last few asked

    def clear(self) -> None:
        """Forget every kept result, plan and spectrum."""
        self._coarse = []
        for kept in (self._steps, self._refined, self._checkpoints, self.store, self._composer,
                     self._planning):
            kept.clear()

    # ------------------------------------------------------------------- queries
    def epsilon_pair(self, history, d: np.ndarray, need_lower: bool):
        """``(lower, upper)`` epsilon bounds of ``history`` at ``d``.

        Deltas below the rounding floor (:func:`plda.engine.composer.rounding_floor` of the horizon
        history on its first grid, see :meth:`horizon_step`) go to the one-shot driver,
        whose exponentially tilted composition resolves them (this path's grids would leave a
        gap of several percent there); the others take the cached-spectrum composition.

        Parameters
        ----------
        history : list of [Mechanism, int]
            The run-length history.
        d : numpy.ndarray
            Deltas, checked to lie in ``[0, 1]``.
        need_lower : bool
            Whether the lower bound is wanted.

        Returns
        -------
        tuple of numpy.ndarray
            ``(lower, upper)`` in the shape of ``d``; ``lower`` is None if not ``need_lower``.
        """
        lower, upper = self._uncapped_epsilon_pair(history, d, need_lower)
        # issue 29; the accountant checks the bracket once its realized lower bound is in
        # (this lower bound is the composed pairs', which may exceed a capped upper bound)
        return lower, currency_capped(upper, d, components=history, relation=self._relation,
                                      query="epsilon")

    def _uncapped_epsilon_pair(self, history, d: np.ndarray, need_lower: bool):
        components = merge_runs(history)
        flat = np.ravel(d)
        small = (flat > 0) & (flat < self._horizon(components, flat)[3])
        if not small.any():
            return self._fast_epsilon_pair(components, d, need_lower)
        with quiet_accuracy():  # epsilon_bounds warns once, for the whole answer
            tilted_lower, tilted_upper = self._one_shot(components).epsilon_bounds(
                flat[small]
            )
        lower, upper = np.empty(flat.shape), np.empty(flat.shape)
        lower[small], upper[small] = np.ravel(tilted_lower), np.ravel(tilted_upper)
        if not small.all():
            rest_lower, rest_upper = self._fast_epsilon_pair(components, flat[~small], need_lower)
            upper[~small] = rest_upper
            lower[~small] = rest_lower if need_lower else 0.0
            # (the two paths' bounds, made consistent: epsilon(delta) is non-increasing)
            lower, upper = monotone_envelope(flat, lower, upper)
        return (lower.reshape(d.shape) if need_lower else None), upper.reshape(d.shape)

    def delta_pair(self, history, e: np.ndarray, need_lower: bool):
        """``(lower, upper)`` delta bounds of ``history`` at ``e``.

        On the grid refined for the epsilon gap at the deltas reported
        (:func:`~plda.engine.gaps.probes`), the horizon's if it fits; deltas below the FFT's
        floor from the one-shot driver (decided on the upper bound, which both ``delta`` and
        ``delta_bounds`` compute, so they stay equal).

        Parameters
        ----------
        history : list of [Mechanism, int]
            The run-length history.
        e : numpy.ndarray
            Epsilons, checked to lie in ``[0, inf]``.
        need_lower : bool
            Whether the lower bound is wanted.

        Returns
        -------
        tuple of numpy.ndarray
            ``(lower, upper)`` in the shape of ``e``; ``lower`` is None if not ``need_lower``.
        """
        lower, upper = self._uncapped_delta_pair(history, e, need_lower)
        # issue 29; the accountant checks the bracket once its realized lower bound is in
        # (this lower bound is the composed pairs', which may exceed a capped upper bound)
        return lower, currency_capped(upper, e, components=history, relation=self._relation,
                                      query="delta")

    def _uncapped_delta_pair(self, history, e: np.ndarray, need_lower: bool):
        components = merge_runs(history)
        first, unit = self._grid_step(components)
        try:
            versions = self.versions(components, first)
            probe = probes([v.upper.delta(e) for v in versions.values()])
            floor = rounding_floor(versions, self._accuracy)
            probe = probe[probe >= floor]  # (those below are the tilt's: refining cannot help)
        except GridTooLarge:  # beyond this path's grid cap: the driver's (capped) grid
            return tuple(self._one_shot(components).delta_bounds(e))
        found, used = None, first  # the bounds, and the grid step they were read on
        if probe.size:
            refined = self.horizon_step(components, probe)
            if refined is None:
                refined = self._refine(components, first, probe, unit)[0]
            if refined is not None:
                try:
                    found = self._bounds_at(components, refined, "delta", e, need_lower)
                    used = refined
                except GridTooLarge:
                    pass
        if found is None:
            try:
                found = self._bounds_at(components, first, "delta", e, need_lower)
            except GridTooLarge:
                return tuple(self._one_shot(components).delta_bounds(e))
        lower, upper = found
        if need_lower:  # delta_bounds says where its answer misses the accuracy
            warn_where_delta_misses(self.versions(components, used, both=DIRECTIONS), lower,
                                    upper, self._accuracy, floor=floor)
        small = np.ravel((upper > 0) & (upper < floor))
        if small.any():
            tilted_lower, tilted_upper = self._one_shot(components).delta_bounds(
                np.ravel(e)[small]
            )
            upper = np.ravel(upper).copy()
            upper[small] = np.ravel(tilted_upper)
            low = np.ravel(lower).copy() if need_lower else np.zeros(upper.shape)
            low[small] = np.ravel(tilted_lower)
            # (the two paths' bounds, made consistent: delta(epsilon) is non-increasing)
            low, upper = monotone_envelope(np.ravel(e), low, upper)
            upper = upper.reshape(np.shape(e))
            if need_lower:
                lower = low.reshape(np.shape(e))
                check_bracket(lower, upper, query="delta_bounds")
        return lower, upper

    def realized(self, history) -> tuple[Query, ...]:
        """The driver's queries of the realized compositions of ``history``.

        :func:`plda.engine.query.realized_queries`: their largest lower bound is the certified
        one of a history whose mechanisms are not all tight.

        Parameters
        ----------
        history : list of [Mechanism, int]
            The run-length history.

        Returns
        -------
        tuple of Query
            One query per realized composition; empty when every mechanism is tight.
        """
        return realized_queries(add_remove_steps(merge_runs(history), self._relation),
                                self._accuracy)

    # ---------------------------------------------------------------- internals
    def _one_shot(self, components) -> Query:
        """The one-shot driver of ``components`` (:func:`plda.engine.query.recipe_query`), as
        a :class:`~plda.pld.PrivacyLossDistribution` of them runs it."""
        return recipe_query(add_remove_steps(components, self._relation), self._accuracy)

    def _fast_epsilon_pair(self, components, d: np.ndarray, need_lower: bool):
        """``(lower, upper)`` epsilon bounds at ``d`` by the cached-spectrum composition.

        The grid step is the one that met the accuracy for the *horizon* history (every count
        rounded up to a power of two, see :meth:`_horizon`): the gap grows with the step
        counts, so that step serves every history up to the horizon, and the step depends on
        the horizon and ``d`` only. Hence ``epsilon`` needs no optimistic version to choose its
        grid and equals ``epsilon_bounds(...).upper``. Where the horizon does not fit under the
        grid cap, the step is refined on the history itself (and beyond that the one-shot
        driver takes over)."""
        flat = np.ravel(d)
        step, horizon_uppers, order, floor = self._horizon(components, flat)
        if step is not None:
            # the horizon's bounds are at the deltas it resolved (at or above its floor, in
            # order); at the others (0, or below the floor) they say nothing: +inf there
            resolved = flat >= floor
            spread = {}
            for direction, bounds in horizon_uppers.items():
                spread[direction] = np.full(flat.shape, np.inf)
                spread[direction][resolved] = bounds
            try:
                return self._directed_pair(components, step, d, need_lower, spread, order)
            except GridTooLarge:
                pass
        first, unit = self._grid_step(components)
        step, lower, upper, _ = self._refine(components, first, flat, unit)
        if step is None:
            # beyond this path's grid cap: the driver picks its own (capped) grid
            with quiet_accuracy():  # epsilon_bounds warns once, for the whole answer
                return tuple(self._one_shot(components).epsilon_bounds(d))
        return lower.reshape(d.shape), upper.reshape(d.shape)

    def _directed_pair(self, components, step, d, need_lower, horizon_uppers, order):
        """Epsilon bounds at ``d`` on grid ``step``: the maximum over the relation's directions.

        A direction is skipped when it is dominated: composing more steps can only increase
        ``delta(eps)`` (the shorter run is a post-processing of the longer one), so a
        direction's upper bound at a longer history bounds it at this one. Two such histories
        are at hand: the horizon (its bounds come free with the grid choice) and the
        *checkpoint* (counts rounded up by at most 1/8, see
        :func:`~plda.accounting.history.checkpoint`, one per many queries). If the bound is
        below the leading direction's upper bound here, with a margin of ``DOMINANCE``, the
        skipped direction cannot raise the maximum, and the leading direction's lower bound is
        a lower bound of the maximum. For DP-SGD the removal direction leads by 20-40%, so
        queries compose one direction instead of two. Every decision depends on the history
        and ``d`` only."""
        lead = order[0]
        versions = self.versions(components, step, both=DIRECTIONS if need_lower else ())
        upper = versions[lead].upper.epsilon(d)

        def dominated(bounds, direction):
            # compared delta by delta, flat (a bound at one delta says nothing at another: a
            # dominance read at 0.1 dropped the add direction at 0, where it led, 1.0 < 5)
            return np.all(np.ravel(bounds[direction]) < np.ravel(upper) * (1 - DOMINANCE))

        # the horizon's bounds first (known from choosing the grid, so free), then the
        # checkpoint's (closer to this history, computed once for many queries)
        others = [D for D in order[1:] if not dominated(horizon_uppers, D)]
        check = checkpoint(components, self._coarsened(components)[0])
        if others and check != components:
            key = (check, step, d.tobytes(), d.shape)
            bounds = self._checkpoints.get(key)
            if bounds is None:
                # every non-leading direction (the lead is the same for all histories sharing
                # this checkpoint, as they share its horizon), so that what is skipped does
                # not depend on which of them asked first
                laws = self.versions(check, step, kept=False)
                bounds = {D: laws[D].upper.epsilon(d) for D in order[1:]}
                if len(self._checkpoints) > 64:
                    self._checkpoints.clear()
                self._checkpoints[key] = bounds
            others = [D for D in others if not dominated(bounds, D)]
        chosen = {D: versions[D] for D in (lead, *others)}
        return bounds_over_directions(
            chosen, methodcaller("epsilon", d), lower=need_lower, known={lead: upper}
        )

    def _bounds_at(self, components, step: float, kind: str, targets, need_lower: bool):
        """``(lower, upper)`` of ``kind`` (``"epsilon"`` or ``"delta"``) at ``targets`` on grid
        ``step``, the maximum over every direction (lower None if not ``need_lower``)."""
        versions = self.versions(components, step, both=DIRECTIONS if need_lower else ())
        return bounds_over_directions(versions, methodcaller(kind, targets), lower=need_lower)

    def _coarsened(self, components) -> tuple:
        """``(coarsened, horizon)`` of ``components``, kept for the last four tuples asked (by
        identity): a query asks for them several times, for its history and its checkpoint,
        and coarsening a noise schedule walks every step."""
        for held in self._coarse:
            if held[0] is components:
                return held[1:]
        # a history grown by appending runs coarsens its new runs only
        earlier = next((held[:2] for held in self._coarse if grew_from(components, held[0])),
                       None)
        coarse = coarsened(components, earlier)
        self._coarse = [(components, coarse, horizon_of(components, coarse)), *self._coarse[:3]]
        return self._coarse[0][1:]

    def horizon_step(self, components, d: np.ndarray) -> float | None:
        """The grid step meeting the accuracy at ``d`` for the horizon history, cached.

        Parameters
        ----------
        components : tuple of (Mechanism, int)
            The merged run-length history.
        d : numpy.ndarray
            Deltas.

        Returns
        -------
        float or None
            The step; None if the horizon does not fit under the grid cap, or if every delta
            lies below its rounding floor (refining cannot resolve those).
        """
        return self._horizon(components, d)[0]

    def _horizon(self, components, d: np.ndarray) -> tuple:
        """``(step, uppers, order, floor)``: :meth:`horizon_step`, each direction's epsilon
        upper bound at ``d`` for the horizon history on that step (a dominance bound, as the
        horizon history has at least as many steps of every mechanism), the directions by
        decreasing bound (the leading one first), and the rounding floor of the horizon's first
        grid (:func:`plda.engine.composer.rounding_floor`: the deltas below it are not refined for,
        they go to the one-shot driver)."""
        horizon = self._coarsened(components)[1]
        key = (horizon, d.tobytes(), d.shape)
        hit = self._refined.get(key)
        if hit is None:
            first, unit = self._grid_step(components)
            if len(self._refined) > 256:
                self._refined.clear()
            try:  # (the refinement's own first grid)
                floor = rounding_floor(self.versions(horizon, first, both=("remove",), kept=False),
                                       self._accuracy)
            except GridTooLarge:
                floor = FFT_FLOOR
            resolved = d[d >= floor]  # (no step for none: every delta is the one-shot's)
            step, uppers = None, None
            if resolved.size:
                step, _, _, uppers = self._refine(horizon, first, resolved, unit, kept=False)
            order = (
                sorted(uppers, key=lambda D: -float(np.max(uppers[D])))
                if uppers is not None
                else None
            )
            hit = self._refined[key] = (step, uppers, order, floor)
        return hit

    def _refine(self, components, step: float, d: np.ndarray, unit, kept: bool = True):
        """Refine ``step`` until the epsilon gap at ``d`` meets the accuracy (the driver's
        :meth:`~plda.engine.query.Query.refined` with :class:`LadderSteps`). Returns ``(step,
        lower, upper, uppers)`` on the step reached (``uppers``: each direction's upper bound;
        the lower bound reads a non-leading direction within the accuracy only); all None if
        the grid does not fit. ``kept``: see :meth:`versions`."""
        query = Query(
            accuracy=self._accuracy,
            policy=LadderSteps(accuracy=self._accuracy, unit=unit),
            composer=lambda plan: self.versions(components, plan.step, both=("remove",),
                                                kept=kept),
        )
        try:
            versions, step = query.refined(step, d)
            uppers = {D: pair.upper.epsilon(d) for D, pair in versions.items()}
            lower, upper = bounds_over_directions(
                versions, methodcaller("epsilon", d), margin=self._accuracy, known=uppers
            )
        except GridTooLarge:  # another direction does not fit: the one-shot driver takes over
            return None, None, None, None
        return step, lower, upper, uppers

    def _grid_step(self, components) -> tuple[float, float | None]:
        """Initial grid step for a history: the planner's pilot step for the history with
        every count rounded up to a power of two, put on the ladder of
        :func:`ladder_step` (so it stays put while the history grows); with
        the atoms' common unit."""
        horizon = self._coarsened(components)[1]
        if horizon not in self._steps:
            found = pilot(self.store.laws(horizon), self._accuracy)
            # without atoms the rung nearest the pilot's step, not the one below (refinement
            # halves a step that misses, never coarsens one finer than needed)
            step = ladder_step(found.step * (1.0 if found.atom_unit else 1.5), found.atom_unit)
            if len(self._steps) > 64:
                self._steps.clear()
            self._steps[horizon] = (step, found.atom_unit)
        return self._steps[horizon]

    def versions(self, components, step: float, *, both=(), kept: bool = True) -> dict:
        """The composed laws of ``components`` on grid ``step``, read from the store.

        :meth:`plda.accounting.composer.HistoryComposer.versions`, planned for the history's
        horizon.

        Parameters
        ----------
        components : tuple of (Mechanism, int)
            The merged run-length history.
        step : float
            The grid step.
        both : tuple of str, optional
            Directions whose optimistic version will be read too.
        kept : bool, optional
            On the history's composer; False: on the planning one.

        Returns
        -------
        dict of str to StoredPair
            ``{direction: StoredPair}``.
        """
        horizon = self._coarsened(components)[1]
        return self.store.versions(components, horizon, step, both=both, kept=kept)
