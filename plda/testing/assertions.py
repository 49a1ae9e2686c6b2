"""Assertions that compare an accountant's numbers with certified bounds or exact references.

An observed value passes when it lies in ``[lower - tol(lower), upper + tol(upper)]``,
``tol(x) = rtol |x| + atol``, around the reference's bounds; a failure raises ``AssertionError``
naming the expected interval, the observed value and the miss (``docs/testing.md``). A NaN
observed value fails; a NaN reference raises ``ValueError`` (it cannot decide anything).
"""

from __future__ import annotations

import numbers

import numpy as np

from plda._internal.deprecation import warn_moved
from plda.mechanisms.base import Mechanism
from plda.pld import PrivacyLossDistribution

#: at most this many failing entries are spelled out in a message
_SHOWN = 5


def _tolerances(rtol, atol) -> tuple[float, float]:
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not value >= 0:
            raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    return float(rtol), float(atol)


def _as_pld(reference, count: int) -> PrivacyLossDistribution | None:
    if isinstance(reference, PrivacyLossDistribution):
        if count != 1:
            raise ValueError("count applies to a mechanism reference; use pld.self_compose(count)")
        return reference
    if isinstance(reference, Mechanism):
        return PrivacyLossDistribution.from_mechanism(reference, count)
    return None


#: the argument each quantity is read at (for messages)
_AT_NAME = {"epsilon": "delta", "delta": "epsilon", "tradeoff": "alpha"}


def _reject_nan(lower, upper, at, quantity: str, source: str) -> None:
    """Raise ``ValueError`` when the reference is NaN anywhere.

    Every comparison with NaN is false, so a NaN end would leave the band open on that side
    and the assertion would pass for any observed value: the test would silently check
    nothing. A NaN reference is a defect of the test (its exact value is unknown), not of the
    accountant under test, so it is bad input rather than a failed assertion.
    """
    lower, upper, at_arr = np.broadcast_arrays(lower, upper, np.asarray(at, float))
    nan = np.isnan(lower) | np.isnan(upper)
    if not np.any(nan):
        return
    index = np.flatnonzero(nan.ravel())
    shown = ", ".join(
        f"{_AT_NAME[quantity]}={at_arr.flat[i]:.6g}: [{lower.flat[i]:.10g}, {upper.flat[i]:.10g}]"
        for i in index[:_SHOWN]
    )
    more = f" and {len(index) - _SHOWN} more" if len(index) > _SHOWN else ""
    raise ValueError(
        f"reference ({source}) is NaN at {len(index)} of {nan.size} point(s) ({shown}{more}); "
        f"a reference must be a number or +-inf at every point: a NaN {quantity} cannot decide "
        f"the assertion"
    )


def _bounds(reference, quantity: str, at, count: int):
    """``(lower, upper, source)`` of ``quantity`` in ``("epsilon", "delta", "tradeoff")`` at
    ``at`` from any accepted reference; ``ValueError`` if any of them is NaN."""
    lower, upper, source = _read_bounds(reference, quantity, at, count)
    _reject_nan(lower, upper, at, quantity, source)
    return lower, upper, source


def _read_bounds(reference, quantity: str, at, count: int):
    pld = _as_pld(reference, count)
    if pld is not None:
        method = getattr(pld, f"{quantity}_bounds", None)
        if method is None:
            raise NotImplementedError(
                f"this plda has no PrivacyLossDistribution.{quantity}_bounds (the {quantity} API "
                f"is missing); pass a (lower, upper) pair, an exact value or a callable instead"
            )
        lower, upper = method(at)
        what = "plda certified bounds"
        if isinstance(reference, Mechanism):
            what += f" for {count} x {reference!r}"
        return np.asarray(lower, float), np.asarray(upper, float), what
    if callable(reference):
        value = reference(at)
        exact = np.asarray(np.vectorize(float, otypes=[float])(value), float)
        return exact, exact, "exact reference"
    if isinstance(reference, tuple) and len(reference) == 2 or hasattr(reference, "upper"):
        lower, upper = reference
        return np.asarray(lower, float), np.asarray(upper, float), "given bounds"
    try:
        exact = np.asarray(reference, float)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            "reference must be a PrivacyLossDistribution, a plda mechanism, a (lower, upper) "
            f"pair, a number or a callable, got {type(reference).__name__}"
        ) from exc
    return exact, exact, "exact value"


def _band(lower, upper, rtol: float, atol: float, allow_over_report: bool,
          larger_is_safer: bool = True):
    """Accepted ``[low, high]`` around ``[lower, upper]`` (infinite ends stay infinite)."""
    with np.errstate(invalid="ignore"):
        low = np.where(np.isinf(lower), lower, lower - (rtol * np.abs(lower) + atol))
        high = np.where(np.isinf(upper), upper, upper + (rtol * np.abs(upper) + atol))
    if allow_over_report:
        if larger_is_safer:
            high = np.full(np.shape(high), np.inf)
        else:
            low = np.full(np.shape(low), -np.inf)
    return low, high


def _check(
    name: str, observed, lower, upper, at_name: str, at, *, rtol: float, atol: float,
    allow_over_report: bool, source: str, larger_is_safer: bool = True, outside=None,
) -> None:
    """Raise ``AssertionError`` listing the entries of ``observed`` outside the tolerance band
    (or those flagged by ``outside``, a boolean mask, when given).

    ``larger_is_safer``: for epsilon and delta a larger value over-reports privacy loss (safe);
    for a tradeoff curve beta a *smaller* value is the safe side.
    """
    obs = np.asarray(observed, dtype=float)
    lower, upper, at_arr, obs = np.broadcast_arrays(lower, upper, np.asarray(at, float), obs)
    low_ok, high_ok = _band(lower, upper, rtol, atol, allow_over_report, larger_is_safer)
    bad = np.isnan(obs) | (obs < low_ok) | (obs > high_ok)
    if outside is not None:
        bad = bad & outside
    if not np.any(bad):
        return
    index = np.flatnonzero(bad.ravel())
    lines = [
        f"{name} outside the expected interval at {len(index)} of {obs.size} point(s) "
        f"(reference: {source}; tolerance rtol={rtol:g}, atol={atol:g}"
        f"{', over-reporting allowed' if allow_over_report else ''}):"
    ]
    for i in index[:_SHOWN]:
        lo, up, x, a = lower.flat[i], upper.flat[i], obs.flat[i], at_arr.flat[i]
        head = (
            f"  {name}({at_name}={a:.6g}): expected [{lo:.10g}, {up:.10g}] "
            f"(accepted [{low_ok.flat[i]:.10g}, {high_ok.flat[i]:.10g}]), observed {x:.10g}"
        )
        if np.isnan(x):
            lines.append(head + ": observed is NaN")
            continue
        below = x < low_ok.flat[i]
        edge = lo if below else up
        miss = abs(x - edge)
        relative = miss / abs(edge) if edge != 0 and np.isfinite(edge) else np.inf
        side = "below the lower bound" if below else "above the upper bound"
        under = below if larger_is_safer else not below
        verdict = "under-reports privacy loss" if under else "over-reports privacy loss"
        lines.append(
            f"{head}: {verdict}, {side} by {miss:.4g} absolute ({100 * relative:.4g}% relative)"
        )
    if len(index) > _SHOWN:
        lines.append(f"  ... and {len(index) - _SHOWN} more")
    raise AssertionError("\n".join(lines))


def assert_epsilon_within(
    observed, reference, delta, *, count: int = 1, rtol: float = 1e-3, atol: float = 0.0,
    allow_over_report: bool = False,
) -> None:
    """Assert that ``observed`` epsilon(s) at ``delta`` lie within the reference bounds.

    Parameters
    ----------
    observed : float or array_like
        The accountant's epsilon (scalar or array matching ``delta``).
    reference : PrivacyLossDistribution, Mechanism, tuple, float, array_like or callable
        A PLD (its certified ``(lower, upper)`` bounds), a plda mechanism (``count`` runs of
        it), a ``(lower, upper)`` pair (e.g. a :class:`plda.Bounds`), exact values, or a
        callable ``reference(delta)`` returning the exact value (e.g.
        ``lambda d: testing.gaussian_epsilon(d, mu)``).
    delta : float or array_like
        The delta(s) at which ``observed`` was computed.
    count : int, optional
        Runs of a mechanism reference.
    rtol : float, optional
        Relative tolerance: the band is ``[lower - rtol |lower| - atol, upper + rtol |upper| +
        atol]``.
    atol : float, optional
        Absolute tolerance.
    allow_over_report : bool, optional
        Accept any value above the lower end (the accountant need only be an upper bound).

    Raises
    ------
    AssertionError
        With the expected interval, the observed value and the miss (absolute and relative).
    ValueError
        If ``rtol`` or ``atol`` is negative, ``count`` is given with a PLD reference, or the
        reference is NaN at any point (it would accept every observed value).
    TypeError
        If ``reference`` is none of those.
    """
    rtol, atol = _tolerances(rtol, atol)
    lower, upper, source = _bounds(reference, "epsilon", delta, count)
    _check("epsilon", observed, lower, upper, "delta", delta, rtol=rtol, atol=atol,
           allow_over_report=allow_over_report, source=source)


def assert_delta_within(
    observed, reference, epsilon, *, count: int = 1, rtol: float = 1e-3, atol: float = 0.0,
    allow_over_report: bool = False,
) -> None:
    """Assert that ``observed`` delta(s) at ``epsilon`` lie within the reference bounds.

    Parameters
    ----------
    observed : float or array_like
        The accountant's delta (scalar or array matching ``epsilon``).
    reference : PrivacyLossDistribution, Mechanism, tuple, float, array_like or callable
        As for :func:`assert_epsilon_within` (a callable is ``reference(epsilon)``).
    epsilon : float or array_like
        The epsilon(s) at which ``observed`` was computed.
    count : int, optional
        Runs of a mechanism reference.
    rtol : float, optional
        Relative tolerance, as for :func:`assert_epsilon_within`.
    atol : float, optional
        Absolute tolerance.
    allow_over_report : bool, optional
        Accept any value above the lower end.

    Raises
    ------
    AssertionError
        With the expected interval, the observed value and the miss (absolute and relative).
    ValueError
        If ``rtol`` or ``atol`` is negative, ``count`` is given with a PLD reference, or the
        reference is NaN at any point (it would accept every observed value).
    TypeError
        If ``reference`` is none of those.
    """
    rtol, atol = _tolerances(rtol, atol)
    lower, upper, source = _bounds(reference, "delta", epsilon, count)
    _check("delta", observed, lower, upper, "epsilon", epsilon, rtol=rtol, atol=atol,
           allow_over_report=allow_over_report, source=source)


def assert_delta_curve_within(epsilons, observed_deltas, reference, **options) -> None:
    """Deprecated (removed in plda 0.2.0): :func:`assert_privacy_curve_within`, reordered.

    Its arguments come in the order of every other assertion: observed, reference, then where.

    Parameters
    ----------
    epsilons, observed_deltas, reference
        As for :func:`assert_privacy_curve_within`.
    **options
        Its keyword options.

    Raises
    ------
    AssertionError, ValueError, TypeError
        As :func:`assert_privacy_curve_within`.
    """
    warn_moved("plda.testing.assert_delta_curve_within(epsilons, observed_deltas, reference)",
               "plda.testing.assert_privacy_curve_within(observed_deltas, reference, epsilons)")
    assert_privacy_curve_within(observed_deltas, reference, epsilons, **options)


def assert_privacy_curve_within(
    observed_deltas, reference, epsilons, *, count: int = 1, rtol: float = 1e-3,
    atol: float = 0.0, allow_over_report: bool = False,
) -> None:
    """Assert that a privacy curve ``(epsilons[i], observed_deltas[i])`` follows the reference.

    A point passes if it is within tolerance *vertically* (``delta`` at ``epsilon``) or — for a
    PLD or mechanism reference — *horizontally* (``epsilon`` at ``delta``): on steep parts of
    the curve a tiny shift in epsilon moves delta by a large factor, so either reading counts.

    Parameters
    ----------
    observed_deltas : array_like
        The accountant's delta at each of ``epsilons``, of the same shape.
    reference : PrivacyLossDistribution, Mechanism, tuple, float, array_like or callable
        As for :func:`assert_delta_within`.
    epsilons : array_like
        The curve's epsilons.
    count : int, optional
        Runs of a mechanism reference.
    rtol : float, optional
        Relative tolerance, as for :func:`assert_epsilon_within`.
    atol : float, optional
        Absolute tolerance.
    allow_over_report : bool, optional
        Accept any value above the lower end.

    Raises
    ------
    AssertionError
        Listing the points outside the tolerance both ways.
    ValueError
        If the shapes differ, ``rtol`` or ``atol`` is negative, ``count`` is given with a
        PLD reference, or the reference is NaN at any point.
    TypeError
        If ``reference`` is none of those.
    """
    rtol, atol = _tolerances(rtol, atol)
    eps = np.asarray(epsilons, dtype=float)
    deltas = np.asarray(observed_deltas, dtype=float)
    if eps.shape != deltas.shape:
        raise ValueError(
            f"epsilons and observed_deltas must have the same shape, got {eps.shape} and "
            f"{deltas.shape}"
        )
    lower, upper, source = _bounds(reference, "delta", eps, count)
    lower, upper = np.broadcast_arrays(lower, upper, eps)[:2]
    low_ok, high_ok = _band(lower, upper, rtol, atol, allow_over_report)
    failed = np.isnan(deltas) | (deltas < low_ok) | (deltas > high_ok)
    pld = _as_pld(reference, count)
    candidates = failed & (deltas >= 0) & (deltas <= 1)
    if pld is not None and np.any(candidates):
        # horizontal reading for the points that failed vertically
        e_lower, e_upper = pld.epsilon_bounds(deltas[candidates])
        e_low, e_high = _band(np.asarray(e_lower, float), np.asarray(e_upper, float), rtol, atol,
                              allow_over_report)
        x = eps[candidates]
        failed[np.flatnonzero(candidates)[(x >= e_low) & (x <= e_high)]] = False
        source += "; these points are also outside the epsilon bounds at the observed delta"
    _check("delta", deltas, lower, upper, "epsilon", eps, rtol=rtol, atol=atol,
           allow_over_report=allow_over_report, source=source, outside=failed)


def assert_tradeoff_within(
    observed_beta, reference, alpha, *, count: int = 1, rtol: float = 1e-3, atol: float = 0.0,
    allow_over_report: bool = False,
) -> None:
    """Assert that ``observed_beta`` lies within the reference tradeoff bounds at ``alpha``.

    ``observed_beta`` is the type-II error at type-I error ``alpha``; a *larger* beta
    under-reports privacy loss.

    Parameters
    ----------
    observed_beta : float or array_like
        The accountant's beta (scalar or array matching ``alpha``).
    reference : PrivacyLossDistribution, Mechanism, tuple, float, array_like or callable
        As for :func:`assert_epsilon_within`: a PLD reference needs
        ``pld.tradeoff_bounds(alpha)``; exact references are
        :func:`~plda.testing.gaussian_tradeoff` and
        :func:`~plda.testing.approximate_dp_tradeoff`.
    alpha : float or array_like
        The type-I error(s).
    count : int, optional
        Runs of a mechanism reference.
    rtol : float, optional
        Relative tolerance, as for :func:`assert_epsilon_within`.
    atol : float, optional
        Absolute tolerance.
    allow_over_report : bool, optional
        Accept any value below the upper end (the safe side of a tradeoff curve).

    Raises
    ------
    AssertionError
        With the expected interval, the observed value and the miss (absolute and relative).
    ValueError
        If ``rtol`` or ``atol`` is negative, ``count`` is given with a PLD reference, or the
        reference is NaN at any point (it would accept every observed value).
    TypeError
        If ``reference`` is none of those.
    NotImplementedError
        If the installed plda's PLD has no ``tradeoff_bounds``.
    """
    rtol, atol = _tolerances(rtol, atol)
    lower, upper, source = _bounds(reference, "tradeoff", alpha, count)
    _check("beta", observed_beta, lower, upper, "alpha", alpha, rtol=rtol, atol=atol,
           allow_over_report=allow_over_report, source=source, larger_is_safer=False)


__all__: list[str] = [
    "assert_delta_curve_within",
    "assert_privacy_curve_within",
    "assert_delta_within",
    "assert_epsilon_within",
    "assert_tradeoff_within",
]
