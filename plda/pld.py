"""The privacy-loss distribution of a composition, with certified two-sided bounds."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from plda._internal import validation as check
from plda._internal.caches import cached
from plda._internal.chernoff import CHERNOFF_ORDERS
from plda._internal.errors import GridTooLarge, warn_if_inaccurate
from plda.bounds import Bounds
from plda.conversions import gdp as gdp_conversion
from plda.conversions import renyi as renyi_conversion
from plda.conversions import tradeoff as tradeoff_conversion
from plda.conversions import zcdp as zcdp_conversion
from plda.conversions.composed import ComposedLaws, add_remove_steps
from plda.discretize import UPPER_TAIL, discretize, loss_support
from plda.grid import DiscreteLoss, compose, compose_tilted, window_losses
from plda.mechanisms.base import DIRECTIONS, Mechanism
from plda.mechanisms.gaussian import Gaussian

RELATIONS = ("add_remove", "replace_one")
#: default target for the relative gap (upper - lower) / upper of epsilon(delta)
DEFAULT_ACCURACY = 1e-3
#: largest FFT length used (2^22 doubles = 32 MiB per array)
MAX_GRID = 1 << 22
#: finest grid step: losses narrower than this (e.g. ``ApproximateDP(1e-185)``) sit within one
#: cell, which is certified (the upper version rounds up, the lower one down) though coarse;
#: below it spreads and Chernoff orders would underflow
MIN_STEP = 2.0**-36


@dataclass(frozen=True, eq=False)
class PrivacyLossDistribution:
    """Privacy-loss distribution of a composition of mechanisms, discretized on demand.

    A PLD is an immutable *recipe* — which mechanisms, how many times each, under which
    neighbouring relation — and is discretized and composed by FFT the first time a bound is
    asked for, on a grid chosen for the whole composition. Every answer comes as a certified
    upper bound (the default) and can be asked for with its lower bound (``*_bounds``).

    Parameters
    ----------
    components
        ``((mechanism, count), ...)``.
    relation
        ``"add_remove"`` (default: both directions, the worse is reported) or
        ``"replace_one"`` (see :meth:`Mechanism.under_replace_one`).
    accuracy
        Target relative gap ``(upper - lower) / upper`` of ``epsilon(delta)``; the grid is
        refined until it is met (or the grid cap is reached).
    step
        Fix the grid step instead of choosing it from ``accuracy``.

    Examples
    --------
    >>> import plda
    >>> step = plda.PoissonSampled(plda.Gaussian(sigma=1.1), sample_rate=256 / 60000)
    >>> pld = plda.PrivacyLossDistribution.from_mechanism(step).self_compose(14062)
    >>> lower, upper = pld.epsilon_bounds(1e-5)
    >>> 2.37 < lower <= upper < 2.39
    True
    """

    components: tuple = ()
    relation: str = "add_remove"
    accuracy: float = DEFAULT_ACCURACY
    step: float | None = None
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self):
        if self.relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {self.relation!r}")
        check.positive_float("accuracy", self.accuracy)
        if not self.accuracy < 1:
            raise ValueError(f"accuracy must be in (0, 1), got {self.accuracy!r}")
        if self.step is not None:
            check.positive_float("step", self.step)
        for item in self.components:
            mechanism, count = item
            if not isinstance(mechanism, Mechanism):
                raise TypeError(f"components must hold plda mechanisms, got {mechanism!r}")
            check.count("count", count, minimum=0)
        total = sum(count for _, count in self.components)
        if total > check.MAX_COUNT:
            raise ValueError(
                f"count: the composition holds {total} steps, more than {check.MAX_COUNT:.0e} "
                "(the range plda certifies)"
            )

    # ------------------------------------------------------------ construction
    @classmethod
    def from_mechanism(
        cls,
        mechanism: Mechanism,
        count: int = 1,
        *,
        relation: str = "add_remove",
        accuracy: float = DEFAULT_ACCURACY,
        step: float | None = None,
    ) -> PrivacyLossDistribution:
        """PLD of ``count`` runs of ``mechanism``."""
        if not isinstance(mechanism, Mechanism):
            raise TypeError(
                f"mechanism must be a plda mechanism (e.g. plda.Gaussian), got "
                f"{type(mechanism).__name__}"
            )
        count = check.count("count", count, minimum=1)
        return cls(((mechanism, count),), relation, accuracy, step)

    def compose(self, other: PrivacyLossDistribution) -> PrivacyLossDistribution:
        """PLD of running both compositions (a new PLD; order does not matter)."""
        if not isinstance(other, PrivacyLossDistribution):
            raise TypeError(f"other must be a PrivacyLossDistribution, got {type(other).__name__}")
        if other.relation != self.relation:
            raise ValueError(
                f"cannot compose PLDs of different relations ({self.relation!r} and "
                f"{other.relation!r})"
            )
        step = (
            self.step
            if other.step is None
            else other.step
            if self.step is None
            else min(self.step, other.step)
        )
        return PrivacyLossDistribution(
            _merge(self.components + other.components),
            self.relation,
            min(self.accuracy, other.accuracy),
            step,
        )

    def self_compose(self, count: int) -> PrivacyLossDistribution:
        """PLD of ``count`` independent runs of this composition (FFT power: the cost does not
        grow with ``count`` beyond the grid size)."""
        count = check.count("count", count, minimum=1)
        return replace(
            self, components=tuple((m, k * count) for m, k in self.components), _cache={}
        )

    def with_accuracy(self, accuracy: float) -> PrivacyLossDistribution:
        """The same composition with another accuracy target."""
        return replace(self, accuracy=accuracy, _cache={})

    @property
    def count(self) -> int:
        """Total number of mechanism runs in the composition."""
        return sum(k for _, k in self.components)

    # ------------------------------------------------------------- internals
    @cached_property
    def _factors(self) -> tuple[tuple[Mechanism, int], ...]:
        """Components under add/remove semantics, with plain Gaussians merged exactly
        (``mu^2`` adds up under composition)."""
        factors = []
        gaussian_mu2 = 0.0
        for mechanism, count in _merge(self.components):
            if count == 0:
                continue
            if self.relation == "replace_one":
                mechanism = mechanism.under_replace_one()
            if type(mechanism) is Gaussian:
                gaussian_mu2 += count * mechanism.mu**2
            else:
                factors.append((mechanism, count))
        if gaussian_mu2 > 0:
            factors.append((Gaussian(sigma=1.0 / math.sqrt(gaussian_mu2)), 1))
        return tuple(factors)

    @cached_property
    def _directions(self) -> tuple[str, ...]:
        if all(m.symmetric for m, _ in self._factors):
            return ("remove",)
        return DIRECTIONS

    def _laws(self, direction: str):
        return [(m.privacy_loss(direction), k) for m, k in self._factors]

    def _materialize(self, step: float, tilt: float = 0.0) -> dict:
        """``{direction: (upper, lower)}`` grid laws of the composition at ``step``, composed
        plainly or under an exponential ``tilt`` (cached)."""
        key = ("grid", step, tilt)
        if key not in self._cache:
            out = {}
            for direction in self._directions:
                pairs = [(discretize(law, step), k) for law, k in self._laws(direction)]
                out[direction] = tuple(
                    compose_tilted(side, tilt, max_size=MAX_GRID)
                    if tilt
                    else compose(side, max_size=MAX_GRID)
                    for side in ([(v[i], k) for v, k in pairs] for i in (0, 1))
                )
            self._cache[key] = out
        return self._cache[key]

    def _snap(self, step: float) -> float:
        """Shrink ``step`` to a divisor of the atoms' common unit, so that atoms sit on grid
        points, unless that would make the grid more than 4 times finer."""
        unit = self._cache.get("atom_unit")
        if not unit or unit < step / 4:
            return step
        return unit / math.ceil(unit / step)

    def _initial_step(self) -> float:
        if self.step is not None:
            return self.step
        if "initial_step" not in self._cache:
            self._cache["initial_step"] = _choose_step(self)
        return self._cache["initial_step"]

    def _versions(self, refine_for: np.ndarray | None = None):
        """Grid versions; with ``refine_for`` (deltas), refine until the epsilon gap meets
        ``accuracy`` there."""
        step = self._cache.get("step", self._initial_step())
        for _ in range(16):
            try:
                versions = self._materialize(step)
                break
            except GridTooLarge as exc:
                if self.step is not None:
                    raise ValueError(
                        f"step={self.step!r} is too fine for this composition: it needs "
                        f"{exc.points} grid points, more than the cap {exc.cap}"
                    ) from None
                # the window is wider than the pilot predicted (very long compositions, tiny
                # sample rates): coarsen until it fits; bounds stay certified, only wider, and
                # epsilon_bounds warns if the accuracy is missed
                step = step * 1.25 * exc.points / exc.cap
                self._cache["step"] = step
        else:  # pragma: no cover - each retry shrinks the grid by at least 1.25x
            raise GridTooLarge(0, MAX_GRID)
        if refine_for is None or self.step is not None:
            return versions
        previous_gap = np.inf
        for _ in range(6):
            lower, upper = _epsilon_pair(versions, refine_for)
            gap = float(np.max(_relative_gap(lower, upper), initial=0.0))
            if gap <= self.accuracy or gap > 0.7 * previous_gap:
                break  # met, or no longer improving (floating-point floor reached)
            # both discretizations are second order: the gap scales like step^2
            factor = 0.8 * math.sqrt(self.accuracy / gap) if np.isfinite(gap) else 0.25
            finer = self._snap(step * min(0.5, max(0.1, factor)))
            if _grid_points(self, finer) > MAX_GRID or finer < MIN_STEP:
                break
            try:
                versions = self._materialize(finer)
            except MemoryError:
                break
            step, previous_gap = finer, gap
            self._cache["step"] = step
        return versions

    # ---------------------------------------------------------------- queries
    def epsilon(self, delta):
        """Certified upper bound on ``epsilon(delta)``: smallest ``eps >= 0`` with
        ``delta(eps) <= delta``; ``inf`` when ``delta`` is below the mass at infinite loss."""
        return self.epsilon_bounds(delta).upper

    def epsilon_bounds(self, delta) -> Bounds:
        """``(lower, upper)`` bounds on ``epsilon(delta)`` (vectorized)."""
        d = check.array_in("delta", delta, 0.0, 1.0)
        # refining the grid helps only above the FFT's rounding floor; below it, tilting does
        flat = np.ravel(d)
        versions = self._versions(refine_for=flat[(flat >= 1e-10) | (flat == flat.max())])
        lower, upper = _epsilon_pair(versions, d)
        lower, upper = self._sharpen(
            versions, np.ravel(d), np.ravel(lower), np.ravel(upper), "delta"
        )
        lower, upper = lower.reshape(d.shape), upper.reshape(d.shape)
        warn_if_inaccurate(lower, upper, self.accuracy, query="epsilon_bounds", stacklevel=3)
        return Bounds(_scalar(lower, delta), _scalar(upper, delta))

    def _sharpen(self, versions, targets, lower, upper, kind):
        """Below the FFT's rounding floor (deltas under ~1e-8) recompose under an exponential
        tilt aimed at each target (:func:`plda.grid.compose_tilted`) and keep the tighter of
        the two certified bounds."""
        if kind == "delta":
            small = (targets > 1e-60) & (targets < 1e-8)
            small &= _relative_gap(lower, upper) > self.accuracy
        else:
            small = (upper > 1e-60) & (upper < 1e-8) & (lower < upper * (1 - self.accuracy))
        if not small.any():
            return lower, upper
        step = self._cache.get("step", self._initial_step())
        tilts = self._choose_tilts(versions, targets[small], kind)
        lower, upper = lower.copy(), upper.copy()
        for tilt in np.unique(tilts):
            pick = np.nonzero(small)[0][tilts == tilt]
            # the Chernoff-optimal tilt puts the tilted mass slightly beyond the crossing loss;
            # where the optimistic side's error terms still swamp it there (its bound drops to
            # 0), a smaller tilt resolves it: 1e3 steps at q=0.01, sigma=2.29, delta=1e-12 give
            # [0.926, 0.999] with t=32 and [0.999013, 0.999018] with t=16; at delta=1e-20 t=22.6
            # is needed ([1.36, 1.38] at t=16 and 32, [1.380245, 1.380325] at 22.6)
            for attempt in (tilt, tilt / math.sqrt(2), tilt / 2):
                try:
                    tilted = self._materialize(step, float(attempt))
                except MemoryError:
                    continue
                if kind == "delta":
                    lo, up = _epsilon_pair(tilted, targets[pick])
                else:
                    up = np.max([v[0].delta(targets[pick]) for v in tilted.values()], axis=0)
                    lo = np.max([v[1].delta(targets[pick]) for v in tilted.values()], axis=0)
                # fmin/fmax ignore a NaN from the tilted side: the untilted bound stands then
                upper[pick] = np.fmin(upper[pick], up)
                lower[pick] = np.minimum(np.fmax(lower[pick], lo), upper[pick])
                if np.all(_relative_gap(lower[pick], upper[pick]) <= self.accuracy):
                    break
        return lower, upper

    def _choose_tilts(self, versions, targets, kind) -> np.ndarray:
        """Chernoff-optimal order for each target, rounded to a power of sqrt(2) (reuse)."""
        t = CHERNOFF_ORDERS
        log_c = t * np.log(t) - (t + 1) * np.log1p(t)
        moments = [v[0].log_mgf for v in versions.values() if v[0].log_mgf is not None]
        if not moments:
            return np.ones(len(targets))
        log_mgf = np.max(moments, axis=0)
        if kind == "delta":
            objective = (log_mgf + log_c)[None, :] - np.log(targets)[:, None]
            best = t[np.argmin(objective / t[None, :], axis=1)]
        else:
            objective = (log_mgf + log_c)[None, :] - np.outer(targets, t)
            best = t[np.argmin(objective, axis=1)]
        rounded = 2.0 ** (np.round(2 * np.log2(best)) / 2)
        distinct = np.unique(rounded)
        if len(distinct) > 3:  # at most three extra compositions per call: nearest of three
            keep = distinct[np.linspace(0, len(distinct) - 1, 3).round().astype(int)]
            rounded = keep[np.argmin(np.abs(np.log(rounded)[:, None] - np.log(keep)), axis=1)]
        return rounded

    def delta(self, epsilon):
        """Certified upper bound on ``delta(epsilon)`` (hockey-stick divergence)."""
        return self.delta_bounds(epsilon).upper

    def delta_bounds(self, epsilon) -> Bounds:
        """``(lower, upper)`` bounds on ``delta(epsilon)`` (vectorized)."""
        e = check.array_in("epsilon", epsilon, 0.0, np.inf)
        versions = self._versions()
        if self.step is None:
            # refine for the epsilon gap at the deltas being reported
            probe = np.max([v[0].delta(e) for v in versions.values()], axis=0)
            # deltas below ~1e-10 sit on the FFT's rounding floor, where refining cannot help
            probe = np.ravel(probe)[(np.ravel(probe) > 1e-10) & (np.ravel(probe) < 1)]
            if probe.size:
                versions = self._versions(refine_for=probe[:: max(1, probe.size // 16)])
        upper = np.max([v[0].delta(e) for v in versions.values()], axis=0)
        lower = np.max([v[1].delta(e) for v in versions.values()], axis=0)
        lower = np.minimum(lower, upper)
        lower, upper = self._sharpen(
            versions, np.ravel(e), np.ravel(lower), np.ravel(upper), "epsilon"
        )
        lower, upper = lower.reshape(e.shape), upper.reshape(e.shape)
        return Bounds(_scalar(lower, epsilon), _scalar(upper, epsilon))

    # ------------------------------------------------------ other views (plda.tradeoff, renyi)
    def composed_laws(self) -> ComposedLaws:
        """The composition as the conversions read it: its steps under add/remove semantics and
        its composed grid laws (:meth:`discrete`), discretized on first use."""
        return ComposedLaws(
            steps=add_remove_steps(self.components, self.relation), grid=self.discrete
        )

    def tradeoff(self, alpha):
        """Certified lower bound on the f-DP tradeoff function ``beta(alpha)``
        (:func:`plda.tradeoff.tradeoff`)."""
        return tradeoff_conversion.tradeoff(self.composed_laws(), alpha)

    def tradeoff_bounds(self, alpha) -> Bounds:
        """``(lower, upper)`` tradeoff bounds (:func:`plda.tradeoff.tradeoff_bounds`)."""
        return tradeoff_conversion.tradeoff_bounds(self.composed_laws(), alpha)

    def gdp_mu(self, *, delta_floor: float = gdp_conversion.DELTA_FLOOR) -> float:
        """Smallest certified Gaussian-DP ``mu`` (:func:`plda.tradeoff.gdp_mu`)."""
        return gdp_conversion.gdp_mu(self.composed_laws(), delta_floor=delta_floor)

    def renyi(self, order):
        """Certified upper bound on Renyi-DP ``eps(alpha)`` (:func:`plda.renyi.renyi`)."""
        return renyi_conversion.renyi(self.composed_laws(), order)

    def renyi_bounds(self, order) -> Bounds:
        """``(lower, upper)`` Renyi-DP bounds (:func:`plda.renyi.renyi_bounds`)."""
        return renyi_conversion.renyi_bounds(self.composed_laws(), order)

    def zcdp(self) -> float:
        """zCDP ``rho`` with ``eps(alpha) <= rho alpha`` for all ``alpha > 1``
        (:func:`plda.renyi.zcdp`)."""
        return zcdp_conversion.zcdp(self.composed_laws())

    def discrete(self, bound: str = "upper") -> dict[str, DiscreteLoss]:
        """The composed grid law per direction (``"remove"``/``"add"``) for ``bound`` in
        ``("upper", "lower")`` — the raw material of the other conversions."""
        if bound not in ("upper", "lower"):
            raise ValueError(f"bound must be 'upper' or 'lower', got {bound!r}")
        index = 0 if bound == "upper" else 1
        return {d: v[index] for d, v in self._versions().items()}

    @property
    def grid_step(self) -> float:
        """The grid step of the current discretization."""
        self._versions()
        return self._cache.get("step", self._initial_step())


# ---------------------------------------------------------------- helpers
def _merge(components) -> tuple:
    """Group equal mechanisms, adding their counts (keeps first-seen order)."""
    counts: dict = {}
    for mechanism, count in components:
        counts[mechanism] = counts.get(mechanism, 0) + count
    return tuple(counts.items())


def _scalar(value, like):
    return float(value) if np.ndim(like) == 0 else value


def _epsilon_pair(versions, d):
    upper = np.max([v[0].epsilon(d) for v in versions.values()], axis=0)
    lower = np.max([v[1].epsilon(d) for v in versions.values()], axis=0)
    return np.minimum(lower, upper), upper


def _relative_gap(lower, upper):
    with np.errstate(invalid="ignore", divide="ignore"):
        gap = np.where(
            np.isfinite(upper) & (upper > 0), (upper - lower) / np.maximum(upper, 1e-300), 0.0
        )
    return np.where(np.isfinite(lower) | ~np.isfinite(upper), gap, np.inf)


def _grid_points(pld: PrivacyLossDistribution, step: float) -> float:
    width = pld._cache.get("window_width")
    return np.inf if width is None else width / step


def _choose_step(pld: PrivacyLossDistribution) -> float:
    """A grid step from a coarse pilot discretization.

    The composed window (Chernoff tails) sets the size of the FFT; the discretization error of the
    connect-the-dots (upper) and pairing (lower) schemes is second order, about ``k h^2`` per
    factor in loss units, so ``h ~ sqrt(accuracy * eps_scale / k_total)``, capped by the grid
    size. The estimate starts 4x coarse: refinement then predicts the step from the measured gap.
    """
    direction_widths = []
    spreads = []
    for direction in pld._directions:
        # each law on its own pilot grid: the window is estimated from moments in loss units,
        # so no common grid (and no rediscretization when a finer law joins) is needed
        pilots = [(discretize(law, _pilot_step(law))[0], k) for law, k in pld._laws(direction)]
        lo, hi = window_losses(pilots, 1e-20)
        direction_widths.append(hi - lo)
        spreads.append(max(p.step for p, _ in pilots))
    width = max(direction_widths) + 10 * max(spreads)
    pld._cache["window_width"] = width
    # error model: each factor contributes ~ k * c * h^2 * (1/w_f) of shift in loss, w_f being
    # the factor's own loss scale; we want the total below accuracy * width / 16
    total = 0.0
    for law, k in pld._laws(pld._directions[0]):
        total += k / _loss_scale(law)
    step = math.sqrt(pld.accuracy * max(width, 1e-3) / (16 * max(total, 1e-12)))
    step *= 4  # start coarse: refinement predicts the final step from the measured gap
    step = min(step, width / 2000)  # at least ~2000 points across the composed window
    step = max(step, width / (MAX_GRID / 2), MIN_STEP)  # the FFT fits the grid cap
    # put the atoms of atomic mechanisms (Laplace, discrete ones, (eps, delta)-DP) on grid
    # points when they share a unit not much finer than the step: the optimistic side then need
    # not round them down
    atoms = [law.atom_losses for law, _ in pld._laws(pld._directions[0]) if len(law.atom_losses)]
    if atoms:
        unit = _common_unit(np.concatenate(atoms), smallest=width / MAX_GRID)
        if unit:
            pld._cache["atom_unit"] = unit
            step = pld._snap(step)
    return float(step)


def _common_unit(values: np.ndarray, smallest: float) -> float | None:
    """Largest ``u >= smallest`` with every value an integer multiple of ``u`` (to 1e-9
    relative), by a Euclid-style float gcd; ``None`` if there is none."""
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
def _loss_scale(law) -> float:
    """A width of one factor's loss law (inter-decile range, or atom spacing)."""
    lo, hi = np.inf, -np.inf
    if law.has_continuous_part:
        a, b = law.tail_points(0.1, "P")
        lo, hi = min(lo, a), max(hi, b)
    if len(law.atom_losses):
        lo, hi = min(lo, law.atom_losses.min()), max(hi, law.atom_losses.max())
    width = hi - lo
    return float(width) if np.isfinite(width) and width > 0 else 1.0


@cached(maxsize=512)
def _pilot_step(law) -> float:
    lo, hi = loss_support(law, UPPER_TAIL)
    return max(_loss_scale(law) / 64, (hi - lo) / 4096, MIN_STEP)
