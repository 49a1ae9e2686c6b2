"""From a privacy-loss law to a pessimistic and an optimistic :class:`~plda.grid.DiscreteLoss`.

Pessimistic (upper) — *connect the dots* (Doroshenko et al. 2022): the mass of the law in each grid
cell ``[l_i, l_{i+1}]`` is split between the two grid points so that both its ``P``-mass and its
``Q``-mass are kept. The split pair dominates the true pair in the Blackwell sense (the true
hockey-stick curve is convex in ``e^eps`` and the split gives its chord), so every composition of
split pairs bounds the true composition from above. The error is second order in the grid step.

Optimistic (lower) — *merge, then round down*: the outputs whose loss falls in a bin around
``l_i`` are merged into one outcome (a post-processing, so the merged pair is dominated by the
true one), and the merged loss ``log(P(bin)/Q(bin))``, which sits within ``O(h^2)`` of ``l_i``,
is rounded down to the grid (stochastic dominance). Bins are shifted up by the small amount that
keeps every merged loss at or above its grid point, so the rounding costs ``O(h^2)`` rather
than ``O(h)``. Atoms are rounded down directly.

Tails: the pessimistic side moves the lower tail up to the first grid point and charges the upper
tail to ``+inf``; the optimistic side drops the lower tail and rounds the upper tail down. Float
rounding of every computed mass is bounded and added (upper) or subtracted (lower).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from plda.grid import _CHERNOFF_ORDERS, DiscreteLoss
from plda.mechanisms.law import PrivacyLossLaw

_U = 2.0**-53
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
FAR_UPPER_TAIL = 1e-300
#: grid points of the coarse discretization behind that Chernoff bound
_FAR_POINTS = 4096


def _interval_masses(law: PrivacyLossLaw, points: np.ndarray, hypothesis: str):
    """Continuous masses of ``[points[i], points[i+1])`` and their absolute error bounds.

    Differences are taken of the cdf in the lower half and of the sf in the upper half so no
    difference of two numbers near 1 is formed.
    """
    cdf = law._cont_cdf(points, hypothesis)
    sf = law._cont_sf(points, hypothesis)
    use_sf = sf[:-1] < cdf[:-1]
    mass = np.where(use_sf, sf[:-1] - sf[1:], cdf[1:] - cdf[:-1])
    err = _CDF_RTOL * np.where(use_sf, sf[:-1] + sf[1:], cdf[1:] + cdf[:-1])
    return np.maximum(mass, 0.0), err, cdf[0], sf[-1]


def _pair_masses(law, left, right, hypothesis):
    """Continuous masses of ``[left, right)`` (independent cells) by cdf/sf differences."""
    cl, cr = law._cont_cdf(left, hypothesis), law._cont_cdf(right, hypothesis)
    sl, sr = law._cont_sf(left, hypothesis), law._cont_sf(right, hypothesis)
    use_sf = sl < cl
    mass = np.where(use_sf, sl - sr, cr - cl)
    err = _CDF_RTOL * np.where(use_sf, sl + sr, cl + cr)
    return np.maximum(mass, 0.0), err


def _split_upper(
    losses: np.ndarray, p: np.ndarray, q: np.ndarray, err_p, err_q, step: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Connect-the-dots split of mass ``(p, q)`` lying in ``[l_i, l_i + step]`` (``losses = l_i``).

    Keeping both masses: the share at ``l_{i+1}`` is ``(p - e^{l_i} q) / (1 - e^{-step})``.
    Returns the shares at ``l_i`` and ``l_{i+1}`` and the error bound of the upper share.
    """
    denom = -np.expm1(-step)
    scale = np.exp(losses)
    upper = (p - scale * q) / denom
    err = (err_p + scale * err_q + 4 * _U * (p + scale * q)) / denom
    upper = np.clip(upper, 0.0, p)
    return p - upper, upper, err


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


#: Gauss–Legendre rule on [0, 1] for the cell integrals (and a coarser one to estimate its error)
_NODES, _WEIGHTS = np.polynomial.legendre.leggauss(8)
_NODES, _WEIGHTS = (_NODES + 1) / 2, _WEIGHTS / 2
_NODES_C, _WEIGHTS_C = np.polynomial.legendre.leggauss(5)
_NODES_C, _WEIGHTS_C = (_NODES_C + 1) / 2, _WEIGHTS_C / 2


def _cell_integrals(law, left: np.ndarray, width, kernels, nodes, weights):
    """``int_cell f_P(l) k(s) dl`` over cells ``[left, left + width]`` for each kernel ``k`` of the
    relative position ``s`` in the cell; positive integrands, so no cancellation."""
    width = np.broadcast_to(width, left.shape)
    points = left[:, None] + width[:, None] * nodes[None, :]
    density = law._cont_pdf(points, "P") * weights[None, :] * width[:, None]
    return [density @ k(nodes) if callable(k) else density @ k for k in kernels]


def _fine_end(law: PrivacyLossLaw, step: float, lo: int, hi: int) -> int:
    """Last grid index of the finely discretized bulk."""
    _, b = law._cont_tail(FINE_TAIL, "P")
    return int(np.clip(np.ceil(b / step), lo + 1, hi))


def _coarse_tail(law, step, start: int, hi: int, upper: bool):
    """Masses of coarse cells ``[start, hi]`` (width ``_COARSE`` steps) from sf differences
    (upper tail: no cancellation), put at the cell's upper end (pessimistic) or lower end."""
    if hi <= start:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    edges = np.unique(np.append(np.arange(start, hi, _COARSE), hi))
    sf = law._cont_sf(edges * step, "P")
    mass = np.maximum(sf[:-1] - sf[1:], 0.0)
    if upper:
        return edges[1:], mass + _CDF_RTOL * (sf[:-1] + sf[1:])
    return edges[:-1], np.maximum(mass - _CDF_RTOL * (sf[:-1] + sf[1:]), 0.0)


def _continuous_upper(law: PrivacyLossLaw, step: float, lo: int, hi: int):
    """Connect-the-dots masses of the continuous part on grid indices ``lo..hi``.

    The share of cell ``[l_i, l_i + h]`` that goes to ``l_{i+1}`` is
    ``int f_P(l) (1 - e^{-(l - l_i)}) / (1 - e^{-h}) dl``: it keeps both the P- and the Q-mass.
    Integrals are by 8-point Gauss–Legendre; the difference to a 5-point rule (times 10) plus
    rounding is added as their error.
    """
    mid = _fine_end(law, step, lo, hi)
    left = np.arange(lo, mid) * step
    share = lambda s: np.expm1(-step * s) / np.expm1(-step)  # noqa: E731
    whole = lambda s: np.ones_like(s)  # noqa: E731
    mass, up = _cell_integrals(law, left, step, [whole, share], _NODES, _WEIGHTS)
    mass_c, up_c = _cell_integrals(law, left, step, [whole, share], _NODES_C, _WEIGHTS_C)
    err = 10 * (np.abs(mass - mass_c) + np.abs(up - up_c)) + 16 * _U * mass
    # where the density is too rough for quadrature (support ends), cdf differences do better
    edges = np.arange(lo, mid + 1) * step
    p, ep, _, _ = _interval_masses(law, edges, "P")
    q, eq, _, _ = _interval_masses(law, edges, "Q")
    low_cdf, up_cdf, err_cdf = _split_upper(edges[:-1], p, q, ep, eq, step)
    err_cdf = err_cdf + ep
    use_cdf = err_cdf < err
    up = np.where(use_cdf, up_cdf, np.clip(up, 0.0, mass))
    mass = np.where(use_cdf, p, mass)
    err = np.where(use_cdf, err_cdf, err)
    out = np.zeros(hi - lo + 1)
    out[: mid - lo] += mass - up + err
    out[1 : mid - lo + 1] += up + err
    index, tail = _coarse_tail(law, step, mid, hi, upper=True)
    np.add.at(out, index - lo, tail)
    below = law._cont_cdf(np.array([lo * step]), "P")[0]
    above = law._cont_sf(np.array([hi * step]), "P")[0]
    out[0] += below * (1 + _CDF_RTOL)  # lower tail moved up to l_lo
    return out, above * (1 + _CDF_RTOL)  # upper tail goes to +inf


def _merged_bins(law, centres, left, right):
    """P-mass of each bin ``[left, right)`` and its merged loss minus the bin's grid point, both
    rounded for the optimistic side (mass down, merged loss down)."""
    width = right - left
    offset = left - centres
    results = []
    for nodes, weights in ((_NODES, _WEIGHTS), (_NODES_C, _WEIGHTS_C)):
        rel = offset[:, None] + width[:, None] * nodes[None, :]
        dens = law._cont_pdf(centres[:, None] + rel, "P") * weights[None, :] * width[:, None]
        results.append((dens.sum(axis=1), (dens * np.exp(-rel)).sum(axis=1)))
    (p, tilt), (p_c, tilt_c) = results
    ep = 10 * np.abs(p - p_c) + 16 * _U * p
    et = 10 * np.abs(tilt - tilt_c) + 16 * _U * tilt
    # cdf differences where they are more accurate than quadrature (rough density, support ends)
    pc, epc = _pair_masses(law, left, right, "P")
    qc, eqc = _pair_masses(law, left, right, "Q")
    scale = np.exp(centres)  # tilt is Q-mass times e^{l_i}
    use_cdf = epc / np.maximum(pc, 1e-300) + eqc / np.maximum(qc, 1e-300) < ep / np.maximum(
        p, 1e-300
    ) + et / np.maximum(tilt, 1e-300)
    p = np.where(use_cdf, pc, p)
    ep = np.where(use_cdf, epc, ep)
    tilt = np.where(use_cdf, qc * scale, tilt)
    et = np.where(use_cdf, eqc * scale, et)
    with np.errstate(divide="ignore", invalid="ignore"):
        above = -(np.log(tilt + et) - np.log(np.maximum(p - ep, 0.0)))
    above = above - 1e-13 * (1 + np.abs(centres))
    ok = (p > 0) & np.isfinite(above)
    return np.where(ok, np.maximum(p - ep, 0.0), 0.0), np.where(ok, above, 0.0)


def _continuous_lower(law: PrivacyLossLaw, step: float, lo: int, hi: int):
    """Merge-then-round-down masses of the continuous part on grid indices ``lo..hi``.

    Bin ``i`` is ``[l_i - h/2 + s_i, l_{i+1} - h/2 + s_{i+1})``; its merged loss is
    ``l_i - log(E_P[e^{-(L - l_i)} | bin])`` (P and Q masses by Gauss–Legendre, with the error
    estimate subtracted). The shifts ``s`` start at 0 and grow where a merged loss falls below its
    grid point, so that rounding down loses only ``O(h^2)``.
    """
    mid = _fine_end(law, step, lo, hi)
    centres = np.arange(lo, mid) * step
    base_edges = np.concatenate([centres - step / 2, [centres[-1] + step / 2]])
    shift = np.zeros_like(base_edges)
    mass, above = _merged_bins(law, centres, base_edges[:-1], base_edges[1:])
    for _ in range(3):
        need = np.maximum(-above, 0.0)
        if not np.any(need > 0):
            break
        # shifting both ends of a bin up by s raises its merged loss by about s
        grow = 1.5 * np.maximum(np.concatenate([[0.0], need]), np.concatenate([need, [0.0]]))
        new_shift = np.minimum(shift + grow, 0.45 * step)
        moved = new_shift != shift
        redo = np.nonzero(moved[:-1] | moved[1:])[0]
        shift = new_shift
        edges = base_edges + shift
        mass[redo], above[redo] = _merged_bins(law, centres[redo], edges[redo], edges[redo + 1])
    edges = base_edges + shift
    index = np.floor((centres + np.minimum(above, 0.0)) / step + 1e-9).astype(np.int64)
    index = np.where(above >= 0, np.arange(lo, mid), index)
    out = np.zeros(hi - lo + 1)
    np.add.at(out, np.clip(index - lo, 0, None), np.where(index >= lo, mass, 0.0))
    t_index, tail = _coarse_tail(law, step, mid, hi, upper=False)
    # the first coarse cell starts at the last fine bin's upper edge or below; use sf there
    np.add.at(out, t_index - lo, tail)
    gap_mass = (
        law._cont_sf(np.array([edges[-1]]), "P")[0] - law._cont_sf(np.array([mid * step]), "P")[0]
    )
    out[mid - lo - 1] += max(gap_mass, 0.0) * (1 - _CDF_RTOL)
    above_hi = law._cont_sf(np.array([hi * step]), "P")[0]
    out[-1] += above_hi * (1 - _CDF_RTOL)  # upper tail rounded down to the last grid point
    return out


def _assemble(step, parts, infinity_mass, upper):
    """Sum ``(index_array, mass_array)`` parts onto one grid array."""
    lo = min(int(i.min()) for i, _ in parts if len(i))
    hi = max(int(i.max()) for i, _ in parts if len(i))
    out = np.zeros(hi - lo + 1)
    for index, mass in parts:
        if len(index):
            np.add.at(out, index - lo, mass)
    # trim exact zeros at both ends
    nz = np.nonzero(out)[0]
    if len(nz):
        out = out[nz[0] : nz[-1] + 1]
        lo += int(nz[0])
    else:
        out = np.zeros(1)
    return DiscreteLoss(step, lo, out, float(min(infinity_mass, 1.0)), upper)


@lru_cache(maxsize=512)
def far_tail_moments(law: PrivacyLossLaw) -> tuple[np.ndarray, float]:
    """``log E[e^{tL}; L finite]`` at the Chernoff orders, and the mass at ``+inf``, of a coarse
    pessimistic discretization reaching ``FAR_UPPER_TAIL``: any pessimistic grid version is a
    dominating pair, so its moments give a valid Chernoff bound whatever its step."""
    lo, hi = _support(law, FAR_UPPER_TAIL)
    step = max((hi - lo) / _FAR_POINTS, 1e-12)
    upper = _discretize_one_side(law, step, FAR_UPPER_TAIL)
    moments = upper.finite_log_mgf(_CHERNOFF_ORDERS) + 1e-12
    return moments, upper.infinity_mass


def _support(law: PrivacyLossLaw, upper_tail: float) -> tuple[float, float]:
    lo, hi = np.inf, -np.inf
    if law.has_continuous_part:
        lo, _ = law._cont_tail(LOWER_TAIL, "P")
        _, hi = law._cont_tail(upper_tail, "P")
    if len(law.atom_losses):
        lo, hi = min(lo, law.atom_losses.min()), max(hi, law.atom_losses.max())
    if not np.isfinite(lo) or not np.isfinite(hi) or hi <= lo:
        return (lo, lo + 1.0) if np.isfinite(lo) else (0.0, 1.0)
    return float(lo), float(hi)


def _discretize_one_side(law: PrivacyLossLaw, step: float, upper_tail: float) -> DiscreteLoss:
    parts = []
    inf_upper = law.infinity_mass + law.truncated_mass
    if len(law.atom_losses):
        index, at_lo, at_hi = _atoms_upper(law, step)
        parts += [(index, at_lo), (index + 1, at_hi)]
    if law.has_continuous_part:
        a, _ = law._cont_tail(LOWER_TAIL, "P")
        _, b = law._cont_tail(upper_tail, "P")
        lo, hi = int(np.floor(a / step)), int(np.ceil(b / step))
        hi = max(hi, lo + 1)
        cont, above = _continuous_upper(law, step, lo, hi)
        parts.append((np.arange(lo, hi + 1), cont))
        inf_upper += above
    if not parts:
        parts = [(np.array([0]), np.array([0.0]))]
    return _assemble(step, parts, inf_upper, True)


@lru_cache(maxsize=512)
def discretize(law: PrivacyLossLaw, step: float) -> tuple[DiscreteLoss, DiscreteLoss]:
    """``(upper, lower)`` grid versions of ``law`` with grid step ``step``."""
    upper = _discretize_one_side(law, step, UPPER_TAIL)
    moments, far_infinity = far_tail_moments(law)
    object.__setattr__(upper, "log_mgf", moments)
    object.__setattr__(upper, "chernoff_infinity_mass", far_infinity)
    parts = []
    if len(law.atom_losses):
        parts.append(_atoms_lower(law, step))
    if law.has_continuous_part:
        a, _ = law._cont_tail(LOWER_TAIL, "P")
        _, b = law._cont_tail(UPPER_TAIL, "P")
        lo, hi = int(np.floor(a / step)), int(np.ceil(b / step))
        hi = max(hi, lo + 1)
        parts.append((np.arange(lo, hi + 1), _continuous_lower(law, step, lo, hi)))
    if not parts:  # only infinite masses
        parts = [(np.array([0]), np.array([0.0]))]
    return upper, _assemble(step, parts, law.infinity_mass, False)
