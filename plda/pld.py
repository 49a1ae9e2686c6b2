"""The privacy-loss distribution of a composition, with certified two-sided bounds."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import overload

import numpy as np

from plda._internal import validation as check
from plda._internal.errors import check_bracket, public_entries
from plda._internal.typing import ArrayLike, FloatArray, FloatOrArray
from plda.bounds import RELATIONS, Bounds
from plda.conversions.capped import currency_capped
from plda.conversions.composed import ComposedLaws
from plda.conversions.queries import CompositionQueries
from plda.engine.plan import MAX_GRID, MIN_STEP
from plda.engine.query import Query, one_shot
from plda.engine.recipe import add_remove_steps, laws_by_direction, merge, realized_recipes
from plda.grid.discrete import DiscreteLoss
from plda.mechanisms.approximate import ApproximateDP
from plda.mechanisms.base import Mechanism

#: default target for the relative gap (upper - lower) / upper of epsilon(delta)
DEFAULT_ACCURACY = 1e-3
#: what a composition of no step is read as: the identity pair (epsilon 0 at every delta)
_NOTHING_RELEASED = ApproximateDP(epsilon=0.0)

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
        check.fraction("accuracy", self.accuracy)
        if self.step is not None:
            check.positive_float("step", self.step)
        for item in self.components:
            mechanism, count = item
            if not isinstance(mechanism, Mechanism):
                raise TypeError(f"components must hold plda mechanisms, got {mechanism!r}")
            # no cap per component: the total's check below names the range a composition has
            check.count("count", count, minimum=0, maximum=None)
        total = sum(count for _, count in self.components)
        if total > check.MAX_COUNT:
            raise ValueError(
                f"count: the composition holds {total} steps, more than {check.MAX_COUNT:.0e} "
                "(the range plda certifies)"
            )
        # the recipe read under add/remove, once (a pair stated under the other relation is
        # refused here, not at the first query); a composition of no step releases nothing, so
        # it is read as one step of the identity ApproximateDP(0, 0) (epsilon 0 at every delta,
        # as an accountant before its first step)
        merged = merge(self.components)
        if not sum(k for _, k in merged):
            merged = ((_NOTHING_RELEASED, 1),)
        object.__setattr__(self, "_steps", add_remove_steps(merged, self.relation))

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
        """PLD of ``count`` runs of one mechanism.

        Parameters
        ----------
        mechanism
            A plda mechanism (e.g. :class:`~plda.Gaussian`).
        count
            How many times it runs, at least 1.
        relation
            ``"add_remove"`` or ``"replace_one"``.
        accuracy
            Target relative gap of ``epsilon(delta)``, in (0, 1); a gap below ``1e-9`` in
            epsilon always meets it (:class:`~plda.AccuracyWarning`).
        step
            A fixed grid step, or None to choose it from ``accuracy``.

        Returns
        -------
        PrivacyLossDistribution
            The composition, not yet discretized.

        Raises
        ------
        TypeError
            If ``mechanism`` is not a plda mechanism, or ``count`` is not a number.
        ValueError
            If ``count`` is not a positive integer, another argument is out of range, or the
            mechanism has no analysis under ``relation`` (a pair stated under replace-one read
            under add/remove, a sampler without a replace-one analysis).
        """
        if not isinstance(mechanism, Mechanism):
            raise TypeError(
                f"mechanism must be a plda mechanism (e.g. plda.Gaussian), got "
                f"{type(mechanism).__name__}"
            )
        count = check.count("count", count, minimum=1)
        return cls(((mechanism, count),), relation, accuracy, step)

    def compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """PLD of running both compositions (order does not matter).

        Parameters
        ----------
        other
            A PLD under the same relation.

        Returns
        -------
        PrivacyLossDistribution
            A new PLD: the merged recipe, the smaller accuracy and the finer fixed step.

        Raises
        ------
        TypeError
            If ``other`` is not a PrivacyLossDistribution.
        ValueError
            If the two relations differ.
        """
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
        """PLD of ``count`` independent runs of this composition.

        An FFT power: the cost does not grow with ``count`` beyond the grid size.

        Parameters
        ----------
        count
            How many runs, at least 1.

        Returns
        -------
        PrivacyLossDistribution
            A new PLD, every count multiplied by ``count``.

        Raises
        ------
        TypeError
            If ``count`` is not a number.
        ValueError
            If ``count`` is not a positive integer, or the composition would hold more than
            ``1e12`` steps.
        """
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
        """The same composition with another accuracy target.

        Parameters
        ----------
        accuracy
            Target relative gap of ``epsilon(delta)``, in (0, 1).

        Returns
        -------
        PrivacyLossDistribution
            A new PLD (nothing computed is shared).
        """
        return replace(self, accuracy=accuracy, _cache={})

    @property
    def count(self) -> int:
        """Total number of mechanism runs in the composition."""
        return sum(k for _, k in self.components)

    # ------------------------------------------------------------- internals
    @cached_property
    def _laws(self) -> dict[str, list]:
        """``{direction: [(law, count), ...]}`` of the components under add/remove semantics
        (:func:`plda.engine.recipe.laws_by_direction`)."""
        return laws_by_direction(self._steps)

    @cached_property
    def _realized(self) -> tuple[PrivacyLossDistribution, ...]:
        """Compositions of realized pairs (:func:`plda.engine.recipe.realized_recipes`, read
        under add/remove: the relation is already applied), the largest of whose lower bounds
        is the certified lower bound of this composition; empty when every factor is tight."""
        if self._dominating:
            return ()
        return tuple(
            replace(self, components=recipe, relation="add_remove", _cache={})
            for recipe in realized_recipes(self._steps)
        )

    def _query(self, realized: bool = True) -> Query:
        """The driver of this composition's queries (:func:`plda.engine.query.one_shot`): the
        pilot's steps (or the fixed one), the pilot and each plan made once, in this PLD's
        cache; with the drivers of its realized compositions (for bounds) if ``realized``."""
        return one_shot(
            self._laws, self.accuracy, step=self.step, cache=self._cache,
            realized=tuple(r._query() for r in self._realized) if realized else (),
        )

    # ---------------------------------------------------------------- queries
    @overload
    def epsilon(self, delta: float) -> float: ...
    @overload
    def epsilon(self, delta: ArrayLike) -> FloatArray: ...
    def epsilon(self, delta: ArrayLike) -> FloatOrArray:
        """Certified upper bound on ``epsilon(delta)``, the smallest ``eps >= 0`` with that delta.

        Parameters
        ----------
        delta
            A number or an array in [0, 1].

        Returns
        -------
        float or numpy.ndarray
            The upper bound (a number for a number); ``inf`` when ``delta`` is below the mass
            at infinite loss.
        """
        d = check.array_in("delta", delta, 0.0, 1.0)
        return self._answer("epsilon", d, delta, realized=False).upper

    def epsilon_bounds(self, delta: ArrayLike) -> Bounds:
        """Certified lower and upper bounds on ``epsilon(delta)``.

        Parameters
        ----------
        delta
            A number or an array in [0, 1].

        Returns
        -------
        Bounds
            ``(lower, upper)``: numbers for a number, arrays shaped like ``delta`` otherwise.
        """
        d = check.array_in("delta", delta, 0.0, 1.0)
        return self._answer("epsilon", d, delta, realized=True)

    @overload
    def delta(self, epsilon: float) -> float: ...
    @overload
    def delta(self, epsilon: ArrayLike) -> FloatArray: ...
    def delta(self, epsilon: ArrayLike) -> FloatOrArray:
        """Certified upper bound on ``delta(epsilon)`` (hockey-stick divergence).

        Parameters
        ----------
        epsilon
            A number or an array in [0, inf].

        Returns
        -------
        float or numpy.ndarray
            The upper bound (a number for a number).
        """
        e = check.array_in("epsilon", epsilon, 0.0, np.inf)
        return self._answer("delta", e, epsilon, realized=False).upper

    def delta_bounds(self, epsilon: ArrayLike) -> Bounds:
        """Certified lower and upper bounds on ``delta(epsilon)``.

        Parameters
        ----------
        epsilon
            A number or an array in [0, inf].

        Returns
        -------
        Bounds
            ``(lower, upper)``: numbers for a number, arrays shaped like ``epsilon`` otherwise.
        """
        e = check.array_in("epsilon", epsilon, 0.0, np.inf)
        return self._answer("delta", e, epsilon, realized=True)

    def _answer(self, kind: str, targets: np.ndarray, asked, *, realized: bool) -> Bounds:
        """``epsilon_bounds`` or ``delta_bounds`` at the validated ``targets``, capped by the
        composition in its own currency (zCDP, RDP); with the realized compositions' lower
        bounds only if ``realized`` (an upper-bound query needs none of them). Numbers for a
        number ``asked``."""
        if not targets.size:  # nothing asked: nothing to compute
            return Bounds(np.zeros(targets.shape), np.zeros(targets.shape))
        query = self._query(realized=realized)
        cap = None if self._dominating else partial(
            currency_capped, components=self.components, relation=self.relation, query=kind)
        stated = any(getattr(m, "stated_currency", None) for m, _ in self.components)
        lower, upper = (query.epsilon_bounds if kind == "epsilon" else query.delta_bounds)(
            targets, cap=cap, cap_all=stated)
        if cap is not None and realized:  # a cap is never below the truth (the own lower bound
            # of a pair that is not tight brackets its dominating pair, which a cap may undercut)
            check_bracket(lower, upper, query=f"{kind}_bounds")
        if np.ndim(asked) == 0:  # a number in, numbers out
            return Bounds(float(lower), float(upper))
        return Bounds(lower, upper)

    # ----------------------------------------- other views (the rest: CompositionQueries)
    def composed_laws(self) -> ComposedLaws:
        """The composition as the conversions read it.

        Returns
        -------
        ComposedLaws
            Its steps under add/remove semantics and its composed grid laws, discretized on
            first use: the pessimistic ones of this composition (:meth:`discrete`) and, as the
            optimistic side, its own or, when a factor is not ``tight``, those of every
            realized composition (keys ``"remove"``, ``"add"``, then ``"remove/1"``, ...).
            Always on the first grid (not :meth:`discrete`'s latest one), so that what the
            conversions answer does not depend on the queries asked before.
        """
        return ComposedLaws(
            steps=self._steps, grid=self._grid_laws
        )

    def _first_grid(self, bound: str) -> dict[str, DiscreteLoss]:
        # the conversions read the first grid, never the latest query's: a tradeoff curve or a
        # Renyi bound must not depend on which epsilon was asked before (nor in which thread)
        versions, _ = self._query(realized=False).grid()
        return {d: getattr(v, bound) for d, v in versions.items()}

    def _grid_laws(self, bound: str) -> dict[str, DiscreteLoss]:
        if bound == "upper" or not self._realized:
            return self._first_grid(bound)
        laws = {}
        for i, realized in enumerate(self._realized):
            for direction, law in realized._first_grid("lower").items():
                laws[direction if i == 0 else f"{direction}/{i}"] = law
        return laws

    def discrete(self, bound: str = "upper") -> dict[str, DiscreteLoss]:
        """The composed grid law per direction, on the grid the latest query reached.

        The grid of the latest ``epsilon_bounds``/``delta_bounds`` call (never coarser than
        the first grid; the first grid before any query): for inspection. The queries
        themselves never read it, so their answers do not depend on what was asked before.

        Parameters
        ----------
        bound
            ``"upper"`` (pessimistic) or ``"lower"`` (optimistic).

        Returns
        -------
        dict
            ``{direction: DiscreteLoss}`` (``"remove"``, and ``"add"`` unless symmetric).

        Raises
        ------
        ValueError
            For another ``bound``.
        """
        if bound not in ("upper", "lower"):
            raise ValueError(f"bound must be 'upper' or 'lower', got {bound!r}")
        versions, _ = self._query(realized=False).latest()
        return {d: getattr(v, bound) for d, v in versions.items()}

    @property
    def grid_step(self) -> float:
        """The grid step of :meth:`discrete`'s laws.

        The latest query's (the first grid's before any query).
        """
        _, step = self._query(realized=False).latest()
        return step


# ---------------------------------------------------------------- helpers
def direction_laws(pld: PrivacyLossDistribution) -> dict[str, list]:
    """The privacy-loss laws a PLD's composition multiplies, per direction of its relation.

    Parameters
    ----------
    pld
        The composition.

    Returns
    -------
    dict
        ``{direction: [(law, count), ...]}``, the leading direction first (one direction when
        every factor is symmetric): what the planner and the composers consume.
    """
    return pld._laws
