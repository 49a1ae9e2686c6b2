"""``PLDPrivacyAccountant``: plda's certified PLD accounting behind dp_accounting's interface.

A subclass of ``dp_accounting.PrivacyAccountant``, so it drops into code written for
dp_accounting (``compose``, ``supports``, ``get_epsilon``, ``get_delta``, ``ledger``,
``dp_accounting.calibrate_dp_mechanism``). Events map to plda mechanisms as in
:func:`plda.adapters.dp_accounting.from_dp_event`. Needs dp_accounting:
``pip install "plda[dp-accounting]"``; an example: ``docs/howto/opacus-and-dp-accounting.md``.
"""

from __future__ import annotations

import math

from plda._internal.errors import warn
from plda.accounting.accountant import PLDAccountant
from plda.adapters import certified
from plda.adapters.dp_accounting import NON_PRIVATE, mechanisms_from_dp_event
from plda.pld import DEFAULT_ACCURACY, Bounds

try:
    import dp_accounting
except ImportError as error:  # optional: the class exists only when dp_accounting does
    dp_accounting = None
    _IMPORT_ERROR = error

_MISSING = (
    "plda.adapters.PLDPrivacyAccountant needs dp_accounting: install it with "
    '`pip install "plda[dp-accounting]"` (or `pip install dp-accounting`)'
)

__all__ = ["PLDPrivacyAccountant"]

#: event types whose children are walked to name the offending sub-event
_CONTAINERS = {"ComposedDpEvent": "events", "SelfComposedDpEvent": "event"}


def _deprecated(old: str, new: str) -> None:
    warn(f"PLDPrivacyAccountant.{old} is deprecated and will be removed in plda 0.2.0: use "
         f"PLDPrivacyAccountant.{new} (plda's name for the query)", DeprecationWarning)


def _offending(event, relation: str):
    """The innermost sub-event of ``event`` that plda cannot map under ``relation`` (``event``
    itself if none of its children is to blame)."""
    children = getattr(event, _CONTAINERS.get(type(event).__name__, ""), None)
    if children is not None:
        for child in children if isinstance(children, (list, tuple)) else [children]:
            try:
                mechanisms_from_dp_event(child, relation=relation)
            except ValueError:
                return _offending(child, relation)
    return event


if dp_accounting is None:

    def __getattr__(name: str):
        if name == "PLDPrivacyAccountant":
            raise ImportError(_MISSING) from _IMPORT_ERROR
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

else:
    _RELATIONS = {
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE: "add_remove",
        dp_accounting.NeighboringRelation.REPLACE_ONE: "replace_one",
    }

    class PLDPrivacyAccountant(dp_accounting.PrivacyAccountant):
        """A ``dp_accounting.PrivacyAccountant`` with plda's certified PLD bounds.

        ``get_epsilon`` and ``get_delta`` return certified upper bounds (the numbers to report);
        ``epsilon_bounds`` and ``delta_bounds`` (plda's names, as on
        :class:`~plda.PLDAccountant`; dp_accounting has no such queries) add certified lower
        bounds, and ``len()`` is the number of recorded steps. ``compose`` raises
        ``dp_accounting.UnsupportedEventError`` for an event plda cannot account, and records
        nothing.

        Parameters
        ----------
        neighboring_relation : dp_accounting.NeighboringRelation, optional
            ``NeighboringRelation.ADD_OR_REMOVE_ONE`` (default) or ``REPLACE_ONE``.
        accuracy : float, optional
            Target relative gap ``(upper - lower) / upper`` of the epsilon bounds, as for
            :class:`~plda.PLDAccountant`.

        Raises
        ------
        ValueError
            If ``neighboring_relation`` is ``REPLACE_SPECIAL`` (not supported), or
            ``accuracy`` is not in ``(0, 1)``.
        """

        def __init__(
            self,
            neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE,
            accuracy: float = DEFAULT_ACCURACY,
        ):
            if neighboring_relation not in _RELATIONS:
                raise ValueError(
                    f"neighboring_relation must be NeighboringRelation.ADD_OR_REMOVE_ONE or "
                    f"REPLACE_ONE, got {neighboring_relation!r}"
                )
            self._plda = PLDAccountant(relation=_RELATIONS[neighboring_relation], accuracy=accuracy)
            super().__init__(neighboring_relation)

        @property
        def accountant(self) -> PLDAccountant:
            """The underlying :class:`~plda.PLDAccountant`: read it, compose through this class.

            Composing through this class keeps dp_accounting's ledger in step.
            """
            return self._plda

        def _recorded_with(self, event, count: int) -> PLDAccountant:
            """A new plda accountant holding everything so far plus ``count`` runs of ``event``
            (raises ``ValueError`` when plda cannot account it)."""
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                raise ValueError(f"count must be an integer >= 0, got {count!r}")
            parts = mechanisms_from_dp_event(event, relation=self._plda.relation)
            trial = PLDAccountant(relation=self._plda.relation, accuracy=self._plda.accuracy)
            for mechanism, times in self._plda.history:
                trial.compose(mechanism, times)
            for mechanism, times in parts:
                # (count 0, dp_accounting's supports(): each part is still checked, e.g. against
                # the relation, by recording it once on a throwaway accountant)
                (trial if count else PLDAccountant(relation=trial.relation)).compose(
                    mechanism, times * count or 1)
            return trial

        def _maybe_compose(self, event, count: int, do_compose: bool):
            """dp_accounting's hook: ``None`` when ``count`` runs of ``event`` can be accounted
            (recording them if ``do_compose``), else the offending sub-event and the reason."""
            try:
                trial = self._recorded_with(event, count)
            except (ValueError, TypeError) as error:
                return self.CompositionErrorDetails(
                    invalid_event=_offending(event, self._plda.relation),
                    error_message=str(error),
                )
            if do_compose:
                self._plda = trial
            return None

        def _non_private(self) -> bool:
            """Whether an event without any guarantee ran unsampled: then the answers are exact
            without composing (epsilon inf below delta 1, delta 1 at every epsilon)."""
            return any(mechanism == NON_PRIVATE for mechanism, _ in self._plda.history)

        def get_epsilon(self, target_delta: float) -> float:
            """Certified upper bound on epsilon at ``target_delta``.

            Parameters
            ----------
            target_delta : float
                The delta, in ``[0, 1]``.

            Returns
            -------
            float
                0 with nothing composed; inf when no finite epsilon holds (e.g. after a
                ``NonPrivateDpEvent``).

            Raises
            ------
            ValueError
                If ``target_delta`` is outside ``[0, 1]`` or NaN.
            """
            if self._non_private():
                return self.epsilon_bounds(target_delta).upper
            return float(self._plda.epsilon(target_delta))  # composes the upper version only

        def get_delta(self, target_epsilon: float) -> float:
            """Certified upper bound on delta at ``target_epsilon``.

            Parameters
            ----------
            target_epsilon : float
                The epsilon, in ``[0, inf]``.

            Returns
            -------
            float
                The delta; 0 with nothing composed.

            Raises
            ------
            ValueError
                If ``target_epsilon`` is negative or NaN.
            """
            if self._non_private():
                return self.delta_bounds(target_epsilon).upper
            return float(self._plda.delta(target_epsilon))

        def epsilon_bounds(self, delta: float) -> Bounds:
            """Certified lower and upper bounds on epsilon at ``delta``.

            Parameters
            ----------
            delta : float
                The delta, in ``[0, 1]``.

            Returns
            -------
            Bounds
                ``Bounds(lower=..., upper=...)``, both certified, as
                :meth:`plda.PLDAccountant.epsilon_bounds` (the lower one of a truncated Poisson
                step from its realized pair).

            Raises
            ------
            ValueError
                If ``delta`` is outside ``[0, 1]`` or NaN.
            """
            if self._non_private() and 0 <= delta < 1:
                return Bounds(lower=math.inf, upper=math.inf)
            if self._non_private() and delta == 1:
                return Bounds(lower=0.0, upper=0.0)  # every mechanism is (0, 1)-DP
            # a truncated-Poisson step's lower bound comes from its realized pair
            return certified.epsilon_bounds(self._plda, delta)

        def delta_bounds(self, epsilon: float) -> Bounds:
            """Certified lower and upper bounds on delta at ``epsilon``.

            Parameters
            ----------
            epsilon : float
                The epsilon, in ``[0, inf]``.

            Returns
            -------
            Bounds
                ``Bounds(lower=..., upper=...)``, both certified, as
                :meth:`plda.PLDAccountant.delta_bounds`.

            Raises
            ------
            ValueError
                If ``epsilon`` is negative or NaN.
            """
            if self._non_private() and epsilon >= 0:
                return Bounds(lower=1.0, upper=1.0)
            return certified.delta_bounds(self._plda, epsilon)

        def get_epsilon_bounds(self, target_delta: float) -> Bounds:
            """Deprecated, removed in 0.2.0: :meth:`epsilon_bounds`.

            Parameters
            ----------
            target_delta : float
                The delta, in ``[0, 1]``.

            Returns
            -------
            Bounds
                ``epsilon_bounds(target_delta)``.

            Warns
            -----
            DeprecationWarning
                Always.
            """
            _deprecated("get_epsilon_bounds", "epsilon_bounds")
            return self.epsilon_bounds(target_delta)

        def get_delta_bounds(self, target_epsilon: float) -> Bounds:
            """Deprecated, removed in 0.2.0: :meth:`delta_bounds`.

            Parameters
            ----------
            target_epsilon : float
                The epsilon, in ``[0, inf]``.

            Returns
            -------
            Bounds
                ``delta_bounds(target_epsilon)``.

            Warns
            -----
            DeprecationWarning
                Always.
            """
            _deprecated("get_delta_bounds", "delta_bounds")
            return self.delta_bounds(target_epsilon)

        def __len__(self) -> int:
            """Number of recorded steps, as ``len()`` of :class:`~plda.PLDAccountant` counts
            them."""
            return len(self._plda)

        def __repr__(self) -> str:
            return (
                f"PLDPrivacyAccountant(neighboring_relation={self.neighboring_relation}, "
                f"accuracy={self._plda.accuracy!r}, steps={len(self._plda)})"
            )
