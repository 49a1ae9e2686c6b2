"""The privacy accountant of a training loop: record steps, ask for certified epsilon / delta.

A :class:`PLDAccountant` keeps the run-length history of the mechanisms it was told about and
answers with the certified bounds of their composition (Meiser & Mohammad 2018; Koskela et al.
2020): ``delta(eps) = E_P[(1 - exp(eps - L))_+]`` of the composed privacy loss ``L``.

Speed (why this module has its own composition path): a training loop asks for epsilon after
many steps, and every answer is a new composition. Re-materializing a
:class:`~plda.pld.PrivacyLossDistribution` per query costs a full discretization and FFT product.
Here the per-step laws are discretized once per grid step ``h`` (:func:`plda.discretize.discretize`,
cached), their spectra are computed once per FFT length ``n`` and kept with their binary powers
``X^(2^j)``, so the spectrum of ``k`` steps is a product of ``popcount(k)`` cached arrays and a
query costs one inverse FFT per direction and version. Grid step and FFT length depend only on the
history (counts rounded up to powers of two), so the answers are a function of the history and
of the query alone: a reloaded accountant answers bit for bit like the original.

The error accounting is the one of :func:`plda.grid.compose`: the FFT error of each factor's
spectrum (plus the rounding of folding it onto ``n`` points), the rounding of the products, the
inverse transform, and the mass outside the Chernoff window, which wraps around and is charged
to ``+inf`` (pessimistic version) or subtracted (optimistic version).
"""

from __future__ import annotations

import dataclasses
import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import scipy.fft

from plda import _validation as check
from plda import grid
from plda.discretize import discretize
from plda.fft import UNIT_ROUNDOFF, transform_error
from plda.grid import DiscreteLoss
from plda.mechanisms import Gaussian, Mechanism, PoissonSampled
from plda.pld import DEFAULT_ACCURACY, MAX_GRID, RELATIONS, Bounds, PrivacyLossDistribution

__all__ = ["PLDAccountant"]

_U = UNIT_ROUNDOFF
#: composed mass allowed outside the FFT window on each side (as in plda.grid.compose)
_TAIL = 1e-20
#: Chernoff orders (1/loss units) for the window are taken from the fixed grid 2^(j/2): any
#: order gives a valid tail bound, and a fixed grid lets log E[e^{tL}] of a k-fold composition be
#: k times the cached one-step value. A query uses the orders in [0.25, 64] / spread of the
#: composed law (as plda.grid._window does), so only a few are ever computed per step law.
_ORDER_RANGE = (0.25, 64.0)
#: grid refinements tried when the epsilon gap misses the accuracy target (as the engine)
_REFINEMENTS = 6
#: bytes of cached spectra and powers kept per accountant
_CACHE_BYTES = 256 << 20
#: composed results kept per accountant (one per distinct history and grid step)
_RESULTS_KEPT = 4


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

    @property
    def nbytes(self) -> int:
        return sum(p.nbytes for p in self.powers) + 2 * self.amplitude_log.nbytes

    def power(self, k: int) -> np.ndarray:
        """``X^k`` as the product of the binary powers of ``X`` (ascending order: the result
        depends on ``k`` only, not on which powers were cached before)."""
        out = None
        j = 0
        while k:
            while len(self.powers) <= j:
                last = self.powers[-1]
                self.powers.append(last * last)
            if k & 1:
                out = self.powers[j].copy() if out is None else out * self.powers[j]
            k >>= 1
            j += 1
        return out


class _Composer:
    """Composes discretized step laws by cached spectra (see the module docstring)."""

    def __init__(self):
        self._spectra: OrderedDict = OrderedDict()
        self._window_moments: dict = {}

    def clear(self) -> None:
        self._spectra.clear()
        self._window_moments.clear()

    def _law_cache(self, law: DiscreteLoss) -> dict:
        key = id(law)
        hit = self._window_moments.get(key)
        if hit is None or hit[0] is not law:
            mass = float(np.sum(law.probs))
            variance = 0.0
            if mass > 0:
                mean = float(np.dot(law.probs, law.losses)) / mass
                variance = float(np.dot(law.probs, (law.losses - mean) ** 2)) / mass
            hit = (law, {"variance": variance})
            if len(self._window_moments) > 512:
                self._window_moments.clear()
            self._window_moments[key] = hit
        return hit[1]

    def _moments(self, law: DiscreteLoss, indices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``log E[e^{tL}]`` and ``log E[e^{-tL}]`` (finite part) at ``t = 2^(j/2)``."""
        cache = self._law_cache(law)
        missing = [j for j in indices if ("order", j) not in cache]
        if missing:
            orders = 2.0 ** (np.asarray(missing, dtype=float) / 2)
            up, down = law.finite_log_mgf(orders), law.finite_log_mgf(-orders)
            for j, u, d in zip(missing, up, down, strict=True):
                cache[("order", j)] = (u, d)
        pairs = np.array([cache[("order", j)] for j in indices])
        return pairs[:, 0], pairs[:, 1]

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
        total = sum(s.nbytes for _, s in self._spectra.values())
        while total > _CACHE_BYTES and len(self._spectra) > 1:
            _, (_, old) = self._spectra.popitem(last=False)
            total -= old.nbytes
        return spectrum

    def compose(self, factors: list[tuple[DiscreteLoss, int]]) -> DiscreteLoss:
        """``*_f law_f^{*k_f}`` with certified error terms (cf. :func:`plda.grid.compose`)."""
        factors = [(f, int(k)) for f, k in factors if k > 0]
        first = factors[0][0]
        if len(factors) == 1 and factors[0][1] == 1:
            return first
        step = first.step
        log_keep = sum(k * math.log1p(-min(f.infinity_mass, 1.0)) for f, k in factors)
        infinity = -math.expm1(log_keep) if log_keep > -np.inf else 1.0

        # window: exact support cut by Chernoff bounds with the fixed orders
        lo_exact = sum(k * f.offset for f, k in factors)
        hi_exact = sum(k * (f.offset + len(f.probs) - 1) for f, k in factors)
        spread = math.sqrt(
            max(sum(k * self._law_cache(f)["variance"] for f, k in factors), step * step)
        )
        indices = np.arange(
            math.floor(2 * math.log2(_ORDER_RANGE[0] / spread)),
            math.ceil(2 * math.log2(_ORDER_RANGE[1] / spread)) + 1,
        )
        orders = 2.0 ** (indices / 2)
        log_up = np.zeros(len(indices))
        log_down = np.zeros(len(indices))
        for f, k in factors:
            up, down = self._moments(f, indices)
            log_up += k * up
            log_down += k * down
        log_tail = math.log(_TAIL)
        with np.errstate(over="ignore", invalid="ignore"):
            hi_loss = np.nanmin((log_up - log_tail) / orders)
            lo_loss = np.nanmax(-(log_down - log_tail) / orders)
        # no finite mass at all (e.g. delta = 1) leaves the moments at -inf: keep the exact support
        hi = (
            hi_exact
            if not np.isfinite(hi_loss)
            else int(min(hi_exact, math.ceil(hi_loss / step) + 1))
        )
        lo = (
            lo_exact
            if not np.isfinite(lo_loss)
            else int(max(lo_exact, math.floor(lo_loss / step) - 1))
        )
        lo = min(lo, hi)
        with np.errstate(over="ignore", invalid="ignore"):
            above = 0.0 if hi >= hi_exact else float(np.nanmin(np.exp(log_up - orders * hi * step)))
            below = (
                0.0 if lo <= lo_exact else float(np.nanmin(np.exp(log_down + orders * lo * step)))
            )
        width = hi - lo + 1
        # power-of-two lengths: they change rarely as the composition grows, so the spectra and
        # their powers are reused across many queries
        n = 1 << max(int(width - 1).bit_length(), 4)
        if n > MAX_GRID:
            raise _TooLarge(n)

        spectrum = None
        log_bound = np.zeros(n // 2 + 1)
        relative = np.zeros(n // 2 + 1)
        for f, k in factors:
            s = self._spectrum(f, n)
            log_bound += k * s.amplitude_log
            # |X^k - X_true^k| <= k eta amp^(k-1); rounding of ~k + 2 log2 k products (relative
            # errors double under squaring, so the squarings add up to k roundings)
            relative += k * s.relative + 8 * _U * (k + 2 * k.bit_length())
            x = s.power(k)
            spectrum = x if spectrum is None else spectrum * x
        composed = grid.from_spectrum(
            factors,
            spectrum,
            np.exp(log_bound),
            relative,
            n,
            (lo, width, lo_exact, below, above),
            infinity,
        )
        # losses <= 0 add nothing to delta(eps) = sum p_i (1 - e^(eps - l_i))_+ for eps >= 0 and
        # the profile's tail sums run from the top: dropping them changes no answer, only work
        start = min(max(0, lo), hi) - lo
        if start > 0:
            composed = dataclasses.replace(
                composed, offset=lo + start, probs=composed.probs[start:]
            )
        return composed


def _epsilon_pair(versions: dict, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    upper = np.max([v[0].epsilon(d) for v in versions.values()], axis=0)
    lower = np.max([v[1].epsilon(d) for v in versions.values()], axis=0)
    return np.minimum(lower, upper), upper


def _max_gap(lower: np.ndarray, upper: np.ndarray) -> float:
    """Largest relative gap ``(upper - lower) / upper`` (0 where upper is 0 or infinite)."""
    finite = np.isfinite(upper) & (upper > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        gap = np.where(finite, (upper - lower) / np.where(finite, upper, 1.0), 0.0)
    return float(np.max(gap, initial=0.0))


def _scalar(value, like):
    return float(value) if np.ndim(like) == 0 else value


def _horizon(components) -> tuple:
    """``components`` with every count rounded up to a power of two."""
    return tuple((m, 1 << max(int(k) - 1, 0).bit_length()) for m, k in components)


def _merge_runs(history) -> tuple:
    counts: dict = {}
    for mechanism, count in history:
        counts[mechanism] = counts.get(mechanism, 0) + count
    return tuple(counts.items())


# --------------------------------------------------------------------------------- accountant
class PLDAccountant:
    """Privacy accountant for a sequence of mechanisms (e.g. the steps of DP-SGD).

    Records steps and answers certified bounds on the privacy of their composition:
    ``epsilon(delta)`` is a proven upper bound (``epsilon_bounds`` adds a lower bound, and the
    relative gap between the two is at most ``accuracy`` unless the grid cap is reached).

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

    def compose(self, mechanism: Mechanism, count: int = 1) -> None:
        """Record ``count`` runs of any plda ``mechanism`` (``plda.Laplace(...)`` etc.)."""
        if not isinstance(mechanism, Mechanism):
            raise TypeError(
                f"mechanism must be a plda mechanism (e.g. plda.Gaussian), got "
                f"{type(mechanism).__name__}"
            )
        count = check.count("count", count, minimum=1)
        if self._relation == "replace_one":
            mechanism.under_replace_one()  # raises if unsupported: refuse before recording
        if self._history and self._history[-1][0] == mechanism:
            self._history[-1][1] += count
        else:
            self._history.append([mechanism, count])

    @property
    def history(self) -> tuple[tuple[Mechanism, int], ...]:
        """Run-length history: ``((mechanism, count), ...)`` in the order recorded."""
        return tuple((m, k) for m, k in self._history)

    def __len__(self) -> int:
        """Number of recorded steps (mechanism runs)."""
        return sum(k for _, k in self._history)

    def __repr__(self) -> str:
        return (
            f"PLDAccountant(relation={self._relation!r}, accuracy={self._accuracy!r}, "
            f"steps={len(self)}, runs={len(self._history)})"
        )

    @property
    def pld(self) -> PrivacyLossDistribution:
        """The history as a :class:`~plda.pld.PrivacyLossDistribution` recipe (for saving,
        composing with other PLDs, or cross-checking on the engine's own grid)."""
        if not self._history:
            raise ValueError("the accountant has no recorded steps")
        return PrivacyLossDistribution(_merge_runs(self._history), self._relation, self._accuracy)

    # -------------------------------------------------------------------- queries
    def epsilon(self, delta):
        """Certified upper bound on ``epsilon(delta)`` of everything recorded (vectorized);
        ``0`` before the first step."""
        return self.epsilon_bounds(delta).upper

    def epsilon_bounds(self, delta) -> Bounds:
        """``(lower, upper)`` certified bounds on ``epsilon(delta)``."""
        d = check.array_in("delta", delta, 0.0, 1.0)
        if not self._history:
            zero = np.zeros(d.shape)
            return Bounds(_scalar(zero, delta), _scalar(zero, delta))
        lower, upper = self._epsilon_pair(d)
        return Bounds(_scalar(lower, delta), _scalar(upper, delta))

    def delta(self, epsilon):
        """Certified upper bound on ``delta(epsilon)`` (vectorized)."""
        return self.delta_bounds(epsilon).upper

    def delta_bounds(self, epsilon) -> Bounds:
        """``(lower, upper)`` certified bounds on ``delta(epsilon)``."""
        e = check.array_in("epsilon", epsilon, 0.0, np.inf)
        if not self._history:
            zero = np.zeros(e.shape)
            return Bounds(_scalar(zero, epsilon), _scalar(zero, epsilon))
        components = _merge_runs(self._history)
        recipe = PrivacyLossDistribution(components, self._relation, self._accuracy)
        step = self._grid_step(components)[0]
        try:
            versions = self._versions(recipe, step)
        except _TooLarge:
            return recipe.delta_bounds(epsilon)
        # as the engine: refine for the epsilon gap at the deltas being reported (below ~1e-10
        # the FFT's rounding floor is reached and refining cannot help)
        probe = np.ravel(np.max([v[0].delta(e) for v in versions.values()], axis=0))
        probe = probe[(probe > 1e-10) & (probe < 1)]
        if probe.size:
            step = self._refined_step(components, recipe, probe[:: max(1, probe.size // 16)])
            if step is not None:
                versions = self._versions(recipe, step)
        upper = np.max([v[0].delta(e) for v in versions.values()], axis=0)
        lower = np.max([v[1].delta(e) for v in versions.values()], axis=0)
        lower = np.minimum(lower, upper)
        return Bounds(_scalar(lower, epsilon), _scalar(upper, epsilon))

    # ---------------------------------------------------------------- internals
    def _epsilon_pair(self, d: np.ndarray):
        components = _merge_runs(self._history)
        recipe = PrivacyLossDistribution(components, self._relation, self._accuracy)
        step = self._refined_step(components, recipe, np.ravel(d))
        if step is None:
            # beyond the fast path's grid cap: the engine picks its own (capped) grid
            return tuple(recipe.epsilon_bounds(d))
        lower, upper = _epsilon_pair(self._versions(recipe, step), d)
        return lower, upper

    def _refined_step(self, components, recipe, d: np.ndarray) -> float | None:
        """The grid step meeting the accuracy at ``d`` for this history (None: too large)."""
        # start from the step that met the accuracy for the horizon history (counts rounded up
        # to powers of two): queries between two powers of two then rarely need refining, and
        # the step still depends on the history and delta only
        horizon = _horizon(components)
        key = (horizon, d.tobytes(), d.shape)
        first, horizon_pld = self._grid_step(components)
        start = self._refined.get(key)
        if start is None:
            start = self._refine(horizon_pld, first, d, horizon_pld)[0]
            if start is None:
                start = first
            if len(self._refined) > 256:
                self._refined.clear()
            self._refined[key] = start
        return self._refine(recipe, start, d, horizon_pld)[0]

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
        Returns ``(step, lower, upper)``; step None if even the first grid is too large."""
        try:
            versions = self._versions(recipe, step)
        except _TooLarge:
            return None, None, None
        lower, upper = _epsilon_pair(versions, d)
        previous_gap = np.inf
        for _ in range(_REFINEMENTS):
            gap = _max_gap(lower, upper)
            if gap <= self._accuracy or gap > 0.7 * previous_gap:
                break
            factor = 0.8 * math.sqrt(self._accuracy / gap) if np.isfinite(gap) else 0.25
            finer = self._quantize(step * min(0.5, max(0.1, factor)), ladder)
            try:
                versions = self._versions(recipe, finer)
            except _TooLarge:
                break
            step, previous_gap = finer, gap
            lower, upper = _epsilon_pair(versions, d)
        return step, lower, upper

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

    def _versions(self, recipe: PrivacyLossDistribution, step: float) -> dict:
        key = (recipe.components, step)
        hit = self._results.get(key)
        if hit is not None:
            self._results.move_to_end(key)
            return hit
        out = {}
        for direction in recipe._directions:
            uppers, lowers = [], []
            for law, k in recipe._laws(direction):
                upper, lower = discretize(law, step)
                uppers.append((upper, k))
                lowers.append((lower, k))
            out[direction] = (self._composer.compose(uppers), self._composer.compose(lowers))
        self._results[key] = out
        while len(self._results) > _RESULTS_KEPT:
            self._results.popitem(last=False)
        return out

    # ------------------------------------------------------------- checkpoints
    def state_dict(self) -> dict:
        """JSON-serializable state: ``{"format": "plda.accountant", "version": 1, "relation",
        "accuracy", "history": [{"mechanism": {...}, "count": k}, ...]}``."""
        from plda.serialization import mechanism_to_dict

        return {
            "format": self.FORMAT,
            "version": self.VERSION,
            "relation": self._relation,
            "accuracy": self._accuracy,
            "history": [
                {"mechanism": mechanism_to_dict(m), "count": int(k)} for m, k in self._history
            ],
        }

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
        self._composer.clear()

    @classmethod
    def from_state_dict(cls, state: dict) -> PLDAccountant:
        """A new accountant with the state ``state`` (from :meth:`state_dict`)."""
        relation, accuracy, history = _parse_state(state)
        accountant = cls(relation=relation, accuracy=accuracy)
        accountant._history = [[m, k] for m, k in history]
        return accountant


def _parse_state(state) -> tuple[str, float, list]:
    from plda.serialization import mechanism_from_dict

    if not isinstance(state, dict):
        raise ValueError(
            f"state must be a dict from PLDAccountant.state_dict(), got {type(state).__name__}"
        )
    if state.get("format") != PLDAccountant.FORMAT:
        raise ValueError(
            f"state is not a plda accountant state (format {state.get('format')!r}, expected "
            f"{PLDAccountant.FORMAT!r})"
        )
    if state.get("version") != PLDAccountant.VERSION:
        raise ValueError(
            f"unsupported accountant state version {state.get('version')!r} (this plda reads "
            f"version {PLDAccountant.VERSION})"
        )
    missing = {"relation", "accuracy", "history"} - set(state)
    if missing:
        raise ValueError(f"accountant state is missing {sorted(missing)}")
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
    return relation, accuracy, history
