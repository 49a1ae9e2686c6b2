"""The one query driver: certified epsilon and delta bounds of a composition.

A :class:`Query` runs the stages of every answer in order: choose and refine the grid step (its
step policy), compose the grid versions (its composer), take the maximum over the directions of
the relation, recompose below the FFT's rounding floor under an exponential tilt, and take the
lower bound from the realized compositions when a factor is not ``tight``.
:class:`~plda.pld.PrivacyLossDistribution` hands it :class:`PilotSteps` and a one-shot composer;
:class:`~plda.accountant.PLDAccountant` hands it its ladder steps and its caching composer.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from operator import methodcaller

import numpy as np

from plda._internal.chernoff import CHERNOFF_ORDERS
from plda._internal.errors import GridTooLarge, check_bracket, quiet_accuracy, warn_if_inaccurate
from plda.engine.plan import MAX_GRID, MIN_STEP, Pilot, Plan, StepPredictor, pilot, refine
from plda.engine.recipe import (
    bounds_over_directions,
    grid_versions,
    laws_by_direction,
    realized_recipes,
)

__all__ = [
    "FFT_FLOOR",
    "REFINE_FLOOR",
    "TILT_FLOOR",
    "PilotSteps",
    "Query",
    "one_shot",
    "probes",
    "realized_lower",
    "realized_queries",
    "recipe_query",
    "relative_gap",
]

#: an FFT composition resolves deltas down to about this fraction of its mass: smaller deltas
#: are answered by a composition under an exponential tilt (:mod:`plda.engine.tilt`)
FFT_FLOOR = 1e-8
#: deltas below this sit on the FFT's rounding floor, where refining the grid cannot help
REFINE_FLOOR = 1e-10
#: targets below this are left to the untilted bounds (no tilt resolves them)
TILT_FLOOR = 1e-60


@dataclass(frozen=True)
class PilotSteps:
    """The step policy of a one-shot composition: a pilot's first step, refined by predicting
    the next step from the measured gap (:class:`~plda.engine.plan.StepPredictor`), coarsened
    when the window outgrows the grid cap; or a fixed step.

    Parameters
    ----------
    accuracy
        Target relative gap of ``epsilon(delta)``.
    pilot
        The composition's pilot (:func:`~plda.engine.plan.pilot`); None with a fixed step.
    fixed
        The step the user fixed (never refined nor coarsened), or None.
    predictor
        The refinement's step predictor (one per query: it learns from the grids it saw).
    """

    accuracy: float
    pilot: Pilot | None = None
    fixed: float | None = None
    predictor: StepPredictor | None = None
    #: trial grids are judged by the gap of the maximum over every direction
    margin = None

    def current(self, plan: Plan | None, refined: bool = False) -> float:
        """The step of the latest ``plan`` (the first one until there is a plan); unless
        ``refined``, never coarser than the pilot's unrefined step, which delta and the
        conversions read as is. The first step is the fixed one, else the pilot's ``start``
        (at least its ``step``) where a refinement measures the gap and goes on from there,
        its ``step`` where the grid is used as it is."""
        if self.fixed is not None:
            first = self.fixed
        else:
            found = self.pilot
            first = found.start if refined and found.start is not None else found.step
        return first if plan is None else plan.step if refined else min(plan.step, first)

    def coarser(self, step: float, exc: GridTooLarge) -> float:
        """A step whose composition fits under the grid cap, after ``exc`` at ``step``.

        Raises
        ------
        ValueError
            With a fixed step (the user's step is never changed)."""
        if self.fixed is not None:
            raise ValueError(
                f"step={self.fixed!r} is too fine for this composition: it needs "
                f"{exc.points} grid points, more than the cap {exc.cap}"
            ) from None
        # the window is wider than the pilot predicted (very long compositions, tiny sample
        # rates): coarsen until it fits; bounds stay certified, only wider, and epsilon_bounds
        # warns if the accuracy is missed
        return step * 1.25 * exc.points / exc.cap

    def next_step(self, step: float, gap: float) -> float | None:
        """The predicted finer step, or None past the grid cap or the finest step."""
        finer = self.predictor(step, gap)
        if self.pilot.grid_points(finer) > MAX_GRID or finer < MIN_STEP:
            return None
        return finer


@dataclass(frozen=True)
class Query:
    """Certified bounds of one composition, by the stages every answer takes.

    Parameters
    ----------
    accuracy
        Target relative gap ``(upper - lower) / upper`` of ``epsilon(delta)``.
    policy
        The step policy: :class:`PilotSteps`, or the accountant's ladder
        (:class:`plda.accounting.composition.LadderSteps`). It gives ``current(plan,
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
    def versions(self, step: float, tilt: float = 0.0) -> dict:
        """``{direction: pair}`` composed to grid ``step`` (under ``tilt``), kept per plan.

        Raises
        ------
        GridTooLarge
            When the composition does not fit under the grid cap."""
        key = ("grid", Plan(step=step, tilt=tilt))
        if key not in self.cache:
            self.cache[key] = self.composer(key[1])
        return self.cache[key]

    def grid(self, targets: np.ndarray | None = None, coarse_start: bool = True) -> dict:
        """The versions on the policy's current grid, coarsened until it fits; with ``targets``
        (deltas), refined until the epsilon gap meets the accuracy there (from the policy's
        coarse start if ``coarse_start``)."""
        policy, cache = self.policy, self.cache
        step = policy.current(cache.get("plan"), refined=targets is not None and coarse_start)
        for _ in range(16):
            try:
                versions = self.versions(step)
                break
            except GridTooLarge as exc:
                step = policy.coarser(step, exc)
                cache["plan"] = Plan(step=step)
        else:  # pragma: no cover - each retry shrinks the grid by at least 1.25x
            raise GridTooLarge(0, MAX_GRID)
        if targets is None or policy.fixed is not None:
            return versions
        step = self.refined(step, targets)
        cache["plan"] = Plan(step=step)
        return self.versions(step)

    def refined(self, step: float, targets: np.ndarray) -> float:
        """The step the refinement loop (:func:`plda.engine.plan.refine`) reaches from
        ``step`` for the epsilon gap at deltas ``targets``.

        Raises
        ------
        GridTooLarge
            When the composition on ``step`` itself does not fit."""
        gap = self.gap(step, targets)
        if gap <= self.accuracy:  # refine's own first test: the grid as it is meets it
            return step
        step, _ = refine(
            step, gap, partial(self.gap, targets=targets), self.accuracy, self.policy.next_step
        )
        return step

    def gap(self, step: float, targets: np.ndarray) -> float:
        """The largest relative epsilon gap at deltas ``targets`` on grid ``step``.

        With a policy ``margin`` (the accountant's trial grids), the leading direction is
        judged first: if its own gap misses the accuracy the grid is refined without composing
        the others (a grid that fails need not be completed); otherwise the maximum over the
        directions decides, reading a non-leading direction's optimistic version only within
        ``margin`` of the upper bound."""
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
        lower, upper = bounds_over_directions(
            versions, methodcaller("epsilon", targets), margin=margin, known=known
        )
        return float(np.max(relative_gap(lower, upper), initial=0.0))

    # ----------------------------------------------------------------- the flows
    def epsilon_bounds(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Certified bounds on ``epsilon`` at deltas ``d``: refine for the deltas above the
        refinement floor (the largest at least), take the maximum over directions, tilt below
        the FFT's floor, then the realized lower bound.

        Parameters
        ----------
        d
            Deltas in ``[0, 1]``, any shape (validated by the caller).

        Returns
        -------
        tuple of numpy.ndarray
            ``(lower, upper)``, shaped like ``d``; warns (:class:`~plda.AccuracyWarning`)
            where their relative gap misses the accuracy.

        Raises
        ------
        InvertedBracketError
            Where the lower bound exceeds the upper one (a defect, never hidden)."""
        flat = np.ravel(d)
        versions = self.grid(flat[(flat >= REFINE_FLOOR) | (flat == flat.max())])
        lower, upper = bounds_over_directions(versions, methodcaller("epsilon", d))
        lower, upper = np.ravel(lower), np.ravel(upper)
        small = (flat > TILT_FLOOR) & (flat < FFT_FLOOR)
        small &= relative_gap(lower, upper) > self.accuracy
        if small.any():
            step = self.policy.current(self.cache.get("plan"), refined=True)
            lower, upper = self.tilted(versions, step, small, flat, lower, upper, "epsilon")
        lower, upper = lower.reshape(d.shape), upper.reshape(d.shape)
        warn_if_inaccurate(lower, upper, self.accuracy, query="epsilon_bounds")
        if self.realized:
            lower = realized_lower(self.realized, "epsilon", d)
        check_bracket(lower, upper, query="epsilon_bounds")
        return lower, upper

    def delta_bounds(self, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Certified bounds on ``delta`` at epsilons ``e``: refine for the epsilon gap at the
        deltas reported (:func:`probes`), take the maximum over directions, tilt below the
        FFT's floor, then the realized lower bound.

        Parameters
        ----------
        e
            Epsilons in ``[0, inf]``, any shape (validated by the caller).

        Returns
        -------
        tuple of numpy.ndarray
            ``(lower, upper)``, shaped like ``e``.

        Raises
        ------
        InvertedBracketError
            Where the lower bound exceeds the upper one (a defect, never hidden)."""
        versions = self.grid()
        known = None
        if self.policy.fixed is None:
            known = {d: pair.upper.delta(e) for d, pair in versions.items()}
            probe = probes(list(known.values()))
            if probe.size:
                versions, known = self.grid(probe, coarse_start=False), None
        lower, upper = bounds_over_directions(versions, methodcaller("delta", e), known=known)
        flat, lower, upper = np.ravel(e), np.ravel(lower), np.ravel(upper)
        small = (upper > TILT_FLOOR) & (upper < FFT_FLOOR) & (lower < upper * (1 - self.accuracy))
        if small.any():
            step = self.policy.current(self.cache.get("plan"))
            lower, upper = self.tilted(versions, step, small, flat, lower, upper, "delta")
        lower, upper = lower.reshape(e.shape), upper.reshape(e.shape)
        if self.realized:
            lower = realized_lower(self.realized, "delta", e)
        check_bracket(lower, upper, query="delta_bounds")
        return lower, upper

    # ------------------------------------------------------------ below the floor
    def tilted(self, versions: dict, step: float, small, targets, lower, upper, kind: str):
        """Below the FFT's rounding floor, recompose on grid ``step`` under the exponential
        tilt aimed at each ``small`` target (:func:`plda.engine.tilt.compose_tilted`; the tilt
        from the moments of the untilted ``versions``) and keep the tighter of the two
        certified bounds (``kind="epsilon"``: ``targets`` are deltas and ``lower, upper``
        bound epsilon; ``"delta"``: epsilons, bounding delta)."""
        tilts = chernoff_tilts(versions, targets[small], kind)
        lower, upper = lower.copy(), upper.copy()
        for tilt in np.unique(tilts):
            pick = np.nonzero(small)[0][tilts == tilt]
            # the Chernoff-optimal tilt puts the tilted mass slightly beyond the crossing loss;
            # where the optimistic side's error terms still swamp it there (its bound drops to
            # 0), a smaller tilt resolves it: 1e3 steps at q=0.01, sigma=2.29, delta=1e-12 give
            # [0.926, 0.999] with t=32 and [0.999013, 0.999018] with t=16; at delta=1e-20 t=22.6
            # is needed ([1.36, 1.38] at t=16 and 32, [1.380245, 1.380325] at 22.6)
            for attempt in (tilt, tilt / math.sqrt(2), tilt / 2):
                try:
                    tilted = self.versions(step, tilt=float(attempt))
                except MemoryError:
                    continue
                lo, up = bounds_over_directions(tilted, methodcaller(kind, targets[pick]))
                # fmin/fmax ignore a NaN from the tilted side: the untilted bound stands then
                upper[pick] = np.fmin(upper[pick], up)
                lower[pick] = np.minimum(np.fmax(lower[pick], lo), upper[pick])
                if np.all(relative_gap(lower[pick], upper[pick]) <= self.accuracy):
                    break
        return lower, upper


def realized_lower(realized: tuple, kind: str, targets: np.ndarray) -> np.ndarray:
    """The certified lower bound of a composition whose factors are not all ``tight``.

    Each realized composition is realized by one pair of neighbouring datasets, so its lower
    bound is certified, while the composition's own lower bound brackets a dominating pair
    that no datasets are known to realize.

    Parameters
    ----------
    realized
        The :class:`Query` of each realized composition (:func:`realized_queries`).
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


def one_shot(
    laws: dict[str, list],
    accuracy: float,
    *,
    step: float | None = None,
    found: Pilot | None = None,
    cache: dict | None = None,
    realized: tuple = (),
) -> Query:
    """The driver of a one-shot composition (what a PrivacyLossDistribution runs).

    Parameters
    ----------
    laws
        ``{direction: [(law, count), ...]}`` (:func:`plda.engine.recipe.laws_by_direction`).
    accuracy
        Target relative gap of ``epsilon(delta)``.
    step
        A fixed grid step, or None to plan it from the pilot.
    found
        The composition's pilot if already computed (else computed here, unless ``step``).
    cache
        Where the versions per plan and the current plan are kept (a new dict if None).
    realized
        The queries of its realized compositions (:func:`realized_queries`).

    Returns
    -------
    Query
        With :class:`PilotSteps` and :func:`plda.engine.recipe.grid_versions` of ``laws``."""
    if step is not None:
        policy = PilotSteps(accuracy=accuracy, fixed=step)
    else:
        found = pilot(laws, accuracy) if found is None else found
        predictor = StepPredictor(accuracy=accuracy, unit=found.atom_unit)
        policy = PilotSteps(accuracy=accuracy, pilot=found, predictor=predictor)
    return Query(
        accuracy=accuracy, policy=policy, composer=partial(grid_versions, laws),
        cache={} if cache is None else cache, realized=realized,
    )


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


def relative_gap(lower, upper) -> np.ndarray:
    """``(upper - lower) / upper`` elementwise (0 where upper is 0 or infinite, inf where only
    the lower bound is infinite)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(
            np.isfinite(upper) & (upper > 0), (upper - lower) / np.maximum(upper, 1e-300), 0.0
        )
    return np.where(np.isfinite(lower) | ~np.isfinite(upper), gap, np.inf)


def probes(uppers: list) -> np.ndarray:
    """The deltas a delta query refines its grid for.

    Parameters
    ----------
    uppers
        Each direction's upper bounds on delta at the epsilons asked.

    Returns
    -------
    numpy.ndarray
        Their maximum at each epsilon, those between :data:`REFINE_FLOOR` and 1, every
        ``n // 16``-th of them (at most about 16)."""
    probe = np.ravel(np.max(uppers, axis=0))
    probe = probe[(probe > REFINE_FLOOR) & (probe < 1)]
    return probe[:: max(1, probe.size // 16)]


def chernoff_tilts(versions: dict, targets: np.ndarray, kind: str) -> np.ndarray:
    """Chernoff-optimal order for each target (deltas for ``kind="epsilon"``, epsilons for
    ``"delta"``), rounded to a power of sqrt(2) (reuse), at most three distinct ones."""
    t = CHERNOFF_ORDERS
    log_c = t * np.log(t) - (t + 1) * np.log1p(t)
    moments = [v.upper.log_mgf for v in versions.values() if v.upper.log_mgf is not None]
    if not moments:
        return np.ones(len(targets))
    log_mgf = np.max(moments, axis=0)
    if kind == "epsilon":
        objective = (log_mgf + log_c)[None, :] - np.log(targets)[:, None]
        best = t[np.argmin(objective / t[None, :], axis=1)]
    else:
        objective = (log_mgf + log_c)[None, :] - np.outer(targets, t)
        best = t[np.argmin(objective, axis=1)]
    rounded = 2.0 ** (np.round(2 * np.log2(best)) / 2)
    distinct = np.unique(rounded)
    if len(distinct) > 3:  # at most three extra compositions per call: nearest of three
        keep = distinct[np.linspace(0, len(distinct) - 1, 3).round().astype(int)]
        rounded = keep[np.argmin(np.abs(np.log(rounded)[:, None] - np.log(keep)), axis=1)]
    return rounded
