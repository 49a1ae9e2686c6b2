"""Selection instances enumerated exactly in mpmath (shared by the tests of the exponential
mechanism and of permute-and-flip / report-noisy-max; not a test module)."""

from __future__ import annotations

import itertools
import math

import mpmath


def instances(candidates: int):
    """Every pair of integer utility vectors in {0, 1, 2}, coordinates moving by at most 1."""
    vectors = list(itertools.product(range(3), repeat=candidates))
    for u in vectors:
        for v in vectors:
            if u < v and max(abs(a - b) for a, b in zip(u, v, strict=True)) <= 1:
                yield u, v


def homogeneous_hockey_stick(p, q, count, eps):
    """Exact ``delta(eps)`` of ``count`` runs of one pair (output laws ``p`` against ``q``),
    summed over the output counts (every sequence with the same counts has the same
    probabilities): cheap for 10 runs."""
    e = mpmath.exp(mpmath.mpf(eps))
    total = mpmath.mpf(0)
    for counts in itertools.product(range(count + 1), repeat=len(p)):
        if sum(counts) != count:
            continue
        ways = math.factorial(count) // math.prod(math.factorial(c) for c in counts)
        first = mpmath.fprod(pi**c for pi, c in zip(p, counts, strict=True))
        second = mpmath.fprod(qi**c for qi, c in zip(q, counts, strict=True))
        total += ways * max(first - e * second, 0)
    return total
