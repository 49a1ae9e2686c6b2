"""Certified lower laws from the sum of the cell indices of per-step likelihood ratios.

A post-processing of an epoch with exact discrete laws (convolutions of cell masses, computed
as certified sub- and super-measures): the lower side of a ``k``-out-of-``t`` random
allocation (:func:`cell_sum_laws`) and of a shuffled epoch whose other records sit at ``-C``
(:func:`shifted_pair_cell_sum_laws`). The derivation: ``docs/howto/random-allocation.md``
("Several steps per record") and ``docs/howto/samplers.md`` ("How the shuffled bracket is
certified").
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal import fft
from plda._internal.caches import cached
from plda._internal.convolve import split_convolve
from plda._internal.floats import UNIT_ROUNDOFF
from plda.epochs.sums import (
    MAX_CAP_POINTS,
    laplace_cells,
    lognormal_cells,
    normal_cell_masses,
)
from plda.mechanisms.law import AtomLaw

#: points of the lattice of ``T`` (sets the cell width ``w`` of ``W``)
MAX_POINTS = 1 << 20
#: finest cell width of ``W``
MIN_WIDTH = 0.02
_Z_TAIL = 6.362  # Phi(-6.362) ~ 1e-10: the lognormal cells stop there (the rest is lumped)
#: coarsest cell width, relative to the spread of one term (at most 1), for which the shuffled
#: pair's cell sum is offered: coarser cells lose the statistic's information
MAX_SHIFTED_WIDTH = 0.25
#: most cells of one term for the shuffled pair's cell sum (its law then builds in about 1 s)
MAX_SHIFTED_CELLS = 1 << 18


def _cells(kind: str, parameter: float, t: int, k: int):
    """``(q, dq, p, dp, width, cap)``: cell masses of ``J`` under ``Q`` and under a selected
    step, with bounds on their absolute errors, the cell width and the index cap of ``T``."""
    if kind == "laplace":
        lo, hi = math.exp(-parameter), math.exp(parameter)
        mean_p, sd_p = hi, hi  # W <= e^eps0 under both
        span = k * mean_p + t + 12 * math.sqrt(t) * sd_p
        cells = max(64, math.ceil((hi - lo) / max(MIN_WIDTH, span / MAX_POINTS)))
        w = (hi - lo) / cells
        data = laplace_cells(parameter, w, lo - w / 2, cells + 1)
    else:
        mu = parameter
        top = math.exp(_Z_TAIL * mu + mu * mu / 2)
        mean_p = math.exp(mu * mu)
        sd_p = math.sqrt(max(math.exp(3 * mu * mu) - math.exp(2 * mu * mu), 0.0))
        sd_q = math.sqrt(math.expm1(mu * mu))
        # k selected terms (mean e^mu^2) and t - k others (mean 1), 12 standard deviations
        span = k * mean_p + 12 * math.sqrt(k) * sd_p + t + 12 * math.sqrt(t) * sd_q + top
        w = max(MIN_WIDTH, span / MAX_POINTS)
        data = lognormal_cells(mu, w, int(math.ceil(top / w)))
    mass, moment, mass_above, moment_above, mass_err, moment_err = data
    q = np.append(mass, mass_above)
    p = np.append(moment, moment_above)
    # the lumped cell's values are a few ulps off too
    dq = np.append(mass_err, 16 * UNIT_ROUNDOFF * mass_above)
    dp = np.append(moment_err, 16 * UNIT_ROUNDOFF * moment_above)
    cap = int(math.ceil(span / w)) + len(q)
    if kind == "laplace" and cap > MAX_CAP_POINTS:
        # span counts from W = 0, but the cells start at e^-eps0 - w/2: at small eps0 (64 cells
        # of width ~ eps0 / 32) that asks for billions of points. T's index is a sum of t cell
        # indices in [0, len(q) - 1], of mean (1 - origin) / w under Q and standard deviation at
        # most (len(q) - 1) / 2 (Popoviciu); the laws are lower sides only, so any cap is
        # certified (mass past it is dropped: a sub-measure)
        top = len(q) - 1
        mean = k * top + (t - k) * ((1 - (lo - w / 2)) / w + 1)
        cap = min(cap, int(math.ceil(mean + 12 * math.sqrt(t) * top / 2)) + len(q))
    return q, dq, p, dp, w, cap


def _product(a, b, n: int, cap: int, sign: int):
    """``a * b`` cut at index ``cap``, minus (``sign = -1``, a sub-measure of the exact
    product of the measures ``a`` and ``b`` stand below) or plus (``+1``, above) its certified
    entry errors."""
    c, parts = split_convolve(a, b, n)
    for length, _, entry in parts:
        c[:length] += sign * entry
    return np.maximum(c[: cap + 1], 0.0)


def _power(x, count: int, n: int, cap: int, sign: int):
    """``x^{*count}`` by binary powering (``count >= 1``), each product as in :func:`_product`."""
    acc, power = None, x
    while True:
        if count & 1:
            acc = power if acc is None else _product(acc, power, n, cap, sign)
        count >>= 1
        if not count:
            return acc
        power = _product(power, power, n, cap, sign)


def _side(q, p, t: int, k: int, n: int, cap: int, sign: int):
    """``(P_T, Q_T)`` as sub-measures (``sign = -1``) or super-measures (``+1``)."""
    both = _power(p, k, n, cap, sign)
    if t > k:
        both = _product(both, _power(q, t - k, n, cap, sign), n, cap, sign)
    return both, _power(q, t, n, cap, sign)


def _law(top, bottom) -> AtomLaw:
    """Atoms ``log(top / bottom)`` with masses ``top`` (``+inf`` where ``bottom`` is 0)."""
    size = min(len(top), len(bottom))
    top, bottom = top[:size], bottom[:size]
    keep = (top > 0) & (bottom > 0)
    infinity = float(top[(top > 0) & (bottom <= 0)].sum())
    loss = np.log(top[keep]) - np.log(bottom[keep])
    order = np.argsort(loss, kind="stable")
    return AtomLaw(atom_losses=loss[order], atom_probs=top[keep][order], infinity_mass=infinity)


def cell_sum_laws(kind: str, parameter: float, t: int, k: int) -> tuple[AtomLaw, AtomLaw]:
    """Certified lower laws of a ``k``-out-of-``t`` allocation epoch from its cell sum.

    The statistic is ``T = sum_i J_i``, ``J_i`` the lattice cell of step ``i``'s likelihood
    ratio ``W_i``; its laws are ``P_T = p^{*k} * q^{*(t-k)}`` and ``Q_T = q^{*t}`` with
    ``q_j = Q(W in cell j)`` and ``p_j = E_Q[W; W in cell j]``, computed as sub-measures
    (lower masses) and super-measures (upper masses); the remove law has atoms
    ``log(P_T^- / Q_T^+)`` with masses ``P_T^-``, the add law ``log(Q_T^- / P_T^+)`` with
    masses ``Q_T^-`` (``docs/howto/random-allocation.md``, "Several steps per record").

    Parameters
    ----------
    kind : str
        ``"gaussian"`` or ``"laplace"``: the base mechanism.
    parameter : float
        ``mu = sensitivity / sigma`` of a Gaussian, or ``epsilon0 = sensitivity / scale`` of a
        Laplace base.
    t : int
        Steps per epoch.
    k : int
        Steps each record takes part in.

    Returns
    -------
    tuple of AtomLaw
        ``(remove, add)``: laws dominated by the epoch's in each direction.
    """
    q, dq, p, dp, _, cap = _cells(kind, parameter, t, k)
    n = fft.good_size(2 * (cap + 2))
    p_low, q_low = _side(np.maximum(q - dq, 0.0), np.maximum(p - dp, 0.0), t, k, n, cap, -1)
    p_high, q_high = _side(q + dq, p + dp, t, k, n, cap, +1)
    return _law(p_low, q_high), _law(q_low, p_high)


def shifted_pair_plan(mu: float, t: int) -> tuple[float, int, float] | None:
    """The lattice of :func:`shifted_pair_cell_sum_laws`, or None where it declines.

    It declines where the cells would be coarser than :data:`MAX_SHIFTED_WIDTH` of one term's
    spread or more than :data:`MAX_SHIFTED_CELLS` (``2 mu`` above about 1.2: the lognormal
    tail of ``V`` needs ever more cells, and the largest coordinate does well there).

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma`` of the Gaussian base.
    t : int
        Steps (batches) per epoch.

    Returns
    -------
    tuple of (float, int, float) or None
        ``(w, cells, span)``: the cell width, the number of cells of one term and the span of
        the sum; None if unsupported (also for ``t < 2``).
    """
    m2 = 2 * mu
    # beyond 2 the lognormal tail alone needs more than MAX_SHIFTED_CELLS cells of width at
    # most MAX_SHIFTED_WIDTH (top = e^(6.362 m2 + m2^2 / 2) > 2^18 / 4); e^top would overflow
    if not 0 < m2 <= 2.0 or t < 2:
        return None
    top = math.exp(_Z_TAIL * m2 + m2 * m2 / 2)
    mean_2 = math.exp(m2 * m2)  # E[V] under N(2 mu)
    sd_2 = math.sqrt(max(math.exp(3 * m2 * m2) - math.exp(2 * m2 * m2), 0.0))
    sd_0 = math.sqrt(math.expm1(m2 * m2))
    span = mean_2 + 12 * sd_2 + t + 12 * math.sqrt(t) * sd_0 + top
    w = max(MIN_WIDTH, span / MAX_POINTS)
    cells = int(math.ceil(top / w))
    if w > MAX_SHIFTED_WIDTH * min(sd_0, 1.0) or cells > MAX_SHIFTED_CELLS:
        return None
    return w, cells, span


def shifted_pair_cells(mu: float, t: int):
    """Cell masses of the statistic of :func:`shifted_pair_cell_sum_laws`.

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma`` of the Gaussian base.
    t : int
        Steps (batches) per epoch.

    Returns
    -------
    tuple or None
        ``(q0, dq0, p1, dp1, p2, dp2, cap)``: the masses of the cells of
        ``V = e^(2 mu Y - 2 mu^2)`` under ``Y ~ N(0, 1)``, ``N(mu, 1)`` and ``N(2 mu, 1)`` (the
        cells above the last lumped), bounds on their absolute errors, and the index cap of the
        sum; None where :func:`shifted_pair_plan` declines.
    """
    plan = shifted_pair_plan(mu, t)
    if plan is None:
        return None
    w, cells, span = plan
    m2 = 2 * mu
    # V is the lognormal W of RandomAllocation at 2 mu: its N(0) masses and first moments
    # (the N(2 mu) masses), and the N(mu) masses, P_mu(V <= x) = Phi(log(x) / (2 mu))
    mass, moment, mass_above, moment_above, mass_err, moment_err = lognormal_cells(m2, w, cells)
    with np.errstate(divide="ignore"):
        middle, middle_above, middle_err = normal_cell_masses(
            np.log(np.arange(cells + 1) * w) / m2)
    u = 16 * UNIT_ROUNDOFF
    q0, dq0 = np.append(mass, mass_above), np.append(mass_err, u * mass_above)
    p1, dp1 = np.append(middle, middle_above), np.append(middle_err, u * middle_above)
    p2, dp2 = np.append(moment, moment_above), np.append(moment_err, u * moment_above)
    cap = int(math.ceil(span / w)) + len(q0)
    return q0, dq0, p1, dp1, p2, dp2, cap


@cached(maxsize=16)
def shifted_pair_cell_sum_laws(mu: float, t: int) -> tuple[AtomLaw, AtomLaw] | None:
    """Certified lower laws of the shuffled epoch's pair with the other records at ``-C``.

    The pair is ``(1/t) sum_i N(2 mu e_i, I)`` against ``(1/t) sum_i N(mu e_i, I)``
    (:class:`~plda.epochs.shuffled.ShuffledOppositeLowerBound`), post-processed to
    ``T = sum_i J_i``, ``J_i`` the cell of ``V_i = e^(2 mu Y_i - 2 mu^2)``; its laws are
    ``P_T = p_2 * q_0^{*(t-1)}`` and ``Q_T = p_1 * q_0^{*(t-1)}`` with ``q_0, p_1, p_2`` the cell
    masses under ``N(0), N(mu), N(2 mu)``, computed like :func:`cell_sum_laws`
    (``docs/howto/samplers.md``, "How the shuffled bracket is certified").

    Parameters
    ----------
    mu : float
        ``sensitivity / sigma`` of the Gaussian base.
    t : int
        Steps (batches) per epoch.

    Returns
    -------
    tuple of AtomLaw or None
        ``(remove, add)`` laws dominated by the pair's; None where :func:`shifted_pair_plan`
        declines.
    """
    cells = shifted_pair_cells(mu, t)
    if cells is None:
        return None
    q0, dq0, p1, dp1, p2, dp2, cap = cells
    n = fft.good_size(2 * (cap + 2))
    sides = {}
    for sign in (-1, +1):
        def moved(x, dx, sign=sign):
            return np.maximum(x + sign * dx, 0.0)

        others = _power(moved(q0, dq0), t - 1, n, cap, sign)
        sides[sign] = (_product(others, moved(p2, dp2), n, cap, sign),
                       _product(others, moved(p1, dp1), n, cap, sign))
    (p_low, q_low), (p_high, q_high) = sides[-1], sides[+1]
    return _law(p_low, q_high), _law(q_low, p_high)
