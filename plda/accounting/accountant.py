"""The privacy accountant of a training loop: record steps, ask for certified epsilon / delta.

A :class:`PLDAccountant` keeps the run-length history of the mechanisms it was told about and
answers with the certified bounds of their composition (Meiser & Mohammad 2018; Koskela et al.
2020): ``delta(eps) = E_P[(1 - exp(eps - L))_+]`` of the composed privacy loss ``L``. The
composition path, with everything it reuses from one query to the next, is
:class:`plda.accounting.composition.HistoryComposition`.
"""

from __future__ import annotations

import functools
import threading
from typing import overload

import numpy as np

from plda._internal import validation as check
from plda._internal.errors import check_bracket, public_entries, warn_if_inaccurate
from plda._internal.typing import ArrayLike, FloatArray, FloatOrArray
from plda.accounting.composition import HistoryComposition
from plda.accounting.history import scalar
from plda.accounting.state import FORMAT, VERSION, parse_state
from plda.bounds import Bounds, check_relation
from plda.conversions.composed import ComposedLaws
from plda.conversions.queries import CompositionQueries
from plda.engine.query import realized_lower
from plda.engine.recipe import merge as merge_runs
from plda.mechanisms import Gaussian, Mechanism
from plda.mechanisms.base import DIRECTIONS
from plda.pld import DEFAULT_ACCURACY, PrivacyLossDistribution
from plda.samplers import sampled_mechanism, sampler_spec, training_steps
from plda.serialization import mechanism_to_dict

__all__ = ["PLDAccountant"]


# --------------------------------------------------------------------------------- accountant
def _locked(method):
    """Run ``method`` holding the accountant's lock."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return run


@public_entries  # each public call issues each warning once, at the user's line
class PLDAccountant(CompositionQueries):
    """Privacy accountant for a sequence of mechanisms (e.g. the steps of DP-SGD).

    Records steps and answers certified bounds on the privacy of their composition:
    ``epsilon(delta)`` is a proven upper bound (``epsilon_bounds`` adds a lower bound, and the
    relative gap between the two is at most ``accuracy`` unless the grid cap is reached).
    Deltas below 1e-8 are answered by the engine's tilted composition, as
    :class:`~plda.pld.PrivacyLossDistribution` answers them. The other queries (tradeoff
    curves, membership-inference risk, Gaussian DP, Rényi DP, zCDP) have the PLD's names and
    are answered by the PLD of the history (:attr:`pld`).

    Parameters
    ----------
    relation
        ``"add_remove"`` (default) or ``"replace_one"`` neighbouring datasets.
    accuracy
        Target relative gap ``(upper - lower) / upper`` of ``epsilon(delta)`` (default 1e-3).

    Examples
    --------
    >>> import plda
    >>> accountant = plda.PLDAccountant()
    >>> accountant.step(noise_multiplier=1.1, sample_rate=0.01, count=100)
    >>> accountant.compose(plda.Laplace(scale=30.0), count=2)
    >>> len(accountant), accountant.epsilon(1e-5) < 2
    (102, True)
    """

    FORMAT = FORMAT
    VERSION = VERSION

    def __init__(self, relation: str = "add_remove", accuracy: float = DEFAULT_ACCURACY):
        check_relation(relation)
        accuracy = check.positive_float("accuracy", accuracy)
        if not accuracy < 1:
            raise ValueError(f"accuracy must be in (0, 1), got {accuracy!r}")
        self._relation = relation
        self._accuracy = accuracy
        self._history: list[list] = []  # run-length [mechanism, count]
        self._steps = 0  # their total count (kept, not summed at every step of a long schedule)
        self._training_steps = 0  # the training steps they stand for (len(); epochs count T)
        self._composition = HistoryComposition(relation, accuracy)
        # one lock per accountant: its history and its composer's cached spectra are shared
        # state, so steps recorded and queries asked from several threads take turns
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ recording
    @property
    def relation(self) -> str:
        """Neighbouring relation of the guarantees."""
        return self._relation

    @property
    def accuracy(self) -> float:
        """Target relative gap of the epsilon bounds."""
        return self._accuracy

    def step(
        self,
        noise_multiplier: float,
        sample_rate: float | None = None,
        count: int = 1,
        *,
        sampler: str = "poisson",
        batch_size: int | None = None,
        dataset_size: int | None = None,
        max_batch_size: int | None = None,
        num_steps: int | None = None,
        num_selected: int | None = None,
        accumulation_steps: int = 1,
    ) -> None:
        """Record ``count`` DP-SGD steps: a Gaussian of noise multiplier ``sigma`` (L2
        sensitivity 1 after clipping) on batches drawn by ``sampler``.

        ``accumulation_steps=m`` (Poisson sampler only) records optimizer steps that each sum
        the clipped gradients of ``m`` independently Poisson-sampled micro-batches of rate
        ``sample_rate`` and add the noise once (gradient accumulation): a record can be in
        several of them, and each step is the mixture pair of
        :meth:`plda.GaussianMixture.gradient_accumulation` (certified under add/remove; refused
        under replace-one, which has no proof for ``m > 1``). One step at rate
        ``m * sample_rate`` would under-report it. ``m = 1`` is a plain step.

        ``sampler`` names the batch sampler that ran and takes its sizes, as
        :func:`plda.sampled_mechanism` does: ``"poisson"`` (the default: ``sample_rate``),
        ``"without-replacement"`` (fixed-size batches: ``batch_size`` and ``dataset_size``),
        ``"truncated-poisson"`` (``sample_rate``, ``max_batch_size``, ``dataset_size``), and the
        epoch samplers ``"shuffled"`` and ``"random-allocation"`` (``num_steps`` per epoch;
        ``num_selected``). An epoch sampler's analysis covers whole epochs, so ``count`` must
        then be a multiple of ``num_steps`` (one epoch mechanism is recorded per epoch).

        Raises ``ValueError``/``TypeError`` naming the argument (and records nothing) on a noise
        multiplier outside (0, inf), a size outside its range, an argument the sampler does not
        take, a missing one, a count below 1, ``accumulation_steps`` not an integer in
        ``[1, 10000]`` or above 1 with another sampler than ``"poisson"``, or a
        sampler/relation pair without a sound analysis.
        """
        noise_multiplier = check.positive_float("noise_multiplier", noise_multiplier)
        count = check.count("count", count, minimum=1)
        if sample_rate is not None:
            sample_rate = check.probability("sample_rate", sample_rate, open_low=True)
        mechanism = sampled_mechanism(
            Gaussian(sigma=noise_multiplier),
            sampler,
            sample_rate=sample_rate,
            batch_size=batch_size,
            dataset_size=dataset_size,
            max_batch_size=max_batch_size,
            num_steps=num_steps,
            num_selected=num_selected,
            accumulation_steps=accumulation_steps,
            relation=self._relation,
        )
        if sampler_spec(sampler).epoch:
            if count % mechanism.num_steps:
                raise ValueError(
                    f"count must be a multiple of num_steps={mechanism.num_steps} for "
                    f"sampler={sampler!r} (its analysis covers whole epochs), got {count}; "
                    "record the steps once an epoch is complete"
                )
            count //= mechanism.num_steps
        self.compose(mechanism, count)

    @_locked
    def compose(self, mechanism: Mechanism, count: int = 1) -> None:
        """Record ``count`` runs of any plda ``mechanism`` (``plda.Laplace(...)`` etc.)."""
        if not isinstance(mechanism, Mechanism):
            raise TypeError(
                f"mechanism must be a plda mechanism (e.g. plda.Gaussian), got "
                f"{type(mechanism).__name__}"
            )
        count = check.count("count", count, minimum=1)
        if self._steps + count > check.MAX_COUNT:
            raise ValueError(
                f"count: the accountant would hold {self._steps + count} steps, more than "
                f"{check.MAX_COUNT:.0e} (the range plda certifies)"
            )
        if self._relation == "replace_one":
            mechanism.under_replace_one()  # raises if unsupported: refuse before recording
        if self._history and self._history[-1][0] == mechanism:
            self._history[-1][1] += count
        else:
            self._history.append([mechanism, count])
        self._steps += count
        self._training_steps += count * training_steps(mechanism)

    @property
    @_locked
    def history(self) -> tuple[tuple[Mechanism, int], ...]:
        """Run-length history: ``((mechanism, count), ...)`` in the order recorded."""
        return tuple((m, k) for m, k in self._history)

    @_locked
    def __len__(self) -> int:
        """Number of recorded training steps: one per mechanism run, and ``num_steps`` per epoch
        of an epoch sampler (:class:`~plda.Shuffled`, :class:`~plda.RandomAllocation`), so that
        ``step(count=k, ...)`` adds ``k`` whatever the sampler (``len()`` of the adapters counts
        the same way)."""
        return self._training_steps

    def __repr__(self) -> str:
        return (
            f"PLDAccountant(relation={self._relation!r}, accuracy={self._accuracy!r}, "
            f"steps={len(self)}, runs={len(self._history)})"
        )

    @property
    @_locked
    def pld(self) -> PrivacyLossDistribution:
        """The history as a :class:`~plda.pld.PrivacyLossDistribution` recipe (for saving,
        composing with other PLDs, or cross-checking on the engine's own grid)."""
        if not self._history:
            raise ValueError("the accountant has no recorded steps")
        return PrivacyLossDistribution(merge_runs(self._history), self._relation, self._accuracy)

    # -------------------------------------------------------------------- queries
    @overload
    def epsilon(self, delta: float) -> float: ...
    @overload
    def epsilon(self, delta: ArrayLike) -> FloatArray: ...
    def epsilon(self, delta: ArrayLike) -> FloatOrArray:
        """Certified upper bound on ``epsilon(delta)`` of everything recorded (vectorized);
        ``0`` before the first step. Equal to ``epsilon_bounds(delta).upper``, at about half its
        cost (the optimistic version is not composed)."""
        d = check.array_in("delta", delta, 0.0, 1.0)
        if not self._history:
            return scalar(np.zeros(d.shape), delta)
        return scalar(self._epsilon_pair(d, need_lower=False)[1], delta)

    def epsilon_bounds(self, delta: ArrayLike) -> Bounds:
        """``(lower, upper)`` certified bounds on ``epsilon(delta)``."""
        d = check.array_in("delta", delta, 0.0, 1.0)
        if not self._history:
            zero = np.zeros(d.shape)
            return Bounds(scalar(zero, delta), scalar(zero, delta))
        lower, upper = self._epsilon_pair(d, need_lower=True)
        warn_if_inaccurate(lower, upper, self._accuracy, query="epsilon_bounds")
        realized = self._realized()
        if realized:
            lower = realized_lower(realized, "epsilon", d)
        check_bracket(lower, upper, query="epsilon_bounds")
        return Bounds(scalar(lower, delta), scalar(upper, delta))

    @overload
    def delta(self, epsilon: float) -> float: ...
    @overload
    def delta(self, epsilon: ArrayLike) -> FloatArray: ...
    def delta(self, epsilon: ArrayLike) -> FloatOrArray:
        """Certified upper bound on ``delta(epsilon)`` (vectorized); equal to
        ``delta_bounds(epsilon).upper``, composing only the pessimistic versions. At
        ``epsilon = inf`` it is the mass at infinite privacy loss (``1 - (1 - d)^k`` for ``k``
        runs of ``ApproximateDP(e, d)``); NaN or a negative epsilon is a ``ValueError``."""
        e = check.array_in("epsilon", epsilon, 0.0, np.inf)
        if not self._history:
            return scalar(np.zeros(e.shape), epsilon)
        return scalar(self._delta_pair(e, need_lower=False)[1], epsilon)

    def delta_bounds(self, epsilon: ArrayLike) -> Bounds:
        """``(lower, upper)`` certified bounds on ``delta(epsilon)``."""
        e = check.array_in("epsilon", epsilon, 0.0, np.inf)
        if not self._history:
            zero = np.zeros(e.shape)
            return Bounds(scalar(zero, epsilon), scalar(zero, epsilon))
        lower, upper = self._delta_pair(e, need_lower=True)
        realized = self._realized()
        if realized:
            lower = realized_lower(realized, "delta", e)
        check_bracket(lower, upper, query="delta_bounds")
        return Bounds(scalar(lower, epsilon), scalar(upper, epsilon))

    @_locked
    def _realized(self) -> tuple:
        """The driver's queries of the history's realized compositions (empty when every
        mechanism is tight: see :meth:`HistoryComposition.realized`)."""
        return self._composition.realized(self._history)

    @_locked
    def _delta_pair(self, e: np.ndarray, need_lower: bool):
        return self._composition.delta_pair(self._history, e, need_lower)

    @_locked
    def _epsilon_pair(self, d: np.ndarray, need_lower: bool):
        return self._composition.epsilon_pair(self._history, d, need_lower)

    # what the tests of the composition path look into
    @_locked
    def _horizon_step(self, components, d: np.ndarray) -> float | None:
        return self._composition.horizon_step(components, d)

    @_locked
    def _versions(self, recipe: PrivacyLossDistribution, step: float, lower: bool = True):
        versions = self._composition.versions(
            recipe.components, step, both=DIRECTIONS if lower else ()
        )
        return {d: (pair.upper, pair.lower if lower else None) for d, pair in versions.items()}

    @property
    def _results(self):
        return self._composition.store.results

    # ------------------------------------------------------------- checkpoints
    @_locked
    def state_dict(self) -> dict:
        """JSON-serializable state: ``{"format": "plda.accountant", "version": 1, "relation",
        "accuracy", "history": [{"mechanism": {...}, "count": k}, ...]}``."""
        return {
            "format": self.FORMAT,
            "version": self.VERSION,
            "relation": self._relation,
            "accuracy": self._accuracy,
            "history": [
                {"mechanism": mechanism_to_dict(m), "count": int(k)} for m, k in self._history
            ],
        }

    @_locked
    def load_state_dict(self, state: dict) -> None:
        """Replace this accountant's state by ``state`` (from :meth:`state_dict`).

        The whole state is checked first: a corrupted or foreign dict raises ``ValueError`` and
        leaves the accountant unchanged.
        """
        relation, accuracy, history = parse_state(state)
        self._relation, self._accuracy = relation, accuracy
        self._history = [[m, k] for m, k in history]
        self._steps = sum(k for _, k in self._history)
        self._training_steps = sum(k * training_steps(m) for m, k in self._history)
        self._composition = HistoryComposition(relation, accuracy)

    @classmethod
    def from_state_dict(cls, state: dict) -> PLDAccountant:
        """A new accountant with the state ``state`` (from :meth:`state_dict`)."""
        relation, accuracy, _ = parse_state(state)
        accountant = cls(relation=relation, accuracy=accuracy)
        accountant.load_state_dict(state)
        return accountant

    # ------------------------------------------------------------- other views
    def composed_laws(self) -> ComposedLaws:
        """The recorded history as the conversions read it: ``self.pld.composed_laws()``, from
        which the accountant answers the queries of
        :class:`~plda.conversions.queries.CompositionQueries` (tradeoff curves,
        membership-inference risk, Gaussian DP, Rényi DP, zCDP) as its PLD does.

        Returns
        -------
        ComposedLaws
            The steps and the composed grid laws of :attr:`pld`.

        Raises
        ------
        ValueError
            If no step was recorded.
        """
        return self.pld.composed_laws()

    def advantage_bounds(self) -> Bounds:
        """Bounds on the membership-inference advantage ``max(TPR - FPR) = delta(0)``, clipped to
        ``[0, 1]``: ``self.pld.advantage_bounds()`` (see
        :meth:`plda.PrivacyLossDistribution.advantage_bounds`).

        Returns
        -------
        Bounds
            ``lower <= advantage <= upper``; ``upper`` is certified.

        Raises
        ------
        ValueError
            If no step was recorded.
        """
        return self.pld.advantage_bounds()
