"""The optimistic discretization of a continuous law: *pairing*, an exact post-processing of
the true pair. Each cell is merged into one outcome, and fractions of neighbouring cells are
grouped so that every group's merged loss sits at (or just above) its grid point; the cell where
the two pairing recursions meet is split at its best threshold.
"""

from __future__ import annotations

import numpy as np

from plda.discretization.cells import CDF_RTOL, NODES, WEIGHTS, coarse_tail, fine_end


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
    points = left[:, None] + width * NODES[None, :]
    dens = law.continuous_pdf(points, "P") * (WEIGHTS * width)[None, :]
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


def continuous_lower(law, step, lo, hi, moments):
    """Optimistic masses by an exact post-processing that pairs neighbouring cells.

    Merge each cell into one outcome, then send a fraction ``a_j`` of cell ``j`` down to ``l_j``
    and ``b_j`` up to ``l_{j+1}``. The group at ``l_j`` (``a_j`` of cell ``j`` and ``b_{j-1}`` of
    cell ``j-1``) has merged loss ``>= l_j`` iff ``b_{j-1} v_{j-1} <= a_j u_j``; so each group is a
    post-processing of the true pair whose loss is at or just above its grid point, and rounding
    down costs nothing. Fractions are found by recursions that are stable away from the mode:
    downward above the mode (``b_{j-1} = a_j u_j / v_{j-1}``, ``a = 1 - b``), upward below it
    (``a_j = b_{j-1} v_{j-1} / u_j``); whatever is left of a cell is rounded down to ``l_j``.
    """
    mid = fine_end(law, step, lo, hi)
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
    index, tail = coarse_tail(law, step, mid, hi, upper=False)
    np.add.at(out, index - lo, tail)
    above_hi = law.continuous_sf(np.array([hi * step]), "P")[0]
    out[-1] += above_hi * (1 - CDF_RTOL)  # upper tail rounded down to the last grid point
    return out
