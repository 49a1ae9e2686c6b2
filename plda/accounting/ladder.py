"""The accountant's grid steps: a power-of-two ladder that stays put while a history grows, and
the step policy (:class:`LadderSteps`) the query driver refines on.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from plda.engine.plan import MIN_STEP

__all__ = ["LadderSteps", "halved_step", "ladder_step"]


def ladder_step(step: float, unit: float | None) -> float:
    """Largest step at most ``step`` on the ladder ``unit * 2^-j``.

    The ladder keeps the grid put while a history grows, so discretizations and spectra are
    reused.

    Parameters
    ----------
    step
        The step asked for.
    unit
        The atoms' common spacing, or None (the ladder of powers of two then).

    Returns
    -------
    float
        The ladder step.
    """
    if unit and unit >= step / 4:
        if unit <= step:
            return float(unit)
        return float(unit / 2.0 ** math.ceil(math.log2(unit / step) - 1e-12))
    return float(2.0 ** math.floor(math.log2(step) + 1e-12))


def halved_step(step: float, gap: float, accuracy: float, unit: float | None) -> float:
    """The next step of a refinement on the ladder of :func:`ladder_step`.

    Half the step, or a quarter when the gap is so far off (16x) that halving cannot close it
    even where it falls like ``h^4`` (on coarse grids the gap falls faster than ``h^2``, so a
    step predicted from ``h^2`` would often be finer than needed, which every later query of a
    history pays for; the coarse trials are cheap).

    Parameters
    ----------
    step
        The current step.
    gap
        Its measured relative gap.
    accuracy
        The target gap.
    unit
        The atoms' common spacing, or None.

    Returns
    -------
    float
        The next ladder step.
    """
    far = not np.isfinite(gap) or gap > 16 * accuracy
    return ladder_step(step * (0.25 if far else 0.5), unit)


@dataclass(frozen=True)
class LadderSteps:
    """The accountant's step policy: grid steps on a power-of-two ladder.

    What :meth:`plda.engine.query.Query.refined` and :meth:`~plda.engine.query.Query.gap`
    read: each refinement halves the step on the ladder of :func:`ladder_step`
    (or quarters it when the gap is far off, :func:`halved_step`), so the
    grid stays put while the history grows; a trial grid is judged on its leading direction
    first, reading another direction's optimistic version only within ``margin`` (the
    accuracy) of the upper bound.

    Attributes
    ----------
    accuracy : float
        Target relative gap of ``epsilon(delta)``; also the margin.
    unit : float or None
        The atoms' common spacing (the ladder's top rung), or None.
    """

    accuracy: float
    unit: float | None = None
    #: the accountant's steps are always refined (no step is fixed)
    fixed = None

    @property
    def margin(self) -> float:
        """The margin of a trial grid's non-leading directions: the accuracy."""
        return self.accuracy

    def next_step(self, step: float, gap: float) -> float | None:
        """The next rung of the ladder below ``step``.

        Parameters
        ----------
        step : float
            The current grid step.
        gap : float
            The relative gap reached on it.

        Returns
        -------
        float or None
            The step halved (or quartered when the gap is far off), None below the finest
            step.
        """
        finer = halved_step(step, gap, self.accuracy, self.unit)
        return finer if finer >= MIN_STEP else None
