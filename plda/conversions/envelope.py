"""Lower envelopes of lines: the conjugates of a privacy profile are evaluated on them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: pruning passes when an envelope is built (pruning only speeds up the queries)
_PRUNING_PASSES = 8


@dataclass(frozen=True, eq=False)
class LowerEnvelope:
    """Pointwise minimum ``min_j (intercepts[j] + slopes[j] * x)`` of a family of lines.

    Called as ``envelope(x)``. Queries take the exact minimum over all stored lines by the
    monotone-minima recursion, in ``O((lines + queries) log queries)`` array work. Build it with
    :meth:`from_lines`.

    Attributes
    ----------
    slopes : numpy.ndarray
        The lines' slopes, strictly ascending.
    intercepts : numpy.ndarray
        Their intercepts.
    """

    slopes: np.ndarray
    intercepts: np.ndarray

    @classmethod
    def from_lines(cls, slopes, intercepts) -> LowerEnvelope:
        """The envelope of arbitrary lines.

        Lines that are nowhere below both neighbours are dropped, which shortens the queries
        but never changes their result.

        Parameters
        ----------
        slopes, intercepts : array_like
            The lines; non-finite ones are ignored, and of equal slopes the lowest is kept.

        Returns
        -------
        LowerEnvelope
            Their lower envelope.

        Raises
        ------
        ValueError
            If no line is finite.
        """
        s = np.asarray(slopes, dtype=float)
        a = np.asarray(intercepts, dtype=float)
        keep = np.isfinite(s) & np.isfinite(a)
        s, a = s[keep], a[keep]
        if len(s) == 0:
            raise ValueError("an envelope needs at least one finite line")
        order = np.lexsort((a, s))
        s, a = s[order], a[order]
        first = np.concatenate([[True], s[1:] != s[:-1]])  # equal slopes: the lowest line only
        s, a = s[first], a[first]
        for _ in range(_PRUNING_PASSES):
            if len(s) <= 2:
                break
            crossing = (a[:-1] - a[1:]) / (s[1:] - s[:-1])
            # a middle line that crosses its steeper neighbour at or right of where it crosses
            # its flatter one is nowhere strictly below both of them
            bad = np.zeros(len(s), dtype=bool)
            bad[1:-1] = crossing[1:] >= crossing[:-1]
            if not bad.any():
                break
            s, a = s[~bad], a[~bad]
        return cls(s, a)

    def __call__(self, x) -> np.ndarray:
        """The envelope at every entry of ``x``.

        Parameters
        ----------
        x : float or array_like
            Where to evaluate it.

        Returns
        -------
        numpy.ndarray
            ``min_j (intercepts[j] + slopes[j] * x)``, of the shape of ``x``.
        """
        x = np.asarray(x, dtype=float)
        flat = np.ravel(x)
        order = np.argsort(flat, kind="stable")
        xs = flat[order]
        m, n = len(xs), len(self.slopes)
        best = np.empty(m)
        # intervals of queries [q_lo, q_hi] whose minimizing lines lie in [j_lo, j_hi]
        q_lo, q_hi = np.array([0]), np.array([m - 1])
        j_lo, j_hi = np.array([0]), np.array([n - 1])
        while len(q_lo):
            mid = (q_lo + q_hi) // 2
            width = j_hi - j_lo + 1
            seg = np.repeat(np.arange(len(mid)), width)
            starts = np.concatenate([[0], np.cumsum(width)[:-1]])
            lines = j_lo[seg] + np.arange(len(seg)) - starts[seg]
            values = self.intercepts[lines] + self.slopes[lines] * xs[mid[seg]]
            minima = np.minimum.reduceat(values, starts)
            # first minimizing line of each interval
            hit = np.where(values <= minima[seg], np.arange(len(seg)), len(seg))
            arg = lines[np.minimum.reduceat(hit, starts)]
            best[mid] = minima
            # smaller x: minimizers at or after arg; larger x: at or before arg
            left = mid > q_lo
            right = mid < q_hi
            q_lo, q_hi, j_lo, j_hi = (
                np.concatenate([q_lo[left], mid[right] + 1]),
                np.concatenate([mid[left] - 1, q_hi[right]]),
                np.concatenate([arg[left], j_lo[right]]),
                np.concatenate([j_hi[left], arg[right]]),
            )
        out = np.empty(m)
        out[order] = best
        return out.reshape(x.shape)
