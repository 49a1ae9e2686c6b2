"""The privacy-loss law on the grid ``l_i = i h`` (:class:`DiscreteLoss`), with its certified
profile ``delta(eps)`` and its exact inverse ``epsilon(delta)``. The formulas and their error
terms: docs/concepts/discretization.md (From the grid law to epsilon).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from plda._internal.chernoff import CHERNOFF_ORDERS
from plda._internal.floats import UNIT_ROUNDOFF, discounted_tails, dot, error_sum_bound
from plda.grid.chernoff import CHERNOFF_GATE, chernoff_delta, chernoff_epsilon
from plda.grid.crossing import crossing
from plda.grid.moments import exp_neg_grid, log_mgf_ladder

#: at most how many deltas :meth:`DiscreteLoss.epsilon` solves by the crossing search
#: (:mod:`plda.grid.crossing`); more share the full segment arrays
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
    far_tail
        Instead of ``log_mgf`` and ``chernoff_infinity_mass``: what computes them when a query
        first needs them (:mod:`plda.grid.chernoff`).
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
    #: exponentially tilted composition (see :func:`plda.engine.tilt.compose_tilted`): the
    #: error terms above refer to the tilted law, whose entry ``i`` is
    #: ``probs[i] * exp(tilt * l_i - log_scale)``
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
    far_tail: Callable[[], tuple[np.ndarray, float]] | None = field(default=None, repr=False)

    # ------------------------------------------------------------------ basics
    @property
    def losses(self) -> np.ndarray:
        """Grid losses ``l_i`` of ``probs``."""
        return (self.offset + np.arange(len(self.probs))) * self.step

    def chernoff_source(self):
        """What gives this version's Chernoff moments, without computing them.

        Returns
        -------
        tuple, callable or None
            ``(log_mgf, chernoff_infinity_mass)`` if known, else :attr:`far_tail`; None
            without moments.
        """
        if self.log_mgf is not None:
            return self.log_mgf, self.chernoff_infinity_mass
        return self.__dict__.get("_far_memo") or self.far_tail

    def chernoff(self) -> tuple[np.ndarray, float] | None:
        """``(log_mgf, chernoff_infinity_mass)``, computed on first use; None without.

        Returns
        -------
        tuple or None
            The Chernoff moments at ``CHERNOFF_ORDERS`` and the mass at +inf they leave out.
        """
        source = self.chernoff_source()
        if source is None or isinstance(source, tuple):
            return source
        # a race between threads only computes the same moments twice
        return self.__dict__.setdefault("_far_memo", source())

    def finite_log_mgf(self, orders: np.ndarray = CHERNOFF_ORDERS) -> np.ndarray:
        """``log sum_i p_i exp(t l_i)`` for each order ``t``.

        Parameters
        ----------
        orders
            The orders ``t``.

        Returns
        -------
        numpy.ndarray
            One value per order (computed shifted, so nothing overflows); ``-inf`` without
            finite mass.
        """
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

    def ladder_log_mgf(self, j0: int, j1: int, batch: tuple[int, int] | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
        """Upper bounds on ``log E[e^{+-tL}; L finite]`` at the ladder orders, cached per order.

        A fixed ladder lets callers reuse the moments of a law across compositions whose
        spreads differ (see :func:`plda.grid.moments.log_mgf_ladder`).

        Parameters
        ----------
        j0, j1
            The ladder indices: orders ``t = 2^(j/2)``, ``j0 <= j <= j1``.
        batch
            The indices computed with a missing order, in one call (default: two beyond the
            missing ones, for a walk that asks its neighbours next); the bounds do not depend
            on it.

        Returns
        -------
        tuple of numpy.ndarray
            The bounds for ``+t`` and for ``-t``, one per order.
        """
        cache = self.__dict__.setdefault("_ladder_cache", {})  # not a field: a memo
        hit = cache.get((j0, j1))
        if hit is not None:
            return hit
        missing = [j for j in range(j0, j1 + 1) if j not in cache]
        if missing:
            low, high = min(missing), max(missing)
            # a walk asks one order at a time next to those it has: extended its way (centred
            # on the order asked, each call recomputed two known orders)
            below = above = 2
            if (high + 1 in cache) != (low - 1 in cache):
                below, above = (4, 0) if high + 1 in cache else (0, 4)
            first, last = batch or (low - below, high + above)
            first, last = min(first, low), max(last, high)
            up, down = log_mgf_ladder(self, first, last)
            for j in range(first, last + 1):
                cache.setdefault(j, (up[j - first], down[j - first]))
        pairs = np.array([cache[j] for j in range(j0, j1 + 1)])
        return cache.setdefault((j0, j1), (pairs[:, 0], pairs[:, 1]))

    def spread(self) -> tuple[float, float]:
        """Mean and variance of the normalized finite part (cached).

        Returns
        -------
        tuple of float
            ``(mean, variance)``; ``(0, 0)`` without finite mass.
        """
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
        """``exp(-l_i)`` for the grid losses (see :func:`plda.grid.moments.exp_neg_grid`)."""
        return exp_neg_grid(self.step, self.offset, len(self.probs))

    def _mass_term(self, tail_mass, fp_error, weight):
        """``A_j`` (the mass term of ``delta`` on the segment below cut ``j``), arrays or scalars:
        the tail mass ``sum_{i >= j} p_i`` plus the mass at infinity, with the bound
        ``fp_error`` on the weighted entry errors above the cut and the tilt weight ``w_j`` of
        the spurious mass (1 untilted) folded in."""
        # rounding of the tail sums: (n u) * sum of magnitudes for the mass, and (3 n u) for the
        # discounted tail S_j of _profile_segments (r^m by repeated products: 2 m u, sums: n u),
        # whose weights e^(eps - l_i) are at most 1, so both are bounded by multiples of the mass
        fp_error = fp_error + 4.0 * len(self.probs) * UNIT_ROUNDOFF * tail_mass
        if self.upper:
            a = self.infinity_mass + tail_mass + fp_error
            # never let NaN through an upper bound
            return np.where(np.isnan(a), np.inf, a) if np.ndim(a) else (
                math.inf if math.isnan(a) else a)
        return self.infinity_mass + tail_mass - fp_error - self.spurious_mass * weight

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
        if self.tilt:
            # errors of the tilted law scale back by w_i = exp(log_scale - tilt l_i)
            w, w_sum, w2_root = self._tilt_weights(np.arange(n + 1))
            fp_error = error_sum_bound(self.entry_error, self.l2_error, w_sum, root=w2_root)
        else:
            w = 1.0  # entries strictly above a cut: n - j
            fp_error = error_sum_bound(self.entry_error, self.l2_error, n - np.arange(n + 1))
        a = self._mass_term(tail_mass, fp_error, w)
        result = (a, np.concatenate([losses, [np.inf]]))
        object.__setattr__(self, "_tail_cache", result)
        return result

    def segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The profile's closed form per grid cut, with Q-masses (for tradeoff curves).

        ``delta(eps) = A_j - e^eps B_j`` on ``[l_{j-1}, l_j]``; the profile itself uses
        :meth:`_profile_segments`, which stays finite at any loss.

        Returns
        -------
        tuple of numpy.ndarray
            ``A_j``, ``B_j = sum_{i >= j} p_i e^(-l_i)`` (the Q-mass above the cut) and the
            losses ``l_j`` of the cuts.
        """
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

    def _profile_segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per grid cut ``j``: ``A_j``, ``S_j`` with ``delta(eps) = A_j - e^(eps - l_j) S_j`` on
        ``[l_{j-1}, l_j]``, and the cut ``l_j`` (``+inf`` past the last entry).

        ``S_j = sum_{i >= j} p_i e^(l_j - l_i)`` is the tail discounted *from its own cut*, by
        the recurrence ``S_j = p_j + e^(-h) S_{j+1}``: every weight is at most 1, so nothing
        overflows or underflows at large losses (the form ``A_j - e^eps B_j`` loses ``B_j`` to
        underflow once losses pass ~745 and ``e^eps`` to overflow past ~709, which put lower
        bounds above the truth there). Its rounding is charged in ``A_j`` (see
        :meth:`_mass_term`)."""
        cached = self.__dict__.get("_profile_cache")
        if cached is not None:
            return cached
        a, cuts = self._tail_mass_terms()
        discount = math.exp(-self.step)
        # S_j for j = n-1 .. 0: a first-order recurrence, in blocks (plda._internal.floats)
        s = np.zeros(len(self.probs) + 1)
        s[:-1] = discounted_tails(self.probs, discount)
        with np.errstate(invalid="ignore"):  # (inf - inf of an overflowed law: read below)
            at_cuts = a - s  # delta at each cut (e^0 = 1); past the last entry only A remains
        # error terms make steps: keep the profile at the cuts monotone, by what the true delta
        # (non-increasing) allows: an upper bound holds at every larger loss, a lower one at
        # every smaller loss (taken from the left, a tilted lower version's error-swamped low
        # losses, at -6e3, had made every cut read below any delta and its epsilon 0)
        if self.upper:
            at_cuts = np.minimum.accumulate(at_cuts)
        else:
            at_cuts = np.maximum.accumulate(at_cuts[::-1])[::-1]
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
        # 16 u |eps|, not 8 u (2 |eps| + ...): 2 |eps| overflows past 9e307, the slack became inf
        # and an upper version read delta at eps = -inf (1.0 at eps = 1e308, for 1e-6)
        rounding = 16 * UNIT_ROUNDOFF * np.abs(eps) + 8 * UNIT_ROUNDOFF * (self.step + 1)
        return np.where(np.isfinite(eps), self.loss_error + rounding, 0.0)

    def delta(self, epsilon: np.ndarray) -> np.ndarray:
        """``delta(epsilon)`` of this version, vectorized.

        An upper version also applies the Chernoff bound ``delta <= P(inf) + inf_t c(t)
        exp(log E[e^{tL}] - t eps)`` with ``c(t) = t^t / (t+1)^(t+1)`` and keeps the smaller of
        the two. Both are evaluated at ``eps`` moved by :meth:`_loss_slack` in the safe
        direction (down for an upper version, up for a lower one).

        Parameters
        ----------
        epsilon
            Epsilons, any shape.

        Returns
        -------
        numpy.ndarray
            A bound on delta from above (upper version) or below (lower version), shaped like
            ``epsilon``.
        """
        given = np.asarray(epsilon, dtype=float)
        slack = self._loss_slack(given)
        with np.errstate(over="ignore"):  # a lower version's eps past 1.8e308 is +inf: delta(inf)
            eps = given - slack if self.upper else given + slack
        a, s, cuts, _ = self._profile_segments()
        j = np.searchsorted(cuts, eps, side="right")  # first cut strictly above eps
        j = np.minimum(j, len(a) - 1)
        # eps - l_j <= 0 on the segment, so the weight is at most 1 (e^-inf = 0 past the end);
        # at eps = +inf only the mass at infinite loss remains (inf - inf would be NaN)
        with np.errstate(invalid="ignore"):
            weight = np.exp(np.minimum(eps - cuts[j], 0.0))
            value = a[j] - np.where(eps == np.inf, 0.0, weight) * s[j]
        # below a tilted law's range nothing is claimed; nor by a law whose composition
        # overflowed (NaN entries, infinite error terms: inf - NaN is NaN)
        unknown = (eps < self.valid_from) | np.isnan(value)
        if self.upper:
            value = np.where(unknown, 1.0, value * (1 + 8 * UNIT_ROUNDOFF))
            worth = unknown | self._chernoff_worth(value) | bool(self.tilt)
            if np.any(worth):
                value = np.where(worth, np.minimum(value, chernoff_delta(self.chernoff(), eps)),
                                 value)
            return np.clip(value, 0.0, 1.0)
        return np.clip(np.where(unknown, 0.0, value), 0.0, 1.0)

    # ---------------------------------------------------------------- epsilon(delta)
    def epsilon(self, delta: np.ndarray) -> np.ndarray:
        """Smallest ``eps >= 0`` with ``delta(eps) <= delta`` for this version.

        Solved exactly on the piecewise closed form ``A_j - e^(eps - l_j) S_j`` and moved
        outward by the rounding and the loss error.

        Parameters
        ----------
        delta
            Deltas, any shape.

        Returns
        -------
        numpy.ndarray
            A bound on epsilon from above (upper version) or below (lower version), shaped like
            ``delta``; ``inf`` where no finite ``eps`` reaches ``delta``.
        """
        d = np.asarray(delta, dtype=float)
        if d.size <= _LOCAL_QUERIES:
            # a few deltas (an accountant query): block search (plda.grid.crossing). Chosen by the
            # question alone, never by whether another query built the segment arrays: the two
            # routes round differently, and an answer must not depend on what was asked before
            # remembered per delta (not a field: a memo): the driver asks a version for its gap
            memo = self.__dict__.setdefault("_epsilon_memo", {})  # and then for its answer
            out = [memo[x] if x in memo else memo.setdefault(x, self._epsilon_one(x))
                   for x in map(float, d.ravel())]
            return np.array(out).reshape(d.shape)
        return self._epsilon_segments(d)

    def _epsilon_segments(self, d: np.ndarray) -> np.ndarray:
        """:meth:`epsilon` on the full segment arrays (:meth:`_profile_segments`)."""
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
        if self.upper and (self.tilt or np.any(~found | self._chernoff_worth(d))):
            out = np.minimum(out, chernoff_epsilon(self.chernoff(), d))
        # the true epsilon lies on the safe side: move by far more than the rounding in log/exp
        # (1e-12 relative, at least the few u of :meth:`_loss_slack`) and by the loss error
        finite = np.isfinite(out)
        nudge = self._epsilon_nudge(np.where(finite, out, 0.0))
        out = np.where(finite, out + nudge if self.upper else out - nudge, out)
        return np.maximum(out, 0.0)

    def _chernoff_worth(self, value) -> np.ndarray:
        """Where this (upper) version consults its Chernoff bound: ``value``, its deltas (asked,
        or found at the epsilons asked), within :data:`~plda.grid.chernoff.CHERNOFF_GATE` of
        what the grid cannot resolve (its mass at +inf and the bound on its rounding)."""
        rounding = error_sum_bound(self.entry_error, self.l2_error, len(self.probs))
        return np.asarray(value) <= CHERNOFF_GATE * (self.infinity_mass + rounding)

    def _epsilon_nudge(self, out):
        """Outward move of a solved epsilon: rounding (see :meth:`_loss_slack`) and
        :attr:`loss_error`."""
        return 1e-12 * (1 + np.abs(out)) + 8 * UNIT_ROUNDOFF * self.step + self.loss_error

    def _cut_term(self, j: int, tail_mass: float) -> float:
        """``A_j`` (see :meth:`_tail_mass_terms`) at one cut, in scalar arithmetic."""
        if self.tilt:
            w, w_sum, w2_root = self._tilt_weights(j)
            fp_error = error_sum_bound(self.entry_error, self.l2_error, w_sum, root=w2_root)
        else:
            w, fp_error = 1.0, error_sum_bound(self.entry_error, self.l2_error, len(self.probs) - j)
        return self._mass_term(tail_mass, fp_error, w)

    def _tilt_weights(self, j):
        """A tilted law's weight ``w_j = exp(log_scale - tilt l_j)``, its suffix sum ``sum_{i >=
        j} w_i`` and the root of ``sum_{i >= j} w_i^2`` (zero past the last entry; ``j`` a cut or
        an array of cuts), as geometric sums (``w_{j+m} = w_j e^{-a m}``, ``a = tilt h``) rounded
        up: ``expm1``, the quotient and the products add a few ``u`` relative, covered by
        ``8u``. The root is ``w_j`` times the root of its sum, never formed from ``w_j^2``:
        below a weight of 1e-154 that square underflows, and the error terms vanished with it
        (Laplace(4) x 1000 at delta 1e-200 under t = 4: a lower bound 300 times the delta)."""
        a, widen = self.tilt * self.step, 1 + 8 * UNIT_ROUNDOFF
        if np.ndim(j):
            m = len(self.probs) - j
            with np.errstate(over="ignore"):
                w = np.exp(self.log_scale - self.tilt * ((self.offset + j) * self.step))
            w = np.where(m > 0, w, 0.0)
            count, count2 = np.expm1(-a * m) / math.expm1(-a), np.expm1(-2 * a * m) / math.expm1(
                -2 * a)
            return w, w * count * widen, w * np.sqrt(count2 * widen)
        m = len(self.probs) - j
        if m <= 0:
            return 0.0, 0.0, 0.0
        log_w = self.log_scale - self.tilt * ((self.offset + j) * self.step)
        w = math.exp(log_w) if log_w < 709.0 else math.inf
        count = math.expm1(-a * m) / math.expm1(-a)
        count2 = math.expm1(-2 * a * m) / math.expm1(-2 * a)
        return w, w * count * widen, w * math.sqrt(count2 * widen)

    def _epsilon_one(self, d: float) -> float:
        """:meth:`epsilon` at one ``d``, in scalar arithmetic on the cut found by
        :func:`plda.grid.crossing.crossing` (the same closed form, error terms and margins)."""
        n = len(self.probs)
        j, tail_mass, s = crossing(self.probs, self.step, d, self._cut_term)
        if j == 0 and self.tilt and not self.upper:
            # a tilted lower version's lowest losses may be swamped by their error terms (their
            # profile reads below any delta): the bisection then stops on the first cut and
            # answers 0, where the full profile, enveloped from the right, finds the crossing
            return float(self._epsilon_segments(np.array([d]))[0])
        if j > n:
            out = math.inf
        else:
            a = self._cut_term(j, tail_mass)
            left = (self.offset + j - 1) * self.step if j > 0 else -math.inf
            cut = (self.offset + j) * self.step if j < n else math.inf
            if s > 0:
                out = cut + math.log(a - d) - math.log(s) if a > d else -math.inf
            else:
                out = left
            out = min(max(out, left), cut)
        if self.valid_from > -math.inf:  # as in epsilon
            out = max(out, self.valid_from) if self.upper else (
                out if out >= self.valid_from else 0.0)
        if self.upper and (self.tilt or out == math.inf or self._chernoff_worth(d)):
            out = min(out, float(chernoff_epsilon(self.chernoff(), np.array(d))))
        if math.isfinite(out):
            nudge = float(self._epsilon_nudge(out))
            out = out + nudge if self.upper else out - nudge
        return max(out, 0.0)
