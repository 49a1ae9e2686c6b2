"""Real FFT backend: pyFFTW with cached plans when importable, ``scipy.fft`` otherwise.

Both backends compute the same transforms; only speed differs. The componentwise floating-point
error of either is bounded by :func:`transform_error`, which the composition code charges to the
certified bounds.
"""

from __future__ import annotations

import os

import numpy as np
import scipy.fft

try:  # pragma: no cover - exercised when pyfftw is installed
    import pyfftw
    import pyfftw.interfaces.numpy_fft as _fftw

    pyfftw.interfaces.cache.enable()
    pyfftw.interfaces.cache.set_keepalive_time(60.0)
    BACKEND = "pyfftw"
except ImportError:  # pragma: no cover
    _fftw = None
    BACKEND = "scipy"

THREADS = max(1, min(4, os.cpu_count() or 1))
_FORCE_SCIPY = os.environ.get("PLDA_FFT_BACKEND", "").lower() == "scipy"

#: unit roundoff of float64
UNIT_ROUNDOFF = 2.0**-53


def backend() -> str:
    """Name of the FFT backend in use: ``"pyfftw"`` or ``"scipy"``."""
    return "scipy" if (_fftw is None or _FORCE_SCIPY) else BACKEND


def good_size(n: int) -> int:
    """Smallest length >= ``n`` that both backends transform fast (5-smooth)."""
    return int(scipy.fft.next_fast_len(int(n), real=True))


def rfft(x: np.ndarray, n: int) -> np.ndarray:
    """Real-input FFT of ``x`` zero-padded (or wrapped) to length ``n``."""
    if backend() == "pyfftw":
        return _fftw.rfft(x, n=n, threads=THREADS, planner_effort="FFTW_ESTIMATE")
    return scipy.fft.rfft(x, n=n, workers=THREADS)


def irfft(spectrum: np.ndarray, n: int) -> np.ndarray:
    """Inverse of :func:`rfft` for a length-``n`` real signal."""
    if backend() == "pyfftw":
        return _fftw.irfft(spectrum, n=n, threads=THREADS, planner_effort="FFTW_ESTIMATE")
    return scipy.fft.irfft(spectrum, n=n, workers=THREADS)


def transform_error(n: int, l1_norm: float) -> float:
    """Componentwise error bound of a length-``n`` FFT of a vector with L1 norm ``l1_norm``.

    Every output of a Cooley–Tukey FFT is a sum of the inputs times unit-modulus twiddles
    computed through ``log2 n`` butterfly stages, so its error is at most
    ``c * u * log2(n) * sum|x|`` (Higham, *Accuracy and Stability*, §24.1). We take ``c = 8``
    to cover twiddle-factor error and mixed radices with margin.
    """
    return 8.0 * UNIT_ROUNDOFF * max(1.0, np.log2(max(n, 2))) * l1_norm
