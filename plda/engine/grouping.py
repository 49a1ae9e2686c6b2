"""Grouping the narrow factors of a one-shot composition: composed first on a short FFT that
holds their exact support (:func:`plan_group` chooses them from lengths and counts alone), the
group enters the long product as one factor whose spectrum carries the short product's
certified error (:func:`group_spectrum`). See docs/concepts/fft-composition.md.
"""
from __future__ import annotations

import math

import numpy as np

from plda._internal import fft
from plda._internal.floats import UNIT_ROUNDOFF
from plda.engine.spectra import Spectrum
from plda.grid.moments import power_support

#: elementwise passes per transformed point, in units of one butterfly stage (the spectrum's
#: ``abs``, ``log`` and ratio, the power and the product): a transform of length ``m`` costs
#: about ``m * (log2 m + PASSES)``
PASSES = 6.0
#: a group is formed only when it saves at least this fraction of the ungrouped cost (below it
#: the saving is within timing noise and the grouped bounds are a little wider)
MIN_SAVING = 0.2


def transform_cost(m: int) -> float:
    """Model cost of one forward transform of a factor with its elementwise passes.

    Parameters
    ----------
    m
        The transform's length.

    Returns
    -------
    float
        ``m (log2 m + PASSES)``: one unit per point and butterfly stage.
    """
    return m * (math.log2(max(m, 2)) + PASSES)


def group_support(sizes: list[tuple[int, int]]) -> int:
    """Length of the exact support of a composition ``*_f law_f^{*k_f}``.

    Parameters
    ----------
    sizes
        ``[(len(probs), k), ...]`` of the factors.

    Returns
    -------
    int
        ``sum_f k_f (len_f - 1) + 1`` grid points (supports add up).
    """
    return sum(k * (length - 1) for length, k in sizes) + 1


def plan_group(sizes: list[tuple[int, int]], n: int) -> list[int]:
    """Indices of the factors to compose first as one group on their own short FFT.

    Candidates are taken narrowest first (by ``k (len - 1)``, ties by index); for each prefix
    of ``m >= 2`` of them the model compares

    * ungrouped: ``m`` length-``n`` transforms, ``m * C(n)``, with
      ``C(x) = x (log2 x + PASSES)`` (:func:`transform_cost`);
    * grouped: ``m`` transforms and one inverse at the group's length ``n_g`` (the fast
      length holding the group's exact support) and one length-``n`` transform of the group,
      ``(m + 1) C(n_g) + C(n)``;

    and keeps the prefix that saves most, if it saves at least :data:`MIN_SAVING` of the
    ungrouped cost of those factors and its ``n_g`` is at most ``n / 2`` (a group as wide as
    the window is the whole composition again).

    Parameters
    ----------
    sizes
        ``sizes[i] = (len(probs_i), k_i)``.
    n
        The FFT length of the whole composition.

    Returns
    -------
    list of int
        The group's indices, ascending, or ``[]`` (no group: fewer than three factors, or no
        saving).
    """
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


#: how many of the group's largest spectrum errors are carried to the long transform through
#: the interpolation kernel (the rest through their L2 norm), see :func:`group_spectrum`
PEAKS = 4
#: short-transform frequencies on each side of a peak within which the kernel is evaluated
#: frequency by frequency (beyond, a peak's kernel is below 1 / (2 NEAR))
NEAR = 64


def group_spectrum(members, n: int, multiply) -> Spectrum:
    """The spectrum at a long FFT length of a group's exact composition, from a short FFT.

    The short FFT, of length ``n_g <= n / 2``, holds the group's whole exact support (nothing
    wraps); its product ``Y`` is off the exact ``Y*`` by ``|Y_k - Y*_k| <= b_k`` (bound times
    relative error).

    Error at the long transform's frequencies ``w_j = 2 pi j / n``. The group's law
    ``y = irfft(Y)`` is kept unclipped on all ``n_g`` points, so ``e = y - y* = IDFT(Y - Y*)
    + r`` (``r`` the inverse transform's rounding, at most ``rho`` per entry) and

    ``|sum_t e_t e^{-i w t}| <= |sum_k (Y_k - Y*_k) K_kj| + n_g rho``, with
    ``K_kj = (1/n_g) sum_{t < n_g} e^{i (2 pi k / n_g - w_j) t}``,
    ``|K_kj| = |sin(pi j n_g / n)| / (n_g sin(pi d_kj))``

    (``d_kj`` the distance of ``k / n_g - j / n`` to the nearest integer; ``K = 1`` at
    ``d = 0``; the numerator depends on ``j`` only, so ``K`` vanishes wherever ``w_j`` is a
    frequency of the short transform other than ``k``'s). The :data:`PEAKS` largest ``b_k``
    (with their mirrors ``n_g - k``) are carried with the upper bound of ``|K|`` from
    ``sin(pi d) >= max(2d, pi d - (pi d)^3 / 6)``, the others by Cauchy–Schwarz:
    ``sum_{rest} b_k |K_kj| <= ||b_rest||_2 (1 - sum_{peaks} |K_kj|^2)^(1/2)``, since
    ``sum_k |K_kj|^2 = 1`` (Parseval), with the lower bound of ``|K|`` from
    ``sin(pi d) <= pi d`` for the peaks.
    At ``w = 0``, where a composition's mass sits, this is ``b_0``: the sum of the members'
    transform errors, as if they had been transformed at length ``n`` (a bound through
    ``||e||_1`` would be ~3x that). The long transform's own rounding
    (:func:`plda._internal.fft.transform_error` of ``||y||_1``) is added.

    Parameters
    ----------
    members
        ``[(law, count), ...]``, the group.
    n
        The long FFT length.
    multiply
        ``multiply(members, n_g)`` gives the product's spectrum, ``log`` of its bound and its
        relative error (as :meth:`plda.engine.composer.Composer._product` does).

    Returns
    -------
    Spectrum
        The group's :class:`~plda.engine.spectra.Spectrum` at length ``n``.

    Raises
    ------
    ValueError
        When the group's support does not fit twice in ``n``.
    """
    lo, hi = power_support(members)
    n_g = fft.good_size(max(hi - lo + 1, 16))
    if 2 * n_g > n:
        raise ValueError(f"a group of {n_g} points does not fit twice in {n}")
    spectrum, log_bound, relative = multiply(members, n_g)
    # exp(max(log_bound, -700)) >= the bound; below e^-700 a term is far under any rounding
    bound = np.exp(np.maximum(log_bound, -700.0))
    b = bound * relative
    y = fft.irfft(spectrum, n_g)
    # the inverse transform's rounding per entry (as in plda.engine.spectra.from_spectrum)
    rho = fft.transform_error(n_g, 2.0 / n_g * float(bound.sum()))
    # half-spectrum index k stands for k and n_g - k, except k = 0 and k = n_g / 2
    single = np.zeros(len(b), dtype=bool)
    single[0] = True
    if n_g % 2 == 0:
        single[-1] = True
    peaks = np.argsort(-b, kind="stable")[:PEAKS]
    rest = np.ones(len(b), dtype=bool)
    rest[peaks] = False
    weights = np.where(single, 1.0, 2.0)
    rest_l2 = math.sqrt(float(np.sum(weights[rest] * b[rest] ** 2))) * (1 + 8 * UNIT_ROUNDOFF)
    floor = n_g * rho + fft.transform_error(n, float(np.abs(y).sum()))
    pairs = [(k, sign) for k in peaks.tolist() for sign in ((1,) if single[k] else (1, -1))]
    # away from the peaks (more than NEAR short-transform frequencies, i.e. more than
    # reach >= NEAR n / n_g long-transform ones: n d > reach), a peak's
    # |K| <= 1 / (2 n_g d) < n / (2 reach n_g) <= 1 / (2 NEAR), and the rest counts in full
    reach = NEAR * -(-n // n_g)
    far_kernel = min(1.0, n / (2.0 * reach * n_g)) * (1 + 8 * UNIT_ROUNDOFF)
    eta = np.full(n // 2 + 1, sum(b[k] for k, _ in pairs) * far_kernel + rest_l2 + floor)
    # near the peaks, frequency by frequency
    near = np.zeros(n // 2 + 1, dtype=bool)
    for k, sign in pairs:
        centre = (sign * k * n // n_g) % n
        for start in (centre - reach - 1, centre - reach - 1 - n, centre - reach - 1 + n):
            near[max(start, 0) : max(start + 2 * reach + 3, 0)] = True
    j = np.flatnonzero(near)
    if len(j):
        eta[j] = _near_peaks(j, n, n_g, b, pairs, rest_l2) + floor
    eta *= 1 + 8 * UNIT_ROUNDOFF * PEAKS  # the sums, rounded up
    return Spectrum(powers=[fft.rfft(y, n)], eta=eta)


def _near_peaks(j, n: int, n_g: int, b, pairs, rest_l2: float) -> np.ndarray:
    """``sum_{peaks} b_k |K_kj| + ||b_rest||_2 (1 - sum_{peaks} |K_kj|^2)^(1/2)`` at the
    long-transform frequencies ``j``, rounded up (see :func:`group_spectrum`)."""
    # every product of integers below stays under 2^53: exact in floats, and so is np.mod
    j_n_g = j.astype(float) * n_g
    # |sin(pi j n_g / n)| from the exact residue m = (j n_g mod n): the argument a = pi m / n
    # in [0, pi) is off by 3u relative, so the sine by at most 3 pi u + u absolute
    sine = np.abs(np.sin(np.pi * np.mod(j_n_g, n) / n))
    sine_hi = sine * (1 + 4 * UNIT_ROUNDOFF) + 16 * UNIT_ROUNDOFF
    sine_lo = np.maximum(sine * (1 - 4 * UNIT_ROUNDOFF) - 16 * UNIT_ROUNDOFF, 0.0)
    period = float(n) * n_g
    peak_sum = np.zeros(len(j))
    covered = np.zeros(len(j))  # a lower bound on sum_{peaks} |K|^2
    for k, sign in pairs:
        distance = np.mod(sign * k * n - j_n_g, period)  # n n_g d
        distance = np.minimum(distance, period - distance)
        # x = pi d (3u); n_g sin(x) lies in [n_g max(2d, x - x^3/6), n_g x], rounded outward
        # (x - x^3/6 >= 0.58 x for x <= pi/2: its rounding stays within ~10u relative)
        x = np.pi / period * distance
        below = n_g * np.maximum(2.0 / period * distance, x - x**3 / 6) * (1 - 32 * UNIT_ROUNDOFF)
        above = n_g * x * (1 + 8 * UNIT_ROUNDOFF)
        with np.errstate(divide="ignore", invalid="ignore"):
            high = np.where(distance > 0, sine_hi / below, 1.0)
            low = np.where(distance > 0, sine_lo / above, 1.0)
        peak_sum += b[k] * np.minimum(1.0, high * (1 + 4 * UNIT_ROUNDOFF))
        covered += np.minimum(1.0, low * (1 - 4 * UNIT_ROUNDOFF)) ** 2
    rest_factor = np.sqrt(np.maximum(1.0 - covered * (1 - 8 * UNIT_ROUNDOFF * len(pairs)), 0.0))
    return peak_sum + rest_l2 * rest_factor
