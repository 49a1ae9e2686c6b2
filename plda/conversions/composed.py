"""A composition as the conversions read it: its steps and its composed grid laws."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property

from plda.grid.discrete import DiscreteLoss
from plda.mechanisms.base import Mechanism

#: the grid laws of a composition per direction ("remove", and "add" unless it is symmetric)
DirectionLaws = Mapping[str, DiscreteLoss]


@dataclass(frozen=True, eq=False)
class ComposedLaws:
    """What the conversions read of a composition (build it by keyword).

    Parameters
    ----------
    steps
        ``((mechanism, count), ...)`` under add/remove semantics
        (:func:`plda.engine.recipe.add_remove_steps`):
        closed forms (Gaussian DP of Gaussians, zCDP) and per-step Rényi cumulants use them.
    grid
        ``bound -> {direction: DiscreteLoss}`` for ``bound`` in ``("upper", "lower")``: the
        composed pessimistic and optimistic grid laws, asked for on first use (a Rényi query
        never discretizes). ``None`` when only the steps are known. The two sets of grid laws
        are then :attr:`upper` and :attr:`lower`.
    """

    steps: tuple = ()
    grid: Callable[[str], DirectionLaws] | None = field(default=None, repr=False)

    @classmethod
    def from_laws(cls, *, upper: DirectionLaws, lower: DirectionLaws, steps=()) -> ComposedLaws:
        """A composition from grid laws already composed.

        Parameters
        ----------
        upper : Mapping
            ``{direction: DiscreteLoss}`` of pessimistic grid laws (``"remove"``, and ``"add"``
            unless the composition is symmetric).
        lower : Mapping
            The optimistic grid laws, likewise.
        steps : tuple, optional
            ``((mechanism, count), ...)`` under add/remove semantics.

        Returns
        -------
        ComposedLaws
            The composition.

        Raises
        ------
        ValueError
            If a mapping lacks ``"remove"``, has other keys, or holds laws of the wrong bound.
        """
        for name, laws in (("upper", upper), ("lower", lower)):
            if not laws or set(laws) - {"remove", "add"} or "remove" not in laws:
                raise ValueError(f"{name} must map 'remove' (and optionally 'add') to grid laws")
            if any(law.upper != (name == "upper") for law in laws.values()):
                raise ValueError(f"{name} must hold {name} (pessimistic/optimistic) grid laws")
        return cls(steps=tuple(steps), grid={"upper": upper, "lower": lower}.__getitem__)

    def laws(self, bound: str) -> DirectionLaws:
        """The grid laws of one bound.

        Parameters
        ----------
        bound : str
            ``"upper"`` (pessimistic) or ``"lower"`` (optimistic).

        Returns
        -------
        Mapping
            ``{direction: DiscreteLoss}``.

        Raises
        ------
        ValueError
            For another ``bound``, or if the composition carries no grid laws.
        """
        if bound not in ("upper", "lower"):
            raise ValueError(f"bound must be 'upper' or 'lower', got {bound!r}")
        return self.upper if bound == "upper" else self.lower

    @cached_property
    def upper(self) -> DirectionLaws:
        """Pessimistic grid laws per direction: every query built on them is certified.

        Raises
        ------
        ValueError
            If the composition carries no grid laws (``grid=None``).
        """
        return self._grid("upper")

    @cached_property
    def lower(self) -> DirectionLaws:
        """Optimistic grid laws per direction: the other side of every bracket.

        Raises
        ------
        ValueError
            If the composition carries no grid laws (``grid=None``).
        """
        return self._grid("lower")

    def _grid(self, bound: str) -> DirectionLaws:
        if self.grid is None:
            raise ValueError("this composition carries no grid laws (grid=None)")
        return self.grid(bound)


def steps_of(composed: ComposedLaws) -> tuple[tuple[Mechanism, int], ...]:
    """The steps of a composition, checked to be one.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.

    Returns
    -------
    tuple
        ``((mechanism, count), ...)``.

    Raises
    ------
    TypeError
        If ``composed`` is not :class:`ComposedLaws`.
    """
    if not isinstance(composed, ComposedLaws):
        raise TypeError(f"composed must be ComposedLaws, got {type(composed).__name__}")
    return composed.steps
