"""A published f-DP tradeoff curve, given at points, as a composable step: the pessimistic
piecewise-linear curve below every convex curve through the points, and its discrete pair. The
construction and why it is certified: ``docs/concepts/imported-guarantees.md``."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from plda._internal.validation import real_sequence
from plda.mechanisms.base import Mechanism
from plda.mechanisms.law import AtomLaw
from plda.mechanisms.privacy_profile import MAX_POINTS

#: how far (absolute, in beta) a point may sit above the chord of its neighbours, or the first
#: chord's extension above 1 at alpha = 0, and still count as convex (rounding of the input)
CONVEXITY_TOLERANCE = 1e-12


#: the weight of the ideal curve ``1 - alpha`` mixed into the realized lower pair's curve
#: (more privacy, so its lower bound still holds; a margin over float rounding)
MIX = 1e-12
#: how far, in widths of its chord, the realized lower curve extends a chord at either end
REACH = 1e6
#: vertex heights below this are rounding residues of a line meeting 0, and snap to 0
SNAP = 1e-15


def curve_points(alpha, beta) -> tuple[np.ndarray, np.ndarray]:
    """The checked points of a tradeoff curve, with ``(1, 0)`` appended (every ``f(1) = 0``).

    Parameters
    ----------
    alpha : sequence of float
        Type-I errors in ``[0, 1]``, strictly increasing.
    beta : sequence of float
        ``f(alpha)``, one per alpha.

    Returns
    -------
    tuple of numpy.ndarray
        ``(alpha, beta)`` ending at ``(1, 0)``.

    Raises
    ------
    TypeError
        If an argument is not a sequence of real numbers.
    ValueError
        If the lengths differ, a value is NaN or infinite, an alpha is outside ``[0, 1]`` or
        not increasing, or the points are not those of a tradeoff function: a beta negative or
        above ``1 - alpha``, increasing, or the points not convex (a point above the chord of
        its neighbours, or the first chord above 1 at ``alpha = 0``).
    """
    a = real_sequence("alpha", alpha, max_length=MAX_POINTS)
    b = real_sequence("beta", beta, max_length=MAX_POINTS)
    if len(a) != len(b):
        raise ValueError(f"alpha and beta must have the same length, got {len(a)} and {len(b)}")
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if not 0 <= x <= 1:
            raise ValueError(f"alpha must be in [0, 1], got alpha[{i}] = {x!r}")
        if y < 0 or y > 1 - x + CONVEXITY_TOLERANCE:
            raise ValueError(
                f"beta must be in [0, 1 - alpha] (no test does worse than guessing), got "
                f"beta[{i}] = {y!r} at alpha {x!r}"
            )
        if i and not a[i - 1] < x:
            raise ValueError(f"alpha must be strictly increasing, got alpha[{i - 1}] = "
                             f"{a[i - 1]!r} then alpha[{i}] = {x!r}")
        if i and y > b[i - 1]:
            raise ValueError(f"beta must be non-increasing, got beta[{i - 1}] = {b[i - 1]!r} "
                             f"then beta[{i}] = {y!r}")
    xs, ys = np.array(a), np.array(b)
    if xs[-1] < 1:
        xs, ys = np.append(xs, 1.0), np.append(ys, 0.0)
    for k in range(1, xs.size - 1):
        chord = ys[k - 1] + (ys[k + 1] - ys[k - 1]) * (xs[k] - xs[k - 1]) / (xs[k + 1] - xs[k - 1])
        if ys[k] > chord + CONVEXITY_TOLERANCE:
            where = f"beta[{k}] = {ys[k]!r} at alpha {xs[k]!r}"
            raise ValueError(
                f"beta must be convex in alpha (a tradeoff function is): {where} lies above the "
                f"chord of its neighbours ({chord!r}; the curve ends at (1, 0))"
            )
    if xs[0] > 0 and xs.size > 1:
        start = ys[0] - (ys[1] - ys[0]) / (xs[1] - xs[0]) * xs[0]
        if start > 1 + CONVEXITY_TOLERANCE:
            raise ValueError(
                f"beta must be convex in alpha with f(0) <= 1: the first chord reaches {start!r} "
                f"at alpha = 0"
            )
    return xs, ys


def _line(xs, ys, k: int):
    """Slope and intercept of the chord from point ``k`` to point ``k + 1``."""
    slope = (ys[k + 1] - ys[k]) / (xs[k + 1] - xs[k])
    return slope, ys[k] - slope * xs[k]


def _lower_hull(points, *, keep_collinear: bool) -> list[tuple[float, float]]:
    """The lower convex hull of points sorted by ``alpha`` (monotone chain); of two points at
    one ``alpha`` the lower stays."""
    hull: list[tuple[float, float]] = []
    for p in points:
        while len(hull) >= 2:
            (x1, y1), (x2, y2) = hull[-2], hull[-1]
            cross = (x2 - x1) * (p[1] - y1) - (y2 - y1) * (p[0] - x1)
            if cross < 0 or (cross == 0 and not keep_collinear):
                hull.pop()
            else:
                break
        if hull and hull[-1][0] == p[0]:
            continue
        hull.append(p)
    return hull


def _extension(x0, y0, x1, y1, side: str) -> tuple[float, float]:
    """Slope and intercept of the chord from ``(x0, y0)`` to ``(x1, y1)`` extended to the
    ``side`` (``"right"`` of ``x1`` or ``"left"`` of ``x0``), lowered for the rounding of its
    ends: each end may be off by ``tol`` (8 ulps of the larger height), which moves the
    extension by at most ``tol (1 + 2 d / (x1 - x0))`` at a distance ``d``."""
    width = x1 - x0
    slope = (y1 - y0) / width
    tol = 8 * float(np.spacing(max(abs(y0), abs(y1), 1e-300)))
    tilt = 2 * tol / width
    if side == "right":  # y1 + slope (x - x1) - tol - tilt (x - x1)
        return slope - tilt, y1 - slope * x1 - tol + tilt * x1
    return slope + tilt, y0 - slope * x0 - tol - tilt * x0  # y0 + slope (x - x0) - ...


def pessimistic_vertices(xs, ys) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of the largest convex curve below every convex curve through the points.

    A convex ``f`` through the points lies above each chord's extension outside the chord's
    interval, so on ``[alpha_k, alpha_(k+1)]`` it is at least ``h = max(chord k-1, chord k+1,
    0)`` (the left neighbour of the first interval is the chord from ``(0, 1)``, as
    ``f(0) <= 1``; left of the first point, the first chord). The answer is the largest convex
    minorant of ``h``: the lower convex hull of ``h``'s vertices. Rounding is kept on the
    pessimistic side: a point above the chord of its neighbours (a non-convexity within
    ``CONVEXITY_TOLERANCE``) is dropped, each extension is lowered by its ends' rounding
    (:func:`_extension`: a chord between two close points says little far away), and no
    vertex lies above a given point or above ``1 - alpha``.

    Parameters
    ----------
    xs, ys : numpy.ndarray
        :func:`curve_points`' points, ending at ``(1, 0)``.

    Returns
    -------
    tuple of numpy.ndarray
        ``(alpha, beta)`` of the curve's vertices, from ``alpha = 0`` to ``(1, 0)``.
    """
    kept = _lower_hull(list(zip(xs.tolist(), ys.tolist(), strict=True)), keep_collinear=True)
    xs, ys = np.array([p[0] for p in kept]), np.array([p[1] for p in kept])
    known = dict(kept)
    n = xs.size
    candidates: list[tuple[float, float]] = []

    def add(x0, x1, bounds):
        """The vertices of ``max(bounds..., 0)`` on ``[x0, x1]``."""
        xs_here = [x0, x1]
        for i, (s, c) in enumerate(bounds):
            if s < 0 and x0 < -c / s < x1:
                xs_here.append(-c / s)  # where the line meets 0
            for s2, c2 in bounds[i + 1:]:
                if s != s2 and x0 < (c2 - c) / (s - s2) < x1:
                    xs_here.append((c2 - c) / (s - s2))
        for x in xs_here:
            value = min(max([0.0] + [s * x + c for s, c in bounds]), 1.0 - x)
            if x in known:  # f(alpha_k) = beta_k: never above it
                value = min(value, known[x])
            # a rounding residue of a line meeting 0 is 0 (lowering a vertex is pessimistic)
            candidates.append((x, value if value > SNAP else 0.0))

    def chord(k, side):
        return _extension(xs[k], ys[k], xs[k + 1], ys[k + 1], side)

    if xs[0] > 0 and n > 1:
        add(0.0, xs[0], [chord(0, "left")])
    for k in range(n - 1):
        if k > 0:
            left = chord(k - 1, "right")
        elif xs[0] > 0:  # the chord from (0, 1): f(0) <= 1
            left = _extension(0.0, 1.0, xs[0], ys[0], "right")
        else:
            left = None
        right = chord(k + 1, "left") if k + 2 < n else None
        add(xs[k], xs[k + 1], [line for line in (left, right) if line])
    hull = _lower_hull(sorted(set(candidates)), keep_collinear=False)
    hx, hy = np.array(hull).T
    return hx, np.maximum(hy, 0.0)


def chord_vertices(xs, ys) -> tuple[np.ndarray, np.ndarray]:
    """A convex tradeoff function through the points, as low as one can be at the ends.

    Between the points, the chords; left of the first point, the first chord extended to
    ``alpha = 0``; right of the last point before ``(1, 0)``, the last chord extended down to
    0, then 0. Its slopes never decrease, so it is convex, and it passes through every point:
    some step is ``f``-DP for it, and its pair's bounds are lower bounds.

    Parameters
    ----------
    xs, ys : numpy.ndarray
        :func:`curve_points`' points, ending at ``(1, 0)``.

    Returns
    -------
    tuple of numpy.ndarray
        Its vertices, from ``alpha = 0`` to ``(1, 0)``.
    """
    xs, ys = np.array(xs, dtype=float), np.array(ys, dtype=float)
    if xs.size >= 3 and ys[-2] > 0:  # the last chord before (1, 0), extended to 0
        slope, intercept = _line(xs, ys, xs.size - 3)
        if slope < 0:
            # where it meets 0, two ulps later than either way of computing it: the curve stays
            # convex and through the points, and never below the pessimistic one by rounding
            zero = _ulps_up(max(xs[-2] - ys[-2] / slope, -intercept / slope))
            # (closer to 1, the chord to (1, 0) is as good; an extension far beyond its chord's
            # width would carry the rounding of its ends: the chord is higher, hence safe)
            if xs[-2] < zero < 1 - 1e-9 and zero - xs[-2] <= REACH * (xs[-2] - xs[-3]):
                xs, ys = np.insert(xs, -1, zero), np.insert(ys, -1, 0.0)
    if xs[0] > 0:
        start = 1.0
        if xs.size > 1 and xs[0] <= REACH * (xs[1] - xs[0]):
            start = min(_ulps_up(ys[0] - _line(xs, ys, 0)[0] * xs[0]), 1.0)
        xs, ys = np.append(0.0, xs), np.append(start, ys)
    return xs, ys


def _ulps_up(x: float) -> float:
    """``x`` two floats up."""
    return float(np.nextafter(np.nextafter(x, np.inf), np.inf))


def vertices_law(xs, ys) -> AtomLaw:
    """The law of the pair ``(P, Q)`` whose outcomes are the segments of a polyline.

    A segment of slope ``-s`` over an ``alpha``-interval of length ``w`` is an outcome with
    ``P``-mass ``w`` and ``Q``-mass ``s w``, loss ``-log s`` (``+inf`` for ``s = 0``);
    ``1 - f(0)`` is the ``Q``-mass at ``-inf``, and so is a drop at one ``alpha`` (a rounding
    artefact: moved to ``alpha = 0``, which lowers the curve). For a convex polyline the pair's
    tradeoff is the polyline; for any other, its lower convex hull (the pair's outcomes sorted
    by likelihood ratio), which is lower: rounding never makes the pair optimistic.

    Parameters
    ----------
    xs, ys : numpy.ndarray
        Vertices of a non-increasing polyline from ``alpha = 0`` to ``(1, 0)``.

    Returns
    -------
    AtomLaw
        The remove law of the pair.
    """
    width = np.diff(xs)
    drop = np.maximum(-np.diff(ys), 0.0)
    wide = width > 0
    slope = np.zeros(width.shape)
    slope[wide] = drop[wide] / width[wide]
    finite = wide & (slope > 0)
    # segments of one slope are one outcome (same loss: merging them is exact)
    losses, where = np.unique(-np.log(slope[finite]), return_inverse=True)
    return AtomLaw(
        atom_losses=losses, atom_probs=np.bincount(where, weights=width[finite],
                                                   minlength=losses.size),
        infinity_mass=float(np.sum(width[wide & (slope == 0)])),
        neg_infinity_mass=float(min(max(1 - ys[0], 0.0) + np.sum(drop[~wide]), 1.0)),
    )


def symmetrized_vertices(xs, ys) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of ``max(f, f^-1)`` for the convex curve ``f`` through the vertices.

    ``f^-1`` is ``f`` mirrored in the diagonal (``f^-1(0)`` is where ``f`` first reaches 0);
    both are evaluated on the union of their breakpoints and the crossings between them.

    Parameters
    ----------
    xs, ys : numpy.ndarray
        Vertices of a convex non-increasing curve from ``alpha = 0`` to ``(1, 0)``.

    Returns
    -------
    tuple of numpy.ndarray
        The vertices of the symmetric curve, from ``alpha = 0`` to ``(1, 0)``.
    """
    zero = xs[np.argmax(ys <= 0)]  # where f first reaches 0
    keep = (ys > 0) | (xs == zero)
    mx, my = ys[keep][::-1], xs[keep][::-1]  # f^-1's vertices, alpha increasing
    mx, my = np.append(mx, 1.0), np.append(my, 0.0)
    grid = np.union1d(xs, mx)
    f, g = np.interp(grid, xs, ys), np.interp(grid, mx, my)
    diff = f - g
    cross = np.nonzero(diff[:-1] * diff[1:] < 0)[0]
    t = diff[cross] / (diff[cross] - diff[cross + 1])
    extra = grid[cross] + t * (grid[cross + 1] - grid[cross])
    grid = np.union1d(grid, extra)
    return grid, np.maximum(np.interp(grid, xs, ys), np.interp(grid, mx, my))


def _curve_law(xs, ys, symmetric: bool) -> AtomLaw:
    return vertices_law(*symmetrized_vertices(xs, ys)) if symmetric else vertices_law(xs, ys)


@dataclass(frozen=True)
class TradeoffCurve(Mechanism):
    """A step that is ``f``-DP for a published tradeoff curve known at points.

    ``f(alpha)`` bounds the type-II error of every test at type-I error ``alpha`` (Dong, Roth &
    Su 2022, Def. 2.3). Between the points, chords lie *above* a convex curve, so they would
    under-report; plda takes the largest convex curve below every convex curve through the
    points (:func:`pessimistic_vertices`) and the discrete pair whose tradeoff it is (each
    segment an outcome), which dominates every step with such an ``f``. With ``symmetric`` the
    curve holds for both orders of a neighbouring pair (Dong, Roth & Su's definition), so the
    pair's tradeoff is ``max(f, f^-1)``; without, it bounds the remove pair ``(M(D), M(D'))``
    only and the add direction is its reverse. The certified lower bound is that of the chord
    interpolation with the end chords extended (:func:`chord_vertices`), a convex curve through
    the points (``tight`` is False).

    Parameters
    ----------
    alpha : sequence of float
        Type-I errors in ``[0, 1]``, strictly increasing.
    beta : sequence of float
        ``f(alpha)``: convex, non-increasing, in ``[0, 1 - alpha]``.
    symmetric : bool, optional
        Whether the curve holds both ways (default True).

    Raises
    ------
    TypeError
        If ``alpha`` or ``beta`` is not a sequence of real numbers, or ``symmetric`` not a
        bool.
    ValueError
        If the points are not those of a tradeoff function (:func:`curve_points`); the
        message names the argument, the entry and what is wrong.
    """

    alpha: tuple[float, ...]
    beta: tuple[float, ...]
    symmetric: bool = True
    tight = False

    def __post_init__(self):
        if not isinstance(self.symmetric, bool):
            raise TypeError(f"symmetric must be a bool, got {type(self.symmetric).__name__}")
        xs, ys = curve_points(self.alpha, self.beta)
        object.__setattr__(self, "alpha", tuple(float(v) for v in xs[: len(self.alpha)]))
        object.__setattr__(self, "beta", tuple(float(v) for v in ys[: len(self.beta)]))

    def vertices(self) -> tuple[np.ndarray, np.ndarray]:
        """The certified pessimistic curve, before any symmetrization.

        Returns
        -------
        tuple of numpy.ndarray
            ``(alpha, beta)`` of its vertices, from ``alpha = 0`` to ``(1, 0)``.
        """
        return pessimistic_vertices(*curve_points(self.alpha, self.beta))

    def _remove_law(self):
        return _curve_law(*self.vertices(), self.symmetric)

    def lower_bound_mechanism(self) -> Mechanism:
        """The pair of a convex curve through the points (:func:`chord_vertices`).

        Returns
        -------
        Mechanism
            A mechanism whose laws are the chord curve's (symmetrized as this one).
        """
        return _ChordCurve(alpha=self.alpha, beta=self.beta, symmetric=self.symmetric)

    def under_replace_one(self) -> TradeoffCurve:
        """The same step under replace-one: the curve is taken as stated.

        Returns
        -------
        TradeoffCurve
            This mechanism.
        """
        return self


@dataclass(frozen=True)
class _ChordCurve(Mechanism):
    """The realized lower pair of a :class:`TradeoffCurve`: a convex curve through its points
    (:func:`chord_vertices`), mixed with the ideal curve by ``MIX``."""

    alpha: tuple[float, ...]
    beta: tuple[float, ...]
    symmetric: bool = True

    def _remove_law(self):
        xs, ys = chord_vertices(*curve_points(self.alpha, self.beta))
        # mixed with the ideal curve 1 - alpha (a step that reveals nothing w.p. MIX): still a
        # convex curve through (1, 0), more private, and its delta is (1 - MIX) times as large,
        # a margin over the float rounding of the two constructions
        ys = (1 - MIX) * ys + MIX * (1 - xs)
        return _curve_law(xs, ys, self.symmetric)

    def under_replace_one(self) -> Mechanism:
        return self
