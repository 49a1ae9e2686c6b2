"""Exact integer samplers (Canonne, Kamath & Steinke 2020): discrete Laplace and discrete
Gaussian noise from integer and rational arithmetic only (no floating point).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np


def randbelow(rng: np.random.Generator, n: int) -> int:
    """Uniform integer in [0, n), exact for any size.

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of randomness.
    n : int
        The number of outcomes, ``>= 1``.

    Returns
    -------
    int
        The draw.
    """
    if n <= 1 << 62:
        return int(rng.integers(n))
    bits = n.bit_length()
    nbytes = (bits + 7) // 8
    while True:  # rejection from raw bytes for integers numpy cannot draw
        r = int.from_bytes(rng.bytes(nbytes), "little") >> (8 * nbytes - bits)
        if r < n:
            return r


def bernoulli_exp(rng, numerator: int, denominator: int) -> bool:
    """Bernoulli(exp(-n/d)), exactly, with integer arithmetic only (CKS20, Algorithm 1).

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of randomness.
    numerator : int
        ``n >= 0``.
    denominator : int
        ``d >= 1``.

    Returns
    -------
    bool
        True with probability ``exp(-n/d)``.
    """
    while numerator > denominator:  # exp(-γ) = exp(-1)^floor(γ) exp(-(γ - floor(γ)))
        if not bernoulli_exp(rng, 1, 1):
            return False
        numerator -= denominator
    k = 1
    while randbelow(rng, denominator * k) < numerator:  # Bernoulli(γ / k)
        k += 1
    return k % 2 == 1


def discrete_laplace(rng, s: int, t: int) -> int:
    """Sample with ``P(x) ∝ exp(-|x| s / t)`` on the integers (CKS20, Algorithm 2).

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of randomness.
    s, t : int
        Positive integers: the scale is ``t / s``.

    Returns
    -------
    int
        The draw.
    """
    while True:
        u = randbelow(rng, t)
        if not bernoulli_exp(rng, u, t):
            continue
        v = 0
        while bernoulli_exp(rng, 1, 1):
            v += 1
        y = (u + t * v) // s
        negative = randbelow(rng, 2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def discrete_gaussian(rng, sigma_squared: Fraction) -> int:
    """Sample with ``P(x) ∝ exp(-x² / (2σ²))`` on the integers (CKS20, Algorithm 3).

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of randomness.
    sigma_squared : fractions.Fraction
        ``σ² > 0``, exactly.

    Returns
    -------
    int
        The draw.
    """
    t = math.isqrt(math.floor(sigma_squared)) + 1  # floor(sigma) + 1
    while True:
        y = discrete_laplace(rng, 1, t)
        gamma = (abs(y) - sigma_squared / t) ** 2 / (2 * sigma_squared)
        if bernoulli_exp(rng, gamma.numerator, gamma.denominator):
            return y
