"""The privacy-loss distribution of a composition, with certified two-sided bounds."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import overload

import numpy as np

from plda._internal import validation as check
from plda._internal.errors import (
    GridTooLarge,
    check_bracket,
    public_entries,
    quiet_accuracy,
    warn_if_inaccurate,
)
from plda._internal.typing import ArrayLike, FloatArray, FloatOrArray
from plda.bounds import RELATIONS, Bounds
from plda.conversions.composed import ComposedLaws, add_remove_steps
from plda.conversions.queries import CompositionQueries
from plda.engine.plan import (
    MAX_GRID,
    MIN_STEP,
    Pilot,
    Plan,
    StepPredictor,
    pilot,
    refine,
)
from plda.engine.recipe import merge, realized_recipes
from plda.engine.sharpen import delta_pair, epsilon_pair, relative_gap, sharpen
from plda.engine.versions import grid_pair
from plda.grid.discrete import DiscreteLoss
from plda.mechanisms.base import DIRECTIONS, Mechanism
from plda.mechanisms.gaussian import Gaussian

#: default target for the relative gap (upper - lower) / upper of epsilon(delta)
DEFAULT_ACCURACY = 1e-3
__all__ = [
    "DEFAULT_ACCURACY",
    "MAX_GRID",
    "MIN_STEP",
    "RELATIONS",
    "Bounds",
    "PrivacyLossDistribution",
    "direction_laws",
]


@public_entries  # each public call issues each warning once, at the user's line
@dataclass(frozen=True, eq=False)
class PrivacyLossDistribution(CompositionQueries):
    """Privacy-loss distribution of a composition of mechanisms, discretized on demand.

    A PLD is an immutable *recipe* — which mechanisms, how many times each, under which
    neighbouring relation — and is discretized and composed by FFT the first time a bound is
    asked for, on a grid chosen for the whole composition. Every answer comes as a certified
    upper bound (the default) and can be asked for with its lower bound (``*_bounds``).
    Beyond ``epsilon`` and ``delta`` it answers tradeoff curves, membership-inference risk,
    Gaussian DP, Rényi DP and zCDP (:class:`~plda.conversions.queries.CompositionQueries`).

    Parameters
    ----------
    components
        ``((mechanism, count), ...)``.
    relation
        ``"add_remove"`` (default: both directions, the worse is reported) or
        ``"replace_one"`` (see :meth:`Mechanism.under_replace_one`).
    accuracy
        Target relative gap ``(upper - lower) / upper`` of ``epsilon(delta)``; the grid is
        refined until it is met (or the grid cap is reached).
    step
        Fix the grid step instead of choosing it from ``accuracy``.

    Examples
    --------
    >>> import plda
    >>> step = plda.PoissonSampled(plda.Gaussian(sigma=1.1), sample_rate=256 / 60000)
    >>> pld = plda.PrivacyLossDistribution.from_mechanism(step).self_compose(14062)
    >>> lower, upper = pld.epsilon_bounds(1e-5)
    >>> 2.37 < lower <= upper < 2.39
    True
    """

    components: tuple = ()
    relation: str = "add_remove"
    accuracy: float = DEFAULT_ACCURACY
    step: float | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)
    #: True for the view of :meth:`dominating` (lower bounds of the dominating pairs)
    _dominating: bool = field(default=False, repr=False, compare=False)

    def __post_init__(self):
        if self.relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {self.relation!r}")
        check.positive_float("accuracy", self.accuracy)
        if not self.accuracy < 1:
            raise ValueError(f"accuracy must be in (0, 1), got {self.accuracy!r}")
        if self.step is not None:
            check.positive_float("step", self.step)
        for item in self.components:
            mechanism, count = item
            if not isinstance(mechanism, Mechanism):
                raise TypeError(f"components must hold plda mechanisms, got {mechanism!r}")
            check.count("count", count, minimum=0)
        total = sum(count for _, count in self.components)
        if total > check.MAX_COUNT:
            raise ValueError(
                f"count: the composition holds {total} steps, more than {check.MAX_COUNT:.0e} "
                "(the range plda certifies)"
            )

    # ------------------------------------------------------------ construction
    @classmethod
    def from_mechanism(
        cls,
        mechanism: Mechanism,
        count: int = 1,
        *,
        relation: str = "add_remove",
        accuracy: float = DEFAULT_ACCURACY,
        step: float | None = None,
    ) -> PrivacyLossDistribution:
        """PLD of ``count`` runs of ``mechanism``."""
        if not isinstance(mechanism, Mechanism):
            raise TypeError(
                f"mechanism must be a plda mechanism (e.g. plda.Gaussian), got "
                f"{type(mechanism).__name__}"
            )
        count = check.count("count", count, minimum=1)
        return cls(((mechanism, count),), relation, accuracy, step)

    def compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """PLD of running both compositions (a new PLD; order does not matter)."""
        if not isinstance(other, PrivacyLossDistribution):
            raise TypeError(f"other must be a PrivacyLossDistribution, got {type(other).__name__}")
        if other.relation != self.relation:
            raise ValueError(
                f"cannot compose PLDs of different relations ({self.relation!r} and "
                f"{other.relation!r})"
            )
        steps = [s for s in (self.step, other.step) if s is not None]  # the finer fixed step
        step = min(steps) if steps else None
        return PrivacyLossDistribution(
            merge(self.components + other.components),
            self.relation,
            min(self.accuracy, other.accuracy),
            step,
        )

    def self_compose(self, count: int) -> PrivacyLossDistribution:
        """PLD of ``count`` independent runs of this composition (FFT power: the cost does not
        grow with ``count`` beyond the grid size)."""
        count = check.count("count", count, minimum=1)
        return replace(
            self, components=tuple((m, k * count) for m, k in self.components), _cache={}
        )

    def dominating(self) -> PrivacyLossDistribution:
        """The same composition with every bracket that of the pairs it is *computed* from.

        For a composition whose factors are all ``tight`` this changes nothing. A factor that
        is not tight (:class:`~plda.Shuffled`, a truncating :class:`~plda.TruncatedPoisson`,
        fixed-size batches under replace-one) is computed from a dominating pair that no
        datasets are known to realize; this composition takes its lower bounds from realized
        pairs instead, while the view returned here keeps the dominating pairs' own lower
        bounds. Those are **not** lower bounds on the mechanism: they measure the grid's
        accuracy only (a calibration search judges its grid by them). The upper bounds are the
        same certified ones.

        Returns
        -------
        PrivacyLossDistribution
            A new PLD (same recipe, relation, accuracy and step).
        """
        return replace(self, _cache={}, _dominating=True)

    def with_accuracy(self, accuracy: float) -> PrivacyLossDistribution:
        """The same composition with another accuracy target."""
        return replace(self, accuracy=accuracy, _cache={})

    @property
    def count(self) -> int:
        """Total number of mechanism runs in the composition."""
        return sum(k for _, k in self.components)

    # ------------------------------------------------------------- internals
    @cached_property
    def _factors(self) -> tuple[tuple[Mechanism, int], ...]:
        """Components under add/remove semantics, with plain Gaussians merged exactly
        (``mu^2`` adds up under composition)."""
        factors = []
        gaussian_mu2 = 0.0
        for mechanism, count in merge(self.components):
            if count == 0:
                continue
            if self.relation == "replace_one":
                mechanism = mechanism.under_replace_one()
            if type(mechanism) is Gaussian:
                gaussian_mu2 += count * mechanism.mu**2
            else:
                factors.append((mechanism, count))
        if gaussian_mu2 > 0:
            factors.append((Gaussian(sigma=1.0 / math.sqrt(gaussian_mu2)), 1))
        return tuple(factors)

    @cached_property
    def _realized(self) -> tuple[PrivacyLossDistribution, ...]:
        """Compositions of realized pairs (:func:`plda.engine.recipe.realized_recipes`, read
        under add/remove: the relation is already applied), the largest of whose lower bounds
        is the certified lower bound of this composition; empty when every factor is tight."""
        if self._dominating:
            return ()
        steps = add_remove_steps(merge(self.components), self.relation)
        return tuple(
            replace(self, components=recipe, relation="add_remove", _cache={})
            for recipe in realized_recipes(steps)
        )

    @cached_property
    def _directions(self) -> tuple[str, ...]:
        if all(m.symmetric for m, _ in self._factors):
            return ("remove",)
        return DIRECTIONS

    def _laws(self, direction: str):
        return [(m.privacy_loss(direction), k) for m, k in self._factors]

    def _materialize(self, plan: Plan) -> dict:
        """``{direction: (upper, lower)}`` grid laws of the composition to ``plan``, composed
        plainly or under its exponential tilt (cached per plan)."""
        key = ("grid", plan)
        if key not in self._cache:
            # the optimistic versions are composed when first read (plda.engine.versions)
            lead = self._directions[0]
            self._cache[key] = {
                d: grid_pair(self._laws(d), plan, d == lead) for d in self._directions
            }
        return self._cache[key]

    @cached_property
    def _pilot(self) -> Pilot:
        """The planner's pilot of this composition (first step, window width, atom unit)."""
        return pilot(direction_laws(self), self.accuracy)

    def _initial_step(self, refined: bool = False) -> float:
        return self.step if self.step is not None else self._pilot.first_step(refined)

    def _current_step(self, refined: bool = False) -> float:
        """The latest plan's step (the initial one until refined); unless ``refined``, never
        coarser than the pilot's unrefined step, which delta and the conversions read as is."""
        plan, first = self._cache.get("plan"), self._initial_step(refined)
        return first if plan is None else plan.step if refined else min(plan.step, first)

    def _versions(self, refine_for: np.ndarray | None = None, coarse_start: bool = True):
        """Grid versions; with ``refine_for`` (deltas), refine until the epsilon gap meets
        ``accuracy`` there (:func:`plda.engine.plan.refine`), from the pilot's coarse start if
        ``coarse_start``."""
        step = self._current_step(refined=refine_for is not None and coarse_start)
        for _ in range(16):
            try:
                versions = self._materialize(Plan(step=step))
                break
            except GridTooLarge as exc:
                if self.step is not None:
                    raise ValueError(
                        f"step={self.step!r} is too fine for this composition: it needs "
                        f"{exc.points} grid points, more than the cap {exc.cap}"
                    ) from None
                # the window is wider than the pilot predicted (very long compositions, tiny
                # sample rates): coarsen until it fits; bounds stay certified, only wider, and
                # epsilon_bounds warns if the accuracy is missed
                step = step * 1.25 * exc.points / exc.cap
                self._cache["plan"] = Plan(step=step)
        else:  # pragma: no cover - each retry shrinks the grid by at least 1.25x
            raise GridTooLarge(0, MAX_GRID)
        if refine_for is None or self.step is not None:
            return versions

        def gap_at(finer: float) -> float:
            lower, upper = epsilon_pair(self._materialize(Plan(step=finer)), refine_for)
            return float(np.max(relative_gap(lower, upper), initial=0.0))

        predict = StepPredictor(accuracy=self.accuracy, unit=self._pilot.atom_unit)

        def next_step(current: float, gap: float) -> float | None:
            finer = predict(current, gap)
            if self._pilot.grid_points(finer) > MAX_GRID or finer < MIN_STEP:
                return None
            return finer

        step, _ = refine(step, gap_at(step), gap_at, self.accuracy, next_step)
        self._cache["plan"] = Plan(step=step)
        return self._materialize(Plan(step=step))

    # ---------------------------------------------------------------- queries
    @overload
    def epsilon(self, delta: float) -> float: ...
    @overload
    def epsilon(self, delta: ArrayLike) -> FloatArray: ...
    def epsilon(self, delta: ArrayLike) -> FloatOrArray:
        """Certified upper bound on ``epsilon(delta)``: smallest ``eps >= 0`` with
        ``delta(eps) <= delta``; ``inf`` when ``delta`` is below the mass at infinite loss."""
        return self.epsilon_bounds(delta).upper

    def epsilon_bounds(self, delta: ArrayLike) -> Bounds:
        """``(lower, upper)`` bounds on ``epsilon(delta)`` (vectorized)."""
        d = check.array_in("delta", delta, 0.0, 1.0)
        # refining the grid helps only above the FFT's rounding floor; below it, tilting does
        flat = np.ravel(d)
        versions = self._versions(refine_for=flat[(flat >= 1e-10) | (flat == flat.max())])
        lower, upper = epsilon_pair(versions, d)
        lower, upper = sharpen(
            self._materialize, self._current_step(True), versions, np.ravel(d), np.ravel(lower),
            np.ravel(upper), "delta", self.accuracy,
        )
        lower, upper = lower.reshape(d.shape), upper.reshape(d.shape)
        warn_if_inaccurate(lower, upper, self.accuracy, query="epsilon_bounds")
        if self._realized:  # not tight: the largest lower bound of the realized pairs
            with quiet_accuracy():
                lower = np.max([r.epsilon_bounds(d).lower for r in self._realized], axis=0)
        check_bracket(lower, upper, query="epsilon_bounds")
        return Bounds(_scalar(lower, delta), _scalar(upper, delta))

    @overload
    def delta(self, epsilon: float) -> float: ...
    @overload
    def delta(self, epsilon: ArrayLike) -> FloatArray: ...
    def delta(self, epsilon: ArrayLike) -> FloatOrArray:
        """Certified upper bound on ``delta(epsilon)`` (hockey-stick divergence)."""
        return self.delta_bounds(epsilon).upper

    def delta_bounds(self, epsilon: ArrayLike) -> Bounds:
        """``(lower, upper)`` bounds on ``delta(epsilon)`` (vectorized)."""
        e = check.array_in("epsilon", epsilon, 0.0, np.inf)
        versions = self._versions()
        if self.step is None:
            # refine for the epsilon gap at the deltas being reported
            probe = np.max([v.upper.delta(e) for v in versions.values()], axis=0)
            # deltas below ~1e-10 sit on the FFT's rounding floor, where refining cannot help
            probe = np.ravel(probe)[(np.ravel(probe) > 1e-10) & (np.ravel(probe) < 1)]
            if probe.size:
                versions = self._versions(probe[:: max(1, probe.size // 16)], False)
        lower, upper = delta_pair(versions, e)
        lower, upper = sharpen(
            self._materialize, self._current_step(), versions, np.ravel(e), np.ravel(lower),
            np.ravel(upper), "epsilon", self.accuracy,
        )
        lower, upper = lower.reshape(e.shape), upper.reshape(e.shape)
        if self._realized:  # not tight: the largest lower bound of the realized pairs
            lower = np.max([r.delta_bounds(e).lower for r in self._realized], axis=0)
        check_bracket(lower, upper, query="delta_bounds")
        return Bounds(_scalar(lower, epsilon), _scalar(upper, epsilon))

    # ----------------------------------------- other views (the rest: CompositionQueries)
    def composed_laws(self) -> ComposedLaws:
        """The composition as the conversions read it: its steps under add/remove semantics and
        its composed grid laws, discretized on first use: the pessimistic ones of this
        composition (:meth:`discrete`) and, as the optimistic side, its own or, when a factor
        is not ``tight``, those of every realized composition (a lower bound of each is a lower
        bound of this one; keys ``"remove"``, ``"add"``, then ``"remove/1"``, ...)."""
        return ComposedLaws(
            steps=add_remove_steps(self.components, self.relation), grid=self._grid_laws
        )

    def _grid_laws(self, bound: str) -> dict[str, DiscreteLoss]:
        if bound == "upper" or not self._realized:
            return self.discrete(bound)
        laws = {}
        for i, realized in enumerate(self._realized):
            for direction, law in realized.discrete("lower").items():
                laws[direction if i == 0 else f"{direction}/{i}"] = law
        return laws

    def discrete(self, bound: str = "upper") -> dict[str, DiscreteLoss]:
        """The composed grid law per direction (``"remove"``/``"add"``) for ``bound`` in
        ``("upper", "lower")`` — the raw material of the other conversions."""
        if bound not in ("upper", "lower"):
            raise ValueError(f"bound must be 'upper' or 'lower', got {bound!r}")
        return {d: getattr(v, bound) for d, v in self._versions().items()}

    @property
    def grid_step(self) -> float:
        """The grid step of the current discretization."""
        self._versions()
        return self._current_step()


# ---------------------------------------------------------------- helpers
def direction_laws(pld: PrivacyLossDistribution) -> dict[str, list]:
    """``{direction: [(law, count), ...]}``: the privacy-loss laws the composition of ``pld``
    multiplies, per direction of its relation (the leading direction first; one direction
    when every factor is symmetric). What the planner and the composers consume."""
    return {direction: pld._laws(direction) for direction in pld._directions}


def _scalar(value, like):
    return float(value) if np.ndim(like) == 0 else value
