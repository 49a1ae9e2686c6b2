"""From a privacy-loss law to its pessimistic and optimistic laws on the grid, cached per law
and step (:data:`discretize`): atoms split or rounded down here, the continuous part by cells.
Why each version bounds the true law: docs/concepts/discretization.md.
"""

from __future__ import annotations

from functools import partial

import numpy as np

from plda._internal.caches import ByteBoundedCache, cached, register
from plda._internal.chernoff import CHERNOFF_ORDERS
from plda._internal.errors import GridTooLarge
from plda._internal.floats import UNIT_ROUNDOFF
from plda.discretization.atoms import atom_cells, atoms_in_cells
from plda.discretization.cells import (
    COARSE,
    FINE_TAIL,
    NEGLIGIBLE_CDF_ERROR,
    cell_moments,
    coarse_cells,
    continuous_upper,
)
from plda.discretization.optimistic import continuous_lower
from plda.grid.discrete import DiscreteLoss
from plda.mechanisms.law import PrivacyLossLaw

__all__ = [
    "FAR_UPPER_TAIL",
    "FINE_TAIL",
    "LOWER_TAIL",
    "UPPER_TAIL",
    "discretize",
    "far_tail_moments",
    "exact_index_step",
    "loss_support",
]

_SMALLEST_NORMAL = float(np.finfo(float).tiny)
#: continuous mass left out at the low end (moved up or dropped: harmless either way)
LOWER_TAIL = 1e-24
#: continuous mass left out at the high end, charged to +inf on the pessimistic side
UPPER_TAIL = 1e-30
#: the far tail kept for the Chernoff bound that serves deltas below the FFT's resolution
FAR_UPPER_TAIL = 1e-320  # k * this stays below 1e-300 for k up to 1e10
#: grid points of the coarse discretization behind that Chernoff bound
_FAR_POINTS = 2048
#: at most this many grid points per law (16 times the composer's cap, 512 MB an array): a law
#: that needs more cannot be composed anyway
MAX_LAW_POINTS = 1 << 26


def _atoms_upper(law: PrivacyLossLaw, step: float):
    losses, probs = law.atom_losses, law.atom_probs
    keep = probs > 0
    losses, probs = losses[keep], probs[keep]
    index = np.floor(losses / step).astype(np.int64)
    base = index * step
    # weight at l_{i+1} keeping P- and Q-mass: (1 - e^{-(l - l_i)}) / (1 - e^{-h})
    w = np.clip(np.expm1(-(losses - base)) / np.expm1(-step), 0.0, 1.0)
    err = 8 * UNIT_ROUNDOFF * probs
    return index, probs * (1 - w) + err, probs * w + err


def _atoms_lower(law: PrivacyLossLaw, step: float, keep):
    """The atoms ``keep`` rounded down to their cell's grid point (or put on the grid point
    they are taken to lie on, :func:`~plda.discretization.atoms.atom_cells`)."""
    index, _ = atom_cells(law.atom_losses[keep], step)
    return index, law.atom_probs[keep] * (1 - 8 * UNIT_ROUNDOFF)


def _snap_excess(law: PrivacyLossLaw, step: float, keep) -> float:
    """How far :func:`_atoms_lower` may have moved an atom *up* (the snap onto a grid point
    within 1e-9 steps above it): the optimistic version charges it as a loss error."""
    losses = law.atom_losses[keep]
    if not len(losses):
        return 0.0
    index, _ = _atoms_lower(law, step, keep)
    return max(0.0, float(np.max(index * step - losses)))


def _assemble(step, parts, infinity_mass, upper, extra_loss_error=0.0, **chernoff):
    """Sum ``(index_array, mass_array)`` parts onto one grid array (``chernoff``: what gives
    the upper version's Chernoff moments, ``far_tail``).

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
    # arithmetic traps to microcode): an upper version moves them up to its top point where
    # that stays normal, else to +inf (twice their sum, so the rounding of that sum is
    # covered; at +inf, ApproximateDP(709, 1e-300) had 1.00000002e-300 there and no finite
    # epsilon at delta 1e-300), a lower version drops them (less mass only lowers delta);
    # either way at most n * 2.2e-308 of mass moves
    tiny = (out > 0) & (out < _SMALLEST_NORMAL)
    if tiny.any():
        moved = 2.0 * float(out[tiny].sum())
        out[tiny] = 0.0
        if upper and out[-1] + moved >= _SMALLEST_NORMAL:
            out[-1] = np.nextafter(out[-1] + moved, np.inf)  # (the sum rounded up)
        elif upper:
            infinity_mass = infinity_mass + moved
    # trim exact zeros at both ends
    nz = np.nonzero(out)[0]
    if len(nz):
        out = out[nz[0] : nz[-1] + 1]
        lo += int(nz[0])
    else:
        out = np.zeros(1)
    largest = step * max(abs(lo), abs(lo + len(out)))
    return DiscreteLoss(
        step=step,
        offset=lo,
        probs=out,
        infinity_mass=float(min(infinity_mass, 1.0)),
        upper=upper,
        loss_error=8 * UNIT_ROUNDOFF * largest + extra_loss_error,
        **chernoff,
    )


@cached(maxsize=4096)  # 48 floats each; a noise schedule has a law per step
def far_tail_moments(law: PrivacyLossLaw) -> tuple[np.ndarray, float]:
    """``log E[e^{tL}; L finite]`` at the Chernoff orders, and the mass at ``+inf``, of a coarse
    pessimistic discretization reaching ``FAR_UPPER_TAIL``: any pessimistic grid version is a
    dominating pair, so its moments give a valid Chernoff bound whatever its step."""
    lo, hi = loss_support(law, FAR_UPPER_TAIL)
    step = max((hi - lo) / _FAR_POINTS, exact_index_step(lo, hi), 1e-12)
    upper = _discretize(law, step, False, FAR_UPPER_TAIL, far_tail=False)[0]
    # rounding of the moments: 1e-12 for the log-sum-exp, and t * |l| * (a few u) for the grid
    # losses, which carry a relative error of a few ulps (atoms computed in floats, i * step)
    largest = step * max(abs(upper.offset), abs(upper.offset + len(upper.probs)))
    moments = (
        upper.finite_log_mgf(CHERNOFF_ORDERS)
        + 1e-12
        + CHERNOFF_ORDERS * 16 * UNIT_ROUNDOFF * largest
    )
    infinity = upper.infinity_mass
    if law.has_continuous_part and not np.isfinite(law.continuous_support[1]):
        # the tail cut at FAR_UPPER_TAIL has a tiny (often subnormal or underflowed) computed mass:
        # charge it at twice its nominal bound, or Chernoff bounds below ~1e-320 under-report
        # (Gaussian mu = 1.87 at eps = 73.5: 5e-324 was reported against an exact 2e-322)
        infinity = max(infinity, 2 * FAR_UPPER_TAIL)
    return moments, infinity


def loss_support(law: PrivacyLossLaw, upper_tail: float) -> tuple[float, float]:
    """The loss range the discretizer keeps: the continuous part's tail points and every atom.

    Parameters
    ----------
    law
        The privacy-loss law.
    upper_tail
        The continuous mass left out above the range.

    Returns
    -------
    tuple of float
        ``(lo, hi)``, with ``hi > lo`` (``(0, 1)`` for a law with nothing finite).
    """
    lo, hi = np.inf, -np.inf
    if law.has_continuous_part:
        lo, _ = law.tail_points(LOWER_TAIL, "P")
        _, hi = law.tail_points(upper_tail, "P")
    if len(law.atom_losses):
        lo, hi = min(lo, law.atom_losses.min()), max(hi, law.atom_losses.max())
    if not np.isfinite(lo) or not np.isfinite(hi) or hi <= lo:
        return (lo, lo + 1.0) if np.isfinite(lo) else (0.0, 1.0)
    return float(lo), float(hi)


def exact_index_step(lo: float, hi: float) -> float:
    """The finest grid step that keeps every loss in ``[lo, hi]`` at a grid index within 2^40.

    A law of one finite loss far from 0 (``ApproximateDP`` past epsilon 708) has width 0, so a
    step set by its width alone put that loss at an index past int64 (an upper bound of 0).

    Parameters
    ----------
    lo, hi
        The loss range (:func:`loss_support`).

    Returns
    -------
    float
        ``2^-40 max(-lo, hi)``.
    """
    return max(-lo, hi) * 2.0**-40


def _discretize(
    law: PrivacyLossLaw,
    step: float,
    lower: bool = True,
    upper_tail: float = UPPER_TAIL,
    fine_tail: float = FINE_TAIL,
    far_tail: bool = True,
) -> tuple[DiscreteLoss, DiscreteLoss | None]:
    """``(upper, lower)`` grid versions of ``law`` with grid step ``step``; the lower one only
    if ``lower`` (else None). The continuous part is kept up to ``upper_tail`` of its mass, in
    cells of one step up to ``fine_tail`` (coarse beyond); the upper version carries the
    Chernoff moments of the far tail if ``far_tail`` (the coarse discretization that computes
    them, :func:`far_tail_moments`, asks without)."""
    bracket = getattr(law, "bracket", None)
    if bracket is not None:  # known through a dominating and a dominated law (RandomAllocation)
        upper = _discretize(bracket[0], step, False, upper_tail, fine_tail, far_tail)[0]
        return upper, (_discretize(bracket[1], step, True, upper_tail, fine_tail)[1]
                       if lower else None)
    upper_parts, lower_parts = [], []
    loose = law.atom_probs > 0  # the atoms the optimistic version rounds down alone
    if len(law.atom_losses):
        index, at_lo, at_hi = _atoms_upper(law, step)
        upper_parts += [(index, at_lo), (index + 1, at_hi)]
    inf_upper = law.infinity_mass + law.truncated_mass
    if law.has_continuous_part:
        a, _ = law.tail_points(LOWER_TAIL, "P")
        _, b = law.tail_points(upper_tail, "P")
        points = (b - a) / step
        if not (np.isfinite(a / step) and np.isfinite(b / step) and points < MAX_LAW_POINTS):
            # before any array is made (a Gaussian composed 1000 times at step 1e-7 asked
            # numpy for 34.6 GiB): the planner coarsens, a user's fixed step is refused
            raise GridTooLarge(int(points) if points < 2**62 else 2**62, MAX_LAW_POINTS)
        lo, hi = int(np.floor(a / step)), int(np.ceil(b / step))
        hi = max(hi, lo + 1)
        # the bulk, in cells of one step; beyond the points with FINE_TAIL of the mass beyond
        # them, coarse cells (cells.coarse_cells): a first-order error on a mass so small that
        # it changes delta by less than 1e-12 of this mass times the step count
        fine_lo, fine_hi = law.tail_points(FINE_TAIL, "P")
        if fine_tail < FINE_TAIL:
            _, fine_hi = law.tail_points(fine_tail, "P")
        mid = int(np.clip(np.ceil(fine_hi / step), lo + 1, hi))
        first = int(np.clip(np.floor(fine_lo / step), lo, mid - 1))
        if first - lo < 2 * COARSE:  # too few cells below to be worth coarse ones
            first = lo
        # the shortcut of cdf moments only on the default tails: the tilted queries' laws, kept
        # to deeper tails in fine cells, weigh those tail cells by up to e^{t l}
        default = upper_tail == UPPER_TAIL and fine_tail == FINE_TAIL
        moments = cell_moments(law, step, first, mid, NEGLIGIBLE_CDF_ERROR if default else 0.0)
        cont, above = continuous_upper(law, step, lo, hi, moments, first)
        grid = np.arange(lo, hi + 1)
        coarse_upper, coarse_lower = coarse_cells(law, step, lo, first, mid, hi, lower)
        upper_parts += [(grid, cont), *coarse_upper]
        if lower:
            atoms = None
            if loose.any():
                atoms, loose = atoms_in_cells(law, step, first, mid)
            lower_parts += [
                (grid, continuous_lower(law, step, lo, hi, moments, atoms, first)),
                *coarse_lower,
            ]
        inf_upper += above
    if not upper_parts:  # only infinite masses
        upper_parts = lower_parts = [(np.array([0]), np.array([0.0]))]
    chernoff = {}
    if far_tail:
        # computed when a query first needs them (plda.grid.chernoff)
        chernoff = dict(far_tail=partial(far_tail_moments, law))
    upper = _assemble(step, upper_parts, inf_upper, True, **chernoff)
    if not lower:
        return upper, None
    if loose.any():
        lower_parts.append(_atoms_lower(law, step, loose))
    snapped = _snap_excess(law, step, loose) if loose.any() else 0.0
    return upper, _assemble(step, lower_parts, law.infinity_mass, False, snapped)


#: cached (the accountant and the engine ask for the same laws on the same grids again and again);
#: ``discretize(law, step)`` gives ``(upper, lower)``, ``discretize(law, step, lower=False)``
#: ``(upper, None)``
discretize = ByteBoundedCache(_discretize, max_bytes=1 << 30)
register("plda.discretization.discretize.discretize", discretize.cache_clear)
