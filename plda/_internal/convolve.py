"""FFT convolutions of non-negative lattice measures with certified error bounds, split so that
the far tail keeps its accuracy (used by :mod:`plda.epochs.sums`).

An FFT convolution's componentwise error (Higham, *Accuracy and Stability*, §24.1) scales with
the product of the inputs' total masses and is spread over every output entry. For the law of
a sum of heavy-tailed terms (random allocation's likelihood ratio), the far tail of the output
is many orders of magnitude below that floor, and it is exactly the part that sets ``delta``
at large ``epsilon``. :func:`split_convolve` therefore writes ``a = a_h + a_t``, ``b = b_h +
b_t`` with the tails ``a_t``, ``b_t`` holding a tiny share of the mass, and computes
``a_h * b_h`` by a short FFT (its error lives on its short support only) and
``a_h * b_t + a_t * b`` by one long FFT (its error scales with the tails' mass).
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal import fft
from plda._internal.floats import UNIT_ROUNDOFF

#: share of the mass left in the tails of a split (their products' errors scale with it)
TAIL_SHARE = 1e-6


def convolve_sum(pairs, n: int):
    """``sum_i a_i * b_i`` (linear convolutions, negatives clipped) by one inverse FFT of length
    ``n``, with a bound on the L2 norm and on every entry of its error.

    Forward transforms err by at most ``dA = transform_error(n, ||a||_1)`` per entry (Higham
    §24.1); each product's error is then at most ``|A_j| dB + |B_j| dA + dA dB + 3u |A_j B_j|``
    (``|A_j|`` meaning the computed modulus plus ``dA``; one more ``u`` for the sum of the
    products). The inverse maps an error vector ``dY`` (half spectrum) to one of L2 norm
    ``||dY||_2 sqrt(2/n)`` (Parseval, conjugate half counted twice) and of entries at most
    ``(2/n) sum |dY_j|``, and adds its own error, at most ``transform_error(n, (2/n) sum
    |Y_j|)`` per entry. Sums are ``np.add.reduce``, not BLAS dots (a threaded BLAS call costs
    more than the FFT here).
    """
    size = max(len(a) + len(b) - 1 for a, b in pairs)
    assert n >= size
    spectra: dict[int, tuple] = {}

    def transform(x):
        if id(x) not in spectra:  # squarings and shared factors are transformed once
            fx = fft.rfft(x, n)
            dx = fft.transform_error(n, float(x.sum()))  # L1 norm: x is non-negative
            spectra[id(x)] = (fx, np.abs(fx) + dx, dx)
        return spectra[id(x)]

    product, dy, mab_sum = None, 0.0, 0.0
    for a, b in pairs:
        (fa, ma, da), (fb, mb, db) = transform(a), transform(b)
        mab = ma * mb
        product = fa * fb if product is None else product + fa * fb
        dy = dy + (ma * db + mb * da + (da * db + 3 * UNIT_ROUNDOFF * mab))
        mab_sum += float(np.add.reduce(mab))
    c = fft.irfft(product, n)[:size]
    inverse = fft.transform_error(n, 2.0 / n * mab_sum)
    # sums of m non-negative terms: relative rounding below m u, covered by the final factor
    grow = 1 + 4 * (len(product) + len(pairs)) * UNIT_ROUNDOFF
    l2 = (math.sqrt(2.0 / n * float(np.add.reduce(dy * dy))) + math.sqrt(n) * inverse) * grow
    entry = (2.0 / n * float(np.add.reduce(dy)) + inverse) * grow
    return np.maximum(c, 0.0), l2, entry


def _head(x) -> int:
    """Smallest ``h`` with at most :data:`TAIL_SHARE` of ``x``'s mass at indices ``>= h``."""
    tail = np.cumsum(x[::-1])[::-1]  # tail[k] = sum x[k:]
    return int(np.searchsorted(-tail, -TAIL_SHARE * float(tail[0]), side="left"))


def split_convolve(a, b, n: int):
    """``a * b`` (negatives clipped) as ``a_h * b_h`` (short FFT) plus ``a_h * b_t + a_t * b``
    (one FFT of length ``n``). Returns ``(c, parts)``: each part ``(length, l2, entry)`` is an
    error vector supported on ``c[:length]`` with that L2 norm and largest entry; the error of
    ``c`` is their sum."""
    ha, hb = _head(a), _head(b)
    if min(ha, hb) < 1 or (ha >= len(a) - 1 and hb >= len(b) - 1):  # nothing to split off
        c, l2, entry = convolve_sum([(a, b)], n)
        return c, [(len(c), l2, entry)]
    a_h, b_h = a[:ha], (a[:ha] if b is a else b[:hb])
    a_t = a.copy()
    a_t[:ha] = 0.0
    if b is a:
        b_t = a_t
    else:
        b_t = b.copy()
        b_t[:hb] = 0.0
    # the short length is a power of two: few distinct lengths, few FFT plans
    short = 1 << (len(a_h) + len(b_h) - 2).bit_length()
    head, l2_h, entry_h = convolve_sum([(a_h, b_h)], short)
    c, l2_r, entry_r = convolve_sum([(a_h, b_t), (a_t, b)], n)
    c[: len(head)] += head
    return c, [(len(head), l2_h, entry_h), (len(c), l2_r, entry_r)]


def root_sum_squares(n: int) -> float:
    """``sqrt(sum_{k<n} k^2)``, rounded up."""
    return math.sqrt((n - 1) * n * (2 * n - 1) / 6.0) * (1 + 1e-12)
