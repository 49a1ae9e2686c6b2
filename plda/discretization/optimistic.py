"""The optimistic version of a continuous law on the grid: an exact post-processing of the true
pair, by *pairing* of neighbouring cells or the *martingale sweep* through the bulk, whichever
keeps more of ``E_P[L]``, after merging the atoms among the cells with their nearest cells
(:func:`continuous_lower`). The derivations: docs/concepts/discretization.md, sections
"Optimistic side" and "The martingale sweep".
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal.floats import dot
from plda.discretization.atoms import atom_groups
from plda.discretization.cells import CDF_RTOL, MARGIN, NODES, WEIGHTS


# ------------------------------------------------------------------------------------ pairing
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


def _paired(law, step, lo, p_low, p_high, u_low, v_high, mode, kept):
    """Pairing of neighbouring cells (fractions ``a_j`` down, ``b_j`` up), the two recursions
    meeting at cell ``mode``: masses on grid points ``lo .. lo + n``. ``kept``: the fraction of
    each cell's content the moments hold (the rest went to :func:`atom_groups`)."""
    n = len(p_low)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # (inf: clamped loop)
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
    leftover = np.maximum(1.0 - a - b, 0.0)
    down = (a + leftover) * p_low  # the leftover's merged loss is >= l_j: round it down
    up = b * p_low
    if law.has_density:
        # cells with a leftover (the junction of the two recursions) are split at a threshold
        # instead: a top slice goes up, the rest down -- far less is rounded down
        for j in np.nonzero(leftover * p_low > 1e-3 * p_low.max())[0][:8]:
            need_below = b[j - 1] * v_high[j - 1] if j > 0 else 0.0
            if not kept[j] > 0:
                continue
            # the moments hold the fraction kept[j] of the cell, a proportional slice: its
            # split is that fraction of the whole cell's split for the needs scaled up
            split = _threshold_split(law, step, lo + j, b[j] * v_high[j] / kept[j],
                                     need_below / kept[j])
            # the split trusts its quadrature only where that quadrature finds the cell's
            # certified mass: next to an atom of a Laplace mixture the density is singular,
            # and the split once put 4e-5 more than the cell's mass there (a lower version of
            # mass 1 + 3.5e-7, whose delta exceeded the upper version's)
            if split is None:
                continue
            split = (split[0] * kept[j], split[1] * kept[j])
            found = (split[0] + split[1]) / (1 - 1e-9)  # the quadrature's mass of the slice
            if p_low[j] * (1 - 1e-10) <= found <= p_high[j] * (1 + 1e-10):
                scale = min(1.0, p_low[j] / (split[0] + split[1]))  # never above p_low
                down[j], up[j] = split[0] * scale, split[1] * scale
    out = np.zeros(n + 1)
    out[:n] += down
    out[1:] += up
    return out


def _tail_pairing(p_low, u_low, v_high, upward: bool):
    """Pairing of the cells outside the swept bulk: ``(stay, up)`` fractions, recursing up from
    the bottom cell (``upward``) or down from the top one."""
    n = len(p_low)
    with np.errstate(divide="ignore", invalid="ignore"):
        if upward:
            a, b = _pair_up(u_low, v_high, n - 1, n)
        else:
            a, b = _pair_down(u_low, v_high, 0, n)
    return a + np.maximum(1.0 - a - b, 0.0), b


# ------------------------------------------------------------------------ the martingale sweep
#: most cells one group may draw on (beyond its own): bounds the spread a group merges, so the
#: information lost stays second order; ATOM_SPAN on a law with atoms, whose mass piles up below
#: its top atom (a Laplace mixture), where four cells lost up to 0.02 steps of the mean loss
SPAN, ATOM_SPAN = 4, 16


def sweep_up(p_low, u_low, v_high, step, k, rho, stop, out, span=SPAN):
    """The martingale sweep upward, from a state until the pending cell reaches ``stop``.

    Parameters
    ----------
    p_low
        The cells' P-masses, rounded down (a list).
    u_low
        Their ``u`` moments, rounded down.
    v_high
        Their ``v`` moments, rounded up.
    step
        The grid step.
    k
        The pending cell.
    rho
        The fraction of cell ``k`` still to go up.
    stop
        The cell index at which the sweep stops.
    out
        The grouped P-masses, by grid point (``len(p_low) + 1`` of them), added to in place.
    span
        The most cells a group may draw on beyond its own.

    Returns
    -------
    tuple
        The final state ``(k, rho)``.
    """
    n = len(p_low)
    decay = [math.exp(-d * step) for d in range(span + 1)]
    gain = [-math.expm1(-d * step) for d in range(span + 1)]  # 1 - decay, without cancellation
    shrink = 1.0 - MARGIN
    while k < stop and k < n - 1:
        if rho <= 0.0:  # nothing pending: the next cell goes up whole
            k, rho = k + 1, 1.0
            continue
        g = k + 1
        deficit = rho * v_high[k]
        paid = 0.0
        taken = 0.0  # P-mass of the cells taken whole
        j = g
        while True:
            if j >= n or j - g >= span:
                # the cells in reach cannot pay: lift the part of cell k they pay for, round the
                # rest of it down to its own grid point (alone, its balance is positive)
                lifted = min(rho, paid / v_high[k]) if v_high[k] > 0 else rho
                out[k] += (rho - lifted) * p_low[k]
                out[g] += lifted * p_low[k] + taken
                k, rho = j - 1, 0.0
                break
            d = j - g
            c = (p_low[j] * gain[d] + decay[d] * u_low[j]) * shrink
            if c > 0.0 and paid + c >= deficit:
                phi = (deficit - paid) / c
                out[g] += rho * p_low[k] + taken + phi * p_low[j]
                k, rho = j, 1.0 - phi
                break
            paid += c
            taken += p_low[j]
            j += 1
    return k, rho


def sweep_down(p_low, p_high, u_low, v_high, step, k, sigma, stop, out, span=SPAN):
    """The martingale sweep downward, from a state until ``k <= stop``.

    Parameters
    ----------
    p_low
        The cells' P-masses, rounded down (a list).
    p_high
        The same, rounded up.
    u_low
        Their ``u`` moments, rounded down.
    v_high
        Their ``v`` moments, rounded up.
    step
        The grid step.
    k
        The current cell.
    sigma
        The fraction of cell ``k`` that stays at ``l_k`` and pays for lifting cells below.
    stop
        The cell index at which the sweep stops.
    out
        The grouped P-masses, by grid point, added to in place.
    span
        The most cells a group may draw on beyond its own.

    Returns
    -------
    tuple
        The final state ``(k, sigma)``, its group not yet formed (``k = -1`` when the sweep
        reached the bottom cell).
    """
    # e^{mh} - 1, infinite for cells wider than ~709 / m (math.expm1 raises instead)
    grow = [math.expm1(m * step) if m * step < 700 else math.inf for m in range(span + 1)]
    widen = 1.0 + MARGIN
    while k > stop and k > 0:
        if sigma <= 0.0:  # nothing stays: the next cell down stays whole
            k, sigma = k - 1, 1.0
            continue
        surplus = sigma * u_low[k] * (1.0 - MARGIN)
        out[k] += sigma * p_low[k]
        j = k - 1
        while True:
            if j < 0:  # no cell left below: the surplus left is rounded away with its group
                k, sigma = -1, 0.0
                break
            if k - j > span:  # as far as a group reaches: the next one starts at cell j
                k, sigma = j, 1.0
                break
            m = k - j - 1
            w = (v_high[j] + (grow[m] * (v_high[j] + p_high[j]) if m else 0.0)) * widen
            if w > surplus:
                psi = surplus / w
                out[k] += psi * p_low[j]
                k, sigma = j, 1.0 - psi
                break
            surplus -= w
            out[k] += p_low[j]
            j -= 1
    return k, sigma


# ------------------------------------------------------------------ the better of the two
#: cells below this fraction of the largest cell's mass are left to pairing (the sweep's one
#: unbalanced group sits where they start, so what it wastes is negligible); pairing's mismatch
#: is first order only where the mass changes by a large factor from a cell to the next (a bulk
#: a few cells wide, a steep end of the support): where the log-mass of the cells holding 1e-3
#: of the largest changes by less than ROUGH per cell, only pairing runs
WINDOW, ROUGH = 1e-10, 0.05
#: beyond this many bulk cells only pairing runs (the sweep is a Python loop, < 1 us per cell)
MAX_SWEEP = 1 << 16
#: the sweep runs only where pairing loses more than this many times the pessimistic version's
#: own error of ``E_P[L]`` (about ``h^2 / 12`` per unit of mass for a density smooth on the
#: scale of a cell: connect-the-dots keeps the P- and Q-mass of every cell). Below that the sweep
#: gains at most 2x on ``E_P[L]`` (DP-SGD steps, bulk of 100+ cells) for a few ms per law.
SWEEP_WORTH = 3.0


def bulk_sweep(step, p_low, p_high, u_low, v_high, mode, upward=None, span=SPAN):
    """The martingale sweep through the bulk, pairing below and above it.

    Parameters
    ----------
    step
        The grid step.
    p_low
        The cells' P-masses, rounded down.
    p_high
        The same, rounded up.
    u_low
        Their ``u`` moments, rounded down.
    v_high
        Their ``v`` moments, rounded up.
    mode
        The cell of the density's mode (an atom's cell may hold more).
    upward
        Sweep up from the bottom (True) or down from the top (False); None: from the end
        nearer the mode.
    span
        The most cells a group may draw on beyond its own.

    Returns
    -------
    numpy.ndarray or None
        The masses on the ``len(p_low) + 1`` grid points of the cells, or None where the bulk
        (the cells above ``WINDOW`` of the largest) is too wide for the sweep or smooth enough
        for pairing.
    """
    n = len(p_low)
    bulk = np.nonzero(p_low > WINDOW * p_low.max())[0]
    if not len(bulk) or bulk[-1] - bulk[0] > MAX_SWEEP:
        return None
    first, last = int(bulk[0]), int(bulk[-1])
    core = np.nonzero(p_low > 1e-3 * p_low.max())[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        jumps = np.abs(np.diff(np.log(p_low[core[0] : core[-1] + 1])))
    if len(jumps) and np.all(jumps < ROUGH):  # NaN and inf jumps count as rough
        return None
    # the sweep runs on Python lists of the bulk and the span cells around it (a group reaches
    # at most span cells past where the sweep stops)
    r0, r1 = max(first - span - 1, 0), min(last + span + 2, n)
    lists = [x[r0:r1].tolist() for x in (p_low, p_high, u_low, v_high)]
    acc = [0.0] * (r1 - r0 + 1)
    out = np.zeros(n + 1)
    if upward is None:
        upward = mode - first <= last - mode
    if upward:  # the mode nearer the bottom: sweep up, end in the upper tail
        k, rho = 0, 1.0
        if first > 0:
            stay, up = _tail_pairing(p_low[:first], u_low[:first], v_high[:first], True)
            out[:first] += stay * p_low[:first]
            out[1:first] += up[:-1] * p_low[: first - 1]
            k, rho = first - 1, float(up[-1])
        k, rho = sweep_up(lists[0], lists[2], lists[3], step, k - r0, rho, last - r0, acc, span)
        out[r0 : r1 + 1] += acc
        k += r0
        if k + 1 < n:  # cells above: pairing down from the top; its bottom group pays for rho
            stay, up = _tail_pairing(p_low[k + 1 :], u_low[k + 1 :], v_high[k + 1 :], False)
            out[k + 1 : n] += stay * p_low[k + 1 :]
            out[k + 2 :] += up * p_low[k + 1 :]
            pays = stay[0] * u_low[k + 1] * (1.0 - MARGIN)
            lifted = min(rho, pays / v_high[k]) if v_high[k] > 0 else rho
            out[k + 1] += lifted * p_low[k]
            rho -= lifted
        out[k] += rho * p_low[k]  # what nothing pays for is rounded down
        return out
    k, sigma = n - 1, 1.0
    if last < n - 1:
        stay, up = _tail_pairing(p_low[last:], u_low[last:], v_high[last:], False)
        out[last + 1 : n] += stay[1:] * p_low[last + 1 :]
        out[last + 1 :] += up * p_low[last:]
        k, sigma = last, float(stay[0])
    k, sigma = sweep_down(*lists, step, k - r0, sigma, first - r0, acc, span)
    out[r0 : r1 + 1] += acc
    if k < 0:  # the sweep reached the bottom cell
        return out
    k += r0
    out[k] += sigma * p_low[k]
    if k > 0:  # cells below: pairing up from the bottom; group k pays for their top one
        stay, up = _tail_pairing(p_low[:k], u_low[:k], v_high[:k], True)
        out[:k] += stay * p_low[:k]
        out[1:k] += up[:-1] * p_low[: k - 1]
        pays = sigma * u_low[k] * (1.0 - MARGIN)
        lifted = min(float(up[-1]), pays / v_high[k - 1]) if v_high[k - 1] > 0 else 0.0
        out[k] += lifted * p_low[k - 1]
        out[k - 1] += (up[-1] - lifted) * p_low[k - 1]
    return out


def continuous_lower(law, step, lo, hi, moments, atoms=None, first=None):
    """The optimistic masses of the continuous part on the grid.

    An exact post-processing of the true pair: pairing of neighbouring cells, or the
    martingale sweep through the bulk, whichever has the larger ``E_P[L]``.

    Pairing merges each cell into one outcome, then sends a fraction ``a_j`` of cell ``j`` down
    to ``l_j`` and ``b_j`` up to ``l_{j+1}``. The group at ``l_j`` (``a_j`` of cell ``j`` and
    ``b_{j-1}`` of cell ``j-1``) has merged loss ``>= l_j`` iff ``b_{j-1} v_{j-1} <= a_j u_j``;
    so each group is a post-processing of the true pair whose loss is at or just above its grid
    point, and rounding down costs nothing. Fractions are found by recursions that are stable
    away from the mode: downward above the mode (``b_{j-1} = a_j u_j / v_{j-1}``, ``a = 1 - b``),
    upward below it (``a_j = b_{j-1} v_{j-1} / u_j``); whatever is left of a cell is rounded down
    to ``l_j``. Where they meet the mismatch of the whole law is rounded down: first order where
    the bulk spans a few cells, which the sweep (:func:`bulk_sweep`) avoids.

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
        The fine cells' moments (:func:`plda.discretization.cells.cell_moments`) from cell
        ``first`` on; the coarse cells on either side are added by the caller.
    atoms
        ``(cells, p, u, v)`` of atoms inside the fine cells (cells counted from ``first``,
        ``u`` rounded down, ``v`` up), paired with the cells' content rather than rounded down
        alone; None for none.
    first
        The grid index of the first fine cell (``lo`` if None).

    Returns
    -------
    numpy.ndarray
        The masses on grid points ``lo..hi`` (the mass above ``l_hi`` rounded down onto it).
    """
    p, ep, u, eu, v, ev = moments
    first = lo if first is None else first
    # conservative versions: the balance must hold for the true p, u, v
    p_low = np.maximum(p - ep, 0.0)
    p_high = np.minimum(p + ep, np.finfo(float).max)
    u_low = np.nan_to_num(np.maximum(u - eu, 0.0), nan=0.0) * (1 - 1e-9)
    # capped at the largest double: a cell too wide to bound its Q-moment (see _cdf_moments)
    # then pairs nothing, without inf * 0 = NaN in the balances below
    v_high = np.nan_to_num(np.minimum(v + ev, np.finfo(float).max), nan=np.finfo(float).max)
    # the recursions meet at the density's mode
    mode = int(np.argmax(p_low))
    grouped, kept = None, np.ones(len(p))
    if atoms is not None:
        grouped, (p_low, p_high, u_low, v_high), kept = atom_groups(
            step, atoms, p_low, p_high, u_low, v_high
        )
        p, u = p_low, u_low  # what is left of the cells, for the choice below
        mode = int(np.argmax(p_low))  # of what is left: the merges may empty cells
    fine = _paired(law, step, first, p_low, p_high, u_low, v_high, mode, kept)
    grid = (first + np.arange(len(fine))) * step
    # E_P[L] of the cells under connect-the-dots, sum p_j l_j + h sum min(u_j / (1 - e^-h), p_j)
    upper_mean = dot(p, grid[:-1]) + step * float(np.sum(np.minimum(u / -np.expm1(-step), p)))
    wasted = upper_mean - dot(fine, grid)
    if wasted > SWEEP_WORTH * step * step / 12 * float(np.sum(p)):
        # a law with atoms may hold a second dense end (a Laplace mixture's mass piles up below
        # its top atom), where the sweep's one unbalanced group would land: both directions are
        # tried there, with groups reaching ATOM_SPAN cells
        span = SPAN if grouped is None else ATOM_SPAN
        for upward in (None,) if grouped is None else (True, False):
            swept = bulk_sweep(step, p_low, p_high, u_low, v_high, mode, upward, span)
            if (swept is not None and np.all(np.isfinite(swept))
                    and dot(swept, grid) > dot(fine, grid)):
                fine = swept
    out = np.zeros(hi - lo + 1)
    out[first - lo : first - lo + len(fine)] += fine
    if grouped is not None:
        out[first - lo : first - lo + len(grouped)] += grouped
    above_hi = law.continuous_cdf_sf(np.array([hi * step]))[1][0]
    out[-1] += above_hi * (1 - CDF_RTOL)  # upper tail rounded down to the last grid point
    return out
