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


def _continuous_upper(law: PrivacyLossLaw, step: float, lo: int, hi: int):
    points = np.arange(lo, hi + 1) * step
    p, ep, below_p, above_p = _interval_masses(law, points, "P")
    q, eq, _, _ = _interval_masses(law, points, "Q")
    at_lo, at_hi, err = _split_upper(points[:-1], p, q, ep, eq, step)
    out = np.zeros(hi - lo + 1)
    out[:-1] += at_lo + err
    out[1:] += at_hi + err
    out[0] += below_p * (1 + _CDF_RTOL)  # lower tail moved up to l_lo
    return out, above_p * (1 + _CDF_RTOL)  # upper tail goes to +inf


def _continuous_lower(law: PrivacyLossLaw, step: float, lo: int, hi: int):
    centres = np.arange(lo, hi + 1) * step
    shift = np.zeros(len(centres) + 1)
    for _ in range(3):
        bounds = np.concatenate([centres - step / 2, [centres[-1] + step / 2]]) + shift
        p, ep, _, above = _interval_masses(law, bounds, "P")
        q, eq, _, _ = _interval_masses(law, bounds, "Q")
        with np.errstate(divide="ignore", invalid="ignore"):
            merged = np.log(p) - np.log(q)
            # the merged loss is known to within the relative errors of p and q
            slack = (ep / p + eq / q) * 2 + 1e-12 * (1 + np.abs(centres))
        deficit = np.where(p > 0, centres + slack - merged, 0.0)
        deficit = np.nan_to_num(deficit, nan=0.0, posinf=0.0, neginf=0.0)
        if np.all(deficit <= 0):
            break
        need = np.maximum(deficit, 0.0)
        # shifting both ends of a bin up by s raises its merged loss by about s
        grow = 1.5 * np.maximum(np.concatenate([[0.0], need]), np.concatenate([need, [0.0]]))
        shift = np.minimum(shift + grow, 0.45 * step)
    valid = (p > 0) & (q > 0) & np.isfinite(merged)
    target = np.floor((merged - slack) / step + 1e-12)
    index = np.where(valid, np.minimum(target, np.arange(lo, hi + 1)), lo).astype(np.int64)
    mass = np.where(valid, np.maximum(p - ep, 0.0), 0.0)
    # q == 0 with p > 0 cannot happen for a continuous part of a valid pair; drop it if it does
    out = np.zeros(hi - lo + 1)
    np.add.at(out, index - lo, mass)
    out[-1] += above * (1 - _CDF_RTOL)  # upper tail rounded down to the last grid point
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
