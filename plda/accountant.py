"""The privacy accountant of a training loop: record steps, ask for certified epsilon / delta.

A :class:`PLDAccountant` keeps the run-length history of the mechanisms it was told about and
answers with the certified bounds of their composition (Meiser & Mohammad 2018; Koskela et al.
2020): ``delta(eps) = E_P[(1 - exp(eps - L))_+]`` of the composed privacy loss ``L``.

Speed (why this module has its own composition path): a training loop asks for epsilon after
many steps, and every answer is a new composition. Re-materializing a
:class:`~plda.pld.PrivacyLossDistribution` per query costs a full discretization and FFT product.
Here

- the per-step laws are discretized once per grid step ``h`` (:func:`plda.discretize.discretize`,
  cached), their spectra are computed once per FFT length ``n`` and kept with their binary
  powers ``X^(2^j)``, so the spectrum of ``k`` steps is a product of ``popcount(k)`` cached
  arrays and a query costs one inverse FFT per composed law;
- the grid step is the one that met the accuracy for the *horizon* history (every count rounded
  up to a power of two), and FFT lengths sit on the ladder ``2^a * {1, 5/4, 3/2}``: both stay
  put while a history grows;
- :meth:`PLDAccountant.epsilon` composes only the pessimistic version, and skips a direction of
  the neighbouring relation that a cheap bound at a nearby longer history shows to be dominated
  (for DP-SGD the removal direction leads, so one law is composed per query);
- deltas below ``1e-8`` go to the engine, whose tilted composition resolves them.

Every choice depends on the history and the query alone, so a reloaded accountant answers bit
for bit like the original.

The error accounting is the one of :func:`plda.grid.compose`: the FFT error of each factor's
spectrum (plus the rounding of folding it onto ``n`` points), the rounding of the products, the
inverse transform, and the mass outside the Chernoff window, which wraps around and is charged
to ``+inf`` (pessimistic version) or subtracted (optimistic version).
"""

from __future__ import annotations

import functools
import math
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import scipy.fft

from plda import grid, risk
from plda._internal import validation as check
from plda._internal.caches import cached
from plda._internal.errors import quiet_accuracy, warn_if_inaccurate
from plda._internal.floats import union_probability
from plda.discretize import discretize
from plda.fft import UNIT_ROUNDOFF, transform_error
from plda.grid import DiscreteLoss
from plda.mechanisms import Gaussian, Mechanism, PoissonSampled
from plda.pld import (
    DEFAULT_ACCURACY,
    MAX_GRID,
    MIN_STEP,
    RELATIONS,
    Bounds,
    PrivacyLossDistribution,
)
from plda.serialization import check_header, mechanism_from_dict, mechanism_to_dict

__all__ = ["PLDAccountant"]

_U = UNIT_ROUNDOFF
#: composed mass allowed outside the FFT window on each side (charged to +inf, or subtracted
#: from the optimistic version). The fast path answers deltas >= 1e-8 only (smaller ones go to
#: the engine's tilted composition), where 1e-14 moves delta by at most 2e-6 of itself; the
#: engine's 1e-20 would make the window 40% wider for DP-SGD steps.
_TAIL = 1e-14
#: Chernoff orders (1/loss units) for the window are taken from the fixed grid 2^(j/2): any
#: order gives a valid tail bound, and a fixed grid lets log E[e^{tL}] of a k-fold composition be
#: k times the cached one-step value. A query uses the orders in [0.25, 64] / spread of the
#: composed law (as plda.grid._window does), so only a few are ever computed per step law.
_ORDER_RANGE = (0.25, 64.0)
#: grid refinements tried when the epsilon gap misses the accuracy target (as the engine)
_REFINEMENTS = 6
#: bytes of cached spectra and powers kept per accountant
_CACHE_BYTES = 512 << 20
#: composed results kept per accountant (one per distinct history and grid step)
_RESULTS_KEPT = 4
#: running products kept for histories that grow by appending factors (see _Composer)
_PREFIXES_KEPT = 8
#: deltas below this are answered by the engine's tilted composition (as PrivacyLossDistribution
#: does); above it the plain FFT composition meets the accuracy
_TILTED_BELOW = 1e-8
#: relative margin by which a direction's checkpoint bound must stay below the leading
#: direction's upper bound to be skipped (far above the 1e-12 rounding of the bounds)
_DOMINANCE = 1e-3


# --------------------------------------------------------------------------- fast composition
class _TooLarge(Exception):
    """The fast path would need an FFT longer than MAX_GRID: the engine takes over."""


@dataclass
class _Spectrum:
    """rfft of one discretized step law folded onto ``n`` points, with its error terms and the
    binary powers ``X^(2^j)`` computed so far."""

    powers: list
    amplitude_log: np.ndarray  # log(|X| + eta): |true X| and |computed X| are both below
    relative: np.ndarray  # eta / (|X| + eta)
    nbytes: int = 0  # kept up to date as powers are added (the cache budget reads it)

    def __post_init__(self):
        self.nbytes = sum(p.nbytes for p in self.powers) + 2 * self.amplitude_log.nbytes

    def power(self, k: int) -> np.ndarray:
        """``X^k`` as the product of the binary powers of ``X`` (ascending order: the result
        depends on ``k`` only, not on which powers were cached before)."""
        out = None
        j = 0
        while k:
            while len(self.powers) <= j:
                last = self.powers[-1]
                self.powers.append(last * last)
                self.nbytes += last.nbytes
            if k & 1:
                if out is None:
                    out = self.powers[j].copy()
                else:
                    out *= self.powers[j]
            k >>= 1
            j += 1
        return out


class _Composer:
    """Composes discretized step laws by cached spectra (see the module docstring)."""

    def __init__(self):
        self._spectra: OrderedDict = OrderedDict()
        self._bytes = 0  # of the cached spectra and their powers
        # per (FFT length, first law): the factors last composed and their running product and
        # error sums, so that a history that only appended factors (a noise schedule changed
        # at every step) multiplies in the new ones instead of all of them again
        self._prefixes: OrderedDict = OrderedDict()

    def clear(self) -> None:
        self._spectra.clear()
        self._prefixes.clear()
        self._bytes = 0

    def _spectrum(self, law: DiscreteLoss, n: int) -> _Spectrum:
        key = (id(law), n)
        hit = self._spectra.get(key)
        if hit is not None and hit[0] is law:
            self._spectra.move_to_end(key)
            return hit[1]
        probs = law.probs
        layers = -(-len(probs) // n)
        if layers > 1:
            # cyclic convolution of inputs folded modulo n is the exact convolution folded
            # modulo n: folding only adds to the wrap-around that the window bounds charge
            padded = np.zeros(layers * n)
            padded[: len(probs)] = probs
            probs = padded.reshape(layers, n).sum(axis=0)
        x = scipy.fft.rfft(probs, n)
        l1 = float(np.sum(law.probs))
        eta = transform_error(n, l1) + 2 * layers * _U * l1
        amplitude = np.abs(x) + eta
        spectrum = _Spectrum([x], np.log(amplitude), eta / amplitude)
        self._spectra[key] = (law, spectrum)
        self._bytes += spectrum.nbytes
        self._evict()
        return spectrum

    def _evict(self) -> None:
        while self._bytes > _CACHE_BYTES and len(self._spectra) > 1:
            _, (_, old) = self._spectra.popitem(last=False)
            self._bytes -= old.nbytes

    def compose(self, factors: list[tuple[DiscreteLoss, int]]) -> DiscreteLoss:
        """``*_f law_f^{*k_f}`` with certified error terms (cf. :func:`plda.grid.compose`)."""
        factors = [(f, int(k)) for f, k in factors if k > 0]
        first = factors[0][0]
        if len(factors) == 1 and factors[0][1] == 1:
            return first
        step = first.step
        infinity = union_probability(((f.infinity_mass, k) for f, k in factors), upper=first.upper)

        # window: exact support cut by Chernoff bounds with the fixed orders
        lo_exact = sum(k * f.offset for f, k in factors)
        hi_exact = sum(k * (f.offset + len(f.probs) - 1) for f, k in factors)
        lo_loss, hi_loss, orders, log_up, log_down = grid.ladder_chernoff(
            factors, _TAIL, _ORDER_RANGE, step
        )
        # no finite mass at all (e.g. delta = 1) leaves the moments at -inf: keep the exact support
        hi = (
            hi_exact
            if not math.isfinite(hi_loss)
            else int(min(hi_exact, math.ceil(hi_loss / step) + 1))
        )
        lo = (
            lo_exact
            if not math.isfinite(lo_loss)
            else int(max(lo_exact, math.floor(lo_loss / step) - 1))
        )
        lo = min(lo, hi)
        # Chernoff bounds of the mass outside: the best order, exp taken once (capped: a bound
        # above 1 says nothing, and math.exp would overflow)
        above = below = 0.0
        if hi < hi_exact:
            exponent = min(
                (u - t * hi * step for u, t in zip(log_up, orders, strict=True) if u < math.inf),
                default=0.0,
            )
            above = math.exp(min(exponent, 0.0))
        if lo > lo_exact:
            exponent = min(
                (v + t * lo * step for v, t in zip(log_down, orders, strict=True) if v < math.inf),
                default=0.0,
            )
            below = math.exp(min(exponent, 0.0))
        width = hi - lo + 1
        # lengths on the ladder 2^a * {1, 5/4, 3/2}: they change rarely as the composition grows
        # (so the spectra and their powers are reused across many queries) and waste at most a
        # quarter of the transform on padding
        n = _ladder_length(width)
        if n > MAX_GRID:
            raise _TooLarge(n)

        spectrum = None
        log_bound = None
        relative = 0.0
        # the longest cached prefix of these factors at this length: the same products in the
        # same order, so the result is bit for bit the one computed from scratch
        start, hit = 0, None
        for key, prefix in self._prefixes.items():
            size = len(prefix[0])
            if (
                key[0] == n
                and start < size <= len(factors)
                and all(
                    g is f and j == k
                    for (g, j), (f, k) in zip(prefix[0], factors[:size], strict=True)
                )
            ):
                start, hit = size, key
        if hit is not None:
            _, spectrum, log_bound, relative = self._prefixes[hit]
            self._prefixes.move_to_end(hit)
        for f, k in factors[start:]:
            s = self._spectrum(f, n)
            term = k * s.amplitude_log
            log_bound = term if log_bound is None else log_bound + term
            # |X^k - X_true^k| <= k eta amp^(k-1); rounding of ~k + 2 log2 k products (relative
            # errors double under squaring, so the squarings add up to k roundings)
            relative = relative + (k * s.relative + 8 * _U * (k + 2 * k.bit_length()))
            before = s.nbytes
            x = s.power(k)
            if s.nbytes != before:  # new binary powers were cached
                self._bytes += s.nbytes - before
                self._evict()
            spectrum = x if spectrum is None else spectrum * x
        if len(factors) > 1 and start < len(factors):
            # keyed by length, first and last law (the objects are held, so ids stay unique)
            key = (n, id(first), id(factors[-1][0]), len(factors))
            self._prefixes[key] = (list(factors), spectrum, log_bound, relative)
            while len(self._prefixes) > _PREFIXES_KEPT:
                self._prefixes.popitem(last=False)
        # bounds below e^-700 are replaced by e^-700 (still a bound, and exp of deeply
        # underflowing arguments is many times slower than of ordinary ones)
        bound = np.full(len(log_bound), math.exp(-700.0))
        np.exp(log_bound, out=bound, where=log_bound > -700.0)
        # losses <= 0 add nothing to delta(eps) = sum p_i (1 - e^(eps - l_i))_+ for eps >= 0 and
        # the profile's tail sums run from the top: the window read out starts at loss 0 (the
        # cyclic positions below it are still part of the transform, so nothing wraps)
        start = min(max(0, lo), hi) - lo
        return grid.from_spectrum(
            factors,
            spectrum,
            bound,
            relative,
            n,
            (lo + start, width - start, lo_exact, below, above),
            infinity,
        )


def _ladder_length(width: int) -> int:
    """Smallest FFT length ``>= width`` of the form ``2^a``, ``5 * 2^a`` or ``3 * 2^a`` with
    ratio at most 3/2 between neighbours (all fast for pyFFTW and scipy.fft); at least 16."""
    width = max(int(width), 16)
    power = 1 << (width - 1).bit_length()  # smallest power of two >= width
    for candidate in (power * 5 // 8, power * 3 // 4):
        if candidate >= width:
            return candidate
    return power


def _max_gap(lower: np.ndarray, upper: np.ndarray) -> float:
    """Largest relative gap ``(upper - lower) / upper`` (0 where upper is 0 or infinite)."""
    finite = np.isfinite(upper) & (upper > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(finite, (upper - lower) / np.where(finite, upper, 1.0), 0.0)
    return float(np.max(gap, initial=0.0))


def _scalar(value, like):
    return float(value) if np.ndim(like) == 0 else value


#: beyond this many distinct mechanisms the horizon also coarsens them (see _horizon)
_MANY_MECHANISMS = 32


def _horizon(components) -> tuple:
    """``components`` with every count rounded up to a power of two: a history that dominates
    this one and stays put while it grows.

    A history with many distinct mechanisms (a noise schedule changed at every step) would
    give a new horizon, hence a new grid search, at every query; there the mechanisms are also
    replaced by dominating ones on a coarse parameter grid (:meth:`Mechanism._coarsened`: for
    Poisson-sampled Gaussians sigma rounded down and q up to powers of 2^(1/16)) and merged,
    so the horizon again changes only every so often."""
    if len(components) > _MANY_MECHANISMS:
        merged: dict = {}
        for mechanism, count in components:
            rounded = _dominating(mechanism)
            merged[rounded] = merged.get(rounded, 0) + count
        components = tuple(merged.items())
    return tuple((m, 1 << max(int(k) - 1, 0).bit_length()) for m, k in components)


@cached(maxsize=4096)
def _dominating(mechanism: Mechanism) -> Mechanism:
    """:meth:`Mechanism._coarsened`, cached (a history asks for each of its mechanisms at
    every query)."""
    return mechanism._coarsened()


def _checkpoint(components) -> tuple:
    """``components`` with every count ``k`` rounded up to a multiple of
    ``2^(floor(log2 k) - 3)``: at most 1/8 more steps, a history that stays put for many
    consecutive queries, and never past the power-of-two horizon."""
    out = []
    for mechanism, count in components:
        spacing = 1 << max(int(count).bit_length() - 4, 0)
        out.append((mechanism, -(-count // spacing) * spacing))
    return tuple(out)


def _merge_runs(history) -> tuple:
    counts: dict = {}
    for mechanism, count in history:
        counts[mechanism] = counts.get(mechanism, 0) + count
    return tuple(counts.items())


# --------------------------------------------------------------------------------- accountant
def _locked(method):
    """Run ``method`` holding the accountant's lock."""

    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)

    return run


class PLDAccountant:
    """Privacy accountant for a sequence of mechanisms (e.g. the steps of DP-SGD).

    Records steps and answers certified bounds on the privacy of their composition:
    ``epsilon(delta)`` is a proven upper bound (``epsilon_bounds`` adds a lower bound, and the
    relative gap between the two is at most ``accuracy`` unless the grid cap is reached).
    Deltas below 1e-8 are answered by the engine's tilted composition, as
    :class:`~plda.pld.PrivacyLossDistribution` answers them.

    Parameters
    ----------
    relation
        ``"add_remove"`` (default) or ``"replace_one"`` neighbouring datasets.
    accuracy
        Target relative gap ``(upper - lower) / upper`` of ``epsilon(delta)`` (default 1e-3).

    Examples
    --------
    >>> import plda
    >>> accountant = plda.PLDAccountant()
    >>> accountant.step(noise_multiplier=1.1, sample_rate=0.01, count=100)
    >>> accountant.compose(plda.Laplace(scale=30.0), count=2)
    >>> len(accountant), accountant.epsilon(1e-5) < 2
    (102, True)
    """

    FORMAT = "plda.accountant"
    VERSION = 1

    def __init__(self, relation: str = "add_remove", accuracy: float = DEFAULT_ACCURACY):
        if relation not in RELATIONS:
            raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
        accuracy = check.positive_float("accuracy", accuracy)
        if not accuracy < 1:
            raise ValueError(f"accuracy must be in (0, 1), got {accuracy!r}")
        self._relation = relation
        self._accuracy = accuracy
        self._history: list[list] = []  # run-length [mechanism, count]
        self._composer = _Composer()
        self._results: OrderedDict = OrderedDict()
        self._steps: dict = {}
        self._refined: dict = {}
        self._checkpoints: dict = {}
        # one lock per accountant: its history and its composer's cached spectra are shared
        # state, so steps recorded and queries asked from several threads take turns
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ recording
    @property
    def relation(self) -> str:
        """Neighbouring relation of the guarantees."""
        return self._relation

    @property
    def accuracy(self) -> float:
        """Target relative gap of the epsilon bounds."""
        return self._accuracy

    def step(self, noise_multiplier: float, sample_rate: float, count: int = 1) -> None:
        """Record ``count`` DP-SGD steps: a Gaussian of noise multiplier ``sigma`` (L2
        sensitivity 1 after clipping) on a Poisson sample of rate ``sample_rate``.

        Raises (and records nothing) on a noise multiplier outside (0, inf), a sample rate
        outside (0, 1] or a count below 1.
        """
        noise_multiplier = check.positive_float("noise_multiplier", noise_multiplier)
        sample_rate = check.probability("sample_rate", sample_rate, open_low=True)
        mechanism = PoissonSampled(Gaussian(sigma=noise_multiplier), sample_rate=sample_rate)
        self.compose(mechanism, count)

    @_locked
    def compose(self, mechanism: Mechanism, count: int = 1) -> None:
        """Record ``count`` runs of any plda ``mechanism`` (``plda.Laplace(...)`` etc.)."""
        if not isinstance(mechanism, Mechanism):
            raise TypeError(
                f"mechanism must be a plda mechanism (e.g. plda.Gaussian), got "
                f"{type(mechanism).__name__}"
            )
        count = check.count("count", count, minimum=1)
        if len(self) + count > check.MAX_COUNT:
            raise ValueError(
                f"count: the accountant would hold {len(self) + count} steps, more than "
                f"{check.MAX_COUNT:.0e} (the range plda certifies)"
            )
        if self._relation == "replace_one":
            mechanism.under_replace_one()  # raises if unsupported: refuse before recording
        if self._history and self._history[-1][0] == mechanism:
            self._history[-1][1] += count
        else:
            self._history.append([mechanism, count])

    @property
    @_locked
    def history(self) -> tuple[tuple[Mechanism, int], ...]:
        """Run-length history: ``((mechanism, count), ...)`` in the order recorded."""
        return tuple((m, k) for m, k in self._history)

    @_locked
    def __len__(self) -> int:
        """Number of recorded steps (mechanism runs)."""
        return sum(k for _, k in self._history)

    def __repr__(self) -> str:
        return (
            f"PLDAccountant(relation={self._relation!r}, accuracy={self._accuracy!r}, "
            f"steps={len(self)}, runs={len(self._history)})"
        )

    @property
    @_locked
    def pld(self) -> PrivacyLossDistribution:
        """The history as a :class:`~plda.pld.PrivacyLossDistribution` recipe (for saving,
        composing with other PLDs, or cross-checking on the engine's own grid)."""
        if not self._history:
            raise ValueError("the accountant has no recorded steps")
        return PrivacyLossDistribution(_merge_runs(self._history), self._relation, self._accuracy)

    # -------------------------------------------------------------------- queries
    def epsilon(self, delta):
        """Certified upper bound on ``epsilon(delta)`` of everything recorded (vectorized);
        ``0`` before the first step. Equal to ``epsilon_bounds(delta).upper``, at about half its
        cost (the optimistic version is not composed)."""
        d = check.array_in("delta", delta, 0.0, 1.0)
        if not self._history:
            return _scalar(np.zeros(d.shape), delta)
        return _scalar(self._epsilon_pair(d, need_lower=False)[1], delta)

    def epsilon_bounds(self, delta) -> Bounds:
        """``(lower, upper)`` certified bounds on ``epsilon(delta)``."""
        d = check.array_in("delta", delta, 0.0, 1.0)
        if not self._history:
            zero = np.zeros(d.shape)
            return Bounds(_scalar(zero, delta), _scalar(zero, delta))
        lower, upper = self._epsilon_pair(d, need_lower=True)
        warn_if_inaccurate(lower, upper, self._accuracy, query="epsilon_bounds")
        return Bounds(_scalar(lower, delta), _scalar(upper, delta))

    def delta(self, epsilon):
        """Certified upper bound on ``delta(epsilon)`` (vectorized); equal to
        ``delta_bounds(epsilon).upper``, composing only the pessimistic versions."""
        e = check.array_in("epsilon", epsilon, 0.0, np.inf)
        if not self._history:
            return _scalar(np.zeros(e.shape), epsilon)
        return _scalar(self._delta_pair(e, epsilon, need_lower=False)[1], epsilon)

    def delta_bounds(self, epsilon) -> Bounds:
        """``(lower, upper)`` certified bounds on ``delta(epsilon)``."""
        e = check.array_in("epsilon", epsilon, 0.0, np.inf)
        if not self._history:
            zero = np.zeros(e.shape)
            return Bounds(_scalar(zero, epsilon), _scalar(zero, epsilon))
        lower, upper = self._delta_pair(e, epsilon, need_lower=True)
        return Bounds(_scalar(lower, epsilon), _scalar(upper, epsilon))

    @_locked
    def _delta_pair(self, e: np.ndarray, epsilon, need_lower: bool):
        components = _merge_runs(self._history)
        recipe = PrivacyLossDistribution(components, self._relation, self._accuracy)
        first, horizon_pld = self._grid_step(components)
        try:
            versions = self._versions(recipe, first, lower=False)
        except _TooLarge:
            return tuple(recipe.delta_bounds(epsilon))  # delta bounds never warn
        # as the engine: refine for the epsilon gap at the deltas being reported (below ~1e-10
        # the FFT's rounding floor is reached and refining cannot help)
        step = first
        probe = np.ravel(np.max([v[0].delta(e) for v in versions.values()], axis=0))
        probe = probe[(probe > 1e-10) & (probe < 1)]
        if probe.size:
            probe = probe[:: max(1, probe.size // 16)]
            refined = self._horizon_step(components, probe)
            if refined is None:
                refined = self._refine(recipe, first, probe, horizon_pld)[0]
            if refined is not None:
                try:
                    versions = self._versions(recipe, refined, lower=need_lower)
                    step = refined
                except _TooLarge:
                    pass
        try:
            versions = self._versions(recipe, step, lower=need_lower)
        except _TooLarge:  # beyond the fast path's grid cap: the engine's (capped) grid
            return tuple(recipe.delta_bounds(epsilon))
        upper = np.max([v[0].delta(e) for v in versions.values()], axis=0)
        lower = np.max([v[1].delta(e) for v in versions.values()], axis=0) if need_lower else None
        # deltas below the FFT's floor: the engine's tilted composition (decided on the upper
        # bound, which both delta and delta_bounds compute, so they stay equal)
        small = np.ravel((upper > 0) & (upper < _TILTED_BELOW))
        if small.any():
            tilted = recipe.delta_bounds(np.ravel(e)[small])
            upper = np.ravel(upper).copy()
            upper[small] = np.ravel(tilted.upper)
            upper = upper.reshape(np.shape(e))
            if need_lower:
                lower = np.ravel(lower).copy()
                lower[small] = np.ravel(tilted.lower)
                lower = lower.reshape(np.shape(e))
        if not need_lower:
            return None, upper
        return np.minimum(lower, upper), upper

    # ---------------------------------------------------------------- internals
    @_locked
    def _epsilon_pair(self, d: np.ndarray, need_lower: bool):
        """``(lower, upper)`` epsilon bounds at ``d`` (lower None if not ``need_lower``).

        Deltas below ``_TILTED_BELOW`` go to the engine, whose exponentially tilted
        composition resolves them (the fast path's FFT floor would leave a gap of several
        percent there); the others take :meth:`_fast_epsilon_pair`."""
        flat = np.ravel(d)
        small = (flat > 0) & (flat < _TILTED_BELOW)
        if not small.any():
            return self._fast_epsilon_pair(d, need_lower)
        recipe = PrivacyLossDistribution(
            _merge_runs(self._history), self._relation, self._accuracy
        )
        with quiet_accuracy():  # epsilon_bounds warns once, for the whole answer
            tilted = recipe.epsilon_bounds(flat[small])
        lower, upper = np.empty(flat.shape), np.empty(flat.shape)
        lower[small], upper[small] = np.ravel(tilted.lower), np.ravel(tilted.upper)
        if not small.all():
            rest_lower, rest_upper = self._fast_epsilon_pair(flat[~small], need_lower)
            upper[~small] = rest_upper
            lower[~small] = rest_lower if need_lower else 0.0
        return (lower.reshape(d.shape) if need_lower else None), upper.reshape(d.shape)

    def _fast_epsilon_pair(self, d: np.ndarray, need_lower: bool):
        """``(lower, upper)`` epsilon bounds at ``d`` by the cached-spectrum composition.

        The grid step is the one that met the accuracy for the *horizon* history (every count
        rounded up to a power of two, see :meth:`_horizon_step`): the gap grows with the step
        counts, so that step serves every history up to the horizon, and the step depends on
        the horizon and ``d`` only. Hence ``epsilon`` needs no optimistic version to choose its
        grid and equals ``epsilon_bounds(...).upper``. Where the horizon does not fit under the
        grid cap, the step is refined on the history itself (and beyond that the engine takes
        over)."""
        components = _merge_runs(self._history)
        recipe = PrivacyLossDistribution(components, self._relation, self._accuracy)
        flat = np.ravel(d)
        step, horizon_uppers, order = self._horizon(components, flat)
        if step is not None:
            try:
                return self._directed_pair(
                    components, recipe, step, d, need_lower, horizon_uppers, order
                )
            except _TooLarge:
                pass
        first, horizon_pld = self._grid_step(components)
        step, lower, upper, _ = self._refine(recipe, first, flat, horizon_pld)
        if step is None:
            # beyond the fast path's grid cap: the engine picks its own (capped) grid
            with quiet_accuracy():  # epsilon_bounds warns once, for the whole answer
                return tuple(recipe.epsilon_bounds(d))
        return lower.reshape(d.shape), upper.reshape(d.shape)

    def _directed_pair(
        self, components, recipe, step, d, need_lower, horizon_uppers, order
    ):
        """Epsilon bounds at ``d`` on grid ``step``: the maximum over the relation's directions.

        A direction is skipped when it is dominated: composing more steps can only increase
        ``delta(eps)`` (the shorter run is a post-processing of the longer one), so a
        direction's upper bound at a longer history bounds it at this one. Two such histories
        are at hand: the horizon (its bounds come free with the grid choice) and the
        *checkpoint* (counts rounded up by at most 1/8, see :func:`_checkpoint`, one per many
        queries). If the bound is below the leading direction's upper bound here, with a
        margin of ``_DOMINANCE``, the skipped direction cannot raise the maximum, and the
        leading direction's lower bound is a lower bound of the maximum. For DP-SGD the removal
        direction leads by 20-40%, so queries compose one direction instead of two. Every
        decision depends on the history and ``d`` only."""
        lead = order[0]
        versions = self._versions(recipe, step, lower=need_lower, directions=(lead,))
        upper = versions[lead][0].epsilon(d)
        lower = versions[lead][1].epsilon(d) if need_lower else None

        def dominated(bounds, direction):
            return np.all(bounds[direction] < upper * (1 - _DOMINANCE))

        # the horizon's bounds first (known from choosing the grid, so free), then the
        # checkpoint's (closer to this history, computed once for many queries)
        others = [D for D in order[1:] if not dominated(horizon_uppers, D)]
        check = _checkpoint(components)
        if others and check != components:
            key = (check, step, d.tobytes(), d.shape)
            bounds = self._checkpoints.get(key)
            if bounds is None:
                # every non-leading direction (the lead is the same for all histories sharing
                # this checkpoint, as they share its horizon), so that what is skipped does
                # not depend on which of them asked first
                check_recipe = PrivacyLossDistribution(check, self._relation, self._accuracy)
                laws = self._versions(check_recipe, step, lower=False, directions=tuple(order[1:]))
                bounds = {D: laws[D][0].epsilon(d) for D in order[1:]}
                if len(self._checkpoints) > 64:
                    self._checkpoints.clear()
                self._checkpoints[key] = bounds
            others = [D for D in others if not dominated(bounds, D)]
        for direction in others:
            pair = self._versions(recipe, step, lower=need_lower, directions=(direction,))
            pair = pair[direction]
            upper = np.maximum(upper, pair[0].epsilon(d))
            if need_lower:
                lower = np.maximum(lower, pair[1].epsilon(d))
        if not need_lower:
            return None, upper
        return np.minimum(lower, upper), upper

    def _upper_on_grid(self, step: float, delta: float) -> float | None:
        """Certified upper bound on ``epsilon(delta)`` on the given grid ``step`` (every
        direction, pessimistic versions only), with no grid search: for callers that chose the
        grid already (calibration's search). None if that grid exceeds the cap."""
        recipe = self.pld
        d = np.asarray(delta, dtype=float)
        try:
            versions = self._versions(recipe, step, lower=False)
        except _TooLarge:
            return None
        return float(np.max([pair[0].epsilon(d) for pair in versions.values()]))

    def _horizon_step(self, components, d: np.ndarray) -> float | None:
        """The grid step meeting the accuracy at ``d`` for the horizon history (counts rounded
        up to powers of two), cached; None if the horizon does not fit under the grid cap."""
        return self._horizon(components, d)[0]

    def _horizon(self, components, d: np.ndarray) -> tuple:
        """``(step, uppers, order)``: :meth:`_horizon_step`, each direction's epsilon upper
        bound at ``d`` for the horizon history on that step (a dominance bound, as the horizon
        history has at least as many steps of every mechanism), and the directions by
        decreasing bound (the leading one first)."""
        horizon = _horizon(components)
        key = (horizon, d.tobytes(), d.shape)
        hit = self._refined.get(key)
        if hit is None:
            first, horizon_pld = self._grid_step(components)
            if len(self._refined) > 256:
                self._refined.clear()
            step, _, _, uppers = self._refine(horizon_pld, first, d, horizon_pld)
            order = (
                sorted(uppers, key=lambda D: -float(np.max(uppers[D])))
                if uppers is not None
                else None
            )
            hit = self._refined[key] = (step, uppers, order)
        return hit

    def _refine(
        self,
        recipe: PrivacyLossDistribution,
        step: float,
        d: np.ndarray,
        ladder: PrivacyLossDistribution,
    ):
        """Refine ``step`` until the epsilon gap meets the accuracy, as the engine does (the
        gap is second order in the step, so the next step is predicted from it), with every
        step on the power-of-two ladder of :meth:`_quantize`; stops after ``_REFINEMENTS``
        grids, at the grid cap, or when the gap stops shrinking (floating-point floor).
        Returns ``(step, lower, upper, uppers)`` (``uppers``: each direction's upper bound);
        step None if even the first grid is too large."""
        try:
            gap = self._trial_gap(recipe, step, d)
        except _TooLarge:
            return None, None, None, None
        previous_gap = np.inf
        for _ in range(_REFINEMENTS):
            if gap <= self._accuracy or gap > 0.7 * previous_gap:
                break
            # halve the step, or quarter it when the gap is so far off (16x) that halving
            # cannot close it even where it falls like h^4: on coarse grids the gap falls faster
            # than h^2, so a step predicted from h^2 would often be finer than needed, which
            # every later query pays for (the coarse trials are cheap)
            far = not np.isfinite(gap) or gap > 16 * self._accuracy
            finer = self._quantize(step * (0.25 if far else 0.5), ladder)
            if finer < MIN_STEP:
                break
            try:
                finer_gap = self._trial_gap(recipe, finer, d)
            except _TooLarge:
                break
            step, previous_gap, gap = finer, gap, finer_gap
        try:
            lower, upper, uppers = self._bounds_at(recipe, step, d)  # lead composed already
        except _TooLarge:  # another direction does not fit: the engine takes over
            return None, None, None, None
        return step, lower, upper, uppers

    def _trial_gap(self, recipe: PrivacyLossDistribution, step: float, d: np.ndarray) -> float:
        """The relative epsilon gap on grid ``step``, for deciding whether to refine.

        The first direction (removal, which leads for subsampled mechanisms) is composed
        first; if its own gap misses the accuracy the grid is refined without composing the
        others (a grid that fails need not be completed). Otherwise the gap of the maximum over
        all directions decides."""
        lead = recipe._directions[0]
        pair = self._versions(recipe, step, directions=(lead,))[lead]
        upper = pair[0].epsilon(d)
        gap = _max_gap(np.minimum(pair[1].epsilon(d), upper), upper)
        if gap > self._accuracy and len(recipe._directions) > 1:
            return gap
        lower, upper, _ = self._bounds_at(recipe, step, d)
        return _max_gap(lower, upper)

    def _bounds_at(self, recipe: PrivacyLossDistribution, step: float, d: np.ndarray):
        """Epsilon bounds (the maximum over directions) on grid ``step``, composing the
        optimistic version only for the directions whose upper bound is within the accuracy of
        the largest: another direction's lower bound is below ``upper * (1 - accuracy)``, so it
        can raise the lower bound of the maximum only where the gap misses the accuracy anyway
        (and leaving it out keeps a valid, if looser, lower bound)."""
        versions = self._versions(recipe, step, lower=False)
        uppers = {direction: pair[0].epsilon(d) for direction, pair in versions.items()}
        upper = np.max(list(uppers.values()), axis=0)
        lower = None
        for direction in sorted(uppers, key=lambda name: -float(np.max(uppers[name]))):
            if lower is not None and np.all(uppers[direction] < upper * (1 - self._accuracy)):
                continue
            pair = self._versions(recipe, step, directions=(direction,))[direction]
            found = pair[1].epsilon(d)
            lower = found if lower is None else np.maximum(lower, found)
        return np.minimum(lower, upper), upper, uppers

    def _quantize(self, step: float, pld: PrivacyLossDistribution) -> float:
        """Largest step ``<= step`` on the ladder ``unit * 2^-j`` (``unit`` the atoms' common
        spacing the engine aligns the grid to, or 1): the ladder keeps the grid put while a
        history grows, so discretizations and spectra are reused."""
        unit = pld._cache.get("atom_unit") if "atom_unit" in pld._cache else None
        if unit and unit >= step / 4:
            if unit <= step:
                return float(unit)
            return float(unit / 2.0 ** math.ceil(math.log2(unit / step) - 1e-12))
        return float(2.0 ** math.floor(math.log2(step) + 1e-12))

    def _grid_step(self, components) -> tuple[float, PrivacyLossDistribution]:
        """Initial grid step for a history: the engine's choice for the history with every
        count rounded up to a power of two, put on the ladder of :meth:`_quantize` (so it stays
        put while the history grows); with the horizon PLD that carries the atom unit."""
        horizon = _horizon(components)
        if horizon not in self._steps:
            pld = PrivacyLossDistribution(horizon, self._relation, self._accuracy)
            step = self._quantize(pld._initial_step(), pld)
            if len(self._steps) > 64:
                self._steps.clear()
            self._steps[horizon] = (step, pld)
        return self._steps[horizon]

    def _versions(
        self,
        recipe: PrivacyLossDistribution,
        step: float,
        lower: bool = True,
        directions: tuple | None = None,
    ) -> dict:
        """``{direction: [upper, lower]}`` composed laws of ``recipe`` on grid ``step``; the
        optimistic ones only if ``lower``, and only the ``directions`` given (default all);
        the others are None until first needed."""
        key = (recipe.components, step)
        out = self._results.get(key)
        if out is None:
            out = {direction: [None, None] for direction in recipe._directions}
            self._results[key] = out
            while len(self._results) > _RESULTS_KEPT:
                self._results.popitem(last=False)
        else:
            self._results.move_to_end(key)
        for direction, pair in out.items():
            if directions is not None and direction not in directions:
                continue
            for index in (0, 1) if lower else (0,):
                if pair[index] is None:
                    factors = [
                        (discretize(law, step)[index], k) for law, k in recipe._laws(direction)
                    ]
                    pair[index] = self._composer.compose(factors)
        return out

    # ------------------------------------------------------------- checkpoints
    @_locked
    def state_dict(self) -> dict:
        """JSON-serializable state: ``{"format": "plda.accountant", "version": 1, "relation",
        "accuracy", "history": [{"mechanism": {...}, "count": k}, ...]}``."""
        return {
            "format": self.FORMAT,
            "version": self.VERSION,
            "relation": self._relation,
            "accuracy": self._accuracy,
            "history": [
                {"mechanism": mechanism_to_dict(m), "count": int(k)} for m, k in self._history
            ],
        }

    @_locked
    def load_state_dict(self, state: dict) -> None:
        """Replace this accountant's state by ``state`` (from :meth:`state_dict`).

        The whole state is checked first: a corrupted or foreign dict raises ``ValueError`` and
        leaves the accountant unchanged.
        """
        relation, accuracy, history = _parse_state(state)
        self._relation, self._accuracy = relation, accuracy
        self._history = [[m, k] for m, k in history]
        self._results.clear()
        self._steps.clear()
        self._refined.clear()
        self._checkpoints.clear()
        self._composer.clear()

    @classmethod
    def from_state_dict(cls, state: dict) -> PLDAccountant:
        """A new accountant with the state ``state`` (from :meth:`state_dict`)."""
        relation, accuracy, history = _parse_state(state)
        accountant = cls(relation=relation, accuracy=accuracy)
        accountant._history = [[m, k] for m, k in history]
        return accountant

    def true_positive_rate_bounds(self, false_positive_rate) -> Bounds:
        """Certified bounds on the best membership-inference true-positive rate at
        ``false_positive_rate``, ``1 - f(alpha)``, both directions
        (:func:`plda.risk.true_positive_rate_bounds`)."""
        return risk.true_positive_rate_bounds(self.pld, false_positive_rate)

    def advantage_bounds(self) -> Bounds:
        """Certified bounds on the membership-inference advantage ``max(TPR - FPR) = delta(0)``
        (:func:`plda.risk.advantage_bounds`)."""
        return risk.advantage_bounds(self.pld)


def _parse_state(state) -> tuple[str, float, list]:
    if not isinstance(state, dict):
        raise ValueError(
            f"state must be a dict from PLDAccountant.state_dict(), got {type(state).__name__}"
        )
    check_header(
        state, format=PLDAccountant.FORMAT, version=PLDAccountant.VERSION,
        keys={"relation", "accuracy", "history"}, what="plda accountant state",
    )
    relation = state["relation"]
    if relation not in RELATIONS:
        raise ValueError(f"state relation must be one of {RELATIONS}, got {relation!r}")
    try:
        accuracy = check.positive_float("accuracy", state["accuracy"])
    except TypeError as exc:
        raise ValueError(f"state accuracy: {exc}") from exc
    if not accuracy < 1:
        raise ValueError(f"state accuracy must be in (0, 1), got {accuracy!r}")
    if not isinstance(state["history"], list):
        raise ValueError("state history must be a list of {'mechanism': ..., 'count': ...}")
    history = []
    for i, entry in enumerate(state["history"]):
        if not isinstance(entry, dict) or set(entry) != {"mechanism", "count"}:
            raise ValueError(f"state history[{i}] must be a dict with keys 'mechanism' and 'count'")
        try:
            mechanism = mechanism_from_dict(entry["mechanism"])
            count = check.count("count", entry["count"], minimum=1)
            if relation == "replace_one":
                mechanism.under_replace_one()
        except (TypeError, ValueError) as exc:
            raise ValueError(f"state history[{i}]: {exc}") from exc
        if history and history[-1][0] == mechanism:
            history[-1] = (mechanism, history[-1][1] + count)
        else:
            history.append((mechanism, count))
    total = sum(k for _, k in history)
    if total > check.MAX_COUNT:
        raise ValueError(f"state history holds {total} steps, more than {check.MAX_COUNT:.0e}")
    return relation, accuracy, history
