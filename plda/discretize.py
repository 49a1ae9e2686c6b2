"""From a privacy-loss law to a pessimistic and an optimistic :class:`~plda.grid.DiscreteLoss`.

Pessimistic (upper) — *connect the dots* (Doroshenko et al. 2022): the mass of the law in each grid
cell ``[l_i, l_{i+1}]`` is split between the two grid points so that both its ``P``-mass and its
``Q``-mass are kept. The split pair dominates the true pair in the Blackwell sense (the true
hockey-stick curve is convex in ``e^eps`` and the split gives its chord), so every composition of
split pairs bounds the true composition from above. The error is second order in the grid step.

Optimistic (lower) — *pairing*, an exact post-processing of the true pair: each cell is merged
into one outcome, and fractions of neighbouring cells are grouped so that every group's merged
loss sits at (or just above) its grid point; the cell where the two pairing recursions meet is
split at its best threshold. Rounding down then costs almost nothing, so the lower bound is as
tight as the upper one. Atoms are rounded down directly (unless the grid is aligned to them).

Tails: the pessimistic side moves the lower tail up to the first grid point and charges the upper
tail to ``+inf``; the optimistic side drops the lower tail and rounds the upper tail down. Float
rounding of every computed mass is bounded and added (upper) or subtracted (lower).
"""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict

import numpy as np

from plda._internal.caches import cached, register
from plda._internal.chernoff import CHERNOFF_ORDERS
from plda._internal.linalg import dot
from plda.grid import DiscreteLoss
from plda.mechanisms.law import PrivacyLossLaw

_U = 2.0**-53
_SMALLEST_NORMAL = float(np.finfo(float).tiny)
#: relative error allowed for a law's cdf/sf evaluations (special functions, loss maps)
_CDF_RTOL = 64 * _U
#: continuous mass left out at the low end (moved up or dropped: harmless either way)
LOWER_TAIL = 1e-24
#: continuous mass left out at the high end, charged to +inf on the pessimistic side
UPPER_TAIL = 1e-30
#: beyond the point with this much mass above it, cells are 64 grid steps wide and their mass is
#: rounded up (pessimistic) or down (optimistic) to a cell end: a first-order error on a mass so
#: small that it changes delta by less than 1e-12 of this mass times the step count
FINE_TAIL = 1e-13
_COARSE = 64
#: the far tail kept for the Chernoff bound that serves deltas below the FFT's resolution
FAR_UPPER_TAIL = 1e-320  # k * this stays below 1e-300 for k up to 1e10
#: grid points of the coarse discretization behind that Chernoff bound
_FAR_POINTS = 2048


def _interval_masses(law: PrivacyLossLaw, points: np.ndarray, hypothesis: str):
    """Continuous masses of ``[points[i], points[i+1])`` and their absolute error bounds.

    Differences are taken of the cdf in the lower half and of the sf in the upper half so no
    difference of two numbers near 1 is formed.
    """
    return _masses_from(
        law.continuous_cdf(points, hypothesis), law.continuous_sf(points, hypothesis)
    )


def _masses_from(cdf: np.ndarray, sf: np.ndarray):
    """:func:`_interval_masses` from the cdf and sf at the points."""
    use_sf = sf[:-1] < cdf[:-1]
    mass = np.where(use_sf, sf[:-1] - sf[1:], cdf[1:] - cdf[:-1])
    err = _CDF_RTOL * np.where(use_sf, sf[:-1] + sf[1:], cdf[1:] + cdf[:-1])
    return np.maximum(mass, 0.0), err, cdf[0], sf[-1]


def _atoms_upper(law: PrivacyLossLaw, step: float):
    losses, probs = law.atom_losses, law.atom_probs
    keep = probs > 0
    losses, probs = losses[keep], probs[keep]
    index = np.floor(losses / step).astype(np.int64)
    base = index * step
    # weight at l_{i+1} keeping P- and Q-mass: (1 - e^{-(l - l_i)}) / (1 - e^{-h})
    w = np.clip(np.expm1(-(losses - base)) / np.expm1(-step), 0.0, 1.0)
    err = 8 * _U * probs
    return index, probs * (1 - w) + err, probs * w + err


def _atoms_lower(law: PrivacyLossLaw, step: float):
    losses, probs = law.atom_losses, law.atom_probs
    keep = probs > 0
    losses, probs = losses[keep], probs[keep]
    ratio = losses / step
    index = np.floor(ratio).astype(np.int64)
    # an atom within 1e-9 of a step above a grid point is taken to be on it (float inputs)
    near = np.abs(ratio - np.round(ratio)) <= 1e-9
    index = np.where(near, np.round(ratio).astype(np.int64), index)
    return index, probs * (1 - 8 * _U)


def _snap_excess(law: PrivacyLossLaw, step: float) -> float:
    """How far :func:`_atoms_lower` may have moved an atom *up* (the snap onto a grid point
    within 1e-9 steps above it): the optimistic version charges it as a loss error."""
    losses = law.atom_losses[law.atom_probs > 0]
    if not len(losses):
        return 0.0
    index, _ = _atoms_lower(law, step)
    return max(0.0, float(np.max(index * step - losses)))


#: Gauss–Legendre rule on [0, 1] for the cell integrals (and a coarser one to estimate its error)
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(6)
_NODES, _WEIGHTS = (_NODES + 1) / 2, _WEIGHTS / 2
_NODES_C, _WEIGHTS_C = np.polynomial.legendre.leggauss(4)
_NODES_C, _WEIGHTS_C = (_NODES_C + 1) / 2, _WEIGHTS_C / 2


def _fine_end(law: PrivacyLossLaw, step: float, lo: int, hi: int) -> int:
    """Last grid index of the finely discretized bulk."""
    _, b = law.tail_points(FINE_TAIL, "P")
    return int(np.clip(np.ceil(b / step), lo + 1, hi))


def _coarse_tail(law, step, start: int, hi: int, upper: bool):
    """Masses of coarse cells ``[start, hi]`` (width ``_COARSE`` steps) from sf differences
    (upper tail: no cancellation), put at the cell's upper end (pessimistic) or lower end."""
    if hi <= start:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    edges = np.unique(np.append(np.arange(start, hi, _COARSE), hi))
    sf = law.continuous_sf(edges * step, "P")
    mass = np.maximum(sf[:-1] - sf[1:], 0.0)
    if upper:
        return edges[1:], mass + _CDF_RTOL * (sf[:-1] + sf[1:])
    return edges[:-1], np.maximum(mass - _CDF_RTOL * (sf[:-1] + sf[1:]), 0.0)


def _cdf_moments(law: PrivacyLossLaw, step: float, lo: int, mid: int):
    """Cell moments ``(p, ep, u, eu, v, ev)`` from cdf/sf differences (rigorous, but they cancel
    in the bulk: their error bars are about ``u * cdf / h``)."""
    edges = np.arange(lo, mid + 1) * step
    cdf_p, sf_p, cdf_q, sf_q = law.continuous_cdf_sf(edges)
    p2, ep2, _, _ = _masses_from(cdf_p, sf_p)
    q2, eq2, _, _ = _masses_from(cdf_q, sf_q)
    with np.errstate(divide="ignore", over="ignore"):
        # e^{l} q formed in log space: e^{l} alone overflows for large losses where q is 0
        lq2, leq2 = np.log(q2), np.log(eq2)
        q_lo, q_hi = np.exp(edges[:-1] + lq2), np.exp(edges[1:] + lq2)
        eq_lo, eq_hi = np.exp(edges[:-1] + leq2), np.exp(edges[1:] + leq2)
    u2 = p2 - q_lo
    v2 = q_hi - p2
    eu2 = ep2 + eq_lo + 4 * _U * (p2 + q_lo)
    ev2 = ep2 + eq_hi + 4 * _U * (p2 + q_hi)
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
    return p2, ep2, np.maximum(u2, 0.0), eu2, np.maximum(v2, 0.0), ev2


def _cell_moments(law: PrivacyLossLaw, step: float, lo: int, mid: int):
    """For each cell ``[l_j, l_j + h]`` (``j = lo..mid-1``), with errors:

    ``p = P(cell)``, ``u = E_P[1 - e^{-(L - l_j)}; cell]``, ``v = E_P[e^{l_{j+1} - L} - 1; cell]``.
    All three integrands are non-negative, so Gauss–Legendre quadrature (6 points; error taken as
    10 times the difference to 4 points, plus rounding) has no cancellation. Where the density is
    too rough for quadrature (support ends), cdf differences are used if their error is smaller.
    """
    left = np.arange(lo, mid) * step
    cdf_based = _cdf_moments(law, step, lo, mid)
    if not law.has_density:
        return cdf_based
    p2, ep2, u2, eu2, v2, ev2 = cdf_based
    out = []
    for nodes, weights in ((_NODES, _WEIGHTS), (_NODES_C, _WEIGHTS_C)):
        points = left[:, None] + step * nodes[None, :]
        dens = law.continuous_pdf(points, "P") * (weights * step)[None, :]
        with np.errstate(over="ignore", invalid="ignore"):
            # e^{h(1 - x)} overflows for cells wider than ~709 (compositions of 1e9 steps):
            # such cells take the cdf values below
            out.append(
                (
                    dens.sum(axis=1),
                    dot(dens, -np.expm1(-step * nodes)),
                    dot(dens, np.expm1(step * (1 - nodes))),
                )
            )
    (p, u, v), (pc, uc, vc) = out
    ep = 10 * np.abs(p - pc) + 8 * _U * p
    eu = 10 * np.abs(u - uc) + 8 * _U * u
    with np.errstate(invalid="ignore"):
        ev = 10 * np.abs(v - vc) + 8 * _U * v
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


def _continuous_upper(law, step, lo, hi, moments):
    """Connect-the-dots: the share of cell ``[l_j, l_j + h]`` sent to ``l_{j+1}`` is
    ``u_j / (1 - e^{-h})``, which keeps both the P- and the Q-mass of the cell."""
    mid = _fine_end(law, step, lo, hi)
    p, ep, u, eu, _, _ = moments
    denom = -np.expm1(-step)
    up = np.minimum(u / denom, p)
    err = eu / denom + ep
    out = np.zeros(hi - lo + 1)
    out[: mid - lo] += p - up + err
    out[1 : mid - lo + 1] += up + err
    index, tail = _coarse_tail(law, step, mid, hi, upper=True)
    np.add.at(out, index - lo, tail)
    below = law.continuous_cdf(np.array([lo * step]), "P")[0]
    above = law.continuous_sf(np.array([hi * step]), "P")[0]
    out[0] += below * (1 + _CDF_RTOL)  # lower tail moved up to l_lo
    return out, above * (1 + _CDF_RTOL)  # upper tail goes to +inf


def _affine_scan(alpha: np.ndarray, beta: np.ndarray, reverse: bool) -> np.ndarray:
    """``x_i = alpha_i + beta_i x_{i-1}`` from ``x_{-1} = 0`` (or from the end with
    ``reverse``), by composing the affine maps with a doubling scan: log2(n) vector steps."""
    a, b = alpha.astype(float).copy(), beta.astype(float).copy()
    if reverse:
        a, b = a[::-1].copy(), b[::-1].copy()
    shift = 1
    with np.errstate(under="ignore", over="ignore", invalid="ignore"):
        while shift < len(a):
            new_a = a[shift:] + b[shift:] * a[:-shift]
            b[shift:] = b[shift:] * b[:-shift]
            a[shift:] = new_a
            shift *= 2
    return a[::-1] if reverse else a


def _pair_down(u_low, v_high, mode, n):
    """Above the mode: the top cell goes fully down, then ``b_{j-1} = (1 - b_j) u_j / v_{j-1}``
    (a contraction there). Falls back to a clamped loop if a fraction leaves [0, 1]."""
    a, b = np.zeros(n), np.zeros(n)
    a[n - 1] = 1.0
    if n - 1 > mode:
        ratio = u_low[mode + 1 : n] / v_high[mode : n - 1]
        if np.all(np.isfinite(ratio)):
            b[mode : n - 1] = _affine_scan(ratio, -ratio, reverse=True)
            a[mode : n - 1] = 1.0 - b[mode : n - 1]
        if not np.all((b >= 0) & (b <= 1)):  # also catches NaN from an overflowing scan
            a[:], b[:] = 0.0, 0.0
            a[n - 1] = 1.0
            for j in range(n - 1, mode, -1):
                need = a[j] * u_low[j] / v_high[j - 1] if v_high[j - 1] > 0 else 1.0
                b[j - 1] = min(1.0, need)
                a[j - 1] = 1.0 - b[j - 1]
    return a, b


def _pair_up(u_low, v_high, mode, n):
    """Below the mode: the bottom cell goes fully up, then ``a_j = (1 - a_{j-1}) v_{j-1} / u_j``
    (a contraction there); where that exceeds 1, less is sent up from below instead."""
    a, b = np.zeros(n), np.zeros(n)
    b[0] = 1.0
    if mode >= 1:
        ratio = v_high[0:mode] / u_low[1 : mode + 1]
        if np.all(np.isfinite(ratio)):
            a[1 : mode + 1] = _affine_scan(ratio, -ratio, reverse=False)
            b[1 : mode + 1] = 1.0 - a[1 : mode + 1]
        if not np.all((a >= 0) & (a <= 1)):  # also catches NaN from an overflowing scan
            a[:], b[:] = 0.0, 0.0
            b[0] = 1.0
            for j in range(1, mode + 1):
                need = b[j - 1] * v_high[j - 1] / u_low[j] if u_low[j] > 0 else np.inf
                if need > 1.0:  # cannot balance: send less up from below instead
                    a[j] = 1.0
                    b[j - 1] = u_low[j] / v_high[j - 1] if v_high[j - 1] > 0 else 0.0
                else:
                    a[j] = need
                b[j] = 1.0 - a[j]
    return a, b


def _threshold_split(law, step, index, v_capacity, u_needed, pieces=256):
    """Best split of junction cell ``[l_j, l_j + h]`` between the groups at ``l_j`` and
    ``l_{j+1}``, from a 256-piece quadrature of the cell.

    Group ``j+1`` may take ``U`` with ``V(U) <= v_capacity``; group ``j`` needs the rest ``D``
    with ``U(D) >= u_needed``. ``U`` is a top slice plus a proportional share ``phi`` of the
    bottom part, ``phi`` chosen so that ``U(D) = u_needed`` exactly; over all slice points the
    one leaving the least unused capacity wins. Returns the P-masses ``(D, U)`` or ``None``.
    """
    left = index * step + step * np.arange(pieces) / pieces
    width = step / pieces
    points = left[:, None] + width * _NODES[None, :]
    dens = law.continuous_pdf(points, "P") * (_WEIGHTS * width)[None, :]
    rel = (points - index * step) / step  # position in the cell, 0..1
    mass = dens.sum(axis=1)
    u = (dens * -np.expm1(-step * rel)).sum(axis=1) * (1 - 1e-9)  # under-estimate u
    with np.errstate(over="ignore", invalid="ignore"):
        # v overflows in cells wider than ~709: an infinite V fits no capacity (no split)
        v = (dens * np.expm1(step * (1 - rel))).sum(axis=1) * (1 + 1e-9)  # over-estimate v
    if not np.all(np.isfinite(mass)):
        return None
    zero = np.zeros(1)
    # boundary k: top slice = pieces k.., bottom part = pieces ..k-1
    v_top = np.concatenate([np.cumsum(v[::-1])[::-1], zero])
    p_top = np.concatenate([np.cumsum(mass[::-1])[::-1], zero])
    u_bottom = np.concatenate([zero, np.cumsum(u)])
    v_bottom = np.concatenate([zero, np.cumsum(v)])
    p_bottom = np.concatenate([zero, np.cumsum(mass)])
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = 1.0 - u_needed * (1 + 1e-9) / u_bottom
    with np.errstate(invalid="ignore"):
        v_up = v_top + phi * v_bottom
    ok = (phi >= 0) & (phi <= 1) & (v_up <= v_capacity * (1 - 1e-9))
    if not ok.any():
        return None
    k = int(np.argmax(np.where(ok, v_up, -np.inf)))
    shrink = 1 - 1e-9  # quadrature masses: keep them below the truth
    return (1 - phi[k]) * p_bottom[k] * shrink, (p_top[k] + phi[k] * p_bottom[k]) * shrink


def _continuous_lower(law, step, lo, hi, moments):
    """Optimistic masses by an exact post-processing that pairs neighbouring cells.

    Merge each cell into one outcome, then send a fraction ``a_j`` of cell ``j`` down to ``l_j``
    and ``b_j`` up to ``l_{j+1}``. The group at ``l_j`` (``a_j`` of cell ``j`` and ``b_{j-1}`` of
    cell ``j-1``) has merged loss ``>= l_j`` iff ``b_{j-1} v_{j-1} <= a_j u_j``; so each group is a
    post-processing of the true pair whose loss is at or just above its grid point, and rounding
    down costs nothing. Fractions are found by recursions that are stable away from the mode:
    downward above the mode (``b_{j-1} = a_j u_j / v_{j-1}``, ``a = 1 - b``), upward below it
    (``a_j = b_{j-1} v_{j-1} / u_j``); whatever is left of a cell is rounded down to ``l_j``.
    """
    mid = _fine_end(law, step, lo, hi)
    p, ep, u, eu, v, ev = moments
    n = mid - lo
    # conservative versions: the balance must hold for the true u, v
    u_low = np.maximum(u - eu, 0.0) * (1 - 1e-9)
    # capped at the largest double: a cell too wide to bound its Q-moment (see _cdf_moments)
    # then pairs nothing, without inf * 0 = NaN in the balances below
    v_high = np.minimum(v + ev, np.finfo(float).max)
    mode = int(np.argmax(p))
    with np.errstate(divide="ignore", invalid="ignore"):
        a, b = _pair_down(u_low, v_high, mode, n)
        a_up, b_up = _pair_up(u_low, v_high, mode, n)
    a[:mode] = a_up[:mode]
    b[: mode - 1 if mode > 0 else 0] = b_up[: mode - 1 if mode > 0 else 0]
    if mode > 0:
        b[mode - 1] = b_up[mode - 1]
        a[mode] = a_up[mode]
        # the mode cell: its up-share b[mode] was set from above; keep a + b <= 1
        a[mode] = min(a[mode], 1.0 - b[mode])
        if a[mode] * u_low[mode] < b[mode - 1] * v_high[mode - 1]:
            b[mode - 1] = a[mode] * u_low[mode] / v_high[mode - 1]
    mass = np.maximum(p - ep, 0.0)
    leftover = np.maximum(1.0 - a - b, 0.0)
    down = (a + leftover) * mass  # the leftover's merged loss is >= l_j: round it down
    up = b * mass
    if law.has_density:
        # cells with a leftover (the junction of the two recursions) are split at a threshold
        # instead: a top slice goes up, the rest down -- far less is rounded down
        for j in np.nonzero(leftover * mass > 1e-3 * mass.max())[0][:8]:
            need_below = b[j - 1] * v_high[j - 1] if j > 0 else 0.0
            split = _threshold_split(law, step, lo + j, b[j] * v_high[j], need_below)
            if split is not None:
                down[j], up[j] = split
    out = np.zeros(hi - lo + 1)
    out[:n] += down
    out[1 : n + 1] += up
    index, tail = _coarse_tail(law, step, mid, hi, upper=False)
    np.add.at(out, index - lo, tail)
    above_hi = law.continuous_sf(np.array([hi * step]), "P")[0]
    out[-1] += above_hi * (1 - _CDF_RTOL)  # upper tail rounded down to the last grid point
    return out


def _assemble(step, parts, infinity_mass, upper, extra_loss_error=0.0):
    """Sum ``(index_array, mass_array)`` parts onto one grid array.

    Its ``loss_error``: the grid points ``i * step`` and the atoms are floats, a few ulps off
    the losses they stand for, and the cdf values were taken at the rounded points; 8 ulps of
    the largest ``|loss|`` on the grid bound that (``extra_loss_error``: snapped atoms)."""
    for _, mass in parts:
        if not np.all(np.isfinite(mass)):  # never hand on a silent NaN
            raise FloatingPointError("non-finite mass in a discretized privacy-loss law")
    parts = [(i, m) for i, m in parts if len(i)] or [(np.array([0]), np.array([0.0]))]
    lo = min(int(i.min()) for i, _ in parts if len(i))
    hi = max(int(i.max()) for i, _ in parts if len(i))
    out = np.zeros(hi - lo + 1)
    for index, mass in parts:
        if len(index):
            np.add.at(out, index - lo, mass)
    # subnormal masses (far tails) make every later sum over the array 100x slower (subnormal
    # arithmetic traps to microcode): an upper version moves them to +inf (twice their sum, so
    # the rounding of that sum is covered), a lower version drops them (less mass only lowers
    # delta); either way at most n * 2.2e-308 of mass moves
    tiny = (out > 0) & (out < _SMALLEST_NORMAL)
    if tiny.any():
        if upper:
            infinity_mass = infinity_mass + 2.0 * float(out[tiny].sum())
        out[tiny] = 0.0
    # trim exact zeros at both ends
    nz = np.nonzero(out)[0]
    if len(nz):
        out = out[nz[0] : nz[-1] + 1]
        lo += int(nz[0])
    else:
        out = np.zeros(1)
    largest = step * max(abs(lo), abs(lo + len(out)))
    return DiscreteLoss(
        step, lo, out, float(min(infinity_mass, 1.0)), upper,
        loss_error=8 * _U * largest + extra_loss_error,
    )


@cached(maxsize=512)
def far_tail_moments(law: PrivacyLossLaw) -> tuple[np.ndarray, float]:
    """``log E[e^{tL}; L finite]`` at the Chernoff orders, and the mass at ``+inf``, of a coarse
    pessimistic discretization reaching ``FAR_UPPER_TAIL``: any pessimistic grid version is a
    dominating pair, so its moments give a valid Chernoff bound whatever its step."""
    lo, hi = loss_support(law, FAR_UPPER_TAIL)
    step = max((hi - lo) / _FAR_POINTS, 1e-12)
    upper = _discretize_one_side(law, step, FAR_UPPER_TAIL)
    # rounding of the moments: 1e-12 for the log-sum-exp, and t * |l| * (a few u) for the grid
    # losses, which carry a relative error of a few ulps (atoms computed in floats, i * step)
    largest = step * max(abs(upper.offset), abs(upper.offset + len(upper.probs)))
    moments = upper.finite_log_mgf(CHERNOFF_ORDERS) + 1e-12 + CHERNOFF_ORDERS * 16 * _U * largest
    infinity = upper.infinity_mass
    if law.has_continuous_part and not np.isfinite(law.continuous_support[1]):
        # the tail cut at FAR_UPPER_TAIL has a tiny (often subnormal or underflowed) computed mass:
        # charge it at twice its nominal bound, or Chernoff bounds below ~1e-320 under-report
        # (Gaussian mu = 1.87 at eps = 73.5: 5e-324 was reported against an exact 2e-322)
        infinity = max(infinity, 2 * FAR_UPPER_TAIL)
    return moments, infinity


def loss_support(law: PrivacyLossLaw, upper_tail: float) -> tuple[float, float]:
    """Range the discretizer keeps: continuous tail points and every atom."""
    lo, hi = np.inf, -np.inf
    if law.has_continuous_part:
        lo, _ = law.tail_points(LOWER_TAIL, "P")
        _, hi = law.tail_points(upper_tail, "P")
    if len(law.atom_losses):
        lo, hi = min(lo, law.atom_losses.min()), max(hi, law.atom_losses.max())
    if not np.isfinite(lo) or not np.isfinite(hi) or hi <= lo:
        return (lo, lo + 1.0) if np.isfinite(lo) else (0.0, 1.0)
    return float(lo), float(hi)


def _continuous_range(law, step, upper_tail):
    a, _ = law.tail_points(LOWER_TAIL, "P")
    _, b = law.tail_points(upper_tail, "P")
    if not (np.isfinite(a / step) and np.isfinite(b / step) and (b - a) / step < 2**40):
        raise MemoryError(f"a grid of step {step:g} over [{a:g}, {b:g}] is too large")
    lo, hi = int(np.floor(a / step)), int(np.ceil(b / step))
    return lo, max(hi, lo + 1)


def _discretize_one_side(law: PrivacyLossLaw, step: float, upper_tail: float) -> DiscreteLoss:
    parts = []
    inf_upper = law.infinity_mass + law.truncated_mass
    if len(law.atom_losses):
        index, at_lo, at_hi = _atoms_upper(law, step)
        parts += [(index, at_lo), (index + 1, at_hi)]
    if law.has_continuous_part:
        lo, hi = _continuous_range(law, step, upper_tail)
        moments = _cell_moments(law, step, lo, _fine_end(law, step, lo, hi))
        cont, above = _continuous_upper(law, step, lo, hi, moments)
        parts.append((np.arange(lo, hi + 1), cont))
        inf_upper += above
    if not parts:
        parts = [(np.array([0]), np.array([0.0]))]
    return _assemble(step, parts, inf_upper, True)


class _ByteBoundedCache:
    """Least-recently-used cache of discretizations bounded by their total size.

    A history whose noise changes at every step keeps hundreds of laws in use, so a bound on
    the number of entries either thrashes (every query rediscretizes everything) or, for large
    grids, holds gigabytes; the bound is on bytes instead."""

    def __init__(self, function, max_bytes: int):
        self.function, self.max_bytes = function, max_bytes
        self.entries: OrderedDict = OrderedDict()
        self.bytes = 0
        self.lock = threading.Lock()  # filters may run accountants from several threads
        functools.update_wrapper(self, function)

    def __call__(self, law, step):
        key = (law, step)
        with self.lock:
            hit = self.entries.get(key)
            if hit is not None:
                self.entries.move_to_end(key)
                return hit[0]
        value = self.function(law, step)  # outside the lock: two threads may both compute
        size = sum(v.probs.nbytes for v in value) + 1024
        with self.lock:
            if key not in self.entries:
                self.entries[key] = (value, size)
                self.bytes += size
            while self.bytes > self.max_bytes and len(self.entries) > 1:
                _, (_, old) = self.entries.popitem(last=False)
                self.bytes -= old
            return self.entries[key][0] if key in self.entries else value

    def cache_clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.bytes = 0


def _discretize(law: PrivacyLossLaw, step: float) -> tuple[DiscreteLoss, DiscreteLoss]:
    """``(upper, lower)`` grid versions of ``law`` with grid step ``step``."""
    bracket = getattr(law, "bracket", None)
    if bracket is not None:  # known through a dominating and a dominated law (RandomAllocation)
        return _discretize(bracket[0], step)[0], _discretize(bracket[1], step)[1]
    upper_parts, lower_parts = [], []
    if len(law.atom_losses):
        index, at_lo, at_hi = _atoms_upper(law, step)
        upper_parts += [(index, at_lo), (index + 1, at_hi)]
        lower_parts.append(_atoms_lower(law, step))
    inf_upper = law.infinity_mass + law.truncated_mass
    if law.has_continuous_part:
        lo, hi = _continuous_range(law, step, UPPER_TAIL)
        moments = _cell_moments(law, step, lo, _fine_end(law, step, lo, hi))
        cont, above = _continuous_upper(law, step, lo, hi, moments)
        grid = np.arange(lo, hi + 1)
        upper_parts.append((grid, cont))
        lower_parts.append((grid, _continuous_lower(law, step, lo, hi, moments)))
        inf_upper += above
    if not upper_parts:  # only infinite masses
        upper_parts = lower_parts = [(np.array([0]), np.array([0.0]))]
    upper = _assemble(step, upper_parts, inf_upper, True)
    moments_far, far_infinity = far_tail_moments(law)
    object.__setattr__(upper, "log_mgf", moments_far)
    object.__setattr__(upper, "chernoff_infinity_mass", far_infinity)
    snapped = _snap_excess(law, step) if len(law.atom_losses) else 0.0
    return upper, _assemble(step, lower_parts, law.infinity_mass, False, snapped)



#: cached (the accountant and the engine ask for the same laws on the same grids again and again)
discretize = _ByteBoundedCache(_discretize, max_bytes=1 << 30)
register("plda.discretize.discretize", discretize.cache_clear)
