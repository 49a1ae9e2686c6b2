"""Real FFT backend: pyFFTW with cached plans when importable (for lengths from ``SMALL`` on),
``scipy.fft`` otherwise.

Both backends compute the same transforms; only speed differs. The componentwise floating-point
error of either is bounded by :func:`transform_error`, which the composition code charges to the
certified bounds.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np
import scipy.fft

from plda._internal.caches import register
from plda._internal.floats import UNIT_ROUNDOFF

try:  # pragma: no cover - exercised when pyfftw is installed
    import pyfftw

    _fftw = pyfftw
    BACKEND = "pyfftw"
except ImportError:  # pragma: no cover
    _fftw = None
    BACKEND = "scipy"

# One thread: at the sizes plda uses (1e4-1e6 points) a transform takes about a millisecond and
# threads cost more in synchronisation than they save on a small machine. PLDA_FFT_THREADS=n
# overrides this.
THREADS = max(1, int(os.environ.get("PLDA_FFT_THREADS", "1")))
# FFTW plans own their aligned input/output buffers, so a plan must never run in two threads
# at once (one thread's input would be overwritten by another's: wrong answers, not a crash).
# Each thread therefore keeps its own plans; ``clear_plans`` drops every thread's.
_LOCAL = threading.local()
_GENERATION = [0]
_FORCE_SCIPY = os.environ.get("PLDA_FFT_BACKEND", "").lower() == "scipy"


def backend() -> str:
    """Name of the FFT backend in use: ``"pyfftw"`` or ``"scipy"``."""
    return "scipy" if (_fftw is None or _FORCE_SCIPY) else BACKEND


def good_size(n: int) -> int:
    """Smallest length >= ``n`` that both backends transform fast (5-smooth)."""
    return int(scipy.fft.next_fast_len(int(n), real=True))


def clear_plans() -> None:
    """Forget the cached FFTW plans of every thread (each thread rebuilds its own on next use)."""
    _GENERATION[0] += 1


register("plda._internal.fft.plans", clear_plans)


def _thread_plans() -> dict:
    """This thread's plan cache; emptied when :func:`clear_plans` has been called since."""
    plans = getattr(_LOCAL, "plans", None)
    if plans is None or _LOCAL.generation != _GENERATION[0]:
        plans = _LOCAL.plans = {}
        _LOCAL.generation = _GENERATION[0]
    return plans


def _plan(n: int, forward: bool):
    """This thread's cached FFTW plan (with its aligned input/output buffers) for length ``n``."""
    key = (n, forward)
    plans = _thread_plans()
    plan = plans.get(key)
    if plan is None:
        # the forward and the backward plan of one length share their two buffers: a call fills
        # its input, runs and copies its output out, all on this thread, so neither buffer
        # holds anything between calls (a 2-million-point pair is 32 MB saved)
        twin = plans.get((n, not forward))
        if twin is not None:
            real, spectrum = ((twin.output_array, twin.input_array) if forward
                              else (twin.input_array, twin.output_array))
        else:
            real = _fftw.empty_aligned(n, dtype="float64")
            spectrum = _fftw.empty_aligned(n // 2 + 1, dtype="complex128")
        if forward:
            plan = _fftw.FFTW(real, spectrum, threads=THREADS, flags=("FFTW_ESTIMATE",))
        else:
            plan = _fftw.FFTW(
                spectrum, real, direction="FFTW_BACKWARD", threads=THREADS,
                flags=("FFTW_ESTIMATE", "FFTW_DESTROY_INPUT"),
            )
        if len(plans) > 64:
            plans.clear()  # (a twin dropped here keeps its buffers alive through this plan)
        plans[key] = plan
    return plan


#: below this length scipy.fft is used even with pyFFTW: creating an FFTW plan (1-3 ms) costs
#: more than hundreds of small pocketfft transforms, and small lengths change often
SMALL = 1 << 14


def rfft(x: np.ndarray, n: int) -> np.ndarray:
    """Real-input FFT of ``x`` zero-padded to length ``n`` (``len(x) <= n``)."""
    if n >= SMALL and backend() == "pyfftw":
        plan = _plan(n, True)
        buffer = plan.input_array
        buffer[: len(x)] = x
        buffer[len(x) :] = 0.0
        return plan().copy()
    return scipy.fft.rfft(x, n=n, workers=THREADS)


def irfft(spectrum: np.ndarray, n: int) -> np.ndarray:
    """Inverse of :func:`rfft` for a length-``n`` real signal."""
    if n >= SMALL and backend() == "pyfftw":
        plan = _plan(n, False)
        plan.input_array[:] = spectrum
        return plan().copy()  # pyfftw normalizes the backward transform by 1/n
    return scipy.fft.irfft(spectrum, n=n, workers=THREADS)


def transform_error(n: int, l1_norm: float) -> float:
    """Componentwise error bound of a length-``n`` FFT of a vector with L1 norm ``l1_norm``.

    Every output of a Cooley–Tukey FFT is a sum of the inputs times unit-modulus twiddles
    computed through ``log2 n`` butterfly stages, so its error is at most
    ``c * u * log2(n) * sum|x|`` (Higham, *Accuracy and Stability*, §24.1). We take ``c = 8``
    to cover twiddle-factor error and mixed radices with margin.
    """
    return 8.0 * UNIT_ROUNDOFF * max(1.0, math.log2(max(n, 2))) * l1_norm
