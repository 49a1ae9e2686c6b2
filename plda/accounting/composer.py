"""The accountant's caching composer: a history's composed laws, kept while the history grows.

The per-step laws are discretized once per grid step and composed by the accountant's own
:class:`~plda.engine.composer.Composer`, which keeps spectra, their binary powers and running
products (a query costs one inverse FFT per composed law). Each version is composed when first
read (:class:`StoredPair`), so a query that never reads a direction never composes it.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from functools import partial

from plda.accounting.history import MANY_MECHANISMS, RESULTS_KEPT, TAIL, grew_from
from plda.discretization.discretize import discretize
from plda.engine.composer import Composer
from plda.engine.plan import MAX_GRID, Plan
from plda.engine.recipe import add_remove_steps, laws_by_direction
from plda.mechanisms.gaussian import GaussianLaw


class StoredPair:
    """One direction's composed laws of a history, each composed when first read.

    Parameters
    ----------
    slots : list
        The two-slot list of the composer's results that keeps ``upper`` (pessimistic) and
        ``lower`` (optimistic); ``None`` until composed.
    compose : callable
        ``compose(index, both)``: version ``index`` (0: pessimistic, 1: optimistic), its laws
        discretized on both sides at once if ``both``.
    both : bool
        Whether the optimistic version will be read too (then the pessimistic one is
        discretized on both sides at once).
    """

    __slots__ = ("_slots", "_compose", "_both")

    def __init__(self, slots: list, compose: Callable[[int, bool], object], both: bool):
        self._slots, self._compose, self._both = slots, compose, both

    @property
    def upper(self):
        """The pessimistic composed law, composed on first read."""
        if self._slots[0] is None:
            self._slots[0] = self._compose(0, self._both)
        return self._slots[0]

    @property
    def lower(self):
        """The optimistic composed law."""
        if self._slots[1] is None:
            self._slots[1] = self._compose(1, True)
        return self._slots[1]


class HistoryComposer:
    """The composed laws of a history's compositions, the last few kept.

    The last :data:`~plda.accounting.history.RESULTS_KEPT` results are kept, composed on the
    history's composer or on the planning one.

    Parameters
    ----------
    relation : str
        The neighbouring relation the laws are read under.
    composer : Composer
        The history's :class:`~plda.engine.composer.Composer` (spectra kept).
    planning : Composer
        The composer of the longer histories it plans and bounds with (horizon, checkpoint).
    """

    def __init__(self, relation: str, composer: Composer, planning: Composer):
        self._relation, self._composer, self._planning = relation, composer, planning
        self.results: OrderedDict = OrderedDict()
        self._lengths: dict = {}
        self._held: list = []  # (components, laws) of the last few asked

    def clear(self) -> None:
        """Forget every kept result and FFT length."""
        self._held = []
        self.results.clear()
        self._lengths.clear()

    def laws(self, components) -> dict[str, list]:
        """The laws of ``components`` per direction under the relation, kept for a few calls.

        :func:`~plda.engine.recipe.laws_by_direction`, kept for the last four tuples asked (by
        identity: a query asks for them at every composition, and a noise schedule has a law
        per step).

        Parameters
        ----------
        components : tuple of (Mechanism, int)
            The run-length history.

        Returns
        -------
        dict
            ``{direction: [(law, count), ...]}``.
        """
        for held, laws in self._held:
            if held is components:
                return laws
        laws = None
        # a history that grew by appending runs (a noise schedule's next query) extends the
        # laws of the one it grew from: reading every step again made each query's cost grow
        # with the history (a seventh of a 3000-step schedule's time)
        for held, known in self._held:
            if grew_from(components, held):
                laws = _extended(known, add_remove_steps(components[len(held):], self._relation))
                break
        if laws is None:
            laws = laws_by_direction(add_remove_steps(components, self._relation))
        self._held = [(components, laws), *self._held[:3]]
        return laws

    def plan(self, components, horizon, step: float) -> Plan:
        """The plan of a composition of ``components`` on grid ``step``.

        With many distinct mechanisms (a noise schedule) the FFT length is that of the
        ``horizon``'s leading direction, so that it, and with it every factor's spectrum, stays
        put until the horizon moves.

        Parameters
        ----------
        components : tuple of (Mechanism, int)
            The run-length history.
        horizon : tuple of (Mechanism, int)
            Its horizon (:func:`~plda.accounting.history.horizon`).
        step : float
            The grid step.

        Returns
        -------
        Plan
            The step, the FFT length (0: the composer's own choice) and the tail mass.
        """
        many = len(components) > MANY_MECHANISMS  # (the horizon itself has few)
        key = (horizon, step, many)
        length = self._lengths.get(key)
        if length is None:
            length = 0
            if many:
                lead = next(iter(self.laws(horizon).values()))
                factors = [(discretize(law, step, lower=False)[0], k) for law, k in lead]
                found = self._composer.length(factors)
                length = 1 << (found - 1).bit_length()  # powers of two: it moves rarely
                length = length if length <= MAX_GRID else 0
            if len(self._lengths) > 256:
                self._lengths.clear()
            self._lengths[key] = length
        return Plan(step=step, length=length, tail=TAIL)

    def versions(
        self, components, horizon, step: float, *, both=(), kept: bool = True
    ) -> dict[str, StoredPair]:
        """The composition of ``components`` on grid ``step``, each version composed when read.

        Parameters
        ----------
        components : tuple of (Mechanism, int)
            The run-length history.
        horizon : tuple of (Mechanism, int)
            Its horizon, which sets the plan.
        step : float
            The grid step.
        both : tuple of str, optional
            Directions whose laws are discretized on both sides at once (their optimistic
            version will be read).
        kept : bool, optional
            On the history's composer; False: on the planning one (for the horizon and
            checkpoint histories).

        Returns
        -------
        dict of str to StoredPair
            ``{direction: StoredPair}``, kept in :attr:`results`.
        """
        key = (components, step) + (() if kept else ("planning",))
        laws = self.laws(components)
        plan = self.plan(components, horizon, step)
        out = self.results.get(key)
        if out is None:
            out = {direction: [None, None] for direction in laws}
            self.results[key] = out
            while len(self.results) > RESULTS_KEPT:
                self.results.popitem(last=False)
        else:
            self.results.move_to_end(key)
        composer = self._composer if kept else self._planning
        return {
            direction: StoredPair(
                slots, partial(_compose, composer, laws[direction], plan), direction in both
            )
            for direction, slots in out.items()
        }


def _extended(laws: dict, steps) -> dict | None:
    """``laws`` (:func:`~plda.engine.recipe.laws_by_direction` of a history) extended by the
    ``steps`` appended to it: what the whole history gives, or None where that is not the
    concatenation (plain Gaussian steps are merged into one last factor; the directions change
    once a step is not symmetric)."""
    tail = laws_by_direction(steps)
    if set(tail) != set(laws) or any(
        part and isinstance(part[-1][0], GaussianLaw)  # a merged Gaussian (or one like it)
        for part in (next(iter(laws.values())), next(iter(tail.values())))
    ):
        return None
    return {direction: laws[direction] + tail[direction] for direction in laws}


def _compose(composer: Composer, laws: list, plan: Plan, index: int, both: bool):
    """Version ``index`` (0: pessimistic, 1: optimistic) of the composition of ``laws`` to
    ``plan`` by ``composer``, each law discretized on both sides at once if ``both``."""
    factors = [(discretize(law, plan.step, both)[index], k) for law, k in laws]
    # the distinct laws (count 1: a noise schedule changed at every step) first, the repeated
    # ones last: a growing history then extends the composer's running product of the former
    # (see plda.engine.composer)
    factors.sort(key=lambda factor: factor[1] > 1)
    return composer.compose(factors, MAX_GRID, plan.length)
