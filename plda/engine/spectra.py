"""Spectra of discrete privacy-loss laws, with their certified error terms and powers.

The spectrum of a composition ``*_f law_f^{*k_f}`` is the product of the factors' spectra raised
to their counts. Each factor's transform ``X`` is computed once per FFT length ``n`` and kept
with ``log(|X| + eta)`` and ``eta / (|X| + eta)`` (``eta`` bounds the transform's rounding
componentwise, :func:`plda._internal.fft.transform_error`), which is all the error accounting of the
composer needs. Powers are taken either from the binary powers ``X^(2^j)`` (kept, for a history
whose counts grow) or as ``exp(k log X)`` (one-shot compositions with large counts, where its
rounding ``u |k log X|`` is far below the ``k u`` of repeated products).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from plda._internal import fft
from plda._internal.floats import UNIT_ROUNDOFF

#: powers whose bound falls below e^LOG_FLOOR are set to 0 and charged in full (their values
#: are below the smallest normal double; computing them costs many times an ordinary exp)
LOG_FLOOR = -740.0


@dataclass(eq=False)
class Spectrum:
    """rfft of one discretized law folded onto ``n`` points, its error terms and the binary
    powers ``X^(2^j)`` computed so far (``powers[0]`` is ``X``)."""

    powers: list
    amplitude_log: np.ndarray  # log(|X| + eta): |true X| and |computed X| are both below
    relative: np.ndarray  # eta / (|X| + eta)
    nbytes: int = field(default=0)  # kept up to date as powers are added (caches read it)

    def __post_init__(self):
        self.nbytes = sum(p.nbytes for p in self.powers) + 2 * self.amplitude_log.nbytes

    def binary_power(self, k: int) -> tuple[np.ndarray, float]:
        """``X^k`` as the product of the binary powers of ``X`` (ascending order: the result
        depends on ``k`` only, not on which powers were cached before), and the relative
        rounding it adds: ~``k + 2 log2 k`` products (relative errors double under squaring,
        so the squarings add up to ``k`` roundings)."""
        out = None
        j, rest = 0, k
        while rest:
            while len(self.powers) <= j:
                last = self.powers[-1]
                self.powers.append(last * last)
                self.nbytes += last.nbytes
            if rest & 1:
                if out is None:
                    out = self.powers[j].copy()
                else:
                    out *= self.powers[j]
            rest >>= 1
            j += 1
        return out, 8 * UNIT_ROUNDOFF * (k + 2 * k.bit_length())

    def log_power(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``X^k = exp(k log X)`` and its relative rounding ``8u (1 + |k log X|)`` (small where
        ``|X| ~ 1`` with a small phase, the frequencies that carry the mass); where
        ``k log(|X| + eta)`` is below :data:`LOG_FLOOR` the power is set to 0 and its whole
        value (at most the bound) is charged as error."""
        x = self.powers[0]
        if k == 1:
            return x.copy(), np.full(len(x), 4 * UNIT_ROUNDOFF)
        band = k * self.amplitude_log > LOG_FLOOR
        out = np.zeros(len(x), dtype=complex)
        relative = np.ones(len(x))  # outside the band: all of the (tiny) value is error
        with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
            log_x = k * np.log(x[band])
            out[band] = np.exp(log_x)
            relative[band] = 8 * UNIT_ROUNDOFF * (1 + np.abs(np.nan_to_num(log_x, neginf=0.0)))
        return out, relative


def spectrum_of(law, n: int) -> Spectrum:
    """The :class:`Spectrum` of ``law.probs`` at FFT length ``n``.

    A law longer than ``n`` is folded modulo ``n`` first: cyclic convolution of inputs folded
    modulo ``n`` is the exact convolution folded modulo ``n``, so folding only adds to the
    wrap-around that the composition window charges; its rounding (``layers`` additions per
    entry) is added to ``eta``."""
    probs = law.probs
    layers = -(-len(probs) // n)
    if layers > 1:
        padded = np.zeros(layers * n)
        padded[: len(probs)] = probs
        probs = padded.reshape(layers, n).sum(axis=0)
    x = fft.rfft(probs, n)
    l1 = float(np.sum(law.probs))
    eta = fft.transform_error(n, l1) + 2 * layers * UNIT_ROUNDOFF * l1
    if law.entry_error > 0 or law.l2_error > 0:
        # a composed law entering another composition is the exact one up to an error vector e
        # with |e_i| <= entry_error and ||e||_2 <= l2_error (clipping at 0 and folding only
        # shrink it); its exact transform is then off the computed one by at most
        # ||e||_1 <= min(len * entry_error, sqrt(len) * l2_error) at every frequency, on top
        # of the transform's own rounding. (A discretized law has both at 0: nothing added.)
        size = len(law.probs)
        eta += min(law.entry_error * size, law.l2_error * math.sqrt(size))
    amplitude = np.abs(x) + eta
    with np.errstate(divide="ignore"):  # an all-zero law has amplitude 0 where eta is 0
        amplitude_log = np.log(amplitude)
        relative = np.where(amplitude > 0, eta / np.where(amplitude > 0, amplitude, 1.0), 0.0)
    return Spectrum(powers=[x], amplitude_log=amplitude_log, relative=relative)


def ladder_length(width: int) -> int:
    """Smallest FFT length ``>= width`` of the form ``2^a``, ``5 * 2^a`` or ``3 * 2^a`` with
    ratio at most 3/2 between neighbours (all fast for pyFFTW and scipy.fft); at least 16.
    Lengths on this ladder change rarely as a composition grows, so a history's spectra and
    their powers are reused across many queries, and waste at most a quarter of the
    transform on padding."""
    width = max(int(width), 16)
    power = 1 << (width - 1).bit_length()  # smallest power of two >= width
    for candidate in (power * 5 // 8, power * 3 // 4):
        if candidate >= width:
            return candidate
    return power
