"""Plots of a composition's privacy: its tradeoff curve and its privacy profile.

Epsilon against training steps is :mod:`plda.plot.steps`. Every function draws on ``ax`` (a
new figure when ``None``) and returns the axes; calls on one axes overlay.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.special import ndtr, ndtri

from plda._internal import validation as check
from plda._internal.errors import check_bracket
from plda.accounting.accountant import PLDAccountant
from plda.conversions.gdp import gaussian_tradeoff
from plda.engine.gaps import monotone_envelope
from plda.pld import PrivacyLossDistribution
from plda.plot.common import (
    CURVE_GID,
    FLOOR_COLOR,
    RESOLVED_RATIO,
    as_pld,
    compact_legend,
    curve_color,
    describe_band,
    draw_band,
    draw_floors,
    drawn_once,
    new_axes,
    resolved,
)

__all__ = ["privacy_profile", "tradeoff"]

_GDP_COLOR = "#2ca02c"


def tradeoff(
    pld: PrivacyLossDistribution | PLDAccountant,
    ax=None,
    *,
    reference_mu: float | None = None,
    alpha=None,
    log_scale: bool = False,
    label: str = "composition",
    color: str | None = None,
    linestyle: str = "-",
):
    """Plot the tradeoff curve ``beta = f(alpha)`` of the composition (Dong, Roth & Su 2019).

    The certified lower bound as a line, the certified upper bound as a thin line and the band
    between them shaded (legend ``"certified bounds [lower, upper]"``, with its width when it is
    thinner than the line), the ideal ``beta = 1 - alpha`` (perfect privacy) dotted and, with
    ``reference_mu``, the ``mu``-GDP curve ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)`` dashed.

    With ``log_scale`` (membership inference) the certified bounds on the best attack's
    true-positive rate ``1 - f(alpha)`` are drawn where they resolve it (lower bound positive,
    bounds within a factor 10, as in :func:`privacy_profile`); at smaller false-positive rates
    the upper bound is set by the numerics' floor in ``delta`` and is marked as a dashed floor.

    Calls on one axes overlay (a paper figure): each draws its curve and band in its own
    ``color`` and ``linestyle``; the reference lines are drawn once and the legend lists one
    band entry.

    Parameters
    ----------
    pld
        The composition: a :class:`~plda.pld.PrivacyLossDistribution`, a
        :class:`~plda.PLDAccountant` (its recorded history), or an adapter holding
        one (:class:`plda.adapters.opacus.PLDOpacusAccountant`,
        :class:`plda.adapters.PLDPrivacyAccountant`).
    ax
        Axes to draw on (default: a new figure).
    reference_mu
        ``mu`` of a reference Gaussian-DP curve, finite: e.g.
        ``pld.gdp_mu(delta_floor=1e-9)`` (certified down to ``delta = 1e-9``) or
        ``pld.gdp_summary().best_fit`` (the closest curve, an approximation).
        ``inf`` (``gdp_mu`` when no finite ``mu`` is certified) is a ``ValueError``.
    alpha
        Type-I errors to evaluate (default: 601 points on [0, 1]; 600 log-spaced points from
        ``1e-10`` with ``log_scale``).
    log_scale
        Membership-inference view: true-positive rate ``1 - beta`` against false-positive rate
        ``alpha`` on log-log axes (the low-FPR regime).
    label
        Names the curve in the legend (``"label: certified lower bound on β"``).
    color
        Colour of the curve and its band (default: the next colour of the axes' cycle,
        ``"C0"`` on fresh axes).
    linestyle
        Line style of the curve and its band's edge.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    TypeError
        If ``pld`` is of another type.
    ValueError
        For a ``reference_mu`` that is negative or infinite, or an ``alpha`` outside [0, 1]
        (or without a positive value for ``log_scale``).
    InvertedBracketError
        If a certified lower bound exceeds an upper one (a defect in plda).
    """
    pld = as_pld(pld)
    if reference_mu is not None:
        if isinstance(reference_mu, numbers.Real) and math.isinf(reference_mu):
            # what gdp_mu returns when no finite mu is certified at its delta_floor
            raise ValueError(
                f"reference_mu must be a finite mu >= 0, got {reference_mu!r} (gdp_mu is inf "
                "when no finite mu is certified at its delta_floor): pass "
                "pld.gdp_mu(delta_floor=1e-9), a certified mu above delta 1e-9, "
                "or pld.gdp_summary().best_fit, the closest mu (not a bound)"
            )
        reference_mu = check.nonnegative_float("reference_mu", reference_mu)
    if alpha is None:
        alpha = np.geomspace(1e-10, 1, 600) if log_scale else np.linspace(0, 1, 601)
    a = np.sort(np.atleast_1d(check.array_in("alpha", alpha, 0.0, 1.0)))
    ax = new_axes(ax)
    color = curve_color(ax, color)
    if log_scale:
        a = a[a > 0]  # alpha = 0 has no place on a log axis
        if not len(a):
            raise ValueError("alpha must hold a false-positive rate in (0, 1] for log_scale")
        bounds = pld.true_positive_rate_bounds(a)
        # TPR is non-decreasing in FPR, i.e. non-increasing in -alpha: the engine's envelope
        # keeps each bound certified at each alpha
        lower, upper = monotone_envelope(-a, bounds.lower, bounds.upper)
        check_bracket(lower, upper, query="plot.tradeoff")  # raised, never clamped
        show = resolved(lower, upper)
        line, band = draw_band(ax, a, lower, upper, primary="upper", color=color,
                               show=show, label=f"{label}: certified max TPR",
                               linestyle=linestyle)
        # unresolved (tiny FPRs): the upper bound is the numerics' floor in delta, not a curve
        draw_floors(ax, a, upper, ~show, quantity="TPR")
        if not drawn_once(ax, "random guessing (TPR = FPR)"):
            ax.plot(a, a, ":", color="black", label="random guessing (TPR = FPR)")
        if reference_mu is not None and not drawn_once(ax, f"{reference_mu:.3g}-GDP"):
            with np.errstate(divide="ignore"):
                tpr = ndtr(ndtri(a) + reference_mu)  # 1 - G_mu(alpha) without cancellation
            ax.plot(a, tpr, "--", color=_GDP_COLOR, label=f"{reference_mu:.3g}-GDP")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("false-positive rate α")
        ax.set_ylabel("true-positive rate 1 − β")
        ax.set_title("Membership inference: best attack")
        describe_band(ax, band, a[show], lower[show], upper[show],
                      linewidth=line.get_linewidth())
    else:
        lower, upper = pld.tradeoff_bounds(a)
        line, band = draw_band(ax, a, lower, upper, primary="lower", color=color,
                               label=f"{label}: certified lower bound on β",
                               linestyle=linestyle)
        if not drawn_once(ax, "perfect privacy (β = 1 − α)"):
            ax.plot(a, 1 - a, ":", color="black", label="perfect privacy (β = 1 − α)")
        if reference_mu is not None and not drawn_once(ax, f"{reference_mu:.3g}-GDP"):
            ax.plot(a, gaussian_tradeoff(a, reference_mu), "--",
                    color=_GDP_COLOR, label=f"{reference_mu:.3g}-GDP")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("type-I error α")
        ax.set_ylabel("type-II error β")
        ax.set_title("Tradeoff function (f-DP)")
        describe_band(ax, band, a, lower, upper, linewidth=line.get_linewidth(), relative=False)
    compact_legend(ax)
    return ax


def privacy_profile(
    pld: PrivacyLossDistribution | PLDAccountant,
    ax=None,
    *,
    epsilon=None,
    label: str = "composition",
    resolved_ratio: float = RESOLVED_RATIO,
    refine: bool = False,
    color: str | None = None,
    linestyle: str = "-",
):
    """Plot the privacy profile ``delta(epsilon)`` on a log axis, where the bounds resolve it.

    ``delta(epsilon)`` is the hockey-stick divergence; it is drawn only where the certified
    bounds resolve it.

    The bounds are those of the composition's first grid (the laws the conversions read,
    :meth:`~plda.PrivacyLossDistribution.composed_laws`: the lower side from the realized
    compositions where a factor is not tight) and, where these are not resolved,
    of :meth:`~plda.PrivacyLossDistribution.delta_bounds` on the same grid step (which
    recomposes under an exponential tilt, so they stay resolved well below the FFT's rounding
    floor, near ``1e-11``), made monotone for display (a running minimum of the upper bound from the
    left and a running maximum of the lower bound from the right: both stay certified, ``delta``
    being non-increasing in ``epsilon``). Drawn:

    * the certified upper bound (line), the lower bound (thin line) and the band between them,
      labelled ``"certified bounds [lower, upper]"`` (with its width when it is thinner than
      the line), at the points where ``0 < lower`` and ``upper <= resolved_ratio * lower``;
    * elsewhere the upper bound is set by the numerics (FFT rounding, the truncated tail's mass,
      underflow), not by the mechanism: each such run is marked by a dashed *numerical floor*
      at the largest certified upper bound in the run (``delta <= floor`` holds there), and is
      not drawn as a curve; a lower bound of 0 is never drawn;
    * where the certified upper bound is exactly 0, a dotted vertical line (``delta = 0``).

    Calls on one axes overlay (``color``, ``linestyle``, ``label`` per curve); the axis limits
    then cover every curve.

    Parameters
    ----------
    pld
        The composition: a :class:`~plda.pld.PrivacyLossDistribution`, a
        :class:`~plda.PLDAccountant` (its recorded history), or an adapter holding
        one (:class:`plda.adapters.opacus.PLDOpacusAccountant`,
        :class:`plda.adapters.PLDPrivacyAccountant`).
    ax
        Axes to draw on (default: a new figure).
    epsilon
        The ``epsilon >= 0`` to evaluate (default: 400 points from 0 to a little past where the
        certified ``delta`` on the first grid reaches ``1e-12``).
    label
        Names the curve in the legend (``"label: certified upper bound on δ(ε)"``).
    resolved_ratio
        Largest ``upper / lower`` drawn as a curve (default 10: one decade).
    refine
        Use :meth:`~plda.PrivacyLossDistribution.delta_bounds` at every point, which also
        refines the grid to the composition's accuracy (resolves more of the tail, e.g. of a
        single Gaussian, at the cost of finer grids: seconds for long compositions). Default:
        the first grid step only.
    color
        Colour of the curve and its band (default: the next colour of the axes' cycle,
        ``"C0"`` on fresh axes).
    linestyle
        Line style of the curve and its band's edge.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    TypeError
        If ``pld`` is of another type, or ``refine`` is not a bool.
    ValueError
        For a ``resolved_ratio`` not above 1, or an ``epsilon`` that is negative or empty.
    InvertedBracketError
        If a certified lower bound exceeds an upper one (a defect in plda).
    """
    pld = as_pld(pld)
    resolved_ratio = check.positive_float("resolved_ratio", resolved_ratio)
    if not resolved_ratio > 1:
        raise ValueError(f"resolved_ratio must be > 1, got {resolved_ratio!r}")
    if not isinstance(refine, bool):
        raise TypeError(f"refine must be True or False, got {refine!r}")
    if epsilon is None:
        # the range where the certified profile is above 1e-12, from the first grid (asking
        # for epsilon(1e-12) would refine the grid for that delta)
        samples = pld.symmetric_profile("upper")
        below = samples.epsilon[(samples.epsilon >= 0) & (samples.delta <= 1e-12)]
        top = float(below[0]) if len(below) else float(samples.epsilon[-1])
        epsilon = np.linspace(0, 1.1 * max(top, 1e-3), 400)
    e = np.sort(np.atleast_1d(check.array_in("epsilon", epsilon, 0.0, np.inf)).ravel())
    if not e.size:
        raise ValueError("epsilon must hold at least one value to draw, got none")
    ax = new_axes(ax)
    overlaid = any(line.get_gid() == CURVE_GID for line in ax.get_lines())
    limits = ax.get_xlim(), ax.get_ylim()
    color = curve_color(ax, color)
    if refine:
        # the engine's own answer: refines the grid for the deltas on the curve, and below the
        # FFT's rounding floor recomposes under an exponential tilt
        bounds = pld.delta_bounds(e)
        lower = np.array(bounds.lower, dtype=float)
        upper = np.array(bounds.upper, dtype=float)
    else:
        # certified bounds on the first grid (refining it for every delta on the curve takes
        # seconds, for a band already far thinner than the line)
        # the conversions' laws: the lower side is the realized compositions' where a factor
        # is not tight (a dominating pair's optimistic version bounds that pair, not the
        # mechanism: for fixed-size batches under replace-one it drew 0.8004 at epsilon 0,
        # where only 0.7763 is known to be reached)
        composed = pld.composed_laws()
        upper = np.max([law.delta(e) for law in composed.laws("upper").values()], axis=0)
        lower = np.max([law.delta(e) for law in composed.laws("lower").values()], axis=0)
        # near and below the FFT's rounding floor (delta ~ 1e-11) the engine resolves delta by
        # recomposing under an exponential tilt; on the same grid step, fixed so that nothing
        # is refined (a few compositions). Both are certified: keep the tighter of each bound
        unclear = (upper > 0) & (upper < 1e-8) & (lower < upper * (1 - 1e-2))
        if unclear.any():
            step = next(iter(composed.laws("upper").values())).step
            fixed = PrivacyLossDistribution(components=pld.components, relation=pld.relation,
                                            accuracy=pld.accuracy, step=step)
            sharper = fixed.delta_bounds(e[unclear])
            upper[unclear] = np.fmin(upper[unclear], sharper.upper)
            lower[unclear] = np.fmax(lower[unclear], sharper.lower)
    # delta(eps) is non-increasing: the engine's envelope keeps each bound certified at each
    # eps (the fixed-grid bounds merged above may be tighter at one eps than at a smaller one)
    lower, upper = monotone_envelope(e, lower, upper)
    check_bracket(lower, upper, query="plot.privacy_profile")  # raised, never clamped
    zero = upper <= 0
    show = resolved(lower, upper, resolved_ratio)
    line, band = draw_band(ax, e, lower, upper, primary="upper", color=color, show=show,
                           label=f"{label}: certified upper bound on δ(ε)", linestyle=linestyle)
    floors = draw_floors(ax, e, upper, ~show & ~zero, quantity="δ")
    if zero.any():
        at = float(e[np.argmax(zero)])
        ax.axvline(at, color=FLOOR_COLOR, linestyle=":", linewidth=1.2,
                   label=f"certified δ = 0 for ε ≥ {at:.3g}")
    ax.set_yscale("log")
    drawn = np.concatenate([upper[show], lower[show], floors])
    if len(drawn):
        bottom, top = drawn.min() / 3, min(1.0, drawn.max() * 3)
        if overlaid:  # the limits cover the curves drawn before too
            bottom, top = min(bottom, limits[1][0]), max(top, limits[1][1])
        ax.set_ylim(bottom, top)
    if e[-1] > e[0]:
        left, right = e[0], e[-1]
        if overlaid:
            left, right = min(left, limits[0][0]), max(right, limits[0][1])
        ax.set_xlim(left, right)
    ax.set_xlabel("ε")
    ax.set_ylabel("δ(ε)")
    ax.set_title("Privacy profile")
    describe_band(ax, band, e[show], lower[show], upper[show], linewidth=line.get_linewidth())
    compact_legend(ax, loc="upper right")
    return ax
