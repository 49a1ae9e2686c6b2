"""Tilted composition: the FFT's resolution moved to the tiny deltas of large epsilons.

Tilting ``p_i -> p_i e^{t l_i} / M(t)`` commutes with convolution, so the composition of the
tilted factors (:func:`plda.engine.composer.compose`) untilted by ``exp(C - t l_i)`` is the
composed law, and the absolute FFT error becomes an error relative to the deltas found near the
Chernoff point of ``t``.
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal.floats import union_probability
from plda.engine.composer import compose
from plda.grid.discrete import DiscreteLoss
from plda.grid.moments import power_support


def compose_tilted(
    factors: list,
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
            (
                DiscreteLoss(
                    step=f.step, offset=f.offset, probs=probs, upper=f.upper,
                    loss_error=f.loss_error,
                ),
                k,
            )
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
