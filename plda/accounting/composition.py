"""The composition path of an accountant's history: plan, compose, query, with reuse.

A training loop asks for epsilon after many steps, and every answer is a new composition. Here

- the per-step laws are discretized once per grid step ``h``
  (:func:`plda.discretization.discretize.discretize`, cached) and composed by the accountant's
  own :class:`~plda.engine.composer.Composer`, which
  keeps spectra, their binary powers ``X^(2^j)`` and running products: the spectrum of ``k``
  steps is a product of ``popcount(k)`` cached arrays, a history that appended factors
  multiplies in only the new ones, and a query costs one inverse FFT per composed law;
- the plan (:class:`~plda.engine.plan.Plan`) is the one that met the accuracy for the *horizon*
  history (:func:`plda.accounting.history.horizon`): its grid step, and for a noise schedule
  its FFT length, stay put while the history grows;
- :meth:`HistoryComposition.epsilon_pair` composes only the pessimistic version when asked,
  and skips a direction that a cheap bound at a longer history shows to be dominated (for
  DP-SGD the removal direction leads, so one law is composed per query);
- deltas below ``1e-8`` go to :class:`~plda.pld.PrivacyLossDistribution` (tilted composition).

Every choice depends on the history and the query alone, so a reloaded accountant answers bit
for bit like the original.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from plda._internal.errors import GridTooLarge, check_bracket, quiet_accuracy
from plda.accounting.history import (
    CACHE_BYTES,
    DOMINANCE,
    MANY_MECHANISMS,
    ORDER_RANGE,
    PLANNING_BYTES,
    PREFIXES_KEPT,
    RESULTS_KEPT,
    TAIL,
    TILTED_BELOW,
    checkpoint,
    coarsened,
    max_gap,
)
from plda.accounting.history import horizon as horizon_of
from plda.discretization.discretize import discretize
from plda.engine.composer import Composer
from plda.engine.plan import MAX_GRID, MIN_STEP, Plan, halved_step, ladder_step, pilot, refine
from plda.engine.recipe import merge as merge_runs
from plda.pld import PrivacyLossDistribution, direction_laws


class HistoryComposition:
    """Certified epsilon / delta bounds of a history, with everything reusable kept.

    Not thread-safe by itself: :class:`plda.PLDAccountant` calls it under its
    lock."""

    def __init__(self, relation: str, accuracy: float):
        self._relation, self._accuracy = relation, accuracy
        settings = dict(tail=TAIL, order_range=ORDER_RANGE, ladder=True, from_zero=True, keep=True)
        self._composer = Composer(cache_bytes=CACHE_BYTES, prefixes=PREFIXES_KEPT, **settings)
        # the horizon and checkpoint histories (they only plan and bound) on a small budget: a
        # schedule's horizon laws change as it grows, and would hold more than the history's
        self._planning = Composer(cache_bytes=PLANNING_BYTES, prefixes=1, **settings)
        self.results: OrderedDict = OrderedDict()
        self._steps, self._lengths, self._refined, self._checkpoints = {}, {}, {}, {}
        self._coarse: list = []  # (components, coarsened, horizon) of the last few asked

    def clear(self) -> None:
        """Forget every kept result, plan and spectrum."""
        self._coarse = []
        for kept in (self.results, self._steps, self._lengths, self._refined, self._checkpoints):
            kept.clear()
        self._composer.clear()
        self._planning.clear()

    def delta_pair(self, history, e: np.ndarray, epsilon, need_lower: bool):
        """``(lower, upper)`` delta bounds at ``e`` (lower None if not ``need_lower``)."""
        components = merge_runs(history)
        recipe = PrivacyLossDistribution(components, self._relation, self._accuracy)
        first, unit = self._grid_step(components)
        try:
            versions = self.versions(recipe, first, lower=False)
        except GridTooLarge:
            return tuple(recipe.delta_bounds(epsilon))  # delta bounds never warn
        # as the engine: refine for the epsilon gap at the deltas being reported (below ~1e-10
        # the FFT's rounding floor is reached and refining cannot help)
        step = first
        probe = np.ravel(np.max([v[0].delta(e) for v in versions.values()], axis=0))
        probe = probe[(probe > 1e-10) & (probe < 1)]
        if probe.size:
            probe = probe[:: max(1, probe.size // 16)]
            refined = self.horizon_step(components, probe)
            if refined is None:
                refined = self._refine(recipe, first, probe, unit)[0]
            if refined is not None:
                try:
                    versions = self.versions(recipe, refined, lower=need_lower)
                    step = refined
                except GridTooLarge:
                    pass
        try:
            versions = self.versions(recipe, step, lower=need_lower)
        except GridTooLarge:  # beyond the fast path's grid cap: the engine's (capped) grid
            return tuple(recipe.delta_bounds(epsilon))
        upper = np.max([v[0].delta(e) for v in versions.values()], axis=0)
        lower = np.max([v[1].delta(e) for v in versions.values()], axis=0) if need_lower else None
        # deltas below the FFT's floor: the engine's tilted composition (decided on the upper
        # bound, which both delta and delta_bounds compute, so they stay equal)
        small = np.ravel((upper > 0) & (upper < TILTED_BELOW))
        if small.any():
            tilted = recipe.delta_bounds(np.ravel(e)[small])
            upper = np.ravel(upper).copy()
            upper[small] = np.ravel(tilted.upper)
            upper = upper.reshape(np.shape(e))
            if need_lower:
                lower = np.ravel(lower).copy()
                lower[small] = np.ravel(tilted.lower)
                lower = lower.reshape(np.shape(e))
        if not need_lower:
            return None, upper
        check_bracket(lower, upper, query="delta_bounds")
        return lower, upper

    # ---------------------------------------------------------------- internals
    def epsilon_pair(self, history, d: np.ndarray, need_lower: bool):
        """``(lower, upper)`` epsilon bounds at ``d`` (lower None if not ``need_lower``).

        Deltas below ``TILTED_BELOW`` go to the engine, whose exponentially tilted
        composition resolves them (the fast path's FFT floor would leave a gap of several
        percent there); the others take :meth:`_fast_epsilon_pair`."""
        flat = np.ravel(d)
        small = (flat > 0) & (flat < TILTED_BELOW)
        if not small.any():
            return self._fast_epsilon_pair(history, d, need_lower)
        recipe = PrivacyLossDistribution(merge_runs(history), self._relation, self._accuracy)
        with quiet_accuracy():  # epsilon_bounds warns once, for the whole answer
            tilted = recipe.epsilon_bounds(flat[small])
        lower, upper = np.empty(flat.shape), np.empty(flat.shape)
        lower[small], upper[small] = np.ravel(tilted.lower), np.ravel(tilted.upper)
        if not small.all():
            rest_lower, rest_upper = self._fast_epsilon_pair(history, flat[~small], need_lower)
            upper[~small] = rest_upper
            lower[~small] = rest_lower if need_lower else 0.0
        return (lower.reshape(d.shape) if need_lower else None), upper.reshape(d.shape)

    def _fast_epsilon_pair(self, history, d: np.ndarray, need_lower: bool):
        """``(lower, upper)`` epsilon bounds at ``d`` by the cached-spectrum composition.

        The grid step is the one that met the accuracy for the *horizon* history (every count
        rounded up to a power of two, see :meth:`_horizon_step`): the gap grows with the step
        counts, so that step serves every history up to the horizon, and the step depends on
        the horizon and ``d`` only. Hence ``epsilon`` needs no optimistic version to choose its
        grid and equals ``epsilon_bounds(...).upper``. Where the horizon does not fit under the
        grid cap, the step is refined on the history itself (and beyond that the engine takes
        over)."""
        components = merge_runs(history)
        recipe = PrivacyLossDistribution(components, self._relation, self._accuracy)
        flat = np.ravel(d)
        step, horizon_uppers, order = self._horizon(components, flat)
        if step is not None:
            try:
                return self._directed_pair(
                    components, recipe, step, d, need_lower, horizon_uppers, order
                )
            except GridTooLarge:
                pass
        first, unit = self._grid_step(components)
        step, lower, upper, _ = self._refine(recipe, first, flat, unit)
        if step is None:
            # beyond the fast path's grid cap: the engine picks its own (capped) grid
            with quiet_accuracy():  # epsilon_bounds warns once, for the whole answer
                return tuple(recipe.epsilon_bounds(d))
        return lower.reshape(d.shape), upper.reshape(d.shape)

    def _directed_pair(self, components, recipe, step, d, need_lower, horizon_uppers, order):
        """Epsilon bounds at ``d`` on grid ``step``: the maximum over the relation's directions.

        A direction is skipped when it is dominated: composing more steps can only increase
        ``delta(eps)`` (the shorter run is a post-processing of the longer one), so a
        direction's upper bound at a longer history bounds it at this one. Two such histories
        are at hand: the horizon (its bounds come free with the grid choice) and the
        *checkpoint* (counts rounded up by at most 1/8, see :func:`_checkpoint`, one per many
        queries). If the bound is below the leading direction's upper bound here, with a
        margin of ``DOMINANCE``, the skipped direction cannot raise the maximum, and the
        leading direction's lower bound is a lower bound of the maximum. For DP-SGD the removal
        direction leads by 20-40%, so queries compose one direction instead of two. Every
        decision depends on the history and ``d`` only."""
        lead = order[0]
        versions = self.versions(recipe, step, lower=need_lower, directions=(lead,))
        upper = versions[lead][0].epsilon(d)
        lower = versions[lead][1].epsilon(d) if need_lower else None

        def dominated(bounds, direction):
            return np.all(bounds[direction] < upper * (1 - DOMINANCE))

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
                check_recipe = PrivacyLossDistribution(check, self._relation, self._accuracy)
                laws = self.versions(
                    check_recipe, step, lower=False, directions=tuple(order[1:]), kept=False
                )
                bounds = {D: laws[D][0].epsilon(d) for D in order[1:]}
                if len(self._checkpoints) > 64:
                    self._checkpoints.clear()
                self._checkpoints[key] = bounds
            others = [D for D in others if not dominated(bounds, D)]
        for direction in others:
            pair = self.versions(recipe, step, need_lower, (direction,))[direction]
            upper = np.maximum(upper, pair[0].epsilon(d))
            if need_lower:
                lower = np.maximum(lower, pair[1].epsilon(d))
        if not need_lower:
            return None, upper
        check_bracket(lower, upper, query="epsilon_bounds")
        return lower, upper

    def _coarsened(self, components) -> tuple:
        """``(coarsened, horizon)`` of ``components``, kept for the last four tuples asked (by
        identity): a query asks for them several times, for its history and its checkpoint,
        and coarsening a noise schedule walks every step."""
        for held in self._coarse:
            if held[0] is components:
                return held[1:]
        coarse = coarsened(components)
        self._coarse = [(components, coarse, horizon_of(components, coarse)), *self._coarse[:3]]
        return self._coarse[0][1:]

    def horizon_step(self, components, d: np.ndarray) -> float | None:
        """The grid step meeting the accuracy at ``d`` for the horizon history, cached; None if
        the horizon does not fit under the grid cap."""
        return self._horizon(components, d)[0]

    def _horizon(self, components, d: np.ndarray) -> tuple:
        """``(step, uppers, order)``: :meth:`horizon_step`, each direction's epsilon upper
        bound at ``d`` for the horizon history on that step (a dominance bound, as the horizon
        history has at least as many steps of every mechanism), and the directions by
        decreasing bound (the leading one first)."""
        horizon = self._coarsened(components)[1]
        key = (horizon, d.tobytes(), d.shape)
        hit = self._refined.get(key)
        if hit is None:
            first, unit = self._grid_step(components)
            if len(self._refined) > 256:
                self._refined.clear()
            horizon_pld = PrivacyLossDistribution(horizon, self._relation, self._accuracy)
            step, _, _, uppers = self._refine(horizon_pld, first, d, unit, kept=False)
            order = (
                sorted(uppers, key=lambda D: -float(np.max(uppers[D])))
                if uppers is not None
                else None
            )
            hit = self._refined[key] = (step, uppers, order)
        return hit

    def _refine(self, recipe, step: float, d: np.ndarray, unit, kept: bool = True):
        """Refine ``step`` until the epsilon gap meets the accuracy (the planner's one loop,
        :func:`plda.engine.plan.refine`) with every step on the power-of-two ladder of
        :func:`plda.engine.plan.ladder_step` (``unit``: the atoms' common spacing), so the grid
        stays put while the history grows. Returns ``(step, lower, upper, uppers)``
        (``uppers``: each direction's upper bound); step None if even the first grid is too
        large. ``kept``: see :meth:`versions`."""
        try:
            gap = self._trial_gap(recipe, step, d, kept)
        except GridTooLarge:
            return None, None, None, None

        def next_step(current: float, gap: float) -> float | None:
            finer = halved_step(current, gap, self._accuracy, unit)
            return finer if finer >= MIN_STEP else None

        step, _ = refine(
            step, gap, lambda h: self._trial_gap(recipe, h, d, kept), self._accuracy, next_step
        )
        try:
            lower, upper, uppers = self._bounds_at(recipe, step, d, kept)  # lead composed
        except GridTooLarge:  # another direction does not fit: the engine takes over
            return None, None, None, None
        return step, lower, upper, uppers

    def _trial_gap(self, recipe, step: float, d: np.ndarray, kept: bool) -> float:
        """The relative epsilon gap on grid ``step``, for deciding whether to refine.

        The first direction (removal, which leads for subsampled mechanisms) is composed
        first; if its own gap misses the accuracy the grid is refined without composing the
        others (a grid that fails need not be completed). Otherwise the gap of the maximum over
        all directions decides."""
        directions = tuple(direction_laws(recipe))
        lead = directions[0]
        pair = self.versions(recipe, step, directions=(lead,), kept=kept)[lead]
        upper = pair[0].epsilon(d)
        gap = max_gap(np.minimum(pair[1].epsilon(d), upper), upper)
        if gap > self._accuracy and len(directions) > 1:
            return gap
        lower, upper, _ = self._bounds_at(recipe, step, d, kept)
        return max_gap(lower, upper)

    def _bounds_at(self, recipe, step: float, d: np.ndarray, kept: bool = True):
        """Epsilon bounds (the maximum over directions) on grid ``step``, composing the
        optimistic version only for the directions whose upper bound is within the accuracy of
        the largest: another direction's lower bound is below ``upper * (1 - accuracy)``, so it
        can raise the lower bound of the maximum only where the gap misses the accuracy anyway
        (and leaving it out keeps a valid, if looser, lower bound)."""
        versions = self.versions(recipe, step, lower=False, kept=kept)
        uppers = {direction: pair[0].epsilon(d) for direction, pair in versions.items()}
        upper = np.max(list(uppers.values()), axis=0)
        lower = None
        for direction in sorted(uppers, key=lambda name: -float(np.max(uppers[name]))):
            if lower is not None and np.all(uppers[direction] < upper * (1 - self._accuracy)):
                continue
            pair = self.versions(recipe, step, directions=(direction,), kept=kept)[direction]
            found = pair[1].epsilon(d)
            lower = found if lower is None else np.maximum(lower, found)
        check_bracket(lower, upper, query="epsilon_bounds")
        return lower, upper, uppers

    def _grid_step(self, components) -> tuple[float, float | None]:
        """Initial grid step for a history: the planner's pilot step for the history with
        every count rounded up to a power of two, put on the ladder of
        :func:`plda.engine.plan.ladder_step` (so it stays put while the history grows); with
        the atoms' common unit."""
        horizon = self._coarsened(components)[1]
        if horizon not in self._steps:
            laws = direction_laws(PrivacyLossDistribution(horizon, self._relation, self._accuracy))
            found = pilot(laws, self._accuracy)
            # without atoms the rung nearest the pilot's step, not the one below (refinement
            # halves a step that misses, never coarsens one finer than needed)
            step = ladder_step(found.step * (1.0 if found.atom_unit else 1.5), found.atom_unit)
            if len(self._steps) > 64:
                self._steps.clear()
            self._steps[horizon] = (step, found.atom_unit)
        return self._steps[horizon]

    def plan(self, components, step: float) -> Plan:
        """The plan of a composition of ``components`` on grid ``step``: with many distinct
        mechanisms (a noise schedule), the FFT length of the horizon's leading direction, so
        that the length, and with it every factor's spectrum, stays put until the horizon
        moves (each distinct law is then transformed about once per horizon, not once per
        ladder length the history passes)."""
        horizon = self._coarsened(components)[1]
        many = len(components) > MANY_MECHANISMS  # (the horizon itself has few)
        key = (horizon, step, many)
        length = self._lengths.get(key)
        if length is None:
            length = 0
            if many:
                recipe = PrivacyLossDistribution(horizon, self._relation, self._accuracy)
                lead = next(iter(direction_laws(recipe).values()))
                factors = [(discretize(law, step, lower=False)[0], k) for law, k in lead]
                found = self._composer.length(factors)
                length = 1 << (found - 1).bit_length()  # powers of two: it moves rarely
                length = length if length <= MAX_GRID else 0
            if len(self._lengths) > 256:
                self._lengths.clear()
            self._lengths[key] = length
        return Plan(step=step, length=length, tail=TAIL)

    def versions(
        self,
        recipe: PrivacyLossDistribution,
        step: float,
        lower: bool = True,
        directions: tuple | None = None,
        kept: bool = True,
    ) -> dict:
        """``{direction: [upper, lower]}`` composed laws of ``recipe`` on grid ``step``; the
        optimistic ones only if ``lower``, and only the ``directions`` given (default all);
        the others are None until first needed. ``kept``: on the history's composer (False: on
        the planning one, for the horizon and checkpoint histories)."""
        key = (recipe.components, step) + (() if kept else ("planning",))
        laws = direction_laws(recipe)
        plan = self.plan(recipe.components, step)
        out = self.results.get(key)
        if out is None:
            out = {direction: [None, None] for direction in laws}
            self.results[key] = out
            while len(self.results) > RESULTS_KEPT:
                self.results.popitem(last=False)
        else:
            self.results.move_to_end(key)
        for direction, pair in out.items():
            if directions is not None and direction not in directions:
                continue
            for index in (0, 1) if lower else (0,):
                if pair[index] is None:
                    factors = [(discretize(f, step, lower)[index], k) for f, k in laws[direction]]
                    # the distinct laws (count 1: a noise schedule changed at every step) first,
                    # the repeated ones last: a growing history then extends the composer's
                    # running product of the former (see plda.engine.composer)
                    factors.sort(key=lambda factor: factor[1] > 1)
                    composer = self._composer if kept else self._planning
                    pair[index] = composer.compose(factors, MAX_GRID, plan.length)
        return out
