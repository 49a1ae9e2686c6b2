"""Cell moments of a continuous privacy-loss law on a grid, and the pessimistic
*connect-the-dots* split of each cell between its two grid points (Doroshenko et al. 2022).
See docs/concepts/discretization.md.
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal.floats import UNIT_ROUNDOFF, dot
from plda.mechanisms.law import PrivacyLossLaw

#: relative error allowed for a law's cdf/sf evaluations (special functions, loss maps)
CDF_RTOL = 64 * UNIT_ROUNDOFF
#: beyond the point with this much mass above it, cells are 64 grid steps wide and their mass is
#: rounded up (pessimistic) or down (optimistic) to a cell end: a first-order error on a mass so
#: small that it changes delta by less than 1e-12 of this mass times the step count
FINE_TAIL = 1e-13
#: width of the coarse tail cells, in grid steps
COARSE = 64
#: error a discretization on the default tails accepts from cells that keep their cdf moments
#: (:func:`cell_moments`): at most this much mass added or moved per law, so k steps move delta
#: by at most about k times it, far below any accuracy a query asks
NEGLIGIBLE_CDF_ERROR = 1e-14
#: Gauss–Legendre rule on [0, 1] for the cell integrals (and a coarser one to estimate its error)
NODES, WEIGHTS = np.polynomial.legendre.leggauss(6)
NODES, WEIGHTS = (NODES + 1) / 2, WEIGHTS / 2
_NODES_C, _WEIGHTS_C = np.polynomial.legendre.leggauss(4)
_NODES_C, _WEIGHTS_C = (_NODES_C + 1) / 2, _WEIGHTS_C / 2
#: relative margin on every balance the optimistic version computes (covers the float rounding
#: of the few products in each)
MARGIN = 1e-9
#: cells wider than this (in loss units) are integrated piece by piece (:func:`_rule`)
WIDE = 1.0


def masses_from(cdf: np.ndarray, sf: np.ndarray):
    """Masses between consecutive points, from the cdf and the sf at the points.

    Differences of the cdf in the lower half and of the sf in the upper half, so no difference
    of two numbers near 1 is formed.

    Parameters
    ----------
    cdf
        The cdf at the points.
    sf
        The sf at the points.

    Returns
    -------
    tuple
        The masses of ``[points[i], points[i+1])`` (clipped at 0), their absolute error
        bounds, the mass below the first point and the mass above the last.
    """
    use_sf = sf[:-1] < cdf[:-1]
    mass = np.where(use_sf, sf[:-1] - sf[1:], cdf[1:] - cdf[:-1])
    err = CDF_RTOL * np.where(use_sf, sf[:-1] + sf[1:], cdf[1:] + cdf[:-1])
    return np.maximum(mass, 0.0), err, cdf[0], sf[-1]


def coarse_cells(law, step, lo: int, first: int, mid: int, hi: int, lower: bool = True):
    """The coarse cells of both tails, ``COARSE`` steps wide: ``lo..first`` and ``mid..hi``.

    Their masses come from cdf (below) or sf (above) differences of numbers that are all small,
    so nothing cancels; both versions are made from one set of them. (Every value of the
    continuous part is read through the law's combined :meth:`continuous_cdf_sf`, which a family
    whose four functions share work computes at once.)

    The pessimistic version puts each cell's P-mass at its upper end, rounded up: losses only
    rise, and the Q-mass this no longer accounts for sits at loss ``-inf``, where it costs
    nothing. The optimistic version puts at the lower end ``l_j`` of an upper-tail cell its
    P-mass rounded down, and of a lower-tail cell ``e^{l_j}`` times its Q-mass rounded down (at
    most its P-mass, as ``L >= l_j`` there): in the lower tail, where ``Q`` may hold nearly all
    of its mass, rounding the losses down with the P-mass kept would inflate the Q-mass.

    Parameters
    ----------
    law
        The privacy-loss law.
    step
        The grid step.
    lo, first
        The grid indices where the lower coarse cells start and the fine cells start.
    mid, hi
        The grid indices where the fine cells end and the upper coarse cells end.
    lower
        Whether to make the optimistic version too.

    Returns
    -------
    tuple
        The parts ``[(indices, masses), ...]`` of the pessimistic version and of the optimistic
        one (None if not ``lower``): the grid indices and the masses put there, no part without
        coarse cells.
    """
    upper_parts, lower_parts = [], []
    if first > lo:
        edges = np.unique(np.append(np.arange(lo, first, COARSE), first))
        cdf_p, _, cdf_q, _ = law.continuous_cdf_sf(edges * step)
        mass = np.maximum(np.diff(cdf_p), 0.0)
        err = CDF_RTOL * (cdf_p[:-1] + cdf_p[1:])
        upper_parts.append((edges[1:], mass + err))
        if lower:
            q_low = np.maximum(np.diff(cdf_q) - CDF_RTOL * (cdf_q[:-1] + cdf_q[1:]), 0.0)
            with np.errstate(divide="ignore", over="ignore"):
                # e^{l_j} q in log space: e^{l_j} alone may overflow where q is 0
                lifted = np.exp(edges[:-1] * step + np.log(q_low))
            lower_parts.append((edges[:-1], np.minimum(np.maximum(mass - err, 0.0), lifted)))
    if hi > mid:
        edges = np.unique(np.append(np.arange(mid, hi, COARSE), hi))
        _, sf, _, _ = law.continuous_cdf_sf(edges * step)
        mass = np.maximum(sf[:-1] - sf[1:], 0.0)
        err = CDF_RTOL * (sf[:-1] + sf[1:])
        upper_parts.append((edges[1:], mass + err))
        lower_parts.append((edges[:-1], np.maximum(mass - err, 0.0)))
    return upper_parts, (lower_parts if lower else None)


def _cdf_moments(law: PrivacyLossLaw, step: float, lo: int, mid: int):
    """Cell moments ``(p, ep, u, eu, v, ev)`` from cdf/sf differences (rigorous, but they cancel
    in the bulk: their error bars are about ``u * cdf / h``), and which cells lost their
    Q-mass to underflow."""
    edges = np.arange(lo, mid + 1) * step
    cdf_p, sf_p, cdf_q, sf_q = law.continuous_cdf_sf(edges)
    p2, ep2, _, _ = masses_from(cdf_p, sf_p)
    q2, eq2, _, _ = masses_from(cdf_q, sf_q)
    with np.errstate(divide="ignore", over="ignore"):
        # e^{l} q formed in log space: e^{l} alone overflows for large losses where q is 0
        lq2, leq2 = np.log(q2), np.log(eq2)
        q_lo, q_hi = np.exp(edges[:-1] + lq2), np.exp(edges[1:] + lq2)
        eq_lo, eq_hi = np.exp(edges[:-1] + leq2), np.exp(edges[1:] + leq2)
    u2 = p2 - q_lo
    v2 = q_hi - p2
    eu2 = ep2 + eq_lo + 4 * UNIT_ROUNDOFF * (p2 + q_lo)
    ev2 = ep2 + eq_hi + 4 * UNIT_ROUNDOFF * (p2 + q_hi)
    # Q-masses near or below the smallest normal double (losses beyond ~700) have lost their
    # relative accuracy or underflowed to 0, which would read as "all of the cell's loss at its
    # top". There the cdf values say only what always holds, 0 <= u <= p and 0 <= v <= p(e^h - 1)
    lost = q2 < 1e-290
    if lost.any():
        # e^h - 1 overflows for cells wider than ~709 (compositions of 1e9 steps): v is then
        # unbounded by this fact, and the cell takes the quadrature moments
        with np.errstate(over="ignore", invalid="ignore"):
            growth = np.expm1(step)
            u2, v2 = np.where(lost, 0.5 * p2, u2), np.where(lost, 0.5 * p2 * growth, v2)
            eu2 = np.where(lost, 0.5 * p2 + ep2, eu2)
            ev2 = np.where(lost, (0.5 * p2 + ep2) * growth, ev2)
    return (p2, ep2, np.maximum(u2, 0.0), eu2, np.maximum(v2, 0.0), ev2), lost


def cell_moments(law: PrivacyLossLaw, step: float, lo: int, mid: int, negligible: float = 0.0):
    """The moments of each cell ``[l_j, l_j + h]``, with their errors.

    ``p = P(cell)``, ``u = E_P[1 - e^{-(L - l_j)}; cell]``, ``v = E_P[e^{l_{j+1} - L} - 1; cell]``.
    First from cdf/sf differences, which are rigorous but cancel in the bulk. The cells whose
    cdf error is not negligible are then integrated by Gauss–Legendre quadrature (6 points;
    error taken as 10 times the difference to 4 points, plus rounding), which has no
    cancellation as all three integrands are non-negative; where the density is too rough for
    quadrature (support ends), the cdf values are kept if their error is smaller.

    Parameters
    ----------
    law
        The privacy-loss law.
    step
        The grid step ``h``.
    lo
        The grid index of the first cell.
    mid
        The grid index past the last cell (``j = lo..mid-1``).
    negligible
        The total error the caller accepts on top of the quadrature's: a cell whose cdf error
        (its mass error plus its ``u`` and ``v`` errors over ``1 - e^{-h}``, the mass they can
        move) is at most ``negligible`` over the number of cells keeps its cdf moments and
        skips the quadrature. 0: every cell is integrated.

    Returns
    -------
    tuple of numpy.ndarray
        ``(p, ep, u, eu, v, ev)``: each moment and its absolute error bound, per cell.
    """
    cdf_based, lost = _cdf_moments(law, step, lo, mid)
    if not law.has_density:
        return cdf_based
    # most cells of a fine grid lie in the tails, where the cdf differences are of small
    # numbers and their error is far below anything a query resolves: quadrature (ten density
    # evaluations per cell) only where the cdf error is not negligible
    left = np.arange(lo, mid) * step
    if negligible <= 0:
        return _quadrature_moments(law, step, left, cdf_based)
    _, ep2, _, eu2, _, ev2 = cdf_based
    with np.errstate(invalid="ignore", over="ignore"):
        cost = ep2 + (eu2 + ev2) / -np.expm1(-step)
    integrate = ~(cost <= negligible / max(mid - lo, 1))  # (NaN or inf: integrate)
    # a cell wider than WIDE whose Q-mass underflowed (losses past ~667) keeps its cdf
    # moments: each version then moves its mass to one end, at most one step of loss against
    # a loss of 667 or more. Its quadrature, on up to 34 pieces of ten density evaluations,
    # took 50 s of 53 of a Gaussian mixture of weight 1e-3 at shift / sigma 1e4
    if step > WIDE:
        integrate &= ~lost
    if not integrate.any():
        return cdf_based
    picked = _quadrature_moments(law, step, left[integrate],
                                 [part[integrate] for part in cdf_based])
    out = tuple(part.copy() for part in cdf_based)
    for whole, part in zip(out, picked, strict=True):
        whole[integrate] = part
    return out


#: most (node, cell) entries of one quadrature block: a grid coarsened to huge losses (a
#: Gaussian mixture at shift / sigma = 1e10: 6144 nodes over 2e5 cells) asked numpy for 10 GiB
#: per array; cells are integrated independently, so blocks of cells give the same numbers
QUADRATURE_BLOCK = 1 << 22


def _quadrature_moments(law: PrivacyLossLaw, step: float, left: np.ndarray, cdf_based):
    """:func:`cell_moments` of the cells starting at the losses ``left`` by quadrature, or by
    their cdf moments ``cdf_based`` where those are the tighter; in blocks of cells of at most
    :data:`QUADRATURE_BLOCK` entries."""
    if _v_overflows(step):
        # every cell's v would be +inf or NaN, and such cells take their cdf moments whole
        # (:func:`_quadrature_block`): the quadrature is skipped, not computed and discarded
        # (a Gaussian mixture at shift / sigma 1e4: 1024 pieces of ten density evaluations
        # per cell, two minutes per query, for the same numbers)
        return tuple(np.asarray(part) for part in cdf_based)
    width = max(1, QUADRATURE_BLOCK // len(_rule(step, NODES, WEIGHTS)[0]))
    if len(left) <= width:
        return _quadrature_block(law, step, left, cdf_based)
    blocks = [
        _quadrature_block(law, step, left[i : i + width], [c[i : i + width] for c in cdf_based])
        for i in range(0, len(left), width)
    ]
    return tuple(np.concatenate(parts) for parts in zip(*blocks, strict=True))


def _rule(step: float, nodes: np.ndarray, weights: np.ndarray):
    """A Gauss–Legendre rule on a cell of width ``step``, in cell units: the rule itself, or on
    a cell wider than ``WIDE`` the rule on each of its pieces (:func:`_piece_ends`)."""
    if step <= WIDE:
        return nodes, weights
    ends = _piece_ends(step) / step
    low, size = ends[:-1, None], np.diff(ends)[:, None]
    return (low + size * nodes[None, :]).ravel(), (size * weights[None, :]).ravel()


def _piece_ends(step: float) -> np.ndarray:
    """The pieces of a cell wider than ``WIDE``, in loss units from its bottom: 1 wide up to
    8, then each octave ``[2^k, 2^{k+1}]`` in four, the last cut at ``step``.

    The integrands of ``u`` and ``v``, ``1 - e^{-t}`` and ``e^{h - t} - 1`` at ``t = L - l_j``,
    change across a layer about 1 wide at the cell's bottom: six nodes over a cell 56 wide do
    not resolve it (their error bars added 19% of mass to one step's pessimistic version, and
    composed 5000 times it overflowed to NaN), and the cdf values cannot replace them there
    (``e^{l} Q`` underflows). Pieces 1 wide throughout did, in ``step`` pieces (up to ten
    thousand density evaluations a cell: a Gaussian mixture at shift / sigma 3e3 took a
    minute a query); these take about ``8 + 4 log2(step / 8)``. A piece ``W`` wide at depth
    ``t`` carries the 4-node rule's error on ``e^{-t}``, ``5.6e-10 W^9 e^{-t}`` (the error
    estimate's part), which these widths keep about as small as pieces 1 wide did."""
    ends = [0.0]
    while ends[-1] < step:
        last = ends[-1]
        ends.append(last + (1.0 if last < 8 else 2.0 ** (math.frexp(last)[1] - 3)))
    ends[-1] = step
    return np.array(ends)


def _v_overflows(step: float) -> bool:
    """Whether ``e^{h(1 - x)} - 1`` overflows at the lowest node ``x`` of either rule, so
    that :func:`_quadrature_block` finds ``v`` (or its error) non-finite in every cell."""
    lowest = min(_rule(step, NODES, WEIGHTS)[0][0], _rule(step, _NODES_C, _WEIGHTS_C)[0][0])
    with np.errstate(over="ignore"):
        return not np.isfinite(np.expm1(step * (1 - lowest)))


def _quadrature_block(law: PrivacyLossLaw, step: float, left: np.ndarray, cdf_based):
    """:func:`_quadrature_moments` of one block of cells."""
    p2, ep2, u2, eu2, v2, ev2 = cdf_based
    out = []
    for rule in ((NODES, WEIGHTS), (_NODES_C, _WEIGHTS_C)):
        nodes, weights = _rule(step, *rule)
        # one row per node, so every sum over the nodes runs along contiguous rows (a sum over
        # a short trailing axis is several times slower in numpy)
        points = left[None, :] + step * nodes[:, None]
        dens = law.continuous_pdf(points, "P") * (weights * step)[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            # e^{h(1 - x)} overflows for cells wider than ~709 (compositions of 1e9 steps):
            # such cells take the cdf values below
            out.append(
                (
                    dens.sum(axis=0),
                    dot(-np.expm1(-step * nodes), dens),
                    dot(np.expm1(step * (1 - nodes)), dens),
                )
            )
    (p, u, v), (pc, uc, vc) = out
    ep = 10 * np.abs(p - pc) + 8 * UNIT_ROUNDOFF * p
    eu = 10 * np.abs(u - uc) + 8 * UNIT_ROUNDOFF * u
    with np.errstate(invalid="ignore"):
        ev = 10 * np.abs(v - vc) + 8 * UNIT_ROUNDOFF * v
    # quadrature is only an estimate: where it disagrees with the (rigorous, if cancelling) cdf
    # interval by more than both error bars, the density is rough there and cdf values are used
    ep = np.maximum(ep, np.abs(p - p2) - ep2)
    eu = np.maximum(eu, np.abs(u - u2) - eu2)
    with np.errstate(invalid="ignore"):
        ev = np.maximum(ev, np.abs(v - v2) - ev2)
    use_cdf = ((eu2 + ep2) < (eu + ep)) | ~np.isfinite(v) | ~np.isfinite(ev)
    pick = lambda a, b: np.where(use_cdf, b, a)  # noqa: E731
    return (
        pick(p, p2),
        pick(ep, ep2),
        np.maximum(pick(u, u2), 0.0),
        pick(eu, eu2),
        np.maximum(pick(v, v2), 0.0),
        pick(ev, ev2),
    )


def continuous_upper(law, step, lo, hi, moments, first=None):
    """The pessimistic masses of the continuous part on the grid, by connect-the-dots.

    The share of cell ``[l_j, l_j + h]`` sent to ``l_{j+1}`` is ``u_j / (1 - e^{-h})``, which
    keeps both the P- and the Q-mass of the cell; its error bars are added at both ends, unless
    the share's error bar reaches the whole cell, which is then rounded up whole.

    Parameters
    ----------
    law
        The privacy-loss law.
    step
        The grid step.
    lo
        The grid index of the first point.
    hi
        The grid index of the last point.
    moments
        The fine cells' moments (:func:`cell_moments`) from cell ``first`` on; the coarse cells
        on either side (:func:`coarse_cells`) are added by the caller.
    first
        The grid index of the first fine cell (``lo`` if None).

    Returns
    -------
    tuple
        The masses on grid points ``lo..hi`` (the lower tail moved up to ``l_lo``) and the
        mass above ``l_hi``, charged to ``+inf``.
    """
    p, ep, u, eu, _, _ = moments
    start = (lo if first is None else first) - lo
    denom = -np.expm1(-step)
    up = np.minimum(u / denom, p)
    err = eu / denom + ep
    # a cell whose share sent up may, by its error bar, be all of it (its Q-mass underflowed:
    # u is known only to lie in [0, p]) is rounded up whole, p + ep at l_{j+1}: that dominates
    # it too, where the split with its error bar at both ends added p again (a mixture at
    # shift / sigma 1e4: half its mass twice, delta 1 at every epsilon below shift^2 / 2, and
    # composed 5000 times 1.5^5000 overflowed)
    # (to 2^-40: for a cell whose Q-mass underflowed, u + eu = p + ep up to the last bits)
    whole = (u + eu) / denom >= (p + ep) * (1 - 2.0**-40)
    out = np.zeros(hi - lo + 1)
    out[start : start + len(p)] += np.where(whole, 0.0, p - up + err)
    out[start + 1 : start + len(p) + 1] += np.where(whole, p + ep, up + err)
    cdf, sf, _, _ = law.continuous_cdf_sf(np.array([lo, hi]) * step)
    below, above = cdf[0], sf[1]
    out[0] += below * (1 + CDF_RTOL)  # lower tail moved up to l_lo
    return out, above * (1 + CDF_RTOL)  # upper tail goes to +inf
