"""plda's documented warning and exception classes (re-exported as ``plda.AccuracyWarning`` and
``plda.CalibrationError``)."""

from __future__ import annotations

import threading
import warnings
from contextlib import contextmanager

import numpy as np

#: gaps in epsilon below this (absolute) never count as missing the accuracy: they are far below
#: anything reported, and a relative gap is meaningless at epsilon near 0
ABSOLUTE_SLACK = 1e-9


class AccuracyWarning(UserWarning):
    """A returned interval is wider than the requested ``accuracy``.

    The bounds are still certified (the upper bound holds, the lower bound holds); they are only
    further apart than asked, because the grid reached its size cap (very long compositions) or
    the delta lies below what the composition resolves (deltas far below 1e-30)."""


class GaussianDPWarning(AccuracyWarning):
    """No finite Gaussian-DP ``mu`` is certified for a composition (``gdp_mu`` returned
    ``inf``).

    The message says why and what to pass instead: the certified upper bound keeps a mass at
    infinite privacy loss above ``delta_floor`` (a mechanism with a ``delta``, or an analysis
    whose bound keeps one), or the certified privacy profile does not get below
    ``delta_floor``; a larger ``delta_floor`` (e.g. ``1e-9``) then certifies a finite ``mu``
    above it, and ``gaussian_dp(...).best_fit`` gives the closest ``mu`` (an approximation)."""


class GridTooLarge(MemoryError):
    """A composition would need more grid points than the cap (internal: the planner then
    coarsens the grid; it never reaches the user)."""

    def __init__(self, points: int, cap: int):
        super().__init__(f"composition needs {points} grid points (> {cap})")
        self.points, self.cap = points, cap


class SamplerMismatchWarning(UserWarning):
    """The batches were not drawn the way the accounting assumes.

    Raised by the Opacus adapter when steps are accounted as Poisson-subsampled (each record in
    each batch independently with probability ``sample_rate``) while the data loader actually
    draws fixed-size, shuffled or sequential batches: the reported epsilon is then not a bound
    for the training that ran (Lebeda et al. 2024; Chua et al. 2024). Use Opacus's
    ``poisson_sampling=True`` or account with the sampler that ran."""


class InvertedBracketError(RuntimeError):
    """A certified lower bound came out above the certified upper bound of the same quantity.

    Both are proven bounds on one number, so this is a defect in plda, never a property of the
    input: it is raised rather than hidden (a clamped bracket would look tight and certify
    nothing). Please report it with the inputs that produced it."""


def check_bracket(lower, upper, *, query: str) -> None:
    """Raise :class:`InvertedBracketError` where ``lower > upper`` (NaN compares false)."""
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    inverted = lower > upper
    if np.any(inverted):
        worst = int(np.argmax(np.where(inverted, lower - upper, -np.inf)))
        lo, hi = float(np.ravel(lower)[worst]), float(np.ravel(upper)[worst])
        raise InvertedBracketError(
            f"{query}: the certified lower bound {lo!r} exceeds the certified upper bound "
            f"{hi!r}; this is a defect in plda (please report it with the inputs)"
        )


class CalibrationError(ValueError):
    """A calibration target cannot be met inside the supported range of the parameter.

    The message names the target, the range searched and what to change."""


_QUIET = threading.local()


@contextmanager
def quiet_accuracy():
    """Within this block (in this thread only) :func:`warn_if_inaccurate` stays silent: for
    internal queries (a calibration's search, the accountant's call into the engine) whose
    caller judges and reports the accuracy of what it returns. Thread-local, unlike
    ``warnings.catch_warnings``, which changes process-wide state."""
    depth = getattr(_QUIET, "depth", 0)
    _QUIET.depth = depth + 1
    try:
        yield
    finally:
        _QUIET.depth = depth


def warn_if_inaccurate(
    lower, upper, accuracy: float, *, query: str, stacklevel: int = 3, advice: str | None = None
) -> None:
    """Warn with :class:`AccuracyWarning` where ``(upper - lower) / upper > accuracy`` (unless
    inside :func:`quiet_accuracy`); ``advice`` replaces the closing advice (what the caller
    can change), which by default is to pass a larger accuracy or split the composition."""
    if getattr(_QUIET, "depth", 0):
        return
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    finite = np.isfinite(upper)
    with np.errstate(invalid="ignore"):
        missed = finite & (upper - lower > accuracy * upper + ABSOLUTE_SLACK)
    if not np.any(missed):
        return
    with np.errstate(invalid="ignore", divide="ignore"):
        gaps = np.where(missed, (upper - lower) / np.maximum(upper, 1e-300), -1.0)
    worst = int(np.argmax(gaps))
    lo, hi = float(np.ravel(lower)[worst]), float(np.ravel(upper)[worst])
    warnings.warn(
        f"{query}: the certified interval [{lo:.6g}, {hi:.6g}] has relative gap "
        f"{(hi - lo) / hi:.3g}, above the requested accuracy {accuracy:g} (the grid reached its "
        "size cap, or the query lies below what the composition resolves). Both bounds still "
        "hold; "
        + (advice or "pass a larger accuracy to silence this, or split the composition."),
        AccuracyWarning,
        stacklevel=stacklevel,
    )
