"""plda's documented warning and exception classes (re-exported as ``plda.PLDAWarning``,
``plda.AccuracyWarning``, ``plda.CalibrationError``, ...) and the one way plda issues a warning
(:func:`warn`): at the user's line, once per public call."""

from __future__ import annotations

import functools
import inspect
import math
import sys
import threading
import warnings
from contextlib import contextmanager

import numpy as np

#: gaps in epsilon below this (absolute) never count as missing the accuracy: they are far below
#: anything reported, and a relative gap is meaningless at epsilon near 0 (so for epsilon below
#: about ``ABSOLUTE_SLACK / accuracy``, 1e-6 at the default, the target is this absolute one;
#: documented with AccuracyWarning, the ``accuracy`` arguments and docs/howto/accuracy.md)
ABSOLUTE_SLACK = 1e-9


class PLDAWarning(Warning):
    """Base class of every warning plda issues.

    Not a ``UserWarning``: a run that silences ``UserWarning`` (as many training scripts do, to
    hide the warnings of deep-learning libraries) still sees what plda says about its bounds.
    Filter plda's warnings as a group with ``warnings.simplefilter("error", plda.PLDAWarning)``
    or, on the command line, ``python -W error::plda.PLDAWarning script.py`` (``-W`` after
    ``-m pytest`` for pytest: ``python -m pytest -W error::plda.PLDAWarning``)."""


class AccuracyWarning(PLDAWarning):
    """A returned interval is wider than the requested ``accuracy``.

    The bounds are still certified (the upper bound holds, the lower bound holds); they are only
    further apart than asked, because the grid reached its size cap (very long compositions),
    the delta lies below what the composition resolves (deltas far below 1e-30), or a sampler's
    upper bound comes from a dominating pair that no datasets are known to realize
    (:class:`~plda.NotTightWarning`: the gap then includes the gap between its two analyses).

    A gap below ``1e-9`` in epsilon never counts as a miss (a relative gap means nothing near
    epsilon = 0): below about ``1e-9 / accuracy`` (``1e-6`` at the default accuracy) the target
    is that absolute one. The gap between an imported guarantee's two analyses
    (:class:`~plda.ZCDP`, :class:`~plda.RenyiDP`: the profile it certifies above, a Gaussian
    within it below) is not the computation's and is returned without this warning
    (``docs/howto/accuracy.md``)."""


class GaussianDPWarning(AccuracyWarning):
    """No finite Gaussian-DP ``mu`` is certified for a composition (``gdp_mu`` gave ``inf``).

    The message says why and what to pass instead: the certified upper bound keeps a mass at
    infinite privacy loss above ``delta_floor`` (a mechanism with a ``delta``, or an analysis
    whose bound keeps one), or the certified privacy profile does not get below
    ``delta_floor``; a larger ``delta_floor`` (e.g. ``1e-9``) then certifies a finite ``mu``
    above it, and ``gdp_summary().best_fit`` gives the closest ``mu`` (an approximation)."""


class GridTooLarge(MemoryError):
    """A composition would need more grid points than the cap (internal: the planner then
    coarsens the grid; it never reaches the user)."""

    def __init__(self, points: int, cap: int):
        super().__init__(f"composition needs {points} grid points (> {cap})")
        self.points, self.cap = points, cap


def grid_cap_refusal(cap: int) -> UncoveredParametersError:
    """The error a query raises when no grid step fits the composition within ``cap`` points.

    Parameters
    ----------
    cap : int
        The grid cap.

    Returns
    -------
    UncoveredParametersError
        The error to raise, saying which compositions reach it.
    """
    return UncoveredParametersError(
        f"count: this composition needs more than {cap} grid points at every grid step plda "
        "tries. Composed n times, a law with two or more losses spreads over about sqrt(n) "
        "grid cells however coarse the grid, so about 2e11 steps of Laplace(1.0), fewer of a "
        "subsampled or mixed law, are past what plda composes (Gaussian steps merge: they "
        "have no such limit)"
    )


class SamplerMismatchWarning(PLDAWarning):
    """The batches were not drawn the way the accounting assumes.

    Issued by :func:`plda.adapters.opacus.check_sampler` for a loader that is not Poisson, and by
    the Opacus adapter built with ``strict=False`` when it accounts steps as Poisson-subsampled
    (each record in each batch independently with probability ``sample_rate``) while the data
    loader draws its batches otherwise: the reported epsilon is then not a bound for the
    training that ran (Lebeda et al. 2024; Chua et al. 2024). Use Opacus's
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


class UncoveredParametersError(ValueError):
    """A mechanism's analysis does not cover these parameters (a ``ValueError``).

    :class:`~plda.RandomAllocation` needs ``sensitivity / sigma`` at most about 1.45 for its
    lattice, for instance. A calibration counts such a parameter as missing its target (the
    search moves to more noise), where any other error from a sampler is the caller's."""


_QUIET = threading.local()
_CALL = threading.local()

#: packages whose frames a warning passes over to reach the user's line: plda itself, and the
#: libraries that call into plda's adapters (Opacus's ``PrivacyEngine`` and the optimizer step
#: hooks torch runs, dp_accounting's ``PrivacyAccountant``)
LIBRARY_PACKAGES = frozenset({"plda", "opacus", "torch", "dp_accounting"})


def _package(frame) -> str:
    return frame.f_globals.get("__name__", "").partition(".")[0]


def _importlib_frame(frame) -> bool:
    # what ``warnings`` itself skips when it counts ``stacklevel`` (its _is_internal_frame)
    filename = frame.f_code.co_filename
    return "importlib" in filename and "_bootstrap" in filename


def user_stacklevel() -> int:
    """The ``stacklevel`` at which a ``warnings.warn`` call made by the caller of this function
    names the user's line: the caller of the outermost plda frame, passing over the libraries
    that call into plda (:data:`LIBRARY_PACKAGES`). The outermost, not the nearest: plda calls
    back through ``functools``, scipy's root finders and the user's own callables (a
    calibration's ``sampler``), and a fixed ``stacklevel`` is right for one path only."""
    frames = []  # frames[k] is what stacklevel k + 1 names, counted as ``warnings`` counts
    frame = sys._getframe(1)
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
        while frame is not None and _importlib_frame(frame):
            frame = frame.f_back
    index = max((k for k, f in enumerate(frames) if _package(f) == "plda"), default=0)
    while index + 1 < len(frames) and _package(frames[index + 1]) in LIBRARY_PACKAGES:
        index += 1
    return min(index + 2, len(frames))


def warn(message: str, category: type[Warning]) -> None:
    """Issue a plda warning at the user's line, once per public call.

    Inside a call decorated with :func:`one_warning_per_call` (plda's public entry points) a
    warning of the same category and text is issued once, however many internal queries meet
    it (a calibration evaluates dozens of compositions of one sampler). The filename and line
    are the user's (:func:`user_stacklevel`), so ``-W`` filters by module and the printed
    source line both refer to the user's code."""
    seen = getattr(_CALL, "seen", None)
    if seen is not None:
        key = (category, message)
        if key in seen:
            return
        seen.add(key)
    warnings.warn(message, category, stacklevel=user_stacklevel())


def one_warning_per_call(function):
    """Decorator of a public entry point: while it runs (the outermost decorated call of the
    thread), :func:`warn` issues each distinct warning once."""

    @functools.wraps(function)
    def entry(*args, **kwargs):
        if getattr(_CALL, "seen", None) is not None:  # an inner entry: the outer call's scope
            return function(*args, **kwargs)
        _CALL.seen = set()
        try:
            return function(*args, **kwargs)
        except GridTooLarge as exc:  # (internal: the planner catches it; this is the last net)
            raise grid_cap_refusal(exc.cap) from None
        finally:
            _CALL.seen = None

    return entry


def public_entries(cls):
    """Class decorator: every public method, class method and property getter of ``cls``
    becomes :func:`one_warning_per_call` (the class's public interface is the user's entry)."""
    for name, value in list(vars(cls).items()):
        if name.startswith("_"):
            continue
        if isinstance(value, property) and value.fget is not None:
            wrapped = property(one_warning_per_call(value.fget), value.fset, value.fdel,
                               value.__doc__)
        elif isinstance(value, (classmethod, staticmethod)):
            wrapped = type(value)(one_warning_per_call(value.__func__))
        elif inspect.isfunction(value):
            wrapped = one_warning_per_call(value)
        else:
            continue
        setattr(cls, name, wrapped)
    return cls


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


def inaccurate(lower, upper, accuracy: float) -> np.ndarray:
    """Where ``(upper - lower) / upper > accuracy``, beyond a slack for rounding.

    Parameters
    ----------
    lower, upper
        Certified bounds, same shape.
    accuracy
        The relative gap requested.

    Returns
    -------
    numpy.ndarray of bool
        True where the gap misses the accuracy; an infinite or NaN upper bound over a finite
        lower one misses any accuracy (both infinite is exact).
    """
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    finite = np.isfinite(upper)
    with np.errstate(invalid="ignore"):
        # a grid law that charges a tail to +inf, RandomAllocation at its noise limit
        unbounded = ~finite & np.isfinite(lower)
        return (finite & (upper - lower > accuracy * upper + ABSOLUTE_SLACK)) | unbounded


def warn_if_inaccurate(
    lower, upper, accuracy: float, *, query: str, advice: str | None = None
) -> None:
    """Warn with :class:`AccuracyWarning` (at the user's line, see :func:`warn`) where
    ``(upper - lower) / upper > accuracy`` (unless inside :func:`quiet_accuracy`); ``advice``
    replaces the closing advice (what the caller can change), which by default is to pass a
    larger accuracy or split the composition."""
    if getattr(_QUIET, "depth", 0):
        return
    missed = inaccurate(lower, upper, accuracy)
    if not np.any(missed):
        return
    lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
    unbounded = ~np.isfinite(upper) & np.isfinite(lower)
    with np.errstate(invalid="ignore", divide="ignore"):
        gaps = np.where(unbounded, np.inf,
                        np.where(missed, (upper - lower) / np.maximum(upper, 1e-300), -1.0))
    worst = int(np.argmax(gaps))
    lo, hi = float(np.ravel(lower)[worst]), float(np.ravel(upper)[worst])
    warn(
        f"{query}: the certified interval [{lo:.6g}, {hi:.6g}] has relative gap "
        f"{(hi - lo) / hi if math.isfinite(hi) else math.inf:.3g}, above the requested "
        f"accuracy {accuracy:g} (the grid reached its "
        "size cap, the query lies below what the composition resolves, or a sampler's upper "
        "bound comes from a dominating pair that no datasets are known to realize, so the gap "
        "includes that analysis's: see NotTightWarning). Both bounds still hold; "
        + (advice or "pass a larger accuracy to silence this, or split the composition."),
        AccuracyWarning,
    )
