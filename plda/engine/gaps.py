"""How a query's answer is judged: the floors of the tilt, the deltas a delta query refines
for, and the accuracy warning of delta answers. A composition's own rounding floor
(:func:`~plda.engine.composer.rounding_floor`) is the composer's, which charges that rounding.
"""

from __future__ import annotations

from operator import methodcaller

import numpy as np

from plda._internal.errors import warn_if_inaccurate
from plda._internal.floats import relative_gap
from plda.engine.composer import FFT_FLOOR
from plda.engine.recipe import bounds_over_directions

__all__ = [
    "ABOVE_TILT_FLOOR",
    "REFINE_FLOOR",
    "TILT_FLOOR",
    "TILT_REFINE",
    "monotone_envelope",
    "probes",
    "warn_where_delta_misses",
]

#: deltas below this sit on the FFT's rounding floor, where refining the grid cannot help
REFINE_FLOOR = 1e-10
#: targets below this are left to the untilted bounds: the laws' deepest kept tail
#: (:data:`plda.engine.tilt.DEEPEST_LAW_TAIL`, 1e-310) and their masses below 2.2e-308 (moved
#: to +inf) hold about 1e-305 at +inf after 1000 steps
TILT_FLOOR = 1e-305
#: the smallest delta tilted for: its epsilon lower bound holds at every smaller delta
ABOVE_TILT_FLOOR = float(np.nextafter(TILT_FLOOR, 1.0))
#: a tilted gap above this is refined no further: it is the tilt's (its tilted mass held by a
#: sampled step's rare large losses, far from the answer), which no finer grid narrows
#: (q = 1e-3, sigma = 1, 1e3 steps at 1e-200 refined to a 2e6-point grid for 2.4 s, its gap
#: staying at 0.72)
TILT_REFINE = 0.1


def monotone_envelope(targets: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> tuple:
    """Bounds at several targets tightened by the monotonicity of the answer.

    ``epsilon(delta)`` and ``delta(epsilon)`` are both non-increasing, so an upper bound at a
    target bounds every larger target too, and a lower bound every smaller one. Bounds from
    different grids (a tilted target's and an untilted one's) may be tighter at one target than
    at a larger one; the envelope keeps every answer consistent with the others, and certified
    (``lower > upper`` after it means some bound was wrong: the caller's bracket check raises).

    Parameters
    ----------
    targets
        The deltas (epsilon queries) or epsilons (delta queries), flat.
    lower
        Certified lower bounds there, flat.
    upper
        Certified upper bounds there, flat.

    Returns
    -------
    tuple of numpy.ndarray
        ``(lower, upper)``: ``upper`` at a target is the least upper bound at any target up to
        it, ``lower`` the largest lower bound at any target from it on (new arrays).
    """
    order = np.argsort(targets, kind="stable")
    lower, upper = np.array(lower, dtype=float), np.array(upper, dtype=float)
    # fmin/fmax: a NaN never replaces a bound (and is kept only where nothing else is known)
    upper[order] = np.fmin.accumulate(upper[order])
    lower[order] = np.fmax.accumulate(lower[order][::-1])[::-1]
    return lower, upper


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


def warn_where_delta_misses(
    versions: dict, lower, upper, accuracy: float, floor: float = FFT_FLOOR
) -> None:
    """Warn where a delta answer misses the accuracy.

    That is where neither its own interval nor the epsilon interval at the delta it reports is
    within ``accuracy`` (relative). The epsilon gap at the deltas reported is what a delta
    query refines for; near ``epsilon = 0`` it is ill-conditioned (a relative gap of a tiny
    epsilon) while the delta interval is tight, so either suffices. Judged where the FFT
    resolves the answer (an upper bound of at least ``floor``, below 1), at
    :func:`probes` of those; an upper bound of 1 by its own interval. Silent inside
    :func:`plda._internal.errors.quiet_accuracy`.

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
    floor
        The smallest delta the untilted grid resolves (:func:`rounding_floor`); smaller
        answers are the tilted composition's, judged by the caller.

    Returns
    -------
    None
        Warns (:class:`~plda.AccuracyWarning`) naming the epsilon interval and its gap.
    """
    lower, upper = np.ravel(lower), np.ravel(upper)
    loose = (relative_gap(lower, upper) > accuracy) & (upper >= floor)
    # an upper bound of 1 says nothing, and epsilon at delta 1 is 0 on both sides (no gap to
    # read): its own interval is what misses (PrivacyProfile((1, 1e150), (0.1, 0)) x 3: the
    # grid cannot hold the 1e150 losses, [0.271, 1] at every epsilon, and it was silent)
    trivial = loose & (upper >= 1)
    if trivial.any():
        warn_if_inaccurate(lower[trivial], upper[trivial], accuracy, query="delta_bounds")
    probe = probes([upper[loose]])
    if probe.size:
        low, high = bounds_over_directions(versions, methodcaller("epsilon", probe))
        warn_if_inaccurate(low, high, accuracy,
                           query="delta_bounds (epsilon at the deltas reported)")
