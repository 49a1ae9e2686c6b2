"""Solving ``epsilon(delta)`` on a discrete privacy-loss law (the methods of
:class:`plda.grid.discrete.DiscreteLoss` that invert its privacy profile).

Between two grid points the profile has the closed form ``A_j - e^(eps - l_j) S_j`` (see
``DiscreteLoss._profile_segments``), so ``epsilon(delta)`` is solved exactly on the segment
where the profile crosses ``delta``, with no bisection on ``eps``: for many deltas by a search
over the full segment arrays, for a few on a fresh law by a block search that skips the
full-length scans (an accountant composes a fresh law for every query).
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal.chernoff import CHERNOFF_LOG_C, CHERNOFF_ORDERS
from plda._internal.floats import UNIT_ROUNDOFF
from plda._internal.linalg import discounted_tails, dot

#: block length of the crossing search of :meth:`EpsilonSolver.epsilon` for a few deltas
_BLOCK = 256
#: at most this many deltas use the block search; more share the full segment arrays
_LOCAL_QUERIES = 4


class EpsilonSolver:
    """``epsilon(delta)`` of a discrete law; mixed into ``DiscreteLoss``, whose fields
    (``probs``, ``step``, ``offset``, error terms) and profile segments it reads."""

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
        return 1e-12 * (1 + np.abs(out)) + 8 * UNIT_ROUNDOFF * self.step + self.loss_error

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
        local = padded[lo + 1 : hi]
        r = math.exp(-self.step)
        local_mass = (np.cumsum(local[::-1])[::-1] + mass[k]).tolist() + [mass[k]]
        tail_from = discounted_tails(local, r)
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
        fp_error += 4.0 * len(self.probs) * UNIT_ROUNDOFF * tail_mass
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
