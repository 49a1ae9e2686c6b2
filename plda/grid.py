"""The discrete privacy-loss distribution on a grid, its composition and its privacy profile.

A :class:`DiscreteLoss` is the law of the privacy loss ``L = log(dP/dQ)`` under ``P`` for one
ordered pair (one direction of the neighbouring relation), supported on ``l_i = i * step`` for
``i = offset, ..., offset + len(probs) - 1`` plus a mass at ``+inf``. It is either an *upper*
(pessimistic) or a *lower* (optimistic) version: every quantity computed from an upper version
bounds the true one from above, and from a lower version from below.

Privacy profile (hockey-stick divergence):
``delta(eps) = P(L = inf) + sum_i p_i (1 - exp(eps - l_i))_+`` (Meiser & Mohammad 2018;
Sommer et al. 2019). Between two grid points it has the closed form ``A_j - exp(eps) B_j``, so
``epsilon(delta)`` is solved exactly segment by segment, with no bisection.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import numpy as np
import scipy.signal

from plda import fft
from plda._internal.caches import register
from plda._internal.chernoff import CHERNOFF_LOG_C, CHERNOFF_ORDERS
from plda._internal.errors import GridTooLarge
from plda._internal.floats import union_probability
from plda._internal.linalg import dot

_U = fft.UNIT_ROUNDOFF
#: block length of the crossing search of :meth:`DiscreteLoss.epsilon` for a few deltas
_BLOCK = 256
#: at most this many deltas use the block search; more share the full segment arrays
_LOCAL_QUERIES = 4


@dataclass(frozen=True, eq=False)
class DiscreteLoss:
    """Privacy-loss law of one ordered pair on the grid ``l_i = i * step``.

    Parameters
    ----------
    step
        Grid spacing ``h > 0`` of the losses.
    offset
        Grid index of ``probs[0]`` (its loss is ``offset * step``).
    probs
        Non-negative masses of the finite losses.
    infinity_mass
        Mass at ``L = +inf`` (outputs possible under ``P`` only).
    upper
        True for a pessimistic version (bounds from above), False for an optimistic one.
    entry_error
        Bound on the floating-point error of every entry of ``probs`` (from FFT composition).
    spurious_mass
        Mass that may sit in ``probs`` without being in the exact law (FFT wrap-around); an
        optimistic version subtracts it, a pessimistic one may keep it.
    log_mgf
        ``log E[exp(t L); L finite]`` at the orders ``CHERNOFF_ORDERS`` (upper versions only):
        a Chernoff tail bound that takes over where ``delta`` is below the FFT's resolution.
    """

    step: float
    offset: int
    probs: np.ndarray
    infinity_mass: float = 0.0
    upper: bool = True
    entry_error: float = 0.0
    spurious_mass: float = 0.0
    log_mgf: np.ndarray | None = field(default=None, repr=False)
    chernoff_infinity_mass: float = 0.0
    #: Euclidean norm bound of the error vector of ``probs`` (Cauchy–Schwarz alternative)
    l2_error: float = 0.0
    #: exponentially tilted composition (see :func:`compose_tilted`): the error terms above
    #: refer to the tilted law, whose entry ``i`` is ``probs[i] * exp(tilt * l_i - log_scale)``
    tilt: float = 0.0
    log_scale: float = 0.0
    #: losses below this were left out (a tilted law is only used for larger epsilons)
    valid_from: float = -np.inf
    #: how far the grid losses may sit on the unsafe side of the losses they stand for (atoms
    #: and grid points are floats, a few ulps off; snapped atoms): those behind an upper version
    #: are at most this much above ``l_i``, those behind a lower version at most this much below.
    #: ``delta`` is non-decreasing in every loss, so evaluating at ``eps -/+ loss_error`` covers
    #: it; compositions add it up. At eps ~ 1000 a few ulps of loss are 1e-13, which is all of
    #: delta at an atom just above eps (a single Laplace step at eps = eps0 rounded down)
    loss_error: float = 0.0

    # ------------------------------------------------------------------ basics
    @property
    def losses(self) -> np.ndarray:
        """Grid losses ``l_i`` of ``probs``."""
        return (self.offset + np.arange(len(self.probs))) * self.step

    def finite_log_mgf(self, orders: np.ndarray = CHERNOFF_ORDERS) -> np.ndarray:
        """``log sum_i p_i exp(t l_i)`` for each order ``t`` (shifted so nothing overflows)."""
        positive = self.probs > 0
        orders = np.asarray(orders, dtype=float)
        if not positive.any():
            return np.full(len(orders), -np.inf)
        p = self.probs[positive]
        losses = self.losses[positive]
        ref = np.where(orders > 0, losses[-1], losses[0])
        # one matrix of exponents, shifted per order so nothing overflows
        terms = np.exp(orders[:, None] * (losses[None, :] - ref[:, None]))
        return orders * ref + np.log(dot(terms, p))

    def ladder_log_mgf(self, j0: int, j1: int) -> tuple[np.ndarray, np.ndarray]:
        """Upper bounds on ``log E[e^{tL}; L finite]`` and ``log E[e^{-tL}; L finite]`` at the
        ladder orders ``t = 2^(j/2)``, ``j0 <= j <= j1``, cached per order (see
        :func:`_log_mgf_ladder`). A fixed ladder lets callers reuse the moments of a law
        across compositions whose spreads differ."""
        cache = self.__dict__.get("_ladder_cache")
        if cache is None:
            cache = {}
            object.__setattr__(self, "_ladder_cache", cache)
        hit = cache.get((j0, j1))
        if hit is not None:
            return hit
        missing = [j for j in range(j0, j1 + 1) if j not in cache]
        if missing:
            first = min(missing)
            up, down = _log_mgf_ladder(self, first, max(missing))
            for j in range(first, max(missing) + 1):
                cache[j] = (up[j - first], down[j - first])
        pairs = np.array([cache[j] for j in range(j0, j1 + 1)])
        cache[(j0, j1)] = (pairs[:, 0], pairs[:, 1])
        return cache[(j0, j1)]

    def _spread(self) -> tuple[float, float]:
        """Mean and variance of the normalized finite part (cached)."""
        cached = self.__dict__.get("_spread_cache")
        if cached is None:
            mass = self.probs.sum()
            if mass > 0:
                losses = self.losses
                mean = dot(self.probs, losses) / mass
                cached = (mean, dot(self.probs, (losses - mean) ** 2) / mass)
            else:
                cached = (0.0, 0.0)
            object.__setattr__(self, "_spread_cache", cached)
        return cached

    # ----------------------------------------------------------------- profile
    def _exp_neg_losses(self) -> np.ndarray:
        """``exp(-l_i)`` for the grid losses (see :func:`_exp_neg_grid`)."""
        return _exp_neg_grid(self.step, self.offset, len(self.probs))

    def _tail_terms(self, tail_mass, count) -> np.ndarray:
        """``A_j`` (the mass term of ``delta`` on the segment below cut ``j``) from the tail mass
        ``sum_{i >= j} p_i`` and the number of entries ``count = n - j`` above the cut, with
        the floating-point error terms folded in (untilted laws)."""
        n = len(self.probs)
        # rounding of the tail sums: (n u) * sum of magnitudes for the mass, and (3 n u) for the
        # discounted tail S_j of _profile_segments (r^m by repeated products: 2 m u, sums: n u),
        # whose weights e^(eps - l_i) are at most 1, so both are bounded by multiples of the mass
        fp_error = np.minimum(self.entry_error * count, self.l2_error * np.sqrt(count))
        fp_error = fp_error + 4.0 * n * _U * tail_mass
        if self.upper:
            a = self.infinity_mass + tail_mass + fp_error
            return np.where(np.isnan(a), np.inf, a)  # never let NaN through an upper bound
        return self.infinity_mass + tail_mass - fp_error - self.spurious_mass

    def _tail_mass_terms(self) -> tuple[np.ndarray, np.ndarray]:
        """Per grid cut ``j``: ``A_j`` (the tail mass ``sum_{i >= j} p_i`` plus the infinite
        mass, with the floating-point error terms folded in) and the cut ``l_j`` (``+inf`` past
        the last entry)."""
        cached = self.__dict__.get("_tail_cache")
        if cached is not None:
            return cached
        p = self.probs
        n = len(p)
        losses = self.losses
        # suffix sums accumulate the small upper-tail terms first (better relative accuracy)
        tail_mass = np.concatenate([np.cumsum(p[::-1])[::-1], [0.0]])
        count = n - np.arange(n + 1)  # entries strictly above a cut
        if self.tilt:
            # errors of the tilted law scale back by w_i = exp(log_scale - tilt l_i)
            with np.errstate(over="ignore"):
                w = np.exp(self.log_scale - self.tilt * losses)
            w_sum = np.concatenate([np.cumsum(w[::-1])[::-1], [0.0]])
            w2_sum = np.concatenate([np.cumsum((w * w)[::-1])[::-1], [0.0]])
            fp_error = np.minimum(self.entry_error * w_sum, self.l2_error * np.sqrt(w2_sum))
            fp_error = fp_error + 4.0 * n * _U * tail_mass  # as in _tail_terms
            spurious = self.spurious_mass * np.concatenate([w, [0.0]])  # w decreases in l
            if self.upper:
                a = self.infinity_mass + tail_mass + fp_error
                a = np.where(np.isnan(a), np.inf, a)
            else:
                a = self.infinity_mass + tail_mass - fp_error - spurious
        else:
            a = self._tail_terms(tail_mass, count)
        result = (a, np.concatenate([losses, [np.inf]]))
        object.__setattr__(self, "_tail_cache", result)
        return result

    def _segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per grid cut ``j``: ``A_j``, ``B_j = sum_{i >= j} p_i e^(-l_i)`` (the Q-mass above the
        cut) and the loss ``l_j``; ``delta(eps) = A_j - e^eps B_j`` on ``[l_{j-1}, l_j]``. Used
        for tradeoff curves (Q-masses); the profile uses :meth:`_profile_segments`, which
        stays finite at any loss."""
        cached = self.__dict__.get("_segment_cache")
        if cached is not None:
            return cached
        a, cuts = self._tail_mass_terms()
        with np.errstate(over="ignore"):
            scaled = self.probs * self._exp_neg_losses()
        tail_scaled = np.concatenate([np.cumsum(scaled[::-1])[::-1], [0.0]])
        result = (a, tail_scaled, cuts)
        object.__setattr__(self, "_segment_cache", result)
        return result

    segments = _segments  # the public name, for the tradeoff conversions

    def _profile_segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per grid cut ``j``: ``A_j``, ``S_j`` with ``delta(eps) = A_j - e^(eps - l_j) S_j`` on
        ``[l_{j-1}, l_j]``, and the cut ``l_j`` (``+inf`` past the last entry).

        ``S_j = sum_{i >= j} p_i e^(l_j - l_i)`` is the tail discounted *from its own cut*, by
        the recurrence ``S_j = p_j + e^(-h) S_{j+1}``: every weight is at most 1, so nothing
        overflows or underflows at large losses (the form ``A_j - e^eps B_j`` loses ``B_j`` to
        underflow once losses pass ~745 and ``e^eps`` to overflow past ~709, which put lower
        bounds above the truth there). Its rounding is charged in ``A_j`` (see
        :meth:`_tail_terms`)."""
        cached = self.__dict__.get("_profile_cache")
        if cached is not None:
            return cached
        a, cuts = self._tail_mass_terms()
        discount = math.exp(-self.step)
        # S_j for j = n-1 .. 0: a first-order recurrence, run in C by lfilter
        s = np.zeros(len(self.probs) + 1)
        if len(self.probs):
            s[:-1] = scipy.signal.lfilter([1.0], [1.0, -discount], self.probs[::-1])[::-1]
        at_cuts = a - s  # delta at each cut (e^0 = 1); past the last entry only A remains
        # error terms make tiny steps: keep the profile at the cuts monotone
        at_cuts = np.minimum.accumulate(at_cuts)
        result = (a, s, cuts, at_cuts)
        object.__setattr__(self, "_profile_cache", result)
        return result

    def _loss_slack(self, eps: np.ndarray) -> np.ndarray:
        """A shift of ``eps`` that covers :attr:`loss_error` and the rounding of the closed form
        ``A_j - e^(eps - l_j) S_j``: the cut ``l_j`` (within ``|eps| + h`` of ``eps``) is rounded
        by ``u |l_j|``, ``eps - l_j`` by ``u |eps - l_j|``, and ``exp`` and the product by a few
        ``u`` relative, i.e. a few ``u`` of the exponent. Each is a small move of ``eps``, which
        is harmless where ``delta`` is smooth but is all of ``delta`` at a cut just above ``eps``
        (where ``A_j - S_j`` cancels): so ``eps`` is moved, never ``delta`` rescaled."""
        rounding = 8 * _U * (2 * np.abs(eps) + self.step + 1)
        return np.where(np.isfinite(eps), self.loss_error + rounding, 0.0)

    def delta(self, epsilon: np.ndarray) -> np.ndarray:
        """``delta(epsilon)`` of this version (vectorized); an upper version also applies the
        Chernoff bound ``delta <= P(inf) + inf_t c(t) exp(log E[e^{tL}] - t eps)`` with
        ``c(t) = t^t / (t+1)^(t+1)`` and keeps the smaller of the two.

        Both are evaluated at ``eps`` moved by :meth:`_loss_slack` in the safe direction (down
        for an upper version, up for a lower one; ``delta`` does not increase in ``eps``)."""
        given = np.asarray(epsilon, dtype=float)
        slack = self._loss_slack(given)
        eps = given - slack if self.upper else given + slack
        a, s, cuts, _ = self._profile_segments()
        j = np.searchsorted(cuts, eps, side="right")  # first cut strictly above eps
        j = np.minimum(j, len(a) - 1)
        # eps - l_j <= 0 on the segment, so the weight is at most 1 (e^-inf = 0 past the end)
        value = a[j] - np.exp(np.minimum(eps - cuts[j], 0.0)) * s[j]
        unknown = eps < self.valid_from  # below a tilted law's range nothing is claimed
        if self.upper:
            value = np.where(unknown, 1.0, value * (1 + 8 * _U))
            value = np.minimum(value, self._chernoff_delta(eps))
            return np.clip(value, 0.0, 1.0)
        return np.clip(np.where(unknown, 0.0, value), 0.0, 1.0)

    def _chernoff_delta(self, eps: np.ndarray) -> np.ndarray:
        if self.log_mgf is None:
            return np.full(np.shape(eps), np.inf)
        t = CHERNOFF_ORDERS
        log_c = CHERNOFF_LOG_C
        exponent = (self.log_mgf + log_c)[None, :] - np.multiply.outer(np.ravel(eps), t)
        smallest = np.min(exponent, axis=1)
        # a bound that underflows is rounded up to the smallest double, not down to 0 (the true
        # delta of a Gaussian at eps = 1e5 is 3e-5406995: positive, so 0 would under-report)
        with np.errstate(over="ignore"):  # a bound above 1 says nothing; it is clipped later
            bound = np.where(smallest > -np.inf, np.maximum(np.exp(smallest), 5e-324), 0.0)
        bound = bound.reshape(np.shape(eps))
        # 1e-9 relative margin covers rounding in the log-sum-exp of the moments
        return self.chernoff_infinity_mass + bound * (1 + 1e-9)

    def epsilon(self, delta: np.ndarray) -> np.ndarray:
        """Smallest ``eps >= 0`` with ``delta(eps) <= delta`` for this version, solved exactly on
        the piecewise closed form ``A_j - e^(eps - l_j) S_j``; ``inf`` where no finite ``eps``
        reaches ``delta``."""
        d = np.asarray(delta, dtype=float)
        if d.size <= _LOCAL_QUERIES and not self.tilt and "_profile_cache" not in self.__dict__:
            # a few deltas on a fresh law (an accountant query): block search, see _crossing
            return np.array([self._epsilon_one(float(x)) for x in d.ravel()]).reshape(d.shape)
        a, s, cuts, at_cuts = self._profile_segments()
        # first cut j with delta(l_j) <= d  (at_cuts is non-increasing)
        j = np.searchsorted(-at_cuts, -d, side="left")
        found = j < len(at_cuts)
        jj = np.minimum(j, len(at_cuts) - 1)
        left = np.where(jj > 0, cuts[np.maximum(jj - 1, 0)], -np.inf)
        a_j, s_j, cut_j = a[jj], s[jj], cuts[jj]
        with np.errstate(divide="ignore", invalid="ignore"):
            # A - e^(eps - l_j) S = d  <=>  eps = l_j + log(A - d) - log(S)
            solved = cut_j + np.log(np.maximum(a_j - d, 0.0)) - np.log(s_j)
        solved = np.where(s_j > 0, solved, left)
        solved = np.clip(solved, left, cut_j)
        out = np.where(found, solved, np.inf)
        if self.valid_from > -np.inf:
            # a tilted law says nothing below valid_from: an upper bound may not go below it,
            # and a lower bound found below it is replaced by the trivial 0
            out = (
                np.maximum(out, self.valid_from)
                if self.upper
                else np.where(out >= self.valid_from, out, 0.0)
            )
        if self.upper:
            out = np.minimum(out, self._chernoff_epsilon(d))
        # the true epsilon lies on the safe side: move by far more than the rounding in log/exp
        # (1e-12 relative, at least the few u of :meth:`_loss_slack`) and by the loss error
        finite = np.isfinite(out)
        nudge = self._epsilon_nudge(np.where(finite, out, 0.0))
        out = np.where(finite, out + nudge if self.upper else out - nudge, out)
        return np.maximum(out, 0.0)

    def _epsilon_nudge(self, out):
        """Outward move of a solved epsilon: rounding (see :meth:`_loss_slack`) and
        :attr:`loss_error`."""
        return 1e-12 * (1 + np.abs(out)) + 8 * _U * self.step + self.loss_error

    def _crossing(self, d: float) -> tuple[int, float, float]:
        """A cut ``j`` (``0..n``) with ``delta(l_j) <= d < delta(l_{j-1})`` (``n + 1`` if none),
        its tail mass ``sum_{i >= j} p_i`` and its discounted tail ``S_j`` (see
        :meth:`_profile_segments`).

        Found by bisection: over the ``n / _BLOCK`` block starts, then inside the crossing
        block (``O(n)`` vectorized sums, ``O(log n)`` scalar evaluations, none of the full-length
        sequential scans of :meth:`_profile_segments`: an accountant composes a fresh law for
        every query). Bisection keeps ``delta(l_{j-1}) > d``, which is all either version
        needs: an upper version may solve on any cut at or below ``d``; for a lower version the
        true ``delta`` exceeds ``d`` up to ``l_{j-1}`` (it is above the lower one, and
        non-increasing), so the epsilon solved on segment ``j`` stays below the true one."""
        p = self.probs
        n = len(p)
        nb = -(-n // _BLOCK)
        padded = np.zeros(nb * _BLOCK)
        padded[:n] = p
        blocks = padded.reshape(nb, _BLOCK)
        # weights r^m, r = e^-h, within a block: each block's sum discounted to its start
        weights = np.exp(-self.step * np.arange(_BLOCK))
        mass_sums = blocks.sum(axis=1).tolist()
        discounted = dot(blocks, weights).tolist()
        r_block = math.exp(-self.step * _BLOCK)
        mass, scaled = [0.0] * (nb + 1), [0.0] * (nb + 1)
        for b in range(nb - 1, -1, -1):  # tails at block starts, discounted to each start
            mass[b] = mass_sums[b] + mass[b + 1]
            scaled[b] = discounted[b] + r_block * scaled[b + 1]
        starts = [min(b * _BLOCK, n) for b in range(nb + 1)]
        k = self._bisect(d, starts, mass, scaled)
        if k > nb:
            return n + 1, 0.0, 0.0
        if k == 0:
            return 0, mass[0], scaled[0]
        lo, hi = starts[k - 1], starts[k]
        # tails at the cuts lo+1..hi from the block's own entries and the tail beyond it
        local = padded[lo + 1 : hi][::-1]
        r = math.exp(-self.step)
        local_mass = (np.cumsum(local)[::-1] + mass[k]).tolist() + [mass[k]]
        tail_from = scipy.signal.lfilter([1.0], [1.0, -r], local)[::-1]
        carry = scaled[k] * r ** np.arange(hi - lo - 1, 0, -1)  # S_hi discounted down to j
        local_scaled = (tail_from + carry).tolist() + [scaled[k]]
        cuts = list(range(lo + 1, hi + 1))
        first = self._bisect(d, cuts, local_mass, local_scaled)
        first = min(first, len(cuts) - 1)  # the block's last cut is its end, known to cross
        return cuts[first], local_mass[first], local_scaled[first]

    def _bisect(self, d: float, cuts: list, mass: list, scaled: list) -> int:
        """Smallest index ``i`` with ``delta(l_{cuts[i]}) <= d`` (``len(cuts)`` if none),
        ``delta`` at a cut being ``A_j - S_j`` from its tail sums."""
        n = len(self.probs)
        lo, hi = 0, len(cuts)
        while lo < hi:
            mid = (lo + hi) // 2
            a = self._scalar_tail_term(n - cuts[mid], mass[mid])
            if a - scaled[mid] <= d:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _scalar_tail_term(self, count: int, tail_mass: float) -> float:
        """:meth:`_tail_terms` for one cut, in scalar arithmetic (untilted laws)."""
        fp_error = min(self.entry_error * count, self.l2_error * math.sqrt(count))
        fp_error += 4.0 * len(self.probs) * _U * tail_mass
        if self.upper:
            a = self.infinity_mass + tail_mass + fp_error
            return math.inf if math.isnan(a) else a
        return self.infinity_mass + tail_mass - fp_error - self.spurious_mass

    def _epsilon_one(self, d: float) -> float:
        """:meth:`epsilon` at one ``d`` for an untilted law, in scalar arithmetic on the cut
        found by :meth:`_crossing` (the same closed form, error terms and margins)."""
        n = len(self.probs)
        j, tail_mass, s = self._crossing(d)
        if j > n:
            out = math.inf
        else:
            a = self._scalar_tail_term(n - j, tail_mass)
            left = (self.offset + j - 1) * self.step if j > 0 else -math.inf
            cut = (self.offset + j) * self.step if j < n else math.inf
            if s > 0:
                out = cut + math.log(a - d) - math.log(s) if a > d else -math.inf
            else:
                out = left
            out = min(max(out, left), cut)
        if self.upper and self.log_mgf is not None:
            room = d - self.chernoff_infinity_mass
            if room > 0:
                exponent = self.log_mgf + CHERNOFF_LOG_C + 1e-9 - math.log(room)
                out = min(out, float((exponent / CHERNOFF_ORDERS).min()))
        if math.isfinite(out):
            nudge = float(self._epsilon_nudge(out))
            out = out + nudge if self.upper else out - nudge
        return max(out, 0.0)

    def _chernoff_epsilon(self, d: np.ndarray) -> np.ndarray:
        if self.log_mgf is None:
            return np.full(d.shape, np.inf)
        t = CHERNOFF_ORDERS
        log_c = CHERNOFF_LOG_C
        room = np.ravel(d) - self.chernoff_infinity_mass
        with np.errstate(divide="ignore", invalid="ignore"):
            log_room = np.where(room > 0, np.log(np.maximum(room, 1e-320)), -np.inf)
            eps = (self.log_mgf + log_c + 1e-9)[None, :] - log_room[:, None]
            eps = np.min(eps / t[None, :], axis=1)
        eps = np.where(room > 0, eps, np.inf)
        return eps.reshape(d.shape)


# tables are never written after they are built, so a thread may keep using one that another
# thread has just evicted; the dict itself is only changed under the lock
_EXP_TABLES: dict = {}
_EXP_TABLES_LOCK = threading.Lock()
_EXP_TABLE_MAX = 1 << 20


def _clear_exp_tables() -> None:
    with _EXP_TABLES_LOCK:
        _EXP_TABLES.clear()


register("plda.grid.exp_tables", _clear_exp_tables)


def _exp_neg_grid(step: float, offset: int, n: int) -> np.ndarray:
    """``exp(-(offset + i) * step)`` for ``i < n``.

    A product of the cached table ``exp(-i * step)`` and ``exp(-offset * step)``: each factor is
    a correctly rounded exponential of a rounded loss, so the relative error (a few ``u`` per
    unit of ``|loss|``) is the one of evaluating ``exp`` at the rounded losses directly, which
    the callers' ``1e-12`` margins absorb. Direct evaluation where the table would under- or
    overflow."""
    if not (abs(offset * step) < 600 and abs((offset + n) * step) < 600) or n > _EXP_TABLE_MAX:
        return np.exp(-(offset + np.arange(n)) * step)
    table = _EXP_TABLES.get(step)
    if table is None or len(table) < n:
        table = np.exp(-np.arange(max(n, 1 << 12)) * step)
        table.flags.writeable = False
        with _EXP_TABLES_LOCK:
            if len(_EXP_TABLES) >= 8:  # at most 8 tables of at most 8 MB
                _EXP_TABLES.clear()
            _EXP_TABLES[step] = table
    return table[:n] * math.exp(-offset * step)


def _log_mgf_ladder(law: DiscreteLoss, j0: int, j1: int) -> tuple[np.ndarray, np.ndarray]:
    """``log sum_i p_i e^{+-t l_i}`` at the orders ``t = 2^(j/2)``, ``j0 <= j <= j1``.

    Log-sum-exp per order, shifted by the largest exponent ``log p_i +- t l_i`` so that every
    term is at most 1 and the sum at least 1: exponents below ``-700`` are raised to ``-700``
    (an upper bound on the term, and no subnormal arithmetic, which is ~100x slower than
    ordinary arithmetic). Rounding: the exponent ``a_i = log p_i +- t l_i - m`` is off by at
    most ``4u (|log p_i| + |t l_i| + |m|)`` and ``exp`` adds ``u``, so each term is within a
    factor ``e^r`` of its exact value with ``r`` that bound plus ``2u``; the sum adds ``n u``
    relative. Both are added to the logarithm, so the moments stay upper bounds (Chernoff
    bounds need upper bounds on the moments, any will do)."""
    size = j1 - j0 + 1
    positive = law.probs > 0
    if not positive.any():
        empty = np.full(size, -np.inf)
        return empty, empty.copy()
    log_p = np.log(law.probs[positive])
    losses = law.losses[positive]
    log_p_max = float(np.max(np.abs(log_p)))
    loss_max = float(np.max(np.abs(losses)))
    sum_error = len(log_p) * _U
    up, down = np.empty(size), np.empty(size)
    for i, j in enumerate(range(j0, j1 + 1)):
        order = 2.0 ** (j / 2)
        for sign, values in ((1.0, up), (-1.0, down)):
            exponents = log_p + (sign * order) * losses
            m = float(np.max(exponents))
            exponents -= m
            np.maximum(exponents, -700.0, out=exponents)
            total = float(np.sum(np.exp(exponents)))
            margin = 4 * _U * (log_p_max + order * loss_max + abs(m)) + 2 * _U + sum_error
            values[i] = m + math.log(total) + margin
    return up, down


def ladder_chernoff(factors, tail: float, order_range: tuple[float, float], min_spread: float):
    """Chernoff cuts of a composition at the ladder orders ``t = 2^(j/2)`` in
    ``order_range / spread`` (``spread``: the composed standard deviation, at least
    ``min_spread``), from each factor's cached :meth:`DiscreteLoss.ladder_log_mgf`.

    Returns ``(lo_loss, hi_loss, orders, log_up, log_down)``: all but ``tail`` of the composed
    mass lies above ``lo_loss`` and below ``hi_loss`` (infinite where no order bounds it, e.g.
    no finite mass), and ``log E[e^{+-tL}]`` of the composition at ``orders`` for further tail
    bounds. Plain floats: a few dozen numbers, where numpy calls cost more than the work."""
    variance = sum(k * f._spread()[1] for f, k in factors)
    spread = math.sqrt(max(variance, min_spread * min_spread))
    j0 = math.floor(2 * math.log2(order_range[0] / spread))
    j1 = math.ceil(2 * math.log2(order_range[1] / spread))
    orders = [2.0 ** (j / 2) for j in range(j0, j1 + 1)]
    if len(factors) <= 4:
        log_up = [0.0] * len(orders)
        log_down = [0.0] * len(orders)
        for f, k in factors:
            up, down = f.ladder_log_mgf(j0, j1)
            for i, (u, v) in enumerate(zip(up.tolist(), down.tolist(), strict=True)):
                log_up[i] += k * u
                log_down[i] += k * v
    else:  # many factors (a noise schedule changed every step): one matrix product
        moments = [f.ladder_log_mgf(j0, j1) for f, _ in factors]
        counts = np.array([k for _, k in factors], dtype=float)
        with np.errstate(invalid="ignore"):
            log_up = dot(counts, np.array([m[0] for m in moments])).tolist()
            log_down = dot(counts, np.array([m[1] for m in moments])).tolist()
    log_tail = math.log(tail)
    # orders whose moment overflowed (inf or NaN) give no bound and are skipped
    hi_loss = min(
        ((u - log_tail) / t for u, t in zip(log_up, orders, strict=True) if u < math.inf),
        default=math.inf,
    )
    lo_loss = max(
        (-(v - log_tail) / t for v, t in zip(log_down, orders, strict=True) if v < math.inf),
        default=-math.inf,
    )
    return lo_loss, hi_loss, orders, log_up, log_down


def window_losses(factors: list[tuple[DiscreteLoss, int]], tail: float) -> tuple[float, float]:
    """Loss interval holding all but about ``tail`` of the composed mass on each side, for
    factors that may sit on different grids (a pilot estimate, not a certified window):
    :func:`ladder_chernoff` at orders in ``[0.5, 32] / spread``, cut by the exact support."""
    lo_exact = sum(k * f.offset * f.step for f, k in factors)
    hi_exact = sum(k * (f.offset + len(f.probs) - 1) * f.step for f, k in factors)
    lo_loss, hi_loss, *_ = ladder_chernoff(
        factors, tail, (0.5, 32.0), max(f.step for f, _ in factors)
    )
    hi = hi_exact if not math.isfinite(hi_loss) else min(hi_exact, hi_loss)
    lo = lo_exact if not math.isfinite(lo_loss) else max(lo_exact, lo_loss)
    return min(lo, hi), hi


def power_support(factors: list[tuple[DiscreteLoss, int]]) -> tuple[int, int]:
    """Index range ``[lo, hi]`` of the exact composition of ``factors`` (each ``(law, count)``)."""
    lo = sum(k * f.offset for f, k in factors)
    hi = sum(k * (f.offset + len(f.probs) - 1) for f, k in factors)
    return lo, hi


def _window(factors: list[tuple[DiscreteLoss, int]], tail: float) -> tuple[int, int, float, float]:
    """Grid index window holding all but ``tail`` of the composed mass on each side.

    Chernoff: ``P(S > x) <= exp(log M(t) - t x)`` with ``log M = sum_k k log M_k`` exact on the
    discrete factors; returns ``(lo, hi, mass_below_bound, mass_above_bound)``.
    """
    step = factors[0][0].step
    lo_exact, hi_exact = power_support(factors)
    # orders around the Gaussian-optimal tilt t = z / sigma for the composed spread sigma:
    # any order gives a valid bound; these keep the number of exact moment sums small
    variance = sum(k * f._spread()[1] for f, k in factors)
    spread = math.sqrt(max(variance, step * step))
    scales = np.geomspace(0.5, 32.0, 6) / spread
    orders = np.concatenate([scales, -scales])
    log_both = sum(k * f.finite_log_mgf(orders) for f, k in factors)
    orders, log_up, log_down = scales, log_both[: len(scales)], log_both[len(scales) :]
    log_tail = np.log(tail)
    hi_loss = np.min((log_up - log_tail) / orders)
    lo_loss = np.max(-(log_down - log_tail) / orders)
    # no finite mass at all (e.g. delta = 1) leaves the moments at -inf: keep the exact support
    hi = hi_exact if not np.isfinite(hi_loss) else min(hi_exact, int(np.ceil(hi_loss / step)) + 1)
    lo = lo_exact if not np.isfinite(lo_loss) else max(lo_exact, int(np.floor(lo_loss / step)) - 1)
    lo = min(lo, hi)
    with np.errstate(over="ignore"):
        above = 0.0 if hi >= hi_exact else float(np.min(np.exp(log_up - orders * hi * step)))
        below = 0.0 if lo <= lo_exact else float(np.min(np.exp(log_down + orders * lo * step)))
    return lo, hi, below, above


def compose(
    factors: list[tuple[DiscreteLoss, int]], tail: float = 1e-20, max_size: int = 1 << 23
) -> DiscreteLoss:
    """Exact-up-to-certified-error composition ``*_f law_f^{*k_f}`` by one FFT product.

    The result lives on a window chosen by :func:`_window`; the mass outside it wraps around
    (cyclic convolution). Wrapped mass is bounded by the Chernoff tails: an upper version moves
    the upper tail bound to ``+inf`` and keeps wrapped mass (it only increases delta); a lower
    version records both tails as ``spurious_mass`` to subtract. Floating-point error of the
    transforms and powers is bounded per entry (``entry_error``) and in L2 (``l2_error``): the
    componentwise transform bound of :func:`plda.fft.transform_error` carried through the powers
    frequency by frequency.
    """
    factors = [(f, int(k)) for f, k in factors if k > 0]
    if not factors:
        raise ValueError("compose needs at least one factor with a positive count")
    first = factors[0][0]
    infinity = union_probability(((f.infinity_mass, k) for f, k in factors), upper=first.upper)
    if len(factors) == 1 and factors[0][1] == 1:
        return first
    lo, hi, below, above = _window(factors, tail)
    base = sum(k * f.offset for f, k in factors)
    width = hi - lo + 1
    n = fft.good_size(max(width, max(len(f.probs) for f, _ in factors)))
    if n > max_size:
        raise GridTooLarge(n, max_size)
    # Spectrum of the composition, computed only where it can be non-negligible: |Y_j| is at most
    # prod_f (|X_fj| + eta_f)^k_f, and where that bound underflows (< e^-740) Y_j is set to 0
    # (the bound itself is then the error, and it is below the smallest double).
    spectra, etas = [], []
    log_bound = np.zeros(n // 2 + 1)
    for f, k in factors:
        x = fft.rfft(f.probs, n)
        eta = fft.transform_error(n, float(np.sum(f.probs)))
        with np.errstate(divide="ignore"):
            log_bound += k * np.log(np.abs(x) + eta)
        spectra.append(x)
        etas.append(eta)
    band = np.nonzero(log_bound > -740.0)[0]
    bound = np.exp(log_bound[band])
    relative = np.zeros(len(band))
    spectrum = np.zeros(n // 2 + 1, dtype=complex)
    product = np.ones(len(band), dtype=complex)
    for (_, k), x, eta in zip(factors, spectra, etas, strict=True):
        xb = x[band]
        amp = np.abs(xb) + eta
        if k > 1:
            # x**k = exp(k log x): relative rounding error about u (1 + |k log x|), small where
            # |x| ~ 1 with a small phase (the frequencies that carry the mass)
            with np.errstate(divide="ignore", under="ignore", over="ignore"):
                log_x = k * np.log(xb)
                relative += k * eta / amp + 8 * _U * (1 + np.abs(np.nan_to_num(log_x, neginf=0)))
                product *= np.exp(log_x)
        else:
            relative += eta / amp + 4 * _U
            product *= xb
    spectrum[band] = product
    full_bound = np.zeros(n // 2 + 1)
    full_relative = np.zeros(n // 2 + 1)
    full_bound[band], full_relative[band] = bound, relative
    window = (lo, width, base, below, above)
    return from_spectrum(factors, spectrum, full_bound, full_relative, n, window, infinity)


def from_spectrum(factors, spectrum, bound, relative, n, window, infinity) -> DiscreteLoss:
    """The composed grid law from its spectrum and the certified error terms.

    ``bound[j] >= |Y_j|`` and ``relative[j] * bound[j] >= |computed Y_j - Y_j|`` (the caller's
    forward transforms and powers); ``window = (lo, width, base, below, above)`` places the
    cyclic result (``base`` is the grid index of spectrum position 0) and gives the Chernoff
    tail bounds outside it. Shared by :func:`compose` and the accountant's cached composer.
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
        log_mgf = sum(k * f.log_mgf for f, k in factors) if chernoff else None
        return DiscreteLoss(
            first.step,
            lo,
            y,
            min(1.0, infinity + above),
            True,
            entry_error,
            0.0,
            log_mgf,
            union_probability(((f.chernoff_infinity_mass, k) for f, k in factors), upper=True),
            l2_error,
            loss_error=loss_error,
        )
    return DiscreteLoss(
        first.step, lo, y, infinity, False, entry_error, below + above, None, 0.0, l2_error,
        loss_error=loss_error,
    )


def compose_tilted(
    factors: list[tuple[DiscreteLoss, int]],
    tilt: float,
    tail: float = 1e-20,
    max_size: int = 1 << 23,
) -> DiscreteLoss:
    """Composition computed under the exponential tilt ``p_i -> p_i e^{t l_i} / M(t)``.

    Tilting commutes with convolution, and it moves the FFT's resolution to the losses near the
    Chernoff point of ``t``: the composed law is recovered as ``y_i = y~_i exp(C - t l_i)`` with
    ``C = sum_f k_f log M_f(t)``, and the absolute FFT error of ``y~`` becomes an error relative
    to the (tiny) deltas found there. Losses where the weight ``exp(C - t l_i)`` would overflow
    are left out (``valid_from``). ``+inf`` masses are carried untilted.
    """
    if tilt <= 0:
        raise ValueError("tilt must be positive")
    tilted, log_scale = [], 0.0
    for f, k in factors:
        c = float(f.finite_log_mgf(np.array([tilt]))[0])
        log_scale += k * c
        probs = np.exp(np.log(np.maximum(f.probs, 1e-320)) + tilt * f.losses - c) * (f.probs > 0)
        tilted.append(
            (DiscreteLoss(f.step, f.offset, probs, 0.0, f.upper, loss_error=f.loss_error), k)
        )
    inner = compose(tilted, tail=tail, max_size=max_size)
    first = factors[0][0]
    infinity = union_probability(((f.infinity_mass, k) for f, k in factors), upper=first.upper)
    losses = inner.losses
    exponent = log_scale - tilt * losses
    keep = exponent < 340.0  # weights and their squares stay finite
    if not keep.any():  # nothing resolved: the trivial bounds (delta <= 1, and >= 0)
        return DiscreteLoss(
            first.step, inner.offset + len(losses), np.zeros(1), float(first.upper), first.upper
        )
    start = int(np.argmax(keep))
    weights = np.exp(exponent[start:])
    probs = inner.probs[start:] * weights
    above_weight = math.exp(min(log_scale - tilt * (losses[-1] + first.step), 690.0))
    upper = first.upper
    infinity_total = infinity + (inner.infinity_mass * above_weight if upper else 0.0)
    # the tilted window drops the tilted mass below it (it wraps onto the window's top, where
    # untilting shrinks it by e^(-tilt * width)): an upper version then knows nothing below
    # its first loss. (Laplace(0.0298) x 10 at eps 1e-3 under its top: the tilted upper delta was
    # 8e-38, the exact one 3.3e-14.) The lower version may drop mass: only the kept range counts
    dropped = inner.offset > power_support(tilted)[0]
    valid_from = float(losses[start]) if start > 0 or (upper and dropped) else -np.inf
    out = DiscreteLoss(
        first.step,
        inner.offset + start,
        probs,
        min(1.0, infinity_total),
        upper,
        inner.entry_error,
        inner.spurious_mass,
        None,
        0.0,
        inner.l2_error,
        tilt,
        log_scale,
        valid_from,
        loss_error=inner.loss_error,
    )
    if upper:
        object.__setattr__(
            out,
            "log_mgf",
            sum(k * f.log_mgf for f, k in factors)
            if all(f.log_mgf is not None for f, _ in factors)
            else None,
        )
        chernoff_infinity = union_probability(
            ((f.chernoff_infinity_mass, k) for f, k in factors), upper=True
        )
        object.__setattr__(out, "chernoff_infinity_mass", chernoff_infinity)
    return out
