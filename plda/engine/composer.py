"""The one composer: ``*_f law_f^{*k_f}`` by one FFT product, with certified error terms.

Each factor's transform is kept as a :class:`Spectrum` with its componentwise error bound
(:func:`spectrum_of`); powers are taken from binary powers (a history whose counts grow) or as
``exp(k log X)`` (one-shot compositions). :class:`Composer` multiplies them: one-shot
(:func:`compose`, what a :class:`~plda.pld.PrivacyLossDistribution` runs) or keeping spectra,
powers and running products (:class:`~plda.PLDAccountant`'s, so that a history that grows by
appending factors multiplies in only the new ones). Every rounding is charged: the transforms,
the folding onto ``n`` points, the powers and products, the inverse transform
(:func:`from_spectrum`), and the mass outside the Chernoff window, which wraps around and is
charged to ``+inf`` (pessimistic version) or subtracted (optimistic version). The error
analysis: docs/concepts/fft-composition.md.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import InitVar, dataclass, field

import numpy as np

from plda._internal import fft
from plda._internal.errors import GridTooLarge
from plda._internal.floats import UNIT_ROUNDOFF, dot, union_probability
from plda.engine.grouping import group_spectrum, plan_group
from plda.grid.discrete import DiscreteLoss
from plda.grid.moments import ladder_chernoff

#: powers whose bound falls below e^LOG_FLOOR are set to 0 and charged in full (their values
#: are below the smallest normal double; computing them costs many times an ordinary exp)
LOG_FLOOR = -740.0


@dataclass(eq=False)
class Spectrum:
    """rfft of one discretized law folded onto ``n`` points, its error terms and the binary
    powers ``X^(2^j)`` computed so far (``powers[0]`` is ``X``), built from ``X`` and ``eta``,
    a componentwise bound of its rounding."""

    powers: list
    eta: InitVar[np.ndarray]
    amplitude_log: np.ndarray = field(init=False)  # log(|X| + eta): |true X|, |computed X| below
    relative: np.ndarray = field(init=False)  # eta / (|X| + eta)
    nbytes: int = field(init=False)  # kept up to date as powers are added (caches read it)

    def __post_init__(self, eta):
        amplitude = np.abs(self.powers[0]) + eta
        with np.errstate(divide="ignore"):  # an all-zero law has amplitude 0 where eta is 0
            self.amplitude_log = np.log(amplitude)
            positive = amplitude > 0
            self.relative = np.where(positive, eta / np.where(positive, amplitude, 1.0), 0.0)
        self.nbytes = sum(p.nbytes for p in self.powers) + 2 * self.amplitude_log.nbytes

    def binary_power(self, k: int) -> tuple[np.ndarray, float]:
        """``X^k`` as the product of the binary powers of ``X`` (ascending order: the result
        depends on ``k`` only, not on which powers were cached before), and the relative
        rounding it adds: ~``k + 2 log2 k`` products (relative errors double under squaring,
        so the squarings add up to ``k`` roundings)."""
        out = None
        j, rest = 0, k
        while rest:
            while len(self.powers) <= j:
                last = self.powers[-1]
                self.powers.append(last * last)
                self.nbytes += last.nbytes
            if rest & 1:
                if out is None:
                    out = self.powers[j].copy()
                else:
                    out *= self.powers[j]
            rest >>= 1
            j += 1
        return out, 8 * UNIT_ROUNDOFF * (k + 2 * k.bit_length())

    def log_power(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``X^k = exp(k log X)`` and its relative rounding ``8u (1 + |k log X|)`` (small where
        ``|X| ~ 1`` with a small phase, the frequencies that carry the mass); where
        ``k log(|X| + eta)`` is below :data:`LOG_FLOOR` the power is set to 0 and its whole
        value (at most the bound) is charged as error."""
        x = self.powers[0]
        if k == 1:
            return x.copy(), np.full(len(x), 4 * UNIT_ROUNDOFF)
        band = k * self.amplitude_log > LOG_FLOOR
        out = np.zeros(len(x), dtype=complex)
        relative = np.ones(len(x))  # outside the band: all of the (tiny) value is error
        with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
            log_x = k * np.log(x[band])
            out[band] = np.exp(log_x)
            relative[band] = 8 * UNIT_ROUNDOFF * (1 + np.abs(np.nan_to_num(log_x, neginf=0.0)))
        return out, relative


def spectrum_of(law, n: int) -> Spectrum:
    """The :class:`Spectrum` of ``law.probs`` at FFT length ``n``.

    A law longer than ``n`` is folded modulo ``n`` first: cyclic convolution of inputs folded
    modulo ``n`` is the exact convolution folded modulo ``n``, so folding only adds to the
    wrap-around that the composition window charges; its rounding (``layers`` additions per
    entry) is added to ``eta``."""
    probs = law.probs
    layers = -(-len(probs) // n)
    if layers > 1:
        padded = np.zeros(layers * n)
        padded[: len(probs)] = probs
        probs = padded.reshape(layers, n).sum(axis=0)
    x = fft.rfft(probs, n)
    l1 = float(np.sum(law.probs))
    eta = fft.transform_error(n, l1) + 2 * layers * UNIT_ROUNDOFF * l1
    if law.entry_error > 0 or law.l2_error > 0:
        # a composed law entering another composition is the exact one up to an error vector e
        # with |e_i| <= entry_error and ||e||_2 <= l2_error (clipping at 0 and folding only
        # shrink it); its exact transform is then off the computed one by at most
        # ||e||_1 <= min(len * entry_error, sqrt(len) * l2_error) at every frequency, on top
        # of the transform's own rounding. (A discretized law has both at 0: nothing added.)
        size = len(law.probs)
        eta += min(law.entry_error * size, law.l2_error * math.sqrt(size))
    return Spectrum(powers=[x], eta=eta)


def ladder_length(width: int) -> int:
    """Smallest FFT length ``>= width`` of the form ``2^a``, ``5 * 2^a`` or ``3 * 2^a`` with
    ratio at most 3/2 between neighbours (all fast for pyFFTW and scipy.fft); at least 16.
    Lengths on this ladder change rarely as a composition grows, so a history's spectra and
    their powers are reused across many queries, and waste at most a quarter of the
    transform on padding."""
    width = max(int(width), 16)
    power = 1 << (width - 1).bit_length()  # smallest power of two >= width
    for candidate in (power * 5 // 8, power * 3 // 4):
        if candidate >= width:
            return candidate
    return power


# -------------------------------------------------------------------------- the composer
#: bounds below e^-700 are replaced by e^-700 (still a bound, and exp of deeply underflowing
#: arguments is many times slower than of ordinary ones)
_BOUND_FLOOR = -700.0


class Composer:
    """Composes discretized laws by FFT; optionally keeps what a growing history reuses.

    Parameters
    ----------
    tail
        Composed mass allowed outside the FFT window on each side (charged to ``+inf`` by a
        pessimistic version, subtracted by an optimistic one).
    order_range
        Chernoff orders for the window, in units of ``1 / spread`` of the composed law.
    ladder
        FFT lengths on the ladder ``2^a * {1, 5/4, 3/2}`` (they stay put while a history
        grows) instead of the shortest fast length.
    keep
        Keep spectra (up to ``cache_bytes``), binary powers and running products across
        calls (a history's composer); otherwise powers are ``exp(k log X)`` and nothing is
        kept.
    from_zero
        Return only losses ``>= 0`` (all that ``delta(eps)`` for ``eps >= 0`` reads; the
        transform is unchanged, so nothing wraps).
    group
        Compose the narrow factors first as one group on a short FFT of their exact support
        and enter the group as one factor of the long product (one-shot composers only: a
        history's composer reuses per-factor spectra instead; see
        :mod:`plda.engine.grouping`).
    """

    def __init__(
        self,
        *,
        tail: float = 1e-20,
        order_range: tuple[float, float] = (0.25, 64.0),
        ladder: bool = False,
        keep: bool = False,
        from_zero: bool = False,
        cache_bytes: int = 512 << 20,
        prefixes: int = 8,
        group: bool = False,
    ):
        self.tail, self.order_range, self.ladder = tail, order_range, ladder
        self.group = group and not keep
        self.keep, self.from_zero = keep, from_zero
        self.cache_bytes, self.prefixes_kept = cache_bytes, prefixes
        self._spectra: OrderedDict = OrderedDict()
        self._lengths: dict = {}  # id(law) -> the one length its spectrum is kept at
        self._bytes = 0  # of the cached spectra and their powers
        # per (FFT length, first law, last law, size): the factors composed, their running
        # product and error sums, so that a history that only appended factors (a noise
        # schedule changed at every step) multiplies in the new ones
        self._prefixes: OrderedDict = OrderedDict()

    def clear(self) -> None:
        """Forget every kept spectrum and running product."""
        self._spectra.clear()
        self._lengths.clear()
        self._prefixes.clear()
        self._bytes = 0

    def _spectrum(self, law: DiscreteLoss, n: int, count: int) -> Spectrum:
        """The spectrum of ``law`` at length ``n`` for a composer that keeps spectra; kept if
        ``count > 1``. A law of count 1 (one step of a noise schedule) is carried forward by
        the running product it enters; keeping its spectrum too would double the memory of a
        long schedule for nothing (it is needed again only at another length, where it is
        recomputed anyway)."""
        key = (id(law), n)
        hit = self._spectra.get(key)
        if hit is not None and hit[0] is law:
            self._spectra.move_to_end(key)
            return hit[1]
        spectrum = spectrum_of(law, n)
        if count == 1:
            return spectrum
        # one length per law: a growing history moves to longer transforms and does not come
        # back, so the spectra (and powers) at the length it left are dropped, not kept until
        # the byte budget pushes them out
        stale = self._lengths.pop(id(law), None)
        if stale is not None:
            old = self._spectra.pop((id(law), stale), None)
            if old is not None:
                self._bytes -= old[1].nbytes
        self._spectra[key] = (law, spectrum)  # the law is held, so its id stays unique
        self._lengths[id(law)] = n
        self._bytes += spectrum.nbytes
        self._evict()
        return spectrum

    def _evict(self) -> None:
        while self._bytes > self.cache_bytes and len(self._spectra) > 1:
            (law_id, n), (_, old) = self._spectra.popitem(last=False)
            self._bytes -= old.nbytes
            if self._lengths.get(law_id) == n:
                del self._lengths[law_id]

    def _length(self, width: int, factors) -> int:
        if self.ladder:
            return ladder_length(width)
        return fft.good_size(max(width, 16))

    def length(self, factors) -> int:
        """The FFT length :meth:`compose` would choose for ``factors`` (a planner reads it to
        fix the length of a whole stretch of a growing history)."""
        factors = [(f, int(k)) for f, k in factors if k > 0]
        lo, hi, *_ = self._window(factors, factors[0][0].step)
        return self._length(hi - lo + 1, factors)

    def compose(self, factors, max_size: int, length: int = 0) -> DiscreteLoss:
        """``*_f law_f^{*k_f}`` for ``factors = [(law, count), ...]`` on a common grid, with
        certified error terms, on an FFT of at least ``length`` points; raises
        :class:`~plda._internal.errors.GridTooLarge` when the FFT would be longer than
        ``max_size``."""
        factors = [(f, int(k)) for f, k in factors if k > 0]
        if not factors:
            raise ValueError("compose needs at least one factor with a positive count")
        first = factors[0][0]
        if len(factors) == 1 and factors[0][1] == 1:
            return first
        step = first.step
        infinity = union_probability(((f.infinity_mass, k) for f, k in factors), upper=first.upper)
        lo, hi, lo_exact, below, above = self._window(factors, step)
        width = hi - lo + 1
        n = max(self._length(width, factors), length)
        if n > max_size:
            raise GridTooLarge(n, max_size)
        # the window, the infinite mass and every other field of the result come from the
        # factors themselves; only the product may run over a group of them (composed exactly
        # on its own support, its rounding carried into its spectrum's error)
        # (two factors or one: grouping them all is the composition itself, see plan_group)
        product = self._grouped(factors, n) if self.group and len(factors) > 2 else factors
        spectrum, log_bound, relative = self._product(product, n)
        bound = np.full(len(log_bound), math.exp(_BOUND_FLOOR))
        with np.errstate(over="ignore"):  # an error bound past 1e308 is inf: nothing certified
            np.exp(log_bound, out=bound, where=log_bound > _BOUND_FLOOR)
        # losses <= 0 add nothing to delta(eps) = sum p_i (1 - e^(eps - l_i))_+ for eps >= 0:
        # a profile-only composer reads the window out from loss 0 on (the cyclic positions
        # below it are still part of the transform, so nothing wraps)
        start = min(max(0, lo), hi) - lo if self.from_zero else 0
        window = (lo + start, width - start, lo_exact, below, above)
        return from_spectrum(factors, spectrum, bound, relative, n, window, infinity)

    def _grouped(self, factors, n: int) -> list:
        """``factors`` with the group chosen by :func:`plda.engine.grouping.plan_group` for an
        FFT of length ``n`` replaced, first, by the spectrum of its exact composition with its
        certified error (:func:`plda.engine.grouping.group_spectrum`)."""
        members = plan_group([(len(f.probs), k) for f, k in factors], n)
        if not members:
            return factors
        chosen = set(members)
        # the group's own product: a one-shot composer's (exp(k log X) powers, nothing kept)
        x, eta = group_spectrum([factors[i] for i in members], n, Composer()._product)
        rest = [pair for i, pair in enumerate(factors) if i not in chosen]
        return [(Spectrum(powers=[x], eta=eta), 1), *rest]

    def _window(self, factors, step: float) -> tuple[int, int, int, float, float]:
        """Grid index window ``[lo, hi]`` holding all but ``tail`` of the composed mass on each
        side (exact support cut by Chernoff bounds at the ladder orders), the exact support's
        lowest index, and the Chernoff bounds of the mass below and above the window."""
        lo_exact = sum(k * f.offset for f, k in factors)
        hi_exact = sum(k * (f.offset + len(f.probs) - 1) for f, k in factors)
        lo_loss, hi_loss, orders, log_up, log_down = ladder_chernoff(
            factors, self.tail, self.order_range, step
        )
        # no finite mass at all (e.g. delta = 1) leaves the moments at -inf: the exact support
        if math.isfinite(hi_loss):
            hi = int(min(hi_exact, math.ceil(hi_loss / step) + 1))
        else:
            hi = hi_exact
        if math.isfinite(lo_loss):
            lo = int(max(lo_exact, math.floor(lo_loss / step) - 1))
        else:
            lo = lo_exact
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
        return lo, hi, lo_exact, below, above

    def _product(self, factors, n: int):
        """Spectrum of the composition at length ``n``, ``log`` of its componentwise bound and
        the relative error of the computed product (see :class:`Spectrum`).
        A kept running product of a prefix of ``factors`` is extended by the new factors only:
        the same products in the same order, so the result is bit for bit the one computed
        from scratch."""
        spectrum = log_bound = None
        relative = 0.0
        start, hit = 0, None
        if self.keep:
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
        # the running product is also kept after the last factor of count 1 (a history's
        # distinct per-step laws come first, repeated ones last, see plda.accounting): the
        # next query, with more steps of the repeated laws, resumes from there
        singles = max((i + 1 for i, (_, k) in enumerate(factors) if k == 1), default=0)
        for i, (f, k) in enumerate(factors[start:], start=start):
            # a group enters as its spectrum (plda.engine.grouping), a law as itself
            if isinstance(f, Spectrum):
                s = f
            else:
                s = self._spectrum(f, n, k) if self.keep else spectrum_of(f, n)
            term = k * s.amplitude_log
            log_bound = term if log_bound is None else log_bound + term
            if self.keep:
                before = s.nbytes
                x, rounding = s.binary_power(k)
                if s.nbytes != before:  # new binary powers were cached
                    self._bytes += s.nbytes - before
                    self._evict()
            else:
                x, rounding = s.log_power(k)
            # |X^k - X_true^k| <= k eta amp^(k-1), plus the rounding of the power
            relative = relative + (k * s.relative + rounding)
            spectrum = x if spectrum is None else spectrum * x
            if self.keep and i + 1 == singles and 1 < singles < len(factors):
                self._keep_prefix(n, factors[:singles], spectrum, log_bound, relative)
        if self.keep and len(factors) > 1 and start < len(factors):
            self._keep_prefix(n, factors, spectrum, log_bound, relative)
        return spectrum, log_bound, relative

    def _keep_prefix(self, n, factors, spectrum, log_bound, relative) -> None:
        # keyed by length, first and last law and size (the laws are held, so ids stay unique)
        key = (n, id(factors[0][0]), id(factors[-1][0]), len(factors))
        self._prefixes[key] = (list(factors), spectrum, log_bound, relative)
        while len(self._prefixes) > self.prefixes_kept:
            self._prefixes.popitem(last=False)


def compose(factors, tail: float = 1e-20, max_size: int = 1 << 23) -> DiscreteLoss:
    """Exact-up-to-certified-error composition ``*_f law_f^{*k_f}`` by one FFT product (a
    one-shot :class:`Composer`).

    The result lives on a window holding all but ``tail`` of the composed mass on each side; the
    mass outside it wraps around (cyclic convolution) and is bounded by the Chernoff tails: an
    upper version moves the upper tail bound to ``+inf`` and keeps wrapped mass (it only
    increases delta); a lower version records both tails as ``spurious_mass`` to subtract.
    Floating-point error of the transforms and powers is bounded per entry (``entry_error``) and
    in L2 (``l2_error``): the componentwise transform bound of
    :func:`plda._internal.fft.transform_error` carried through the powers frequency by frequency.

    Narrow factors are composed first as one group when that saves transforms
    (:mod:`plda.engine.grouping`); the bounds stay certified, the group's rounding carried into
    the error terms.
    """
    return Composer(tail=tail, group=True).compose(factors, max_size)


def from_spectrum(factors, spectrum, bound, relative, n, window, infinity) -> DiscreteLoss:
    """The composed grid law from its spectrum and the certified error terms.

    ``bound[j] >= |Y_j|`` and ``relative[j] * bound[j] >= |computed Y_j - Y_j|`` (the caller's
    forward transforms and powers); ``window = (lo, width, base, below, above)`` places the
    cyclic result (``base`` is the grid index of spectrum position 0) and gives the Chernoff
    tail bounds outside it.
    """
    lo, width, base, below, above = window
    first = factors[0][0]
    y = fft.irfft(spectrum, n)
    # |dy_t| <= (2/n) sum_j |dY_j| (real inverse transform) plus the inverse transform's own error
    inverse_error = fft.transform_error(n, 2.0 / n * float(bound.sum()))
    weighted = bound * relative
    entry_error = 2.0 / n * float(weighted.sum()) + inverse_error
    # Parseval: ||dy||_2 = ||dY||_2 / sqrt(n), |dY_j| counted twice for the conjugate half
    l2_error = math.sqrt(2.0 / n * dot(weighted, weighted)) + math.sqrt(n) * inverse_error
    # the window starts at cyclic position (lo - base) mod n (a rotation by slicing: np.roll
    # costs several times as much at these lengths)
    shift = (lo - base) % n
    if shift + width <= n:
        y = y[shift : shift + width]
    else:
        y = np.concatenate((y[shift:], y[: shift + width - n]))
    # entries are exact probabilities up to entry_error: clipping at 0 only moves toward the truth
    np.maximum(y, 0.0, out=y)
    # composed losses are sums of the factors' losses: their errors add (1e-9: rounding of the sum)
    loss_error = sum(k * f.loss_error for f, k in factors) * (1 + 1e-9)
    if first.upper:
        chernoff = all(f.log_mgf is not None for f, _ in factors)
        return DiscreteLoss(
            step=first.step,
            offset=lo,
            probs=y,
            infinity_mass=min(1.0, infinity + above),
            upper=True,
            entry_error=entry_error,
            log_mgf=sum(k * f.log_mgf for f, k in factors) if chernoff else None,
            chernoff_infinity_mass=union_probability(
                ((f.chernoff_infinity_mass, k) for f, k in factors), upper=True
            ),
            l2_error=l2_error,
            loss_error=loss_error,
        )
    # spurious mass the factors bring in: a factor ``f`` holding ``exact_f + spurious_f``
    # (``spurious_f >= 0`` of mass at most ``s_f``) composes to at most ``conv(exact) +
    # (prod_f (m_f + s_f)^{k_f} - prod_f m_f^{k_f})`` where the exact law has mass, ``m_f <= 1``
    # the exact finite masses; the excess is at most ``prod (1 + s_f)^{k_f} - 1 <= e^S - 1 <=
    # S (1 + S)`` for ``S = sum_f k_f s_f <= 1`` (rounded up by a few ulps). Discretized laws
    # carry none: 0 then, exactly.
    carried = sum(k * f.spurious_mass for f, k in factors)
    if carried <= 0:
        carried = 0.0
    elif carried <= 1:
        carried = min(1.0, carried * (1 + carried) * (1 + 8 * UNIT_ROUNDOFF))
    else:
        carried = 1.0
    return DiscreteLoss(
        step=first.step,
        offset=lo,
        probs=y,
        infinity_mass=infinity,
        upper=False,
        entry_error=entry_error,
        spurious_mass=below + above + carried,
        l2_error=l2_error,
        loss_error=loss_error,
    )
