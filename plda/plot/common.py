"""Shared drawing rules of :mod:`plda.plot`: what a plot may show as data, and how.

Every curve drawn as data is a certified bound, the band between the bounds filled with both
edges drawn (:func:`draw_band`); on a log axis a point is drawn only where it is
:func:`resolved`, the rest marked as numerical floors (:func:`draw_floors`); several calls
overlay on one axes with one :func:`compact_legend`. The rules as a reader of a figure sees
them: ``docs/tradeoff.md`` ("Plots"). matplotlib is imported only when a plot is drawn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import numpy as np

from plda.accounting.accountant import PLDAccountant
from plda.pld import PrivacyLossDistribution

__all__ = [
    "BAND_LABEL",
    "CURVE_GID",
    "FLOOR_COLOR",
    "RESOLVED_RATIO",
    "as_pld",
    "compact_legend",
    "curve_color",
    "describe_band",
    "draw_band",
    "draw_floors",
    "drawn_once",
    "new_axes",
    "record_of",
    "resolved",
    "runs",
    "style_of",
]

#: legend entry of the filled band between the certified bounds
BAND_LABEL = "certified bounds [lower, upper]"

#: on a log axis, bounds further apart than this factor are not drawn as a curve (one decade:
#: beyond it the upper bound says more about the numerics than about the mechanism)
RESOLVED_RATIO = 10.0

FLOOR_COLOR = "0.35"

#: the ``gid`` of each certified curve drawn (the primary line of a band), by which a later
#: call on the same axes picks the next colour
CURVE_GID = "plda-curve"


def new_axes(ax, figsize=(6, 4.5)):
    """``ax``, or the axes of a new figure when ``ax`` is ``None``.

    Parameters
    ----------
    ax : matplotlib.axes.Axes or None
        The axes to draw on.
    figsize : tuple of float, optional
        Size of a new figure, in inches.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax`` or the new axes.
    """
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt  # optional dependency: imported only when plotting

    _, ax = plt.subplots(figsize=figsize)
    return ax


def record_of(value) -> PLDAccountant | None:
    """The :class:`~plda.PLDAccountant` behind ``value``, if any.

    Parameters
    ----------
    value : object
        What a plot was given.

    Returns
    -------
    PLDAccountant or None
        ``value`` itself, or the ``accountant`` of an adapter (the Opacus and dp_accounting
        adapters); None for anything else.

    Raises
    ------
    ValueError
        An Opacus adapter that accounts one-pass epochs: its guarantee comes from two
        accountants (epochs at the least and at the most noise), not from one history.
    """
    if isinstance(value, PLDAccountant):
        return value
    accountant = getattr(value, "accountant", None)
    if not isinstance(accountant, PLDAccountant):
        return None
    sampler = getattr(value, "sampler", "poisson")
    if sampler != "poisson":
        raise ValueError(
            f"this {type(value).__name__} accounts {sampler} epochs, whose guarantee covers "
            "whole epochs, not steps: plot its epsilon_bounds(delta) per epoch instead"
        )
    return accountant


def as_pld(value, name: str = "pld") -> PrivacyLossDistribution:
    """The :class:`~plda.pld.PrivacyLossDistribution` of what a plot was given.

    Parameters
    ----------
    value : PrivacyLossDistribution or PLDAccountant or adapter
        A PLD, or a :class:`~plda.PLDAccountant` or an adapter holding one (see
        :func:`record_of`).
    name : str, optional
        The argument's name, for the message.

    Returns
    -------
    PrivacyLossDistribution
        ``value`` itself, or the accountant's ``pld`` (at its accuracy).

    Raises
    ------
    TypeError
        For anything else.
    ValueError
        For an accountant with no steps, or an adapter that accounts one-pass epochs.
    """
    if isinstance(value, PrivacyLossDistribution):
        return value
    accountant = record_of(value)
    if accountant is not None:
        return accountant.pld
    raise TypeError(
        f"{name} must be a PrivacyLossDistribution, a PLDAccountant or an adapter holding one "
        f"(PLDOpacusAccountant, PLDPrivacyAccountant), got {type(value).__name__}"
    )


def curve_color(ax, color=None):
    """``color``, or the next colour of the cycle after the certified curves already on ``ax``.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    color : str, optional
        The colour asked for.

    Returns
    -------
    str
        ``color``, or ``"C0"``, ``"C1"``, ...: several calls on one axes get distinct colours.
    """
    if color is not None:
        return color
    drawn = sum(1 for line in ax.get_lines() if line.get_gid() == CURVE_GID)
    return f"C{drawn % 10}"


def style_of(value, key: str, default):
    """The style of curve ``key`` in a plot of several curves.

    Parameters
    ----------
    value : object
        What the caller gave: None, one style for every curve of the call, or a mapping from
        a curve to its style.
    key : str
        The curve.
    default : object
        Its own style.

    Returns
    -------
    object
        ``default`` when ``value`` is None, ``value[key]`` (or ``default``) when it is a
        mapping, else ``value``.
    """
    if value is None:
        return default
    if isinstance(value, Mapping):
        return value.get(key, default)
    return value


def drawn_once(ax, label: str) -> bool:
    """Whether a line labelled ``label`` is on ``ax`` already.

    A reference line that an overlaid call must not draw, and list, twice.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    label : str
        The line's legend entry.

    Returns
    -------
    bool
        True if such a line is drawn.
    """
    return any(line.get_label() == label for line in ax.get_lines())


def resolved(lower: np.ndarray, upper: np.ndarray, ratio: float = RESOLVED_RATIO) -> np.ndarray:
    """Points drawable on a log axis: ``0 < lower`` and ``upper <= ratio * lower``.

    Parameters
    ----------
    lower, upper : array_like
        The certified bounds at each point.
    ratio : float, optional
        The largest ``upper / lower`` drawn as a curve.

    Returns
    -------
    numpy.ndarray of bool
        The mask of resolved points.
    """
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    return (lower > 0) & (upper <= ratio * lower)


def runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of ``True`` in ``mask``.

    Parameters
    ----------
    mask : array_like of bool
        The points.

    Returns
    -------
    list of (int, int)
        ``(first, last)`` of each run (inclusive indices).
    """
    padded = np.concatenate([[False], np.asarray(mask, dtype=bool), [False]])
    edges = np.flatnonzero(np.diff(padded.astype(np.int8)))
    return [(int(a), int(b) - 1) for a, b in zip(edges[::2], edges[1::2], strict=True)]


def draw_band(ax, x, lower, upper, *, primary: str, label: str, color: str, show=None,
              marker: str | None = None, linestyle: str = "-"):
    """Draw a certified band: the primary bound as a line, the other edge thin, the fill between.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    x, lower, upper : array_like
        The points and the certified bounds at each.
    primary : str
        ``"upper"`` or ``"lower"``: the bound drawn as a labelled line (``gid``
        :data:`CURVE_GID`).
    label : str
        Its legend entry (the fill's is :data:`BAND_LABEL`).
    color : str
        The colour of all three.
    show : array_like of bool, optional
        Limits all three to those points (the others become gaps); None: every point.
    marker : str, optional
        A marker on the primary line.
    linestyle : str, optional
        The style of both lines.

    Returns
    -------
    tuple
        ``(primary line, band)``: the ``Line2D`` and the fill.
    """
    x = np.asarray(x, dtype=float)
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    show = np.ones(len(x), dtype=bool) if show is None else np.asarray(show, dtype=bool)
    hidden_lower = np.where(show, lower, np.nan)
    hidden_upper = np.where(show, upper, np.nan)
    main, edge = (hidden_upper, hidden_lower) if primary == "upper" else (
        hidden_lower, hidden_upper)
    style = {"marker": marker, "markersize": 3} if marker else {}
    (line,) = ax.plot(x, main, color=color, label=label, linestyle=linestyle, gid=CURVE_GID,
                      **style)
    ax.plot(x, edge, color=color, linewidth=0.7, linestyle=linestyle, label="_band edge")
    band = ax.fill_between(x, lower, upper, where=show, color=color, alpha=0.25, linewidth=0,
                           label=BAND_LABEL)
    return line, band


def describe_band(ax, band, x, lower, upper, *, linewidth: float, relative: bool = True) -> None:
    """State a band's largest width in its legend entry where it is thinner than the line.

    Thinner than ``linewidth`` points at the axes' current size and limits (finite points
    only). Call after the limits and scales are set (a later change is not tracked).

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    band : matplotlib.collections.PolyCollection
        The fill of :func:`draw_band`, whose label is changed.
    x, lower, upper : array_like
        The points and the certified bounds at each.
    linewidth : float
        The line's width, in points.
    relative : bool, optional
        State ``(upper - lower) / upper``; False: ``upper - lower``.
    """
    x = np.asarray(x, dtype=float)
    lower = np.asarray(lower, dtype=float)
    upper = np.asarray(upper, dtype=float)
    ax.get_xlim(), ax.get_ylim()  # settle autoscaled limits before reading the transform
    ok = np.isfinite(lower) & np.isfinite(upper)
    if ax.get_yscale() == "log":
        ok &= lower > 0
    if not ok.any():
        return
    with np.errstate(divide="ignore", invalid="ignore"):
        bottom = ax.transData.transform(np.column_stack([x[ok], lower[ok]]))[:, 1]
        top = ax.transData.transform(np.column_stack([x[ok], upper[ok]]))[:, 1]
    points = np.abs(top - bottom) * 72.0 / ax.figure.dpi
    thin = points < linewidth
    if not thin.any():
        return
    gap = upper[ok][thin] - lower[ok][thin]
    if relative:
        with np.errstate(divide="ignore", invalid="ignore"):
            gap = np.where(upper[ok][thin] > 0, gap / upper[ok][thin], 0.0)
        what = "(upper − lower)/upper"
    else:
        what = "upper − lower"
    width = float(np.max(gap))
    band.set_label(f"{BAND_LABEL}\n(thinner than the line: {what} ≤ {width:.2g})")


def draw_floors(ax, x, upper, unresolved, *, quantity: str, label: str | None = None) -> list:
    """Mark each run of ``unresolved`` points by a dashed level, the numerical floor there.

    The level is the largest certified upper bound in the run (a valid bound on the whole run,
    the curve being monotone), drawn over the run's points only.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    x, upper : array_like
        The points and the certified upper bound at each.
    unresolved : array_like of bool
        The points not drawn as a curve.
    quantity : str
        What is bounded, for the legend (``"δ"``).
    label : str, optional
        The legend entry of the first level (default: "numerical floor: only ... certified
        here").

    Returns
    -------
    list of float
        The levels drawn.
    """
    x = np.asarray(x, dtype=float)
    upper = np.asarray(upper, dtype=float)
    levels = []
    for first, last in runs(unresolved):
        level = float(np.max(upper[first:last + 1]))
        if not level > 0:
            continue
        # over the run's own points only: next to it the curve may lie above the level
        start, end = x[first], x[last]
        text = label or f"numerical floor: only {quantity} ≤ {level:.1e} certified here"
        ax.hlines(level, start, end, colors=FLOOR_COLOR, linestyles="--", linewidth=1.2,
                  label=text if not levels else "_floor")
        levels.append(level)
    return levels


_THIN = re.compile(r"\(thinner than the line: (?P<what>.+) ≤ (?P<width>[^)]+)\)")


def compact_legend(ax, **kwargs):
    """A compact legend (small type, tight spacing) listing each entry once.

    Repeated labels (reference lines of overlaid calls) once, every certified band as one
    entry (its largest width where thinner than the line; a grey patch when the bands differ
    in colour), every numerical floor as one.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes drawn on.
    **kwargs
        Passed to ``ax.legend`` (``loc``, ...).

    Returns
    -------
    matplotlib.legend.Legend
        The legend.
    """
    from matplotlib.patches import Patch  # optional dependency: imported only when plotting

    entries: dict = {}  # label (or a group placeholder) -> handle, in drawing order
    bands, floors = [], []
    for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
        group = bands if label.startswith(BAND_LABEL) else (
            floors if label.startswith("numerical floor") else None)
        if group is None:
            entries.setdefault(label, handle)
            continue
        if not group:
            entries[id(group)] = None  # the merged entry goes where the first one was
        group.append((handle, label))
    names = {}
    if len({label for _, label in bands}) > 1:
        found = [_THIN.search(label) for _, label in bands]
        thin = [m for m in found if m]
        names[id(bands)] = BAND_LABEL + (
            f"\n(thinner than the line: {thin[0]['what']} ≤ "
            f"{max(float(m['width']) for m in thin):.2g})" if thin else "")
    if len(floors) > 1:
        names[id(floors)] = "numerical floors: only the dashed level is certified there"
    labels, handles = [], []
    for key, handle in entries.items():
        if isinstance(key, str):
            labels.append(key)
            handles.append(handle)
            continue
        group = bands if key == id(bands) else floors
        labels.append(names.get(key, group[0][1]))
        colors = {tuple(h.get_facecolor().ravel()) for h, _ in group} if group is bands else ()
        handles.append(Patch(facecolor="0.5", alpha=0.25) if len(colors) > 1 else group[0][0])
    options = {"fontsize": "small", "handlelength": 1.6, "labelspacing": 0.3,
               "borderpad": 0.4, "handletextpad": 0.5, "framealpha": 0.85}
    return ax.legend(handles, labels, **(options | kwargs))
