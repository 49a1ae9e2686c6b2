"""Grouping the factors of a one-shot composition so that few transforms are full length.

A composition ``*_f law_f^{*k_f}`` on an FFT of length ``n`` costs one length-``n`` transform
(plus a few length-``n`` elementwise passes) per distinct factor. Many factors are far
narrower than the composed window: 50 Laplace laws of ``eps0 <= 0.1`` span a few hundred grid
points each, the composition of everything a few hundred thousand. Such factors are composed
first on a short FFT that holds their *exact* composed support (so nothing wraps and no tail is
cut: the group's law is the exact convolution of its members up to the floating-point error
that :func:`plda.engine.composer.from_spectrum` certifies), and the group then enters the long
product as one factor, whose spectrum error carries the group's per-entry error
(:func:`plda.engine.spectra.spectrum_of`).

This module only decides *which* factors to group, from their lengths and counts (a cost
model); :meth:`plda.engine.composer.Composer.compose` composes the groups. The decision
depends on the lengths alone, so the result is deterministic.
"""

from __future__ import annotations

import math

from plda import fft

#: elementwise passes per transformed point, in units of one butterfly stage (the spectrum's
#: ``abs``, ``log`` and ratio, the power and the product): a transform of length ``m`` costs
#: about ``m * (log2 m + PASSES)``
PASSES = 6.0
#: a group is formed only when it saves at least this fraction of the ungrouped cost (below it
#: the saving is within timing noise and the grouped bounds are a little wider)
MIN_SAVING = 0.2


def transform_cost(m: int) -> float:
    """Model cost of one length-``m`` forward transform of a factor with its elementwise passes
    (one unit per point and butterfly stage)."""
    return m * (math.log2(max(m, 2)) + PASSES)


def group_support(sizes: list[tuple[int, int]]) -> int:
    """Length of the exact support of ``*_f law_f^{*k_f}`` for ``sizes = [(len(probs), k)]``:
    supports add up, ``sum_f k_f (len_f - 1) + 1`` grid points."""
    return sum(k * (length - 1) for length, k in sizes) + 1


def plan_group(sizes: list[tuple[int, int]], n: int) -> list[int]:
    """Indices of the factors to compose first as one group on their own short FFT, or ``[]``.

    ``sizes[i] = (len(probs_i), k_i)``; ``n`` is the FFT length of the whole composition.
    Candidates are taken narrowest first (by ``k (len - 1)``, ties by index); for each prefix
    of ``m >= 2`` of them the model compares

    * ungrouped: ``m`` length-``n`` transforms, ``m * C(n)``, with
      ``C(x) = x (log2 x + PASSES)`` (:func:`transform_cost`);
    * grouped: ``m`` transforms and one inverse at the group's length ``n_g`` (the fast
      length holding the group's exact support) and one length-``n`` transform of the group,
      ``(m + 1) C(n_g) + C(n)``;

    and keeps the prefix that saves most, if it saves at least :data:`MIN_SAVING` of the
    ungrouped cost of those factors and its ``n_g`` is at most ``n / 2`` (a group as wide as
    the window is the whole composition again)."""
    if len(sizes) < 3:  # two factors: grouping both is the composition itself
        return []
    order = sorted(range(len(sizes)), key=lambda i: (sizes[i][1] * (sizes[i][0] - 1), i))
    full = transform_cost(n)
    best, best_saving = 0, 0.0
    support = 1
    for m, i in enumerate(order, start=1):
        length, k = sizes[i]
        support += k * (length - 1)
        if m == len(sizes):  # all of them: nothing left to group against
            break
        n_g = fft.good_size(max(support, 16))
        if 2 * n_g > n:
            break  # wider prefixes only grow
        if m < 2:
            continue
        saving = m * full - ((m + 1) * transform_cost(n_g) + full)
        if saving > best_saving and saving >= MIN_SAVING * m * full:
            best, best_saving = m, saving
    return sorted(order[:best]) if best >= 2 else []
