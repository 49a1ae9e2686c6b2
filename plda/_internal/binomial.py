"""Binomial probabilities to within half an ulp each, without ``scipy.stats``.

``scipy.stats`` stays out of plda's import and query paths (it costs ~27 MB of memory); the
group mixture of :class:`plda.PoissonSampled` (``group_size``) needs
``P(K = k)`` for ``K ~ Binomial(m, q)``, accurately enough that the law's probabilities keep
the few-ulp accuracy the discretization assumes of them.
"""

from __future__ import annotations

import math
from fractions import Fraction

__all__ = [
    "MERGED_TAIL",
    "binomial_probabilities",
    "hypergeometric_probabilities",
    "mode_takes_rest",
    "poisson_binomial_probabilities",
]

#: the smallest masses, up to this much in all, are moved onto the largest count instead of kept
#: (those that underflow, and a little more)
MERGED_TAIL = 1e-310
#: bits of the mantissas of the recurrence
_PRECISION = 128


def _rounded(mantissa: int, exponent: int) -> tuple[int, int]:
    """``mantissa 2^exponent`` with the mantissa cut to :data:`_PRECISION` bits (rounded down)."""
    extra = mantissa.bit_length() - _PRECISION
    return (mantissa >> extra, exponent + extra) if extra > 0 else (mantissa, exponent)


def binomial_probabilities(trials: int, sample_rate: float) -> tuple[tuple, tuple]:
    """``(counts, probabilities)`` of ``K ~ Binomial(trials, sample_rate)``, no ``scipy.stats``.

    ``q = a / 2^e`` is dyadic, so ``P(K = 0) = ((2^e - a) / 2^e)^m`` and the recurrence
    ``P(K = k+1) = P(K = k) (m - k) a / ((k + 1)(2^e - a))`` run on integers with 128-bit
    mantissas (relative error below ``3 m 2^-127``) before rounding to the nearest float: each
    probability is within half an ulp (plus 1e-30) of the truth. The smallest masses, up to
    :data:`MERGED_TAIL` in all, are added (rounded up) to ``k = m`` instead of kept: ``K``
    grows stochastically, which only makes the mixture pair of gradient accumulation dominate
    more (the power ``E[Phi(K C / s - z_alpha)]`` of its best test grows with ``K``). Returns
    the kept counts, increasing, and their probabilities.
    """
    if sample_rate == 1.0:
        return (trials,), (1.0,)
    a, scale = Fraction(sample_rate).as_integer_ratio()
    b, e = scale - a, scale.bit_length() - 1
    mantissa, exponent, base, base_exponent, n = 1, 0, b, -e, trials
    while n:  # (b / 2^e)^m by squaring
        if n & 1:
            mantissa, exponent = _rounded(mantissa * base, exponent + base_exponent)
        base, base_exponent = _rounded(base * base, 2 * base_exponent)
        n >>= 1
    values = []
    for k in range(trials + 1):
        # int / int is correctly rounded (subnormals and underflow to 0 included)
        values.append(mantissa / (1 << -exponent) if exponent < 0 else float(mantissa << exponent))
        mantissa, exponent = _rounded(mantissa * (trials - k) * a, exponent)
        shift = _PRECISION + ((k + 1) * b).bit_length()
        mantissa, exponent = _rounded((mantissa << shift) // ((k + 1) * b), exponent - shift)
    merged, total = [], 0.0
    for k in sorted(range(trials + 1), key=values.__getitem__):
        total += values[k]  # a decision only: the mass moved is bounded below
        if total > MERGED_TAIL:
            break
        merged.append(k)
    kept = set(range(trials + 1)).difference(merged)
    counts = sorted(kept)
    probabilities = [values[k] for k in counts]
    if merged:  # each merged float is within a relative ulp or 5e-324 of its true mass
        extra = math.fsum(values[k] for k in merged) * (1 + 2**-50) + 5e-324 * len(merged)
        if counts[-1] == trials:
            probabilities[-1] = math.nextafter(probabilities[-1] + extra, math.inf)
        else:
            counts.append(trials)
            probabilities.append(extra)
    return tuple(counts), tuple(probabilities)


def poisson_binomial_probabilities(sample_rates) -> tuple[tuple, tuple]:
    """``(counts, probabilities)`` of ``K = sum_i B_i``, ``B_i ~ Bernoulli(q_i)`` independent,
    rounded so that ``K`` only grows stochastically (what keeps a group's mixture dominating).

    The recurrence ``p'_k = p_k (1 - q_i) + p_{k-1} q_i`` adds positive terms only, so after
    ``m`` records each float ``p_k`` is within a relative ``3 (m + 1) u`` of its true value
    (``u = 2^-53``: the ``1 - q_i``, the two products and the sum, per record); ``gamma =
    4 (m + 1) u`` is charged, and :func:`mode_takes_rest` rounds.

    Parameters
    ----------
    sample_rates : sequence of float
        The ``q_i``, each in ``(0, 1]``.

    Returns
    -------
    tuple
        The kept counts, increasing (the largest is ``m``), and their probabilities (summing
        to 1 within a few ulps).
    """
    p = [1.0]
    for q in sample_rates:
        nxt = [0.0] * (len(p) + 1)
        keep = 1.0 - q  # exact for q >= 1/2; else within half an ulp (in gamma)
        for k, value in enumerate(p):
            nxt[k] += value * keep
            nxt[k + 1] += value * q
        p = nxt
    return mode_takes_rest(p, 0, 4 * len(p) * 2.0**-53)


def hypergeometric_probabilities(population: int, group: int, draws: int) -> tuple[tuple, tuple]:
    """``(counts, probabilities)`` of ``K ~ Hypergeometric(population, group, draws)``, rounded
    so that ``K`` only grows stochastically (a fixed-size batch's count of a group's records).

    ``K`` counts the group's records among ``draws`` records drawn without replacement from
    ``population``. Unnormalized weights run the recurrence
    ``w_{k+1} = w_k (group - k)(draws - k) / ((k + 1)(population - group - draws + k + 1))``
    from the smallest possible count on integers with 128-bit mantissas (relative error below
    ``3 group 2^-127`` each, the sum likewise); each probability ``w_k / sum w`` is rounded to
    the nearest float, and :func:`mode_takes_rest` rounds them so that every tail
    ``P(K >= t)`` is at least the true one.

    Parameters
    ----------
    population : int
        Records drawn from (``>= group`` and ``>= draws``).
    group : int
        The group's records among them.
    draws : int
        Records drawn.

    Returns
    -------
    tuple
        The kept counts, increasing (the largest is ``min(group, draws)``), and their
        probabilities (summing to 1 within a few ulps).
    """
    n, m, b = int(population), int(group), int(draws)
    lo, hi = max(0, b - (n - m)), min(m, b)
    if lo == hi:
        return (hi,), (1.0,)
    mantissa, exponent = 1, 0
    weights = []
    for k in range(lo, hi + 1):
        weights.append((mantissa, exponent))
        if k == hi:
            break
        mantissa, exponent = _rounded(mantissa * (m - k) * (b - k), exponent)
        divisor = (k + 1) * (n - m - b + k + 1)
        shift = _PRECISION + divisor.bit_length()
        mantissa, exponent = _rounded((mantissa << shift) // divisor, exponent - shift)
    # on one exponent, as integers: int / int is correctly rounded however long the integers
    low = min(e for _, e in weights)
    scaled = [w << (e - low) for w, e in weights]
    total = sum(scaled)
    # int / int is correctly rounded: each value within half an ulp (and the recurrence's
    # 3 group 2^-127) of the truth, which 2^-50 covers
    return mode_takes_rest([w / total for w in scaled], lo, 2.0**-50)


def mode_takes_rest(values: list, first: int, gamma: float) -> tuple[tuple, tuple]:
    """Probabilities of the counts ``first, first + 1, ...`` rounded so that the count only
    grows stochastically, moving as little mass as that needs.

    Each value is within a relative ``gamma`` of its true probability. Counts below the most
    likely one keep ``value (1 - gamma)``, at most their true mass; counts above it keep
    ``value (1 + gamma)``, at least theirs; the most likely count takes the rest, rounded up.
    Every tail ``P(K >= t)`` is then at least the true one: above the mode, each term is; at or
    below it, the tail is one minus masses that are each at most their true one. (Giving the
    rest to the largest count instead, as an earlier version did, put about ``gamma`` of mass
    on a shift far beyond every likely one: a 50-record group at rate 0.001 then spread its
    composed law over a grid too wide for any accuracy.) Masses below 1e-300 below the mode
    are dropped (their mass goes to the mode: up); above it they are added, rounded up, to
    the largest count.

    Parameters
    ----------
    values : list of float
        The probabilities of the counts, in order.
    first : int
        The first count.
    gamma : float
        The relative error bound of the values.

    Returns
    -------
    tuple
        The kept counts, increasing (the largest is ``first + len(values) - 1``), and their
        probabilities (summing to 1 within a few ulps, at least 1).
    """
    last = first + len(values) - 1
    if len(values) == 1:
        return (first,), (1.0,)
    mode = max(range(len(values)), key=values.__getitem__)
    below = [(first + i, v * (1 - gamma)) for i, v in enumerate(values[:mode])]
    above = [(first + mode + 1 + i, v * (1 + gamma)) for i, v in enumerate(values[mode + 1:])]
    kept = [(k, p) for k, p in below + above if p > 1e-300]
    merged = [p for k, p in above if p <= 1e-300]
    if merged:  # onto the largest count, rounded up (each within an ulp or 5e-324)
        extra = math.fsum(merged) * (1 + 2.0**-50) + 5e-324 * len(merged)
        if kept and kept[-1][0] == last:
            kept[-1] = (last, math.nextafter(kept[-1][1] + extra, math.inf))
        else:
            kept.append((last, extra))
    # 1 - fsum is within half an ulp of 1 of the exact rest: 2^-53 more, then up, makes the
    # total at least 1
    # (at most 1: a rest above 1 means the kept masses are below 1e-16 in all, and 1 covers it)
    rest = min(1.0, math.nextafter(1.0 - math.fsum(p for _, p in kept) + 2.0**-53, math.inf))
    kept = sorted([*kept, (first + mode, rest)])
    return tuple(k for k, _ in kept), tuple(p for _, p in kept)
