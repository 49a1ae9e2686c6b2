"""The one composer: ``*_f law_f^{*k_f}`` by one FFT product of the factors' :class:`Spectrum`
powers, every rounding and the mass outside the window charged (:class:`Composer`; one-shot:
:func:`compose`), and the smallest delta a composition resolves despite that rounding
(:func:`rounding_floor`). The error analysis: docs/concepts/fft-composition.md.
"""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

from plda._internal import fft
from plda._internal.errors import GridTooLarge
from plda._internal.floats import UNIT_ROUNDOFF, error_sum_bound, union_probability
from plda.engine.grouping import group_spectrum, plan_group
from plda.engine.plan import ladder_length
from plda.engine.spectra import Spectrum, from_spectrum, spectrum_of
from plda.grid.discrete import DiscreteLoss
from plda.grid.moments import (
    composed_variance,
    ladder_chernoff,
    ladder_range,
    ladder_start,
    ladder_sums,
    ladder_walk,
)

#: bounds below e^-700 are replaced by e^-700 (still a bound, and exp of deeply underflowing
#: arguments is many times slower than of ordinary ones)
_BOUND_FLOOR = -700.0

#: an FFT composition resolves deltas down to about this fraction of its mass: smaller deltas
#: are answered by a composition under an exponential tilt (:mod:`plda.engine.tilt`)
FFT_FLOOR = 1e-8
#: an untilted composition resolves a delta when its rounding error terms on delta are below
#: this many accuracies times that delta (see :func:`rounding_floor`)
RESOLUTION = 5.0


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
    keep_powers
        With ``keep``: keep each spectrum's binary powers too (False: the spectra alone, for
        a composer of few laws with large counts, whose powers would take most of its bytes).
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
        keep_powers: bool = True,
    ):
        self.tail, self.order_range, self.ladder = tail, order_range, ladder
        self.group = group and not keep
        self.keep, self.from_zero = keep, from_zero
        self.cache_bytes, self.prefixes_kept = cache_bytes, prefixes
        self.keep_powers = keep_powers
        self._spectra: OrderedDict = OrderedDict()
        self._lengths: dict = {}  # id(law) -> the one length its spectrum is kept at
        self._bytes = 0  # of the cached spectra and their powers
        # per (FFT length, first law, last law, size): the factors composed, their running
        # product and error sums, so that a history that only appended factors (a noise
        # schedule changed at every step) multiplies in the new ones
        self._prefixes: OrderedDict = OrderedDict()
        # per (first law, last law, size): the factors, their composed variance and their
        # Chernoff sums per ladder range, extended the same way
        self._ladders: OrderedDict = OrderedDict()
        self._walked = None  # (lowest, highest) ladder index the last walk visited

    def clear(self) -> None:
        """Forget every kept spectrum, running product and Chernoff sum."""
        self._spectra.clear()
        self._lengths.clear()
        self._prefixes.clear()
        self._ladders.clear()
        self._walked = None
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
        """The FFT length :meth:`compose` would choose for these factors.

        A planner reads it to fix the length of a whole stretch of a growing history.

        Parameters
        ----------
        factors
            ``[(law, count), ...]`` on a common grid.

        Returns
        -------
        int
            The FFT length.
        """
        factors = [(f, int(k)) for f, k in factors if k > 0]
        lo, hi, *_ = self._window(factors, factors[0][0].step)
        return self._length(hi - lo + 1, factors)

    def compose(self, factors, max_size: int, length: int = 0) -> DiscreteLoss:
        """The composition ``*_f law_f^{*k_f}``, with certified error terms.

        Parameters
        ----------
        factors
            ``[(law, count), ...]`` on a common grid (factors of count 0 are left out).
        max_size
            The longest FFT allowed.
        length
            The shortest FFT to use (0: the shortest that holds the window).

        Returns
        -------
        DiscreteLoss
            The composed law, of the factors' version (pessimistic or optimistic).

        Raises
        ------
        GridTooLarge
            When the FFT would be longer than ``max_size``.
        ValueError
            When no factor has a positive count.
        """
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
        group = group_spectrum([factors[i] for i in members], n, Composer()._product)
        return [(group, 1)] + [pair for i, pair in enumerate(factors) if i not in chosen]

    def _window(self, factors, step: float) -> tuple[int, int, int, float, float]:
        """Grid index window ``[lo, hi]`` holding all but ``tail`` of the composed mass on each
        side (exact support cut by Chernoff bounds at the ladder orders), the exact support's
        lowest index, and the Chernoff bounds of the mass below and above the window."""
        lo_exact = sum(k * f.offset for f, k in factors)
        hi_exact = sum(k * (f.offset + len(f.probs) - 1) for f, k in factors)
        # a one-shot composer's cuts from scratch; a keeping one's extend its kept sums
        lo_loss, hi_loss, orders, log_up, log_down = (
            self._kept_chernoff(factors, step) if self.keep
            else ladder_chernoff(factors, self.tail, self.order_range, step))
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

    def _kept_chernoff(self, factors, step: float) -> tuple:
        """:func:`~plda.grid.moments.ladder_chernoff` of ``factors`` for a composer that keeps
        its Chernoff sums: the cuts, the orders visited and the composed moments there, the sums
        of the longest kept prefix of ``factors`` extended by the new factors, order by order
        (added in the same order, so bit for bit the sums from scratch: a noise schedule's
        query adds its new steps, not all of them)."""
        start, hit = _longest_prefix(self._ladders, factors)
        held = self._ladders[hit] if hit is not None else ([], 0.0, {})
        # the distinct laws come first (see _product): with repeated ones after them, their
        # sums are kept apart too and serve the next query; every sum is extended in order
        singles = max((i + 1 for i, (_, k) in enumerate(factors) if k == 1), default=0)
        split = singles if start < singles < len(factors) else start
        head = composed_variance(factors[start:split], held[1])
        variance = composed_variance(factors[split:], head)
        j0, j1 = ladder_range(variance, self.order_range, step)
        kept, heads, wholes = held[2], {}, {}
        # a kept history's laws meet many compositions whose walks start at different orders:
        # each computes at once the orders the last walk visited, one more on either side (a
        # history's walks drift slowly; the whole range held twice the orders ever visited),
        # and the whole range before the first walk; the moments do not depend on the batch
        batch = (j0, j1)
        if self._walked is not None:
            batch = (max(j0, self._walked[0] - 1), min(j1, self._walked[1] + 1))
        visited = []

        def sums_at(j: int) -> tuple[float, float]:
            visited.append(j)
            sums, first = kept.get(j), start
            if sums is None:  # not kept at this order: from scratch
                first = 0
            if split > first:  # the head's sums are kept for the next query
                sums = heads[j] = ladder_sums(factors[first:split], j, j, sums, batch)
                first = split
            up, down = wholes[j] = ladder_sums(factors[first:], j, j, sums, batch)
            return float(up[0]), float(down[0])

        cuts = ladder_walk(sums_at, j0, j1, ladder_start(variance, self.tail, step, j0, j1),
                           self.tail)
        self._walked = (min(visited), max(visited))
        if heads:
            self._keep_ladder(factors[:split], head, heads)
        if len(factors) > 1:
            self._keep_ladder(factors, variance, wholes)
        return cuts

    def _keep_ladder(self, factors, variance: float, sums: dict) -> None:
        key = (id(factors[0][0]), id(factors[-1][0]), len(factors))
        held = self._ladders.get(key)
        if held is None or not _starts_with(factors, held[0]):
            held = self._ladders[key] = (list(factors), variance, {})
        held[2].update(sums)
        self._ladders.move_to_end(key)
        while len(self._ladders) > self.prefixes_kept:
            self._ladders.popitem(last=False)

    def _product(self, factors, n: int):
        """Spectrum of the composition at length ``n``, ``log`` of its componentwise bound and
        the relative error of the computed product (see :class:`Spectrum`).
        A kept running product of a prefix of ``factors`` is extended by the new factors only:
        the same products in the same order, so the result is bit for bit the one computed
        from scratch."""
        spectrum = log_bound = hit = None
        relative, start = 0.0, 0
        if self.keep:
            start, hit = _longest_prefix(self._prefixes, factors, length=n)
        if hit is not None:
            _, spectrum, log_bound, relative = self._prefixes[hit]
            self._prefixes.move_to_end(hit)
        # the running product is also kept after the last factor of count 1 (a history's
        # distinct per-step laws come first, repeated ones last, see plda.accounting): the
        # next query, with more steps of the repeated laws, resumes from there
        singles = max((i + 1 for i, (_, k) in enumerate(factors) if k == 1), default=0)
        owned = False  # once this call owns the running arrays (not a kept prefix's, nor a
        # spectrum's powers) they are updated in place: the same operations, no new arrays
        for i, (f, k) in enumerate(factors[start:], start=start):
            # a group enters as its spectrum (plda.engine.grouping), a law as itself
            if isinstance(f, Spectrum):
                s = f
            else:
                s = self._spectrum(f, n, k) if self.keep else spectrum_of(f, n)
            if self.keep:
                before = s.nbytes
                x, rounding = s.binary_power(k, self.keep_powers)
                if s.nbytes != before:  # new binary powers were cached
                    self._bytes += s.nbytes - before
                    self._evict()
            else:
                x, rounding = s.log_power(k)
            # |X^k - X_true^k| <= k eta amp^(k-1), plus the rounding of the power
            term, error = k * s.amplitude_log, k * s.relative + rounding
            if spectrum is None:
                log_bound, relative, owned = term, relative + error, True
                # a power may be the spectrum's kept array (k a power of two): copied once
                spectrum = x.copy() if any(x is p for p in s.powers) else x
            elif owned:
                log_bound += term
                relative += error
                with np.errstate(over="ignore", invalid="ignore"):  # (as in binary_power)
                    spectrum *= x
            else:
                log_bound, relative = log_bound + term, relative + error
                with np.errstate(over="ignore", invalid="ignore"):
                    spectrum, owned = spectrum * x, True
            if self.keep and i + 1 == singles and 1 < singles < len(factors):
                self._keep_prefix(n, factors[:singles], spectrum, log_bound, relative)
                owned = False  # held by the kept prefix now
        if self.keep and len(factors) > 1 and start < len(factors):
            self._keep_prefix(n, factors, spectrum, log_bound, relative)
        return spectrum, log_bound, relative

    def _keep_prefix(self, n, factors, spectrum, log_bound, relative) -> None:
        # keyed by length, first and last law and size (the laws are held, so ids stay unique)
        key = (n, id(factors[0][0]), id(factors[-1][0]), len(factors))
        self._prefixes[key] = (list(factors), spectrum, log_bound, relative)
        while len(self._prefixes) > self.prefixes_kept:
            self._prefixes.popitem(last=False)


def _longest_prefix(store, factors, length: int | None = None) -> tuple[int, object]:
    """``(size, key)`` of the longest kept prefix of ``factors`` in ``store`` (each value
    starting with its factor list; with ``length``, among the keys of that FFT length), or
    ``(0, None)``. Laws are compared by identity (a kept list holds them, so ids stay unique)."""
    start, hit = 0, None
    for key, held in store.items():
        kept = held[0]
        size = len(kept)
        if (
            (length is None or key[0] == length)
            and start < size <= len(factors)
            and _starts_with(factors, kept)
        ):
            start, hit = size, key
    return start, hit


def _starts_with(factors, kept) -> bool:
    """Whether ``factors`` begins with the kept list (laws by identity, counts equal; the last
    law compared first, as a different list almost always differs there)."""
    size = len(kept)
    # list equality compares in C: identical entries first, then (law, count) tuples, whose
    # laws (DiscreteLoss, Spectrum: eq=False) compare by identity, counts by value
    return (size <= len(factors) and kept[-1][0] is factors[size - 1][0]
            and list(factors[:size]) == kept)


def rounding_floor(versions: dict, accuracy: float) -> float:
    """The smallest delta that an untilted composition resolves to the accuracy.

    Its upper version's delta carries a floating-point error term of at most
    ``F = min(e n, e_2 sqrt(n)) + 4 n u`` (``e``, ``e_2``: its entry and L2 error, ``n`` its
    length; see :meth:`plda.grid.discrete.DiscreteLoss.delta`), which a finer grid does not
    shrink (it grows with ``n``). An error ``F`` moves ``epsilon(delta)`` by about
    ``F / (delta d log delta / d epsilon)``, and ``d log delta / d log epsilon`` is 20-40 for
    DP-SGD at deltas 1e-5 to 1e-10 (measured: at ``F = 10 accuracy delta`` the gap is within
    the accuracy, at 30 it is not). Below ``F / (RESOLUTION * accuracy)`` refining the grid is
    wasted and the exponentially tilted composition answers instead.

    Parameters
    ----------
    versions
        ``{direction: pair}``: a composition's versions on a grid (the leading direction's
        upper version is read).
    accuracy
        The requested relative gap of epsilon.

    Returns
    -------
    float
        The floor, at least :data:`FFT_FLOOR`.
    """
    law = next(iter(versions.values())).upper
    n = len(law.probs)
    rounding = error_sum_bound(law.entry_error, law.l2_error, n) + 4 * n * UNIT_ROUNDOFF
    floor = rounding / (RESOLUTION * accuracy)
    return max(FFT_FLOOR, floor) if math.isfinite(floor) else 1.0


def compose(factors, tail: float = 1e-20, max_size: int = 1 << 23) -> DiscreteLoss:
    """The composition ``*_f law_f^{*k_f}`` by a one-shot :class:`Composer`.

    The mass outside the window wraps around and is bounded by the Chernoff tails: an upper
    version moves the upper tail bound to ``+inf``; a lower version records both tails as
    ``spurious_mass`` to subtract. Rounding is bounded per entry (``entry_error``) and in L2
    (``l2_error``). Narrow factors are composed first as one group when that saves transforms
    (:mod:`plda.engine.grouping`).

    Parameters
    ----------
    factors
        ``[(law, count), ...]`` on a common grid.
    tail
        Composed mass allowed outside the window on each side.
    max_size
        The longest FFT allowed.

    Returns
    -------
    DiscreteLoss
        The composed law, with certified error terms.
    """
    return Composer(tail=tail, group=True).compose(factors, max_size)
