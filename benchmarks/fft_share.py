"""How much of a plda query is FFT work (issue 27: a query at most 3x the FFT work it needs).

:func:`fft_seconds` runs a query once with plda's transforms and spectrum powers timed: the
forward and inverse real FFTs (``plda._internal.fft.rfft``/``irfft``, plan creation included)
and the powers of a spectrum (``Spectrum.binary_power``/``log_power``), i.e. the convolution
itself. Everything else (the certified discretization, the Chernoff moments, the planning,
the conversions) is the rest of the query. The wrappers add a little time of their own to
both, so read the ratio to two digits.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def _timed(owner, names: tuple[str, ...], total: list[float]) -> Iterator[None]:
    saved = {name: getattr(owner, name) for name in names}

    def wrap(function):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                total[0] += time.perf_counter() - start

        return timed

    for name, function in saved.items():
        setattr(owner, name, wrap(function))
    try:
        yield
    finally:
        for name, function in saved.items():
            setattr(owner, name, function)


def fft_seconds(run: Callable[[], object]) -> tuple[float, float]:
    """``(query seconds, FFT seconds)`` of one call of ``run`` (caches are the caller's)."""
    from plda._internal import fft
    from plda.engine.spectra import Spectrum

    total = [0.0]
    with _timed(fft, ("rfft", "irfft"), total), _timed(
        Spectrum, ("binary_power", "log_power"), total
    ):
        start = time.perf_counter()
        run()
        wall = time.perf_counter() - start
    return wall, total[0]
