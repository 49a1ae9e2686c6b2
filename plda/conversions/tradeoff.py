"""f-DP tradeoff curves of a composition and their membership-inference reading.

The tradeoff curve is the convex conjugate of the privacy profile (Dong, Roth & Su 2019,
Prop. 2.12): every certified sample of the profile gives a line below ``f``, the optimistic
samples one above it; the lines' envelope is built once per set of grid laws. See
``docs/tradeoff.md``.
"""

from __future__ import annotations

import numpy as np

from plda._internal.errors import check_bracket
from plda._internal.floats import UNIT_ROUNDOFF
from plda.bounds import Bounds
from plda.conversions.common import scalar_like, unit_interval
from plda.conversions.composed import ComposedLaws
from plda.conversions.envelope import LowerEnvelope
from plda.conversions.profile import MAX_EPSILON, by_grid, cached_for, samples, select_laws
from plda.grid.discrete import DiscreteLoss

#: lines kept for the certified lower bound on a tradeoff curve (the upper bound keeps them all)
_LOWER_BOUND_LINES = 8192
#: relative safety margin on envelope values (rounding in products, sums and the pruning)
_MARGIN = 1e-12


def _symmetric_envelopes(laws: list[DiscreteLoss]):
    """Envelopes of the steep lines (in ``1 - f``) and of the flat lines (in ``-f``) of the
    symmetric curve, and an ``alpha`` left of which the flat lines cannot matter and right of
    which the steep ones cannot (``None`` if the samples do not show one)."""

    def build():
        top = max(max(law.offset + len(law.probs) for law in laws), 0)
        # every line from an upper law is a valid lower bound on f: evenly spaced eps lose
        # only to second order in the spacing (about 1e-6 of 1 - f on B2), keep queries fast
        stride = max(1, top // _LOWER_BOUND_LINES) if laws[0].upper else 1
        s = samples(laws, 0, top, stride)
        eps, x, delta = s.epsilon, s.exp_epsilon, s.delta
        # steep part, in 1 - f:  1 - f(alpha) <= delta + e^eps alpha
        steep = LowerEnvelope.from_lines(x, delta)
        # flat part, in -f:  -f(alpha) <= -(1 - delta) e^-eps + e^-eps alpha
        inverse = 1.0 / x
        flat = LowerEnvelope.from_lines(inverse, -(1.0 - delta) * inverse)
        # the eps = 0 line (slope -1) is in both families; a steep line is below it right of
        # their crossing and a flat one left of theirs, so any alpha between the last steep
        # crossing and the first flat crossing splits the work between the two envelopes
        zero = eps == 0
        positive = eps > 0
        split = None
        if zero.any() and positive.any():
            d0 = float(delta[zero][0])
            x, d = x[positive], delta[positive]
            with np.errstate(divide="ignore", invalid="ignore"):
                last_steep = np.max((d0 - d) / (x - 1.0))
                first_flat = np.min(((1.0 - d0) - (1.0 - d) / x) / (1.0 - 1.0 / x))
            if np.isfinite(last_steep) and np.isfinite(first_flat) and last_steep <= first_flat:
                split = float(first_flat)
        return steep, flat, split

    return cached_for(laws, "symmetric", build)


def _symmetric_parts(laws: list[DiscreteLoss], alpha: np.ndarray):
    """``(steep, flat)`` envelope values at ``alpha``; ``+inf`` where a family cannot matter."""
    steep, flat, split = _symmetric_envelopes(laws)
    one_minus = np.full(alpha.shape, np.inf)
    minus = np.full(alpha.shape, np.inf)
    use_steep = np.ones(alpha.shape, bool) if split is None else alpha <= split
    use_flat = np.ones(alpha.shape, bool) if split is None else alpha > split
    if use_steep.any():
        one_minus[use_steep] = steep(alpha[use_steep])
    if use_flat.any():
        minus[use_flat] = flat(alpha[use_flat])
    return one_minus, minus


def _direction_envelope(law: DiscreteLoss):
    def build():
        s = samples([law], law.offset - 1, law.offset + len(law.probs))
        inverse = 1.0 / s.exp_epsilon
        a, _, _ = law.segments()
        # below the support delta = A_0 - e^eps B_0: for alpha < 1 - A_0 the line grows without
        # bound as eps -> -inf (only possible for an optimistic law whose mass is short of 1)
        return LowerEnvelope.from_lines(inverse, -(1.0 - s.delta) * inverse), float(a[0])

    return cached_for([law], "direction", build)


def _one_minus_upper(laws, alpha):
    """Certified upper bound on ``1 - f(alpha)`` (symmetric curve) from an upper grid law."""
    one_minus, minus = _symmetric_parts(laws, alpha)
    one_minus = np.minimum(one_minus * (1 + _MARGIN), 1.0 + minus + 4 * UNIT_ROUNDOFF)
    return np.clip(one_minus, alpha, 1.0)


def _one_minus_lower(laws, alpha):
    """Certified lower bound on ``1 - f(alpha)`` (symmetric curve) from optimistic grid laws:
    the largest over the realized compositions (one grid each) of their curves' ``1 - f``,
    formed without the cancellation of ``1 - f`` at ``f`` near 1 (a true-positive rate of
    3e-11 lost 2e-6 of itself there and rose above the truth)."""
    out = np.full(alpha.shape, -np.inf)
    for grid in by_grid(laws):
        one_minus, minus = _symmetric_parts(grid, alpha)
        out = np.maximum(out, np.minimum(one_minus * (1 - _MARGIN),
                                         1.0 + minus - 4 * UNIT_ROUNDOFF))
    return out


def _tradeoff_pair(composed: ComposedLaws, alpha: np.ndarray, direction: str | None):
    upper_laws = select_laws(composed, "upper", direction)
    lower_laws = select_laws(composed, "lower", direction)
    if direction is None:
        one_minus = _one_minus_upper(upper_laws, alpha)
        lower = np.nextafter(1.0 - one_minus, -np.inf)
        # each realized composition (its own grid) bounds f from above: the smallest bound
        upper = np.full(alpha.shape, np.inf)
        for grid in by_grid(lower_laws):
            one_minus, minus = _symmetric_parts(grid, alpha)
            upper = np.minimum(upper, np.maximum(1.0 - one_minus * (1 - _MARGIN),
                                                 -minus + 4 * UNIT_ROUNDOFF))
        upper = np.nextafter(upper, np.inf)
    else:
        envelope, _ = _direction_envelope(upper_laws[0])
        lower = np.nextafter(-envelope(alpha) - 4 * UNIT_ROUNDOFF, -np.inf)
        # each realized composition bounds f from above: the smallest bound (the first alone
        # left the others' tighter curves unread)
        upper = np.full(alpha.shape, np.inf)
        for law in lower_laws:
            envelope, a0 = _direction_envelope(law)
            bound = np.nextafter(-envelope(alpha) + 4 * UNIT_ROUNDOFF, np.inf)
            upper = np.minimum(upper, np.where(alpha < 1.0 - a0, 1.0 - alpha, bound))
    # lines beyond |eps| = MAX_EPSILON are not formed; they only matter below alpha ~ e^-700,
    # where the upper bound falls back to the trivial 1 - alpha
    # (each law in its own step: the realized compositions sit on grids of their own)
    reach = max(
        law.step * max(abs(law.offset), abs(law.offset + len(law.probs))) for law in lower_laws
    )
    if reach > MAX_EPSILON:
        upper = np.where(alpha < 1e-290, 1.0 - alpha, upper)
    # every tradeoff function lies in [0, 1 - alpha]
    lower = np.clip(lower, 0.0, 1.0 - alpha)
    upper = np.clip(upper, 0.0, 1.0 - alpha)
    check_bracket(lower, upper, query="tradeoff_bounds")
    return lower, upper


def tradeoff(composed: ComposedLaws, alpha, *, direction: str | None = None):
    """Certified lower bound on the tradeoff function ``f(alpha)`` of a composition.

    The lower side of :func:`tradeoff_bounds`.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    alpha : float or array_like
        False-positive rates (type I errors), in [0, 1].
    direction : str, optional
        One direction's curve, ``"remove"`` or ``"add"``; None: the symmetric curve of both
        directions.

    Returns
    -------
    float or numpy.ndarray
        The lower bound on ``f(alpha)``, shaped like ``alpha``.

    Raises
    ------
    ValueError
        If an ``alpha`` is outside [0, 1] or ``direction`` is unknown.
    """
    return tradeoff_bounds(composed, alpha, direction=direction).lower


def tradeoff_bounds(composed: ComposedLaws, alpha, *, direction: str | None = None) -> Bounds:
    """Certified bounds on the tradeoff function ``f(alpha)`` of a composition.

    For the symmetric curve,
    ``f(alpha) = sup_eps max(0, 1 - delta(eps) - e^eps alpha, e^-eps (1 - delta(eps) - alpha))``
    (Dong, Roth & Su 2019, Prop. 2.12): the lower bound from the pessimistic grid laws, the
    upper one from the optimistic ones.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    alpha : float or array_like
        False-positive rates (type I errors), in [0, 1].
    direction : str, optional
        One direction's curve, ``"remove"`` or ``"add"``; None: the symmetric curve of both
        directions.

    Returns
    -------
    Bounds
        ``(lower, upper)`` on ``f(alpha)``, shaped like ``alpha``, within ``[0, 1 - alpha]``.

    Raises
    ------
    ValueError
        If an ``alpha`` is outside [0, 1] or ``direction`` is unknown.
    """
    a = unit_interval("alpha", alpha)
    lower, upper = _tradeoff_pair(composed, a, direction)
    return Bounds(lower=scalar_like(lower, alpha), upper=scalar_like(upper, alpha))


def true_positive_rate_bounds(composed: ComposedLaws, false_positive_rate) -> Bounds:
    """Certified bounds on the best membership-inference test's true-positive rate.

    ``1 - f(alpha)`` at ``alpha = false_positive_rate``, both neighbouring directions.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.
    false_positive_rate : float or array_like
        The test's false-positive rates, in [0, 1].

    Returns
    -------
    Bounds
        ``(lower, upper)``: the best test's true-positive rate lies between the two, within
        ``[false_positive_rate, 1]``; shaped like ``false_positive_rate``.

    Raises
    ------
    ValueError
        If a rate is outside [0, 1].
    """
    a = unit_interval("false_positive_rate", false_positive_rate)
    upper = np.nextafter(_one_minus_upper(select_laws(composed, "upper", None), a), np.inf)
    lower = np.nextafter(_one_minus_lower(select_laws(composed, "lower", None), a), -np.inf)
    lower = np.clip(lower, a, 1.0)
    upper = np.clip(upper, a, 1.0)
    check_bracket(lower, upper, query="true_positive_rate_bounds")
    return Bounds(
        lower=scalar_like(lower, false_positive_rate),
        upper=scalar_like(upper, false_positive_rate),
    )
