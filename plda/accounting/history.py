"""A history of mechanisms and the longer histories that bound it.

An accountant's answers depend on its run-length history alone. To keep its grid, FFT length
and spectra put while the history grows, it plans for the *horizon* (every count rounded up to a
power of two, :func:`horizon`), and it skips a direction of the neighbouring relation when a
longer history's bound shows it dominated (:func:`checkpoint`): composing more steps can only
increase ``delta(eps)``, so a longer history's upper bound bounds a shorter one's.
"""

from __future__ import annotations

import numpy as np

#: composed mass allowed outside the FFT window on each side (charged to +inf, or subtracted
#: from the optimistic version). The fast path answers deltas at or above
#: plda.engine.composer.FFT_FLOOR only (smaller ones go to the one-shot driver's tilted
#: composition), where 1e-14 moves delta by at most 2e-6 of itself; the engine's 1e-20 would
#: make the window 40% wider for DP-SGD steps.
TAIL = 1e-14
#: Chernoff orders (1/loss units) for the window are taken from the fixed grid 2^(j/2): any
#: order gives a valid tail bound, and a fixed grid lets log E[e^{tL}] of a k-fold composition be
#: k times the cached one-step value. A query uses the orders in [0.25, 64] / spread of the
#: composed law, so only a few are ever computed per step law.
ORDER_RANGE = (0.25, 64.0)
#: bytes of cached spectra and powers kept per accountant
CACHE_BYTES = 512 << 20
#: of those, for the longer histories it plans and bounds with (horizon, checkpoint): their
#: spectra alone, not their binary powers (a rate schedule's horizon holds about 60 laws on
#: 16384 points in its versions; with powers they took 45 MB, and 8 MB of them missed 99%)
PLANNING_BYTES = 32 << 20
#: composed results kept per accountant (one per distinct history and grid step)
RESULTS_KEPT = 4
#: running products kept for histories that grow by appending factors (see plda.engine.composer)
PREFIXES_KEPT = 8
#: relative margin by which a direction's checkpoint bound must stay below the leading
#: direction's upper bound to be skipped (far above the 1e-12 rounding of the bounds)
DOMINANCE = 1e-3


def scalar(value, like):
    """``value`` as a float when ``like`` is a scalar, else as is.

    Parameters
    ----------
    value : float or ndarray
        An answer.
    like : float or array_like
        The query it answers.

    Returns
    -------
    float or ndarray
        The answer in the query's shape.
    """
    return float(value) if np.ndim(like) == 0 else value


#: beyond this many distinct mechanisms the horizon also coarsens them (see horizon)
MANY_MECHANISMS = 32


def horizon(components, coarse: tuple | None = None) -> tuple:
    """``components`` with every count rounded up to a power of two.

    A history that dominates this one and stays put while it grows (with many distinct
    mechanisms, first :func:`coarsened`).

    Parameters
    ----------
    components : tuple of (Mechanism, int)
        The run-length history.
    coarse : tuple, optional
        ``coarsened(components)``, if the caller holds it.

    Returns
    -------
    tuple of (Mechanism, int)
        The horizon history.
    """
    coarse = coarsened(components) if coarse is None else coarse
    return tuple((m, 1 << max(int(k) - 1, 0).bit_length()) for m, k in coarse)


def checkpoint(components, coarse: tuple | None = None) -> tuple:
    """``components`` with every count ``k`` rounded up to a multiple of ``2^(floor(log2 k) - 3)``.

    At most 1/8 more steps: a history that stays put for many consecutive queries, never past
    the power-of-two horizon (with many distinct mechanisms, first :func:`coarsened`).

    Parameters
    ----------
    components : tuple of (Mechanism, int)
        The run-length history.
    coarse : tuple, optional
        ``coarsened(components)``, if the caller holds it.

    Returns
    -------
    tuple of (Mechanism, int)
        The checkpoint history.
    """
    out = []
    for mechanism, count in coarsened(components) if coarse is None else coarse:
        spacing = 1 << max(int(count).bit_length() - 4, 0)
        out.append((mechanism, -(-count // spacing) * spacing))
    return tuple(out)


def grew_from(components, earlier) -> bool:
    """Whether the history ``components`` is ``earlier`` with more runs appended.

    Parameters
    ----------
    components, earlier : tuple of (Mechanism, int)
        Run-length histories.

    Returns
    -------
    bool
        True if ``earlier`` is a proper prefix of ``components``.
    """
    return len(earlier) < len(components) and components[: len(earlier)] == earlier


def coarsened(components, held: tuple | None = None) -> tuple:
    """A history that dominates ``components`` with few distinct mechanisms.

    For more than :data:`MANY_MECHANISMS` distinct mechanisms (a noise schedule changed at
    every step), each is replaced by a dominating one on a coarse parameter grid
    (:meth:`Mechanism.coarsened`: for Poisson-sampled Gaussians sigma rounded down and q up to
    powers of ``2^(1/16)``) and the runs merged, so that the horizon and checkpoint built on it
    change only every so often and compose cheaply.

    Parameters
    ----------
    components : tuple of (Mechanism, int)
        The run-length history.
    held : tuple, optional
        ``(earlier, coarsened(earlier))`` for an earlier history that ``components`` extends
        by appending runs: only the new runs are read (the same result, sooner).

    Returns
    -------
    tuple of (Mechanism, int)
        ``components`` themselves, or the coarsened history.
    """
    if len(components) <= MANY_MECHANISMS:
        return components
    merged: dict = {}
    start = 0
    if held is not None and len(held[0]) > MANY_MECHANISMS:
        merged, start = dict(held[1]), len(held[0])
    for mechanism, count in components[start:]:
        rounded = dominating(mechanism)
        merged[rounded] = merged.get(rounded, 0) + count
    return tuple(merged.items())


def dominating(mechanism) -> object:
    """:meth:`Mechanism.coarsened` of ``mechanism`` (remembered on the mechanism).

    Parameters
    ----------
    mechanism : Mechanism
        A mechanism of the history.

    Returns
    -------
    Mechanism
        A mechanism on a coarse parameter grid that dominates it.
    """
    return mechanism.coarsened()
