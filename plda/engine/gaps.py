"""How a query's answer is judged: the floors of the FFT, the deltas a delta query refines
for, and the accuracy warning of delta answers.
"""

from __future__ import annotations

from operator import methodcaller

import numpy as np

from plda._internal.errors import warn_if_inaccurate
from plda._internal.floats import relative_gap
from plda.engine.recipe import bounds_over_directions

__all__ = [
    "FFT_FLOOR",
    "REFINE_FLOOR",
    "TILT_FLOOR",
    "probes",
    "warn_where_delta_misses",
]

#: an FFT composition resolves deltas down to about this fraction of its mass: smaller deltas
#: are answered by a composition under an exponential tilt (:mod:`plda.engine.tilt`)
FFT_FLOOR = 1e-8
#: deltas below this sit on the FFT's rounding floor, where refining the grid cannot help
REFINE_FLOOR = 1e-10
#: targets below this are left to the untilted bounds (no tilt resolves them)
TILT_FLOOR = 1e-60


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


def warn_where_delta_misses(versions: dict, lower, upper, accuracy: float) -> None:
    """Warn where a delta answer misses the accuracy.

    That is where neither its own interval nor the epsilon interval at the delta it reports is
    within ``accuracy`` (relative). The epsilon gap at the deltas reported is what a delta
    query refines for; near ``epsilon = 0`` it is ill-conditioned (a relative gap of a tiny
    epsilon) while the delta interval is tight, so either suffices. Judged where the FFT
    resolves the answer (an upper bound of at least :data:`FFT_FLOOR`, below 1), at
    :func:`probes` of those. Silent inside :func:`plda._internal.errors.quiet_accuracy`.

    Parameters
    ----------
    versions
        ``{direction: pair}``: the grid versions the answer was read from.
    lower
        The reported lower bounds on delta (the grid versions').
    upper
        The reported upper bounds on delta.
    accuracy
        The requested relative gap.

    Returns
    -------
    None
        Warns (:class:`~plda.AccuracyWarning`) naming the epsilon interval and its gap.
    """
    lower, upper = np.ravel(lower), np.ravel(upper)
    loose = (relative_gap(lower, upper) > accuracy) & (upper >= FFT_FLOOR)
    probe = probes([upper[loose]])
    if probe.size:
        low, high = bounds_over_directions(versions, methodcaller("epsilon", probe))
        warn_if_inaccurate(low, high, accuracy,
                           query="delta_bounds (epsilon at the deltas reported)")
