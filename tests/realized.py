"""Test-side reference: two-sided bounds on ``delta(eps)`` of realized output pairs, composed.

Independent of plda's discretization and composition (only numpy / scipy.special / scipy.fft):
the battery (``test_combinations.py``) compares plda's certified bounds with the values this
module computes for pairs realized by actual datasets (``realized_pairs.py``).

**The pairs.** A :class:`Pair` ``(P, Q)`` holds two finite mixtures of shifted noise on
``R^d`` (``d = 1`` for per-step samplers, ``d`` = steps per epoch for epoch samplers):
``P = sum_i a_i N(. - s_i)`` with ``N`` isotropic Gaussian (standard deviation ``scale``) or a
product of Laplace laws (scale ``scale``), shifts ``s_i`` integer vectors (multiples of the
sensitivity ``C = 1``) and weights exact fractions.

**What is bounded.** ``delta(eps)`` of the composition of ``k`` copies of ``(P, Q)`` and
``T - k`` copies of the reversed pair ``(Q, P)``:
``delta(eps) = E[(1 - e^(eps - sum_t L_t))_+]``, the ``L_t`` independent, each the privacy loss
``log dP/dQ`` under ``P`` (or ``log dQ/dP`` under ``Q``) -- the hockey-stick divergence of the
product pair. The integrand increases with every ``L_t``, and as a function of the likelihood
ratio ``e^(L_t)`` under the second law it is convex (``(prod_t r_t - e^eps)_+``).

**Method.** Partition ``R^d`` into a product grid of boxes (width ``h`` on a window around the
shifts, plus unbounded end cells). Cell masses ``P(c)``, ``Q(c)`` are cdf differences taken on
the side of the tail (no cancellation: relative error ~1e-13 for the widths used).

- *Lower bound*: the pair of cell masses is a post-processing of ``(P, Q)`` (reveal the cell),
  and so is its composition: its ``delta`` is a lower bound. Its losses
  ``log(P(c) / Q(c))`` are rounded *down* onto the loss grid (the integrand increases in
  ``L``); P-mass beyond the grid's top is rounded down to the top, below its bottom dropped.
- *Upper bound*: on a box the loss lies within ``L(centre) +- l`` with ``l = sum_k Lip_k h_k /
  2`` (mean value theorem; for a Gaussian mixture ``d L / d y_k = (E_P[s_k | y] - E_Q[s_k |
  y]) / sigma^2``, so ``Lip_k`` is the spread of the ``k``-th shift coordinates over sigma^2;
  for Laplace ``|d L / d y_k| <= 2 / b`` inside the shifts' range and ``0`` outside it, where
  every component's density has the same slope). Replacing the ratio inside a box by the
  two-point law on the interval's ends with the same ``Q``-mean is a mean-preserving spread,
  which can only raise a convex function of the ratio; so is spreading each atom onto the two
  neighbouring loss-grid points. Both keep a genuine pair that dominates ``(P, Q)`` in both
  orders, so one computation serves both directions. An unbounded Gaussian end cell is spread
  to ratios ``0`` and ``inf`` (its P-mass goes to loss ``+inf``: <1e-16 per step).
- *Composition*: the grid laws (losses ``j s``) are convolved by FFT (``scipy.fft``); the
  round-off is checked against :data:`FFT_SLACK`, which widens both bounds.

The upper bound's error is second order in ``h`` and ``s``; the lower bound's is first order in
``s`` (at most ``T s`` in the loss). :func:`delta_bracket` returns both; the battery uses the
lower one as a certified realized value and the upper one where it needs an upper end.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np
from scipy import fft as sfft
from scipy.special import ndtr

#: P-mass cut from each end of a per-step loss law (rounded down at the top / up at the bottom:
#: the bounds lose at most this much each per step)
TAIL_CUT = 1e-13
#: Gaussian window: the grid reaches this many standard deviations beyond the extreme shifts
#: (each unbounded end cell has mass Phi(-8.5) < 1e-17)
REACH = 8.5
#: widening of every box's loss interval, covering the float error of the centre's loss
LOSS_MARGIN = 1e-9
#: absolute slack on a composed delta for the FFT's round-off (asserted to be ample)
FFT_SLACK = 1e-10

Mixture = tuple[tuple[tuple[int, ...], Fraction], ...]


@dataclass(frozen=True)
class Pair:
    """Two mixtures of shifted noise: ``p`` and ``q`` are ``((shift, weight), ...)`` with integer
    shift vectors (multiples of the sensitivity) and weights summing to 1."""

    noise: str  # "gaussian" or "laplace"
    scale: float  # the Gaussian's standard deviation or the Laplace scale, per coordinate
    p: Mixture
    q: Mixture

    def __post_init__(self):
        if self.noise not in ("gaussian", "laplace"):
            raise ValueError(f"noise must be 'gaussian' or 'laplace', got {self.noise!r}")
        for mix in (self.p, self.q):
            if sum(w for _, w in mix) != 1:
                raise ValueError("mixture weights must sum to 1")

    @property
    def dimension(self) -> int:
        return len(self.p[0][0])

    def reversed(self) -> Pair:
        return Pair(self.noise, self.scale, self.q, self.p)


@dataclass(frozen=True)
class Resolution:
    """Box width (in units of ``scale``) and loss-grid step."""

    box: float
    loss_step: float


COARSE = {1: Resolution(4e-3, 2e-3), 2: Resolution(0.08, 2e-3)}
FINE = {1: Resolution(5e-4, 5e-5), 2: Resolution(0.03, 2e-4)}


def fine_resolution(dimension: int, steps: int) -> Resolution:
    """The fine resolution; in 1-D the loss step grows for long compositions (bounded FFTs),
    in 2-D it is the same for all (one partition of the plane serves every composition)."""
    base = FINE[dimension]
    if dimension > 1:
        return base
    return Resolution(base.box, base.loss_step * max(1.0, steps / 3))


# ------------------------------------------------------------------ one step: cells
def _cdf_diff(noise: str, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``F(hi) - F(lo)`` of the standard noise, evaluated on the side of the tail."""
    if noise == "gaussian":
        right = lo >= 0
        return np.where(right, ndtr(-lo) - ndtr(-hi), ndtr(hi) - ndtr(lo))
    with np.errstate(over="ignore", invalid="ignore"):
        # Laplace(0, 1): sf(z) = e^-z / 2 for z >= 0, cdf(z) = e^z / 2 for z <= 0
        upper = 0.5 * np.exp(-lo) * -np.expm1(lo - hi)
        lower = 0.5 * np.exp(hi) * -np.expm1(lo - hi)
        middle = 1.0 - 0.5 * np.exp(lo) - 0.5 * np.exp(-hi)
    return np.where(lo >= 0, upper, np.where(hi <= 0, lower, middle))


def _log_density(noise: str, z: np.ndarray) -> np.ndarray:
    """Log density of the standard noise up to a constant (it cancels in the loss)."""
    return -0.5 * z * z if noise == "gaussian" else -np.abs(z)


@dataclass(frozen=True)
class _Axis:
    """Cells of one coordinate: edges (with +-inf ends), centres, and the loss half-width each
    cell contributes per unit Lipschitz constant (``inf`` for an unbounded Gaussian cell)."""

    edges: np.ndarray
    centres: np.ndarray
    half_width: np.ndarray


def _axis(pair: Pair, k: int, box: float) -> _Axis:
    values = [s[k] for s, _ in pair.p + pair.q]
    lo, hi = min(values), max(values)
    gaussian = pair.noise == "gaussian"
    reach = REACH * pair.scale if gaussian else 0.0
    h = box * pair.scale
    cells = max(1, math.ceil((hi - lo + 2 * reach) / h))
    inner = np.linspace(lo - reach, hi + reach, cells + 1)
    edges = np.concatenate(([-np.inf], inner, [np.inf]))
    centres = np.concatenate(([inner[0] - pair.scale], 0.5 * (inner[1:] + inner[:-1]),
                              [inner[-1] + pair.scale]))
    half = np.concatenate(([np.inf if gaussian else 0.0], 0.5 * np.diff(inner),
                           [np.inf if gaussian else 0.0]))
    if lo == hi and not gaussian:  # no Laplace kink in this coordinate: the loss is flat in it
        half[:] = 0.0
    return _Axis(edges, centres, half)


def _lipschitz(pair: Pair, k: int) -> float:
    values = [s[k] for s, _ in pair.p + pair.q]
    spread = max(values) - min(values)
    if pair.noise == "gaussian":
        return spread / pair.scale**2
    return 2.0 / pair.scale if spread else 0.0


def _mixture_cells(pair: Pair, mix: Mixture, axes: list[_Axis]):
    """``(masses, densities)`` of a mixture on the product cells (densities at the centres,
    unnormalized by the same constant for both laws)."""
    shape = tuple(len(a.centres) for a in axes)
    masses, dens = np.zeros(shape), np.zeros(shape)
    per_axis: dict = {}
    for shift, weight in mix:
        m_parts, d_parts = [], []
        for k, axis in enumerate(axes):
            key = (k, shift[k])
            if key not in per_axis:
                e = (axis.edges - shift[k]) / pair.scale
                per_axis[key] = (
                    np.maximum(_cdf_diff(pair.noise, e[:-1], e[1:]), 0.0),
                    np.exp(_log_density(pair.noise, (axis.centres - shift[k]) / pair.scale)),
                )
            m_parts.append(per_axis[key][0])
            d_parts.append(per_axis[key][1])
        w = float(weight)
        m_term, d_term = m_parts[0], d_parts[0]
        for m_k, d_k in zip(m_parts[1:], d_parts[1:], strict=True):
            m_term, d_term = np.multiply.outer(m_term, m_k), np.multiply.outer(d_term, d_k)
        masses += w * m_term
        dens += w * d_term
    return masses.ravel(), dens.ravel()


@dataclass(frozen=True)
class StepAtoms:
    """A per-step loss law as atoms: finite losses with their masses under the first law,
    and the mass at loss ``+inf``."""

    losses: np.ndarray
    masses: np.ndarray
    infinity: float


def step_atoms(pair: Pair, box: float) -> dict[tuple[str, str], StepAtoms]:
    """``{(bound, direction): StepAtoms}`` for bound in ("lower", "upper") and direction
    "forward" (``(P, Q)``) or "reversed" (``(Q, P)``), from one partition (module docstring)."""
    axes = [_axis(pair, k, box) for k in range(pair.dimension)]
    p_mass, p_dens = _mixture_cells(pair, pair.p, axes)
    q_mass, q_dens = _mixture_cells(pair, pair.q, axes)
    half = np.zeros(())
    for k, axis in enumerate(axes):  # sum_k Lip_k h_k / 2 on the product cells
        lip = _lipschitz(pair, k)  # 0: the loss does not depend on this coordinate at all
        term = np.zeros(len(axis.half_width)) if lip == 0 else lip * axis.half_width
        half = np.add.outer(half, term)
    half = half.ravel()
    both = (p_mass > 0) & (q_mass > 0)
    with np.errstate(divide="ignore", invalid="ignore"):  # empty cells are masked out below
        centre = np.log(p_dens) - np.log(q_dens)
        cell_loss = np.log(p_mass) - np.log(q_mass)
    out = {
        ("lower", "forward"): StepAtoms(cell_loss[both], p_mass[both], 0.0),
        ("lower", "reversed"): StepAtoms(-cell_loss[both], q_mass[both], 0.0),
    }
    finite = both & np.isfinite(half)
    # unbounded Gaussian cells: ratios spread to 0 and inf (P-mass to +inf forward, Q-mass to
    # +inf reversed); cells where one law has no mass (never, with full-support noise) likewise
    p_inf = float(p_mass[~finite].sum())
    q_inf = float(q_mass[~finite].sum())
    ell = half[finite] + LOSS_MARGIN
    lo, hi = centre[finite] - ell, centre[finite] + ell
    u = hi - lo
    x = np.clip(cell_loss[finite] - lo, 0.0, u)
    p_hi = p_mass[finite] * (np.expm1(-x) / np.expm1(-u))  # P-share of the top atom
    q_hi = q_mass[finite] * (np.expm1(x) / np.expm1(u))  # Q-share of the top atom
    out[("upper", "forward")] = StepAtoms(
        np.concatenate((lo, hi)), np.concatenate((p_mass[finite] - p_hi, p_hi)), p_inf)
    out[("upper", "reversed")] = StepAtoms(
        np.concatenate((-lo, -hi)), np.concatenate((q_mass[finite] - q_hi, q_hi)), q_inf)
    return out


# ------------------------------------------------------------------ loss grid and composition
@dataclass(frozen=True)
class GridLaw:
    """Masses at losses ``(start + j) * step``, plus the mass at ``+inf``."""

    start: int
    masses: np.ndarray
    infinity: float
    step: float


def _cut_range(atoms: StepAtoms, step: float) -> tuple[int, int]:
    """Grid indices holding all but ``TAIL_CUT`` of the P-mass at each end (found on a
    histogram of width-1/16 bins, rounded outward)."""
    width = 1 / 16
    bins = np.floor(atoms.losses / width).astype(np.int64)
    first = int(bins.min())
    cum = np.cumsum(np.bincount(bins - first, weights=atoms.masses))
    i_lo = int(np.searchsorted(cum, TAIL_CUT))
    i_hi = int(np.searchsorted(cum, cum[-1] - TAIL_CUT))
    lo_loss, hi_loss = (first + i_lo) * width, (first + i_hi + 1) * width
    return math.floor(lo_loss / step) - 1, math.ceil(hi_loss / step) + 1


def to_grid(atoms: StepAtoms, bound: str, step: float) -> GridLaw:
    """Put ``atoms`` on the loss grid: spread onto the two neighbouring points (upper) or rounded
    down (lower); beyond the cut range the top is rounded down (lower) or sent to ``+inf``
    (upper), the bottom dropped (lower) or rounded up (upper)."""
    j_lo, j_hi = _cut_range(atoms, step)
    losses, masses = atoms.losses, atoms.masses
    grid = np.zeros(j_hi - j_lo + 1)
    infinity = atoms.infinity
    if bound == "lower":
        j = np.floor(losses / step).astype(np.int64)
        keep = j >= j_lo
        j = np.minimum(j[keep], j_hi)
        grid += np.bincount(j - j_lo, weights=masses[keep], minlength=len(grid))
        return GridLaw(j_lo, grid, 0.0, step)
    j = np.floor(losses / step).astype(np.int64)
    top = j >= j_hi
    infinity += float(masses[top].sum())
    j, losses, masses = np.maximum(j[~top], j_lo), losses[~top], masses[~top]
    x = np.clip(losses - j * step, 0.0, step)
    up = masses * (np.expm1(-x) / np.expm1(-step))  # the Q-mean-preserving split
    grid += np.bincount(j - j_lo, weights=masses - up, minlength=len(grid))
    grid += np.bincount(j + 1 - j_lo, weights=up, minlength=len(grid))[: len(grid)]
    return GridLaw(j_lo, grid, infinity, step)


def compose(parts: list[tuple[GridLaw, int]]) -> GridLaw:
    """The composition of ``count`` copies of each law (same step), by FFT."""
    parts = [(law, n) for law, n in parts if n > 0]
    step = parts[0][0].step
    length = sum(n * (len(law.masses) - 1) for law, n in parts) + 1
    size = sfft.next_fast_len(length, real=True)
    spectrum = None
    for law, n in parts:  # in place: the spectra of long compositions take tens of MB
        term = sfft.rfft(law.masses, size)
        np.power(term, n, out=term)
        if spectrum is None:
            spectrum = term
        else:
            spectrum *= term
            del term
    masses = sfft.irfft(spectrum, size)[:length]
    del spectrum
    noise = -min(0.0, float(masses.min()))
    if noise * length >= FFT_SLACK:  # not an AssertionError: the battery's xfails expect those
        raise RuntimeError(f"FFT round-off {noise:.1e} per entry is too large")
    finite = 1.0
    for law, n in parts:
        finite *= (1.0 - law.infinity) ** n
    start = sum(n * law.start for law, n in parts)
    return GridLaw(start, np.maximum(masses, 0.0), 1.0 - finite, step)


def grid_delta(law: GridLaw, epsilon: np.ndarray) -> np.ndarray:
    """``sum_j m_j (1 - e^(eps - l_j))_+ + m_inf`` at each ``epsilon``. Beyond ``eps + 40`` the
    factor is 1 up to ``e^-40``, which the returned value leaves out (an error below 1e-17)."""
    out = []
    for eps in np.atleast_1d(epsilon):
        i = max(0, math.floor(eps / law.step) - law.start + 1)  # first loss above eps
        k = max(i, math.ceil((eps + 40.0) / law.step) - law.start)
        losses = (law.start + np.arange(i, min(k, len(law.masses)))) * law.step
        near = float((law.masses[i:k] * -np.expm1(eps - losses)).sum())  # (np.dot: BLAS threads)
        out.append(near + float(law.masses[k:].sum()))
    return np.asarray(out) + law.infinity


@dataclass(frozen=True)
class Bracket:
    """Certified ``lower <= delta(eps) <= upper`` of one realized composition."""

    lower: np.ndarray
    upper: np.ndarray


def grid_laws(pair: Pair, resolution: Resolution) -> dict[tuple[str, str], GridLaw]:
    """The four per-step grid laws of a pair, kept for the next compositions of the same pair
    (the atoms of a 2-D partition are large, the grid laws much smaller; fine ones still reach
    tens of MB, so few of them are kept)."""
    coarse = resolution in COARSE.values()
    return (_coarse_laws if coarse else _fine_laws)(pair, resolution)


def _grid_laws(pair: Pair, resolution: Resolution) -> dict[tuple[str, str], GridLaw]:
    atoms = step_atoms(pair, resolution.box)
    return {key: to_grid(a, key[0], resolution.loss_step) for key, a in atoms.items()}


_coarse_laws = lru_cache(maxsize=512)(_grid_laws)
_fine_laws = lru_cache(maxsize=2)(_grid_laws)


def clear_caches() -> None:
    """Forget the kept grid laws (a caller done with a set of pairs frees their memory)."""
    _coarse_laws.cache_clear()
    _fine_laws.cache_clear()


def delta_bracket(pair: Pair, forward: int, reversed_: int, epsilon, resolution: Resolution
                  ) -> Bracket:
    """Bounds on ``delta(eps)`` of ``forward`` runs of ``(P, Q)`` composed with ``reversed_``
    runs of ``(Q, P)`` (runs whose orientation an adaptive query flipped)."""
    eps = np.atleast_1d(np.asarray(epsilon, dtype=float))
    out = {}
    for bound in ("lower", "upper"):
        laws = grid_laws(pair, resolution)
        parts = [(laws[(bound, d)], n) for d, n in (("forward", forward), ("reversed", reversed_))]
        out[bound] = grid_delta(compose(parts), eps)
    slack = FFT_SLACK + (forward + reversed_) * TAIL_CUT
    return Bracket(np.maximum(out["lower"] - slack, 0.0), np.minimum(out["upper"] + slack, 1.0))
