"""The privacy accountant of a training loop: record steps, ask for certified epsilon / delta.

A :class:`PLDAccountant` keeps the run-length history of the mechanisms it was told about and
answers with the certified bounds of their composition (Meiser & Mohammad 2018; Koskela et al.
2020), by :class:`plda.accounting.composition.HistoryComposition`.
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
from plda.engine.realized import realized_lower
from plda.engine.recipe import add_remove_steps
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

    Records steps and answers certified bounds on the privacy of their composition, as
    :class:`~plda.pld.PrivacyLossDistribution` answers them (deltas below 1e-8 by the engine's
    tilted composition). The other queries (tradeoff curves, membership-inference risk,
    Gaussian DP, Rényi DP, zCDP) have the PLD's names and are answered by the PLD of the
    history (:attr:`pld`).

    Parameters
    ----------
    relation : str, optional
        ``"add_remove"`` (default) or ``"replace_one"`` neighbouring datasets.
    accuracy : float, optional
        Target relative gap ``(upper - lower) / upper`` of ``epsilon(delta)``, in ``(0, 1)``.

    Raises
    ------
    ValueError
        If ``relation`` is not one of those, or ``accuracy`` not in ``(0, 1)`` (``TypeError``
        if not a real number).

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
        accuracy = check.fraction("accuracy", accuracy)
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
        group_size: int = 1,
    ) -> None:
        """Record ``count`` DP-SGD steps: a Gaussian of noise ``sigma`` on sampled batches.

        The Gaussian has L2 sensitivity 1 (after clipping); ``sampler`` and its sizes are those
        of :func:`plda.sampled_mechanism`. An epoch sampler records one epoch per ``num_steps``.

        Parameters
        ----------
        noise_multiplier : float
            ``sigma``, in ``(0, inf)``.
        sample_rate : float, optional
            The Poisson rate (``"poisson"``, ``"truncated-poisson"``).
        count : int, optional
            Steps recorded; a multiple of ``num_steps`` for an epoch sampler.
        sampler : str, optional
            A name of :data:`plda.samplers.SAMPLERS` (default ``"poisson"``).
        batch_size, dataset_size, max_batch_size, num_steps, num_selected : int, optional
            The sampler's sizes (:func:`plda.sampled_mechanism`).
        accumulation_steps, group_size : int, optional
            ``m`` Poisson micro-batches summed per step, noise added once; a protected unit of
            ``K`` records (add/remove): ``K m`` draws under ``"poisson"``
            (``plda.PoissonSampled(..., group_size=K m)``), a hypergeometric mixture under
            ``"without-replacement"``.

        Raises
        ------
        ValueError
            Naming the argument (nothing is recorded): a value out of range (of the wrong
            type: ``TypeError``), an argument the sampler does not take or a missing one, a
            count not a multiple of ``num_steps``, or a sampler/relation pair without analysis.
        """
        noise_multiplier = check.positive_float("noise_multiplier", noise_multiplier)
        count = check.count("count", count, minimum=1)
        if sample_rate is not None:
            sample_rate = check.probability("sample_rate", sample_rate, open_low=True)
        mechanism = sampled_mechanism(
            Gaussian.from_noise_multiplier(noise_multiplier, self._relation),
            sampler,
            sample_rate=sample_rate,
            batch_size=batch_size,
            dataset_size=dataset_size,
            max_batch_size=max_batch_size,
            num_steps=num_steps,
            num_selected=num_selected,
            accumulation_steps=accumulation_steps,
            group_size=group_size,
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
        """Record ``count`` runs of any plda ``mechanism`` (``plda.Laplace(...)`` etc.).

        Parameters
        ----------
        mechanism : Mechanism
            The mechanism run.
        count : int, optional
            How many times it ran, ``>= 1``.

        Raises
        ------
        TypeError
            If ``mechanism`` is not a plda mechanism, or ``count`` is not a number.
        ValueError
            If ``count`` is not an integer ``>= 1``, the history would exceed ``1e12`` steps,
            or the mechanism has no replace-one analysis under that relation (nothing is
            recorded).
        """
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
        add_remove_steps(((mechanism, 1),), self._relation)  # refused before recording
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
        """Number of recorded training steps: one per run, ``num_steps`` per epoch of an epoch
        sampler (``step(count=k, ...)`` adds ``k`` whatever the sampler, as in the adapters)."""
        return self._training_steps

    def __repr__(self) -> str:
        return (
            f"PLDAccountant(relation={self._relation!r}, accuracy={self._accuracy!r}, "
            f"steps={len(self)}, runs={len(self._history)})"
        )

    @property
    @_locked
    def pld(self) -> PrivacyLossDistribution:
        """The history as a :class:`~plda.pld.PrivacyLossDistribution` (to save, compose, check).

        Before the first step, the composition of no step: it releases nothing (epsilon 0 at
        every delta, the tradeoff curve ``1 - alpha``), as the accountant's own answers say.
        """
        return PrivacyLossDistribution(merge_runs(self._history), self._relation, self._accuracy)

    # -------------------------------------------------------------------- queries
    @overload
    def epsilon(self, delta: float) -> float: ...
    @overload
    def epsilon(self, delta: ArrayLike) -> FloatArray: ...
    def epsilon(self, delta: ArrayLike) -> FloatOrArray:
        """Certified upper bound on ``epsilon(delta)``: ``epsilon_bounds(delta).upper``, faster.

        Parameters
        ----------
        delta : float or array_like
            Target delta(s) in ``[0, 1]``.

        Returns
        -------
        float or numpy.ndarray
            The composition is certified (epsilon, delta)-DP; 0 before the first step.

        Raises
        ------
        ValueError
            If ``delta`` is outside ``[0, 1]`` or NaN (not a number: ``TypeError``).
        """
        d = check.array_in("delta", delta, 0.0, 1.0)
        if not self._history or not d.size:  # (nothing asked: nothing to compute)
            return scalar(np.zeros(d.shape), delta)
        return scalar(self._epsilon_pair(d, need_lower=False)[1], delta)

    def epsilon_bounds(self, delta: ArrayLike) -> Bounds:
        """``(lower, upper)`` certified bounds on ``epsilon(delta)``.

        Parameters
        ----------
        delta : float or array_like
            Target delta(s) in ``[0, 1]``.

        Returns
        -------
        Bounds
            ``lower <= epsilon(delta) <= upper``, both certified; zeros before any step. The
            computation's gap is at most ``accuracy`` (else an :class:`~plda.AccuracyWarning`);
            a step that is not ``tight`` (a guarantee such as ``ZCDP``, or a sampler that warns
            :class:`~plda.NotTightWarning`) widens the interval by its analysis's own gap.

        Raises
        ------
        ValueError
            If ``delta`` is outside ``[0, 1]`` or NaN (not a number: ``TypeError``).
        """
        d = check.array_in("delta", delta, 0.0, 1.0)
        if not self._history or not d.size:
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
        """Certified upper bound on ``delta(epsilon)``: ``delta_bounds(epsilon).upper``, faster.

        Parameters
        ----------
        epsilon : float or array_like
            Epsilon(s) in ``[0, inf]``. At ``inf`` the answer is the mass at infinite privacy
            loss (``1 - (1 - d)^k`` for ``k`` runs of ``ApproximateDP(e, d)``).

        Returns
        -------
        float or numpy.ndarray
            ``delta(eps) = E_P[(1 - e^(eps - L))_+]`` of the composed loss ``L``, certified.

        Raises
        ------
        ValueError
            If ``epsilon`` is negative or NaN (not a number: ``TypeError``).
        """
        e = check.array_in("epsilon", epsilon, 0.0, np.inf)
        if not self._history or not e.size:
            return scalar(np.zeros(e.shape), epsilon)
        return scalar(self._delta_pair(e, need_lower=False)[1], epsilon)

    def delta_bounds(self, epsilon: ArrayLike) -> Bounds:
        """``(lower, upper)`` certified bounds on ``delta(epsilon)``.

        Parameters
        ----------
        epsilon : float or array_like
            Epsilon(s) in ``[0, inf]``.

        Returns
        -------
        Bounds
            ``lower <= delta(epsilon) <= upper``, both certified; zeros before the first step.

        Raises
        ------
        ValueError
            If ``epsilon`` is negative or NaN (not a number: ``TypeError``).
        """
        e = check.array_in("epsilon", epsilon, 0.0, np.inf)
        if not self._history or not e.size:
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
        """The accountant's state as a JSON-serializable dict, for a checkpoint.

        Returns
        -------
        dict
            ``{"format": "plda.accountant", "version": 1, "relation", "accuracy", "history":
            [{"mechanism": {...}, "count": k}, ...]}``.
        """
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

        Parameters
        ----------
        state : dict
            A saved state.

        Raises
        ------
        ValueError
            If ``state`` is corrupted or foreign; the whole state is checked first, so the
            accountant is left unchanged.
        """
        relation, accuracy, history = parse_state(state)
        self._relation, self._accuracy = relation, accuracy
        self._history = [[m, k] for m, k in history]
        self._steps = sum(k for _, k in self._history)
        self._training_steps = sum(k * training_steps(m) for m, k in self._history)
        self._composition = HistoryComposition(relation, accuracy)

    @classmethod
    def from_state_dict(cls, state: dict) -> PLDAccountant:
        """A new accountant with the state ``state`` (from :meth:`state_dict`).

        Parameters
        ----------
        state : dict
            A saved state.

        Returns
        -------
        PLDAccountant
            An accountant that answers bit for bit like the one saved.

        Raises
        ------
        ValueError
            If ``state`` is corrupted or foreign.
        """
        relation, accuracy, _ = parse_state(state)
        accountant = cls(relation=relation, accuracy=accuracy)
        accountant.load_state_dict(state)
        return accountant

    # ------------------------------------------------------------- other views
    def composed_laws(self) -> ComposedLaws:
        """The recorded history as the conversions read it: ``self.pld.composed_laws()``.

        The queries of :class:`~plda.conversions.queries.CompositionQueries` read it.

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
        """Bounds on the membership-inference advantage ``max(TPR - FPR) = delta(0)``.

        ``self.pld.advantage_bounds()`` (:meth:`plda.PrivacyLossDistribution.advantage_bounds`).

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
