"""Certified lattice laws of ``S = W_1 + ... + W_t``: random allocation's likelihood ratio ``S/t``.

For random allocation to one of ``t`` steps the remove pair's likelihood ratio is ``S / t``, ``W_i``
the i.i.d. per-step ratios under ``Q``, and both hockey-stick curves are ``Q``-expectations of
convex functions of ``S``. The upper law spreads each ``W_i`` onto a lattice preserving its mean
(conditional Jensen: a dominating pair); the lower laws move conditional means onto offset
lattices (:func:`offset_lattices`). FFT errors are charged so that both stay certified under
composition. The proofs: ``docs/howto/random-allocation.md`` ("How the bounds are certified").
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr

from plda._internal import fft
from plda._internal.convolve import root_sum_squares, split_convolve
from plda._internal.floats import UNIT_ROUNDOFF, dot

#: lattice points of a partial sum beyond which its cap takes one term's spread from the term's
#: range instead of the given ``sd`` (Popoviciu: a term within ``[0, r]`` has standard deviation
#: at most ``r / 2``). A Laplace base passes ``sqrt(e^eps0 - 1) ~ sqrt(eps0)`` while its ratio
#: spreads by about ``eps0`` only: at ``eps0 = 1e-8`` the caps asked for up to 1e9 points.
#: Below this many the caps are as they were (any cap is certified: it only moves tail mass)
MAX_CAP_POINTS = 1 << 23


def normal_cell_masses(z: np.ndarray):
    """Standard normal masses of the cells ``[z_k, z_{k+1})``, with bounds on their errors.

    Differences are taken of the cdf below the median and of the sf above it (no cancellation
    of numbers near 1). Error: a few ulps of each ``ndtr`` value, and each edge off by a few
    ulps of ``|z|``, which moves the value by ``phi(z)|dz| <= (1 + z^2) value * 4u`` (Mills
    ratio); ``16u(1 + z^2)`` per value covers both.

    Parameters
    ----------
    z : ndarray
        Increasing cell edges; ``-inf`` is allowed first.

    Returns
    -------
    tuple
        ``(masses, mass_above, errors)``: the cells' masses, the mass above the last edge, and
        a bound on the absolute error of each cell's mass.
    """
    lo = ndtr(z)
    hi = ndtr(-z)
    use_hi = hi[:-1] < lo[:-1]
    d = np.where(use_hi, hi[:-1] - hi[1:], lo[1:] - lo[:-1])
    zz = np.nan_to_num(z, neginf=0.0)
    v = np.where(use_hi, hi[:-1] * (1 + zz[:-1] ** 2) + hi[1:] * (1 + zz[1:] ** 2),
                 lo[1:] * (1 + zz[1:] ** 2) + lo[:-1] * (1 + zz[:-1] ** 2))
    return np.maximum(d, 0.0), float(hi[-1]), 16 * UNIT_ROUNDOFF * v


def lognormal_cells(mu: float, w: float, cells: int):
    """Cell masses and first moments of the lognormal ``W = exp(mu Z - mu^2/2)`` under ``Q``.

    Uses ``Q(W <= x) = Phi((log x + mu^2/2)/mu)`` and
    ``E_Q[W; W <= x] = Phi((log x - mu^2/2)/mu)`` (:func:`normal_cell_masses`).

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma`` of the Gaussian step.
    w : float
        The cell width.
    cells : int
        The number of cells ``[k w, (k+1) w)``, ``k < cells``.

    Returns
    -------
    tuple
        ``(mass, moment, mass_above, moment_above, mass_err, moment_err)``: the Q-mass and
        first moment of ``W`` in each cell, the mass and first moment above ``cells * w``, and
        bounds on the absolute error of each cell's mass and moment.
    """
    edges = np.arange(cells + 1) * w
    with np.errstate(divide="ignore"):
        logx = np.log(edges)
    mass, mass_above, mass_err = normal_cell_masses((logx + mu * mu / 2) / mu)
    moment, moment_above, moment_err = normal_cell_masses((logx - mu * mu / 2) / mu)
    return mass, moment, mass_above, moment_above, mass_err, moment_err


def laplace_cells(epsilon0: float, w: float, origin: float, cells: int):
    """:func:`lognormal_cells` for a Laplace step's likelihood ratio ``W = e^L``.

    ``L = |X| - |X - eps0|`` (unit scale), ``X ~ Lap(0, 1)`` under ``Q``: ``W`` lies in
    ``[a, b] = [e^-eps0, e^eps0]``, with Q-atoms ``1/2`` at ``a`` and ``e^-eps0 / 2`` at ``b``;
    in between ``Q(W >= x) = 1 / (2 sqrt(x e^eps0))`` and
    ``E_Q[W; W >= x] = 1 - sqrt(x e^-eps0) / 2`` (at least 1/2: no cancellation).

    Parameters
    ----------
    epsilon0 : float
        ``sensitivity / scale`` of the Laplace step.
    w : float
        The cell width.
    origin : float
        The left edge of the first cell.
    cells : int
        The number of cells ``[origin + k w, origin + (k+1) w)``.

    Returns
    -------
    tuple
        As :func:`lognormal_cells`: ``(mass, moment, mass_above, moment_above, mass_err,
        moment_err)``.

    Raises
    ------
    ValueError
        If ``origin`` lies above ``e^-eps0`` (the atom there would fall outside every cell).
    """
    lo, hi = math.exp(-epsilon0), math.exp(epsilon0)
    if origin > lo:  # the atom at e^-eps0 would fall outside every cell (mass 1/2 lost)
        raise ValueError(f"origin must be at most e^-epsilon0 = {lo!r}, got {origin!r}")
    edges = origin + np.arange(cells + 1) * w
    inside = (edges > lo) & (edges <= hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        # Q(W >= x) and E_Q[W; W >= x] at every edge (both non-increasing in x)
        sf = np.where(edges <= lo, 1.0, np.where(inside, 0.5 / np.sqrt(edges * hi), 0.0))
        msf = np.where(edges <= lo, 1.0, np.where(inside, 1 - 0.5 * np.sqrt(edges * lo), 0.0))
    mass = np.maximum(sf[:-1] - sf[1:], 0.0)
    moment = np.maximum(msf[:-1] - msf[1:], 0.0)
    # each value is a few roundings (sqrt, products, exp of eps0) from the exact one
    mass_err = 16 * UNIT_ROUNDOFF * (sf[:-1] + sf[1:])
    moment_err = 16 * UNIT_ROUNDOFF * (msf[:-1] + msf[1:])
    return mass, moment, float(sf[-1]), float(msf[-1]), mass_err, moment_err


def offset_positions(mass, moment, mass_err, moment_err, w):
    """Where each cell of ``W`` goes in the lower lattices (see :func:`offset_lattices`).

    Parameters
    ----------
    mass, moment : ndarray
        The Q-mass and first moment (about the first cell's left edge) of each cell.
    mass_err, moment_err : ndarray
        Bounds on their absolute errors.
    w : float
        The cell width (the lattice step).

    Returns
    -------
    tuple
        ``(q, remove_index, remove_offset, add_index, add_offset)``: the kept (rounded-down)
        mass of each cell ``k`` and its per-term lattice index in each direction, at position
        ``index * w + offset``; the remove position is at most the cell's conditional mean
        ``E[W | cell k]``, the add position at least.
    """
    k = np.arange(len(mass))
    with np.errstate(divide="ignore", invalid="ignore"):
        m = (moment - k * w * mass) / mass
        # error of m: the moment's and mass's errors, and rounding of k w mass (a few ulps)
        err = (moment_err + (k + 1) * w * mass_err) / mass + 8 * UNIT_ROUNDOFF * (k + 1) * w
    keep = (mass > 0) & np.isfinite(m) & (err < w / 4)
    # masses rounded down by their error bound: a sub-measure of the true one
    q = np.where(keep, np.maximum(mass - mass_err, 0.0) * (1 - 4 * UNIT_ROUNDOFF), 0.0)
    low = np.clip(np.where(keep, m - err, 0.0), 0.0, w)  # below the true offset of the mean
    high = np.clip(np.where(keep, m + err, w), 0.0, w)  # above it
    total = float(q.sum())

    # remove: position k w + s if low_k >= s, else (k - 1) w + s; the mean lost is
    # sum q (m - s) + w q(low < s): maximize s Q - w q(low < s) over the candidates s = low_k
    order = np.argsort(low, kind="stable")
    below = np.concatenate([[0.0], np.cumsum(q[order])])[:-1]
    first = np.searchsorted(low[order], low[order], side="left")  # ties share "below"
    s_rem = float(low[order][int(np.argmax(low[order] * total - w * below[first]))])
    # add: position k w + s if high_k <= s, else (k + 1) w + s; minimize s Q + w q(high > s)
    order = np.argsort(high, kind="stable")
    above = total - np.cumsum(q[order])
    last = np.searchsorted(high[order], high[order], side="right") - 1
    s_add = float(high[order][int(np.argmin(high[order] * total + w * above[last]))])
    # remove indices count from position s_rem - w (so that no index is negative)
    return q, k + (low >= s_rem), s_rem - w, k + (high > s_add), s_add


def offset_lattices(mass, moment, mass_err, moment_err, w):
    """Per-term lower lattices: conditional means moved down (remove) or up (add) to ``j w + s``.

    ``W`` is replaced by its conditional mean on its cell (conditional Jensen:
    ``E f(E[S|G]) <= E f(S)`` for convex ``f``), then moved to the lattice ``j w + s``, down for
    the remove direction (``f`` increasing), up for the add direction. The offset ``s`` is
    shared by all cells (a sum of ``t`` terms stays on a lattice) and chosen to lose the least
    mean. Cells whose conditional mean is not known to ``w/4`` (tiny mass) are dropped (a
    sub-measure only lowers every ``delta``).

    Parameters
    ----------
    mass, moment : ndarray
        The Q-mass and first moment (about the first cell's left edge) of each cell.
    mass_err, moment_err : ndarray
        Bounds on their absolute errors.
    w : float
        The cell width (the lattice step).

    Returns
    -------
    tuple
        ``(remove_masses, remove_offset, add_masses, add_offset)``: lattice masses at
        positions ``j w + offset``.
    """
    q, j_rem, off_rem, j_add, off_add = offset_positions(mass, moment, mass_err, moment_err, w)
    remove = np.zeros(len(mass) + 1)
    np.add.at(remove, j_rem, q)
    add = np.zeros(len(mass) + 1)
    np.add.at(add, j_add, q)
    return remove, off_rem, add, off_add


def _spread(mass, moment, w):
    """Mean-preserving split of each cell onto its two lattice ends; returns lattice masses."""
    k = np.arange(len(mass))
    up = np.clip((moment - k * w * mass) / w, 0.0, mass)
    out = np.zeros(len(mass) + 1)
    out[:-1] += mass - up
    out[1:] += up
    return out


def _cap_upper(dist, cap, w):
    """Mean-preserving spread of the mass above lattice index ``cap`` to ``cap`` and ``+inf``;
    returns the capped distribution and the mean sent to infinity (in units of ``S``)."""
    if len(dist) <= cap + 1:
        return dist, 0.0
    tail = dist[cap + 1 :]
    k = np.arange(cap + 1, len(dist))
    excess = float(np.add.reduce(tail * ((k - cap) * w)))
    out = dist[: cap + 1].copy()
    out[cap] += float(tail.sum())
    return out, excess


def sum_laws(mu: float, t: int, w: float, w_cap: float):
    """:func:`sum_cells` for the Gaussian base (``W`` lognormal, lattice from 0).

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma`` of the Gaussian step.
    t : int
        The number of terms (steps per epoch).
    w : float
        The lattice step.
    w_cap : float
        The cap of one term: cells cover ``[0, w_cap]``, the rest is lumped above.

    Returns
    -------
    tuple
        As :func:`sum_cells`.
    """
    cells = int(math.ceil(w_cap / w))
    return sum_cells(lognormal_cells(mu, w, cells), t, w, math.sqrt(math.expm1(mu * mu)))


def sum_cells(cell_data, t: int, w: float, sd: float, origin: float = 0.0,
              lower_cells=None, lower_origin: float | None = None, s_cap_sd: float = 12.0):
    """Certified lattice laws (step ``w``) of ``S = W_1 + ... + W_t`` under ``Q``.

    The per-term lattices (a mean-preserving spread above, :func:`offset_lattices` below) are
    convolved by binary powering with split FFTs; each product's certified error is charged
    as a Q-atom at ``S = 0`` plus mean sent to ``+inf`` (upper) or subtracted from every entry
    (lower), which keeps both sides certified under composition
    (``docs/howto/random-allocation.md``, "How the bounds are certified").

    Parameters
    ----------
    cell_data : tuple
        The cells ``[origin + k w, origin + (k+1) w)`` of ``W``, as returned by
        :func:`lognormal_cells`.
    t : int
        The number of terms.
    w : float
        The lattice step (the cell width).
    sd : float
        At least the standard deviation of ``W`` (sets the caps of the partial sums).
    origin : float, optional
        The left edge of the first cell.
    lower_cells : tuple, optional
        Cells for the lower sides (same step and count): atoms of ``W`` belong on lattice
        points for the upper side and at cell centres for the lower ones. None: ``cell_data``.
    lower_origin : float, optional
        The left edge of the first of ``lower_cells``.
    s_cap_sd : float, optional
        Standard deviations of a partial sum kept above its mean before it is capped.

    Returns
    -------
    tuple
        ``(upper, upper_offset, inf_mean, lower_remove, lower_add)``: ``upper`` (positions
        ``k w + upper_offset``) is a mean-preserving spread of ``S`` except for the mean
        ``inf_mean`` sent to ``+inf``; each lower side is a pair ``(masses, offset)``
        (positions ``k w + offset``) below ``S`` in the order that matters for its direction.
    """
    mass, moment, mass_above, moment_above, mass_err, moment_err = _about(cell_data, origin)
    cells = len(mass)
    upper = _spread(mass, moment, w)
    upper[cells] += mass_above
    inf_mean = max(moment_above - cells * w * mass_above, 0.0) * (1 + 1e-9) + 1e-300
    # lower sides: conditional means moved to offset lattices (mass above the cap dropped: a
    # sub-measure only lowers delta)
    if lower_cells is None:
        lower_cells, lower_origin = cell_data, origin
    low_mass, low_moment, _, _, low_mass_err, low_moment_err = _about(lower_cells, lower_origin)
    remove, off_r, add, off_a = offset_lattices(low_mass, low_moment, low_mass_err,
                                                low_moment_err, w)

    def cap_for(k):
        return int(math.ceil((k * (1 - origin) + s_cap_sd * math.sqrt(k) * sd) / w)) + cells

    if cap_for(t) > MAX_CAP_POINTS:  # every term lies on the lattice's [0, cells w]
        sd = min(sd, cells * w / 2)

    # the cells' errors: a cell's mass may be off by mass_err at k w (charged like the FFT
    # errors below: a Q-atom at S = 0 and mean mass_err k w sent to +inf), and its up-share by
    # share_err, which moves that much mass by one step w: a Q-atom at 0 (the decreasing f)
    # and mean share_err w (the increasing f, slope at most 1 per unit of S) cover it
    k = np.arange(cells)
    share_err = (moment_err + k * w * mass_err) / w  # error of each cell's up-share
    upper[0] += float(np.sum(mass_err) + 2 * np.sum(share_err))
    # each partial sum carries the mean it has sent to +inf: a sum of two partial sums has
    # both far components (each far atom survives the addition with its mean), so the means
    # add up over every copy (t per-term charges in S, not one)
    sent = inf_mean + float(np.add.reduce(mass_err * (k * w)) + np.sum(share_err) * w)

    def lower(c, parts, cap):
        # each part's entry bound covers its support: subtracting it keeps entries below
        for length, _, entry in parts:
            c[:length] -= entry
        return np.maximum(c[: cap + 1], 0.0)

    # every partial sum is capped at cap_for(t) + 1 points: one transform length serves all
    n = fft.good_size(2 * (max(cap_for(t), cells) + 2))

    def combine(x, y, k):
        (u, e1), (r, e2), (d, e3) = (split_convolve(x[0], y[0], n),
                                     split_convolve(x[1], y[1], n),
                                     split_convolve(x[2], y[2], n))
        cap = cap_for(k)
        far = x[3] + y[3]
        # FFT error e of the upper partial sum S_a: the computed measure plus a Q-atom of
        # mass sum|e_k| at S_a = 0 and mean sum|e_k| k w sent to S_a = +inf dominates the
        # exact one for both convex f (f(a + b) <= f(b) + a * slope for the increasing one,
        # f(a + b) <= f(b) for the decreasing one), whatever is added or composed later.
        # Cauchy-Schwarz on each part's support [0, m): sum_k |e_k| k w <= ||e||_2 w
        # sqrt(sum_{k<m} k^2) and sum|e_k| <= sqrt(m) ||e||_2
        for length, l2, _ in e1:
            far += l2 * w * root_sum_squares(length)
            u[0] += l2 * math.sqrt(length)
        u, extra = _cap_upper(u, cap, w)
        # the lower chains are cut at the same index (index j of a k-term sum is at
        # j w + k * offset: dropping more of the far tail only lowers delta)
        return u, lower(r, e2, cap), lower(d, e3, cap), far + extra

    # binary powering: the sum of the powers of two in t
    acc, acc_k = None, 0
    power, k, count = (upper, remove, add, sent), 1, t
    while True:
        if count & 1:
            acc_k += k
            acc = power if acc is None else combine(acc, power, acc_k)
        count >>= 1
        if not count:
            break
        k *= 2
        power = combine(power, power, k)
    return (acc[0], t * origin, acc[3],
            (acc[1], t * (lower_origin + off_r)), (acc[2], t * (lower_origin + off_a)))


def _about(cell_data, origin: float):
    """Cell data with first moments about ``origin`` (positions relative to it)."""
    mass, moment, mass_above, moment_above, mass_err, moment_err = cell_data
    if not origin:
        return cell_data
    # error: the mass's error times |origin|, and the subtraction's rounding
    moment_err = (moment_err + abs(origin) * mass_err * (1 + 4 * UNIT_ROUNDOFF)
                  + 4 * UNIT_ROUNDOFF * (np.abs(moment) + abs(origin) * mass))
    return (mass, moment - origin * mass, mass_above, moment_above - origin * mass_above,
            mass_err, moment_err)


def delta_bracket(mu: float, t: int, epsilon: float, w: float, w_cap: float):
    """Bounds on ``delta(epsilon)`` of one allocation epoch (remove), read off the lattice laws.

    ``delta = E_Q[(S/t - e^eps)_+]`` evaluated on the laws of :func:`sum_laws`, without the
    engine (a cross-check of it).

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma`` of the Gaussian step.
    t : int
        Steps per epoch.
    epsilon : float
        The ``epsilon`` at which ``delta`` is bounded.
    w : float
        The lattice step.
    w_cap : float
        The cap of one term (as in :func:`sum_laws`).

    Returns
    -------
    tuple of float
        ``(lower, upper)`` on ``delta(epsilon)``.
    """
    upper, _, inf_mean, (low_r, off_r), _ = sum_laws(mu, t, w, w_cap)
    ratio_u = np.arange(len(upper)) * (w / t)
    ratio_l = np.maximum(np.arange(len(low_r)) * w + off_r, 0.0) / t
    e = math.exp(epsilon)
    hi = dot(upper, np.maximum(ratio_u - e, 0.0)) + inf_mean / t
    lo = dot(low_r, np.maximum(ratio_l - e, 0.0))
    return lo * (1 - 1e-12), hi * (1 + 1e-12)
