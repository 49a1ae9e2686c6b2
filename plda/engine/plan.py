"""The one planner: the :class:`Plan` value, the first step from a coarse :class:`Pilot`, a
PLD's step policy (:class:`PilotSteps`), FFT lengths and the one refinement loop."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from plda._internal.caches import cached
from plda._internal.errors import GridTooLarge
from plda._internal.floats import dot
from plda.discretization.discretize import UPPER_TAIL, discretize, exact_index_step, loss_support
from plda.grid.moments import ladder_chernoff

#: largest FFT length used (2^22 doubles = 32 MiB per array)
MAX_GRID = 1 << 22
#: finest grid step: narrower losses (``ApproximateDP(1e-185)``) sit within one cell, certified
#: (rounded up, and down) though coarse; below it, Chernoff orders would underflow
MIN_STEP = 2.0**-36
#: grid refinements tried when the epsilon gap misses the accuracy target
REFINEMENTS = 6


@dataclass(frozen=True)
class Plan:
    """How to compute one composition.

    Parameters
    ----------
    step
        Grid step of the losses.
    length
        Smallest FFT length to use (0: the shortest that holds the window); a history's planner
        passes its horizon's, so that the factors' spectra stay put while the history grows.
    tail
        Composed mass allowed outside the FFT window on each side.
    tilt
        Exponential tilt of the composition (0: none; see :mod:`plda.engine.tilt`).
    law_tail
        Continuous mass each law leaves out above its grid, to ``+inf`` (see ``tilt.law_tail``).
    """

    step: float
    length: int = 0
    tail: float = 1e-20
    tilt: float = 0.0
    law_tail: float = UPPER_TAIL


@dataclass(frozen=True)
class Pilot:
    """What a coarse pilot discretization tells about a composition.

    Attributes
    ----------
    step
        A first grid step, deliberately coarse (where the grid is used without refining).
    window_width
        The composed window's width, in loss units.
    atom_unit
        The atoms' common spacing, or None if they share none usable.
    start
        The first step of a refinement (at least ``step``), or None.
    """

    step: float
    window_width: float
    atom_unit: float | None = None
    start: float | None = None

    def grid_points(self, step: float) -> float:
        """Estimated FFT length of the composition on a grid.

        Parameters
        ----------
        step
            The grid step.

        Returns
        -------
        float
            The window width over ``step``.
        """
        return self.window_width / step


def pilot(laws: dict[str, list], accuracy: float) -> Pilot:
    """A first grid step from a coarse pilot discretization of a composition.

    The composed window (Chernoff tails) sets the size of the FFT; the discretization error of
    the connect-the-dots (upper) and pairing (lower) schemes is second order, about ``k h^2``
    per factor in loss units, so ``h ~ sqrt(accuracy * eps_scale / k_total)``, capped by the
    grid size. The estimate starts 4x coarse: refinement then predicts the step from the
    measured gap.

    Parameters
    ----------
    laws
        ``{direction: [(law, count), ...]}``, the leading direction first.
    accuracy
        Target relative gap of ``epsilon(delta)``.

    Returns
    -------
    Pilot
        The first step, the window width, the atoms' unit and the refinement's start.
    """
    direction_widths = []
    spreads = []
    lead_pilots = None
    for factors in laws.values():
        # each law on its own pilot grid: the window is estimated from moments in loss units,
        # so no common grid (and no rediscretization when a finer law joins) is needed
        pilots = [(discretize(law, pilot_step(law), lower=False)[0], k) for law, k in factors]
        lead_pilots = pilots if lead_pilots is None else lead_pilots
        # the loss interval holding all but about 1e-20 of the composed mass on each side (an
        # estimate, not a certified window): Chernoff cuts at orders in [0.5, 32] / spread, cut
        # by the exact support (the factors sit on different grids)
        lo_loss, hi_loss, *_ = ladder_chernoff(
            pilots, 1e-20, (0.5, 32.0), max(f.step for f, _ in pilots)
        )
        hi = sum(k * (f.offset + len(f.probs) - 1) * f.step for f, k in pilots)
        hi = hi if not math.isfinite(hi_loss) else min(hi, hi_loss)
        lo = sum(k * f.offset * f.step for f, k in pilots)
        lo = lo if not math.isfinite(lo_loss) else max(lo, lo_loss)
        # at least 2^-31 of its reach: grid indices (loss / step <= 2^52) stay exact
        direction_widths.append(max(hi - min(lo, hi), 2.0**-31 * max(abs(lo), abs(hi))))
        spreads.append(max(p.step for p, _ in pilots))
    width = max(direction_widths) + 10 * max(spreads)
    lead = next(iter(laws.values()))
    # error model: each factor contributes ~ k * c * h^2 * (1/w_f) of shift in loss, w_f being
    # the factor's own loss scale; we want the total below accuracy * width / 16
    total = sum(k / loss_scale(law) for law, k in lead)
    # (the floor keeps 0 out; at 1e-12 a law 1e24 wide got a step 1e3 too fine, minutes a query)
    step = math.sqrt(accuracy * max(width, 1e-3) / (16 * max(total, 1e-300)))
    step *= 4  # start coarse: refinement predicts the final step from the measured gap
    # that model is far too fine for laws much narrower than their composition (DP-SGD steps
    # with a small sample rate: 1/width of one step is huge); where a refinement follows, the
    # gap model of the grid versions themselves (second_order_step) may start coarser
    start = max(step, second_order_step(lead_pilots, accuracy))
    # put the atoms of atomic mechanisms (Laplace, discrete ones, (eps, delta)-DP) on grid
    # points when they share a unit not much finer than the step: the optimistic side then need
    # not round them down
    atoms = [law.atom_losses for law, _ in lead if len(law.atom_losses)]
    unit = common_unit(np.concatenate(atoms), smallest=width / MAX_GRID) if atoms else None

    def fitted(h: float) -> float:
        h = min(h, width / 2000)  # at least ~2000 points across the composed window
        h = max(h, width / (MAX_GRID / 2), MIN_STEP)  # the FFT fits the grid cap
        return float(snap(h, unit) if unit else h)

    return Pilot(step=fitted(step), window_width=width, atom_unit=unit, start=fitted(start))


#: the quantile (in standard deviations of the composed loss) at which the gap model reads epsilon
_GAP_QUANTILE = 4.5


def second_order_step(pilots: list, accuracy: float) -> float:
    """The step at which the certified gap is expected to meet the accuracy.

    Connect-the-dots moves each cell's mass to its ends keeping its P- and Q-mass, so a step's
    mean loss rises by about ``E[(L - l_j)(l_{j+1} - L)] / 2 ~ h^2 / 12`` and its variance by
    twice that, whatever the law's own width; the optimistic version errs about twice as much
    the other way (measured on DP-SGD steps, B1-B3 and S1). For a composition of ``K`` steps
    with mean ``m`` and spread ``s``, epsilon near ``m + z s`` then moves by about
    ``K h^2 (1 + z / s) / 12`` per version, so the relative gap is about
    ``K h^2 (1 + z / s) / (4 (m + z s))``; measured gaps (B3 at 1e-3 and 6e-3) are 1.5-2.4 times
    that, so the model takes ``g(h) ~ K h^2 (1 + z / s) / (1.6 (m + z s))``. It is only a start:
    the refinement measures the gap and goes on from there.

    Parameters
    ----------
    pilots
        ``[(law, count), ...]``, each law on its own pilot grid.
    accuracy
        Target relative gap of ``epsilon(delta)``.

    Returns
    -------
    float
        The step, or 0 where the model does not apply (no spread, no steps).
    """
    count = sum(k for _, k in pilots)
    mean = sum(k * dot(law.probs, law.losses) / max(float(law.probs.sum()), 1e-300)
               for law, k in pilots)
    variance = 0.0
    for law, k in pilots:
        mass = max(float(law.probs.sum()), 1e-300)
        centre = dot(law.probs, law.losses) / mass
        variance += k * dot(law.probs, (law.losses - centre) ** 2) / mass
    spread = math.sqrt(variance)
    epsilon = mean + _GAP_QUANTILE * spread
    if not (count > 0 and spread > 0 and epsilon > 0 and math.isfinite(epsilon)):
        return 0.0
    return math.sqrt(accuracy * 1.6 * epsilon / (count * (1 + _GAP_QUANTILE / spread)))


def snap(step: float, unit: float | None, finer: float = 4.0) -> float:
    """Shrink a step to a divisor of the atoms' common unit, so that atoms sit on grid points.

    Parameters
    ----------
    step
        The grid step.
    unit
        The atoms' common spacing, or None.
    finer
        The most the grid may be refined by snapping.

    Returns
    -------
    float
        ``unit / ceil(unit / step)``, or ``step`` where that is over ``finer`` times finer.
    """
    if not unit or unit < step / finer:
        return step
    return unit / math.ceil(unit / step)


@dataclass
class StepPredictor:
    """The next grid step of a one-shot composition from the measured gap.

    Both discretizations are second order where a law has a density (the gap falls like
    ``h^2``), but an atom off the grid costs up to one step of loss (``h``): Laplace's atoms at
    ``+-eps0`` on a grid that does not divide ``eps0``. The first prediction assumes first
    order when there are atoms (``unit`` known) off the grid, second order otherwise (or
    ``order`` when given); later ones measure the order from the last two grids (clamped to
    ``[1, 4]``). It aims at 0.8 of the accuracy, refines by 2x to 20x per round, and snaps to
    the atoms' unit when that costs at most a 2x finer grid (atoms on grid points are exact).
    A wrong prediction costs one more round, never a bound: every grid is certified. Called
    as ``predictor(step, gap)``, it returns the next step.

    Attributes
    ----------
    accuracy
        Target relative gap of ``epsilon(delta)``.
    unit
        The atoms' common spacing, or None.
    order
        The order at which the gap falls, if known (else inferred).
    previous
        The last ``(step, gap)`` seen (learned from).
    """

    accuracy: float
    unit: float | None = None
    order: float | None = None
    previous: tuple[float, float] | None = None

    def __call__(self, step: float, gap: float) -> float:
        if self.previous is not None and 0 < gap < self.previous[1] and step < self.previous[0]:
            measured = math.log(self.previous[1] / gap) / math.log(self.previous[0] / step)
            order = min(4.0, max(1.0, measured))
        elif self.order is not None:
            order = self.order
        else:
            order = 1.0 if self.unit and not _divides(step, self.unit) else 2.0
        self.previous = (step, gap)
        factor = 0.8 * (self.accuracy / gap) ** (1 / order) if np.isfinite(gap) else 0.25
        finer = step * min(0.5, max(0.05 if order < 1.5 else 0.1, factor))
        return snap(finer, self.unit, finer=2.0 if self.order is None else 4.0)


def _divides(step: float, unit: float) -> bool:
    """Whether ``unit`` is an integer multiple of ``step`` (atoms on grid points)."""
    ratio = unit / step
    return abs(ratio - round(ratio)) <= 1e-9 * ratio


@dataclass(frozen=True)
class PilotSteps:
    """The step policy of a one-shot composition: a pilot's steps, or a fixed one.

    The pilot's first step is refined by predicting the next step from the measured gap
    (:class:`~plda.engine.plan.StepPredictor`) and coarsened when the window outgrows the grid
    cap.

    Parameters
    ----------
    accuracy
        Target relative gap of ``epsilon(delta)``.
    pilot
        The composition's pilot (:func:`~plda.engine.plan.pilot`); None with a fixed step.
    fixed
        The step the user fixed (never refined nor coarsened), or None.
    predictor
        The refinement's step predictor (one per query: it learns from the grids it saw).
    """

    accuracy: float
    pilot: Pilot | None = None
    fixed: float | None = None
    predictor: StepPredictor | None = None
    #: trial grids are judged by the gap of the maximum over every direction
    margin = None

    def current(self, plan: Plan | None, refined: bool = False) -> float:
        """The current grid step.

        Parameters
        ----------
        plan
            The latest plan, or None (the first step then).
        refined
            Whether a refinement follows: it starts from the pilot's ``start``; otherwise the
            step is never coarser than the pilot's ``step`` (delta and the conversions read it).

        Returns
        -------
        float
            The fixed step if there is one, else the step of ``plan`` or the first step.
        """
        if self.fixed is not None:
            first = self.fixed
        else:
            found = self.pilot
            first = found.start if refined and found.start is not None else found.step
        return first if plan is None else plan.step if refined else min(plan.step, first)

    def coarser(self, step: float, exc: GridTooLarge) -> float:
        """A step whose composition fits under the grid cap.

        Parameters
        ----------
        step
            The step that did not fit.
        exc
            What its composition raised (the points it needed and the cap).

        Returns
        -------
        float
            A coarser step, by the ratio of the two and a margin.

        Raises
        ------
        ValueError
            With a fixed step (the user's step is never changed)."""
        if self.fixed is not None:
            raise ValueError(
                f"step={self.fixed!r} is too fine for this composition: it needs "
                f"{exc.points} grid points, more than the cap {exc.cap}"
            ) from None
        # the window is wider than the pilot predicted (very long compositions, tiny sample
        # rates): coarsen until it fits; bounds stay certified, only wider, and epsilon_bounds
        # warns if the accuracy is missed
        return step * 1.25 * exc.points / exc.cap

    def next_step(self, step: float, gap: float) -> float | None:
        """The predicted finer step.

        Parameters
        ----------
        step
            The step whose gap was measured.
        gap
            Its relative gap.

        Returns
        -------
        float or None
            The prediction, or None past the grid cap or the finest step.
        """
        finer = self.predictor(step, gap)
        if self.pilot.grid_points(finer) > MAX_GRID or finer < MIN_STEP:
            return None
        return finer


def ladder_length(width: int) -> int:
    """Smallest FFT length at least ``width`` of the form ``2^a``, ``5 * 2^a`` or ``3 * 2^a``.

    Neighbours on this ladder differ by at most 3/2 and all are fast for pyFFTW and scipy.fft.
    Lengths on it change rarely as a composition grows, so a history's spectra and their powers
    are reused across many queries, and waste at most a quarter of the transform on padding.

    Parameters
    ----------
    width
        The window's width in grid points.

    Returns
    -------
    int
        The length, at least 16.
    """
    width = max(int(width), 16)
    power = 1 << (width - 1).bit_length()  # smallest power of two >= width
    for candidate in (power * 5 // 8, power * 3 // 4):
        if candidate >= width:
            return candidate
    return power


def refine(step: float, gap: float, gap_at: Callable[[float], float], accuracy: float,
           next_step: Callable[[float, float], float | None],
           rounds: int = REFINEMENTS) -> tuple[float, float]:
    """The one refinement loop: finer steps while the gap misses the accuracy.

    Stops when the gap meets the accuracy, when it stops shrinking (``> 0.7`` of the previous
    one: the floor; a near miss, within 10x the accuracy and 1e-2, gets one more round), when
    ``next_step`` returns None (finer than allowed), or when the finer composition does not
    fit (``gap_at`` raises ``MemoryError``: :class:`~plda._internal.errors.GridTooLarge`).

    Parameters
    ----------
    step
        The step the gap was measured on.
    gap
        Its relative gap.
    gap_at
        The gap on another step.
    accuracy
        The target gap.
    next_step
        The policy's next step from ``(step, gap)``, or None.
    rounds
        The most grids tried.

    Returns
    -------
    tuple of float
        The last step tried successfully (the finest) and its gap.
    """
    previous, stalled = math.inf, False
    for _ in range(rounds):
        # past 0.7 of the previous gap: the floor, unless a near miss seen once (with large
        # atoms the gap jumps with the grid's alignment: 2.95e-3, 7.8e-3, then 8.1e-4)
        floor = gap > 0.7 * previous and (stalled or gap > min(10.0 * accuracy, 1e-2))
        if gap <= accuracy or floor:
            break
        stalled = gap > 0.7 * previous
        finer = next_step(step, gap)
        if finer is None:
            break
        try:
            finer_gap = gap_at(finer)
        except MemoryError:
            break
        step, previous, gap = finer, gap, finer_gap
    return step, gap


def common_unit(values: np.ndarray, smallest: float) -> float | None:
    """Largest unit of which every value is an integer multiple, by a Euclid-style float gcd.

    Parameters
    ----------
    values
        The values (atom losses); zeros and non-finite ones are ignored.
    smallest
        The smallest unit accepted.

    Returns
    -------
    float or None
        The unit ``u >= smallest`` (multiples to 1e-9 relative), or None if there is none.
    """
    values = np.unique(np.abs(values[np.isfinite(values) & (values != 0)]))
    if not len(values):
        return None
    unit = float(values[0])
    for v in values[1:]:
        a, b = float(v), unit
        for _ in range(64):  # Euclid on floats, stopping at the tolerance
            if b < smallest * 0.5:
                return None
            r = math.fmod(a, b)
            if r < 1e-9 * v or b - r < 1e-9 * v:
                break
            a, b = b, r
        else:
            return None
        unit = b
    multiples = values / unit
    if unit < smallest or not np.allclose(multiples, np.round(multiples), rtol=0, atol=1e-6):
        return None
    return unit


@cached(maxsize=512)  # laws are cached per mechanism; their tails cost tens of microseconds
def loss_scale(law) -> float:
    """A width of one factor's loss law (inter-decile range, or atom spacing)."""
    lo, hi = law.tail_points(0.1, "P") if law.has_continuous_part else (np.inf, -np.inf)
    if len(law.atom_losses):
        lo, hi = min(lo, law.atom_losses.min()), max(hi, law.atom_losses.max())
    width = hi - lo
    return float(width) if np.isfinite(width) and width > 0 else 1.0


@cached(maxsize=512)
def pilot_step(law) -> float:
    """The step of a law's own pilot discretization (about 64 cells per loss scale)."""
    lo, hi = loss_support(law, UPPER_TAIL)
    return max(loss_scale(law) / 64, (hi - lo) / 4096, exact_index_step(lo, hi), MIN_STEP)
