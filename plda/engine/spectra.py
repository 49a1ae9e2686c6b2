"""The spectrum of a grid law at an FFT length, with its certified error terms and powers, and
the composed grid law read back from a product of spectra (:func:`from_spectrum`).

The composer (:mod:`plda.engine.composer`) multiplies the factors' spectra raised to their counts:
binary powers kept for a history whose counts grow, ``exp(k log X)`` for one-shot compositions.
The error analysis: docs/concepts/fft-composition.md.
"""

from __future__ import annotations

import math
from dataclasses import InitVar, dataclass, field

import numpy as np

from plda._internal import fft
from plda._internal.floats import UNIT_ROUNDOFF, dot, error_sum_bound
from plda.grid.discrete import DiscreteLoss
from plda.grid.moments import composed_tail

#: powers whose bound falls below e^LOG_FLOOR are set to 0 and charged in full (their values
#: are below the smallest normal double; computing them costs many times an ordinary exp)
LOG_FLOOR = -740.0


@dataclass(eq=False)
class Spectrum:
    """The transform of one grid law at an FFT length, with its error terms and powers.

    Attributes
    ----------
    powers
        The binary powers ``X^(2^j)`` computed so far; ``powers[0]`` is the rfft ``X`` of the
        law folded onto the FFT length.
    eta
        Init only: a componentwise bound of the error of ``X``.
    amplitude_log
        ``log(|X| + eta)``, above both the true and the computed ``|X|``.
    relative
        ``eta / (|X| + eta)``.
    nbytes
        The bytes held, kept up to date as powers are added (caches read it).
    """

    powers: list
    eta: InitVar[np.ndarray]
    amplitude_log: np.ndarray = field(init=False)  # log(|X| + eta): |true X|, |computed X| below
    relative: np.ndarray = field(init=False)  # eta / (|X| + eta)
    nbytes: int = field(init=False)  # kept up to date as powers are added (caches read it)

    def __post_init__(self, eta):
        amplitude = np.abs(self.powers[0]) + eta
        with np.errstate(divide="ignore"):  # an all-zero law has amplitude 0 where eta is 0
            self.amplitude_log = np.log(amplitude)
            positive = amplitude > 0
            self.relative = np.where(positive, eta / np.where(positive, amplitude, 1.0), 0.0)
        self.nbytes = sum(p.nbytes for p in self.powers) + 2 * self.amplitude_log.nbytes

    def binary_power(self, k: int, keep: bool = True) -> tuple[np.ndarray, float]:
        """``X^k`` as the product of the binary powers of ``X``, caching new ones.

        Multiplied in ascending order, so the result depends on ``k`` only, not on which
        powers were cached before.

        Parameters
        ----------
        k
            The power, at least 1.
        keep
            Whether to cache the new powers (False: the same products, dropped after).

        Returns
        -------
        tuple
            ``X^k`` and the relative rounding it adds, ~``k + 2 log2 k`` products (relative
            errors double under squaring, so the squarings add up to ``k`` roundings). For a
            power of two ``k`` the array is the kept power itself, not a copy: read it, never
            write it (a noise schedule's steps, ``k = 1``, enter a product as they are).
        """
        out, kept = None, False
        j, rest = 0, k
        powers = self.powers if keep else list(self.powers)
        # a power of a law with more mass than 1 (its error terms) may pass the largest double:
        # inf, NaN where it meets a 0; k log(|X| + eta) is then past 709 too, so the composed
        # law's error bound is inf and it claims nothing (DiscreteLoss.delta: 1 above, 0 below)
        with np.errstate(over="ignore", invalid="ignore"):
            while rest:
                while len(powers) <= j:
                    last = powers[-1]
                    powers.append(last * last)
                    if keep:
                        self.nbytes += last.nbytes
                if rest & 1:
                    if out is None:
                        out, kept = powers[j], True
                    elif kept:  # the first product is a new array, written from then on
                        out, kept = out * powers[j], False
                    else:
                        out *= powers[j]
                rest >>= 1
                j += 1
        return out, 8 * UNIT_ROUNDOFF * (k + 2 * k.bit_length())

    def log_power(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """``X^k`` as ``exp(k log X)``, nothing cached.

        Parameters
        ----------
        k
            The power, at least 1.

        Returns
        -------
        tuple of numpy.ndarray
            ``X^k`` and its relative rounding ``8u (1 + |k log X|)`` (small where ``|X| ~ 1``
            with a small phase, the frequencies that carry the mass); where
            ``k log(|X| + eta)`` is below :data:`LOG_FLOOR` the power is 0 and the relative
            error 1 (its whole value, at most the bound, is charged).
        """
        x = self.powers[0]
        if k == 1:  # X itself, not a copy: read it, never write it
            return x, np.full(len(x), 4 * UNIT_ROUNDOFF)
        band = k * self.amplitude_log > LOG_FLOOR
        out = np.zeros(len(x), dtype=complex)
        relative = np.ones(len(x))  # outside the band: all of the (tiny) value is error
        with np.errstate(divide="ignore", under="ignore", over="ignore", invalid="ignore"):
            log_x = k * np.log(x[band])
            out[band] = np.exp(log_x)
            size = np.abs(log_x)
            # a zero X has log -inf (+ its phase): nan_to_num's 0 there, taken only where needed
            # (on a whole complex array it costs as much as the exp)
            odd = ~np.isfinite(size)
            if odd.any():
                size[odd] = np.abs(np.nan_to_num(log_x[odd], neginf=0.0))
            relative[band] = 8 * UNIT_ROUNDOFF * (1 + size)
        return out, relative


def spectrum_of(law, n: int) -> Spectrum:
    """The :class:`Spectrum` of a grid law at an FFT length.

    A law longer than ``n`` is folded modulo ``n`` first: cyclic convolution of inputs folded
    modulo ``n`` is the exact convolution folded modulo ``n``, so folding only adds to the
    wrap-around that the composition window charges; its rounding is added to ``eta``, and so
    is the error a composed law carries.

    Parameters
    ----------
    law
        A :class:`~plda.grid.discrete.DiscreteLoss`.
    n
        The FFT length.

    Returns
    -------
    Spectrum
        Its transform and error terms.
    """
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
        eta += error_sum_bound(law.entry_error, law.l2_error, size)
    return Spectrum(powers=[x], eta=eta)


def from_spectrum(factors, spectrum, bound, relative, n, window, infinity) -> DiscreteLoss:
    """The composed grid law from its spectrum and the certified error terms.

    Parameters
    ----------
    factors
        ``[(law, count), ...]``, what was composed.
    spectrum
        The computed spectrum ``Y`` of the composition.
    bound
        ``bound[j] >= |Y_j|``.
    relative
        ``relative[j] * bound[j] >= |computed Y_j - Y_j|`` (forward transforms and powers).
    n
        The FFT length.
    window
        ``(lo, width, base, below, above)``: the window's first grid index and width, the
        grid index of spectrum position 0, and the Chernoff bounds of the mass outside.
    infinity
        The composed mass at ``+inf``.

    Returns
    -------
    DiscreteLoss
        The composed law on the window.
    """
    lo, width, base, below, above = window
    first = factors[0][0]
    y = fft.irfft(spectrum, n)
    # |dy_t| <= (2/n) sum_j |dY_j| (real inverse transform) plus the inverse transform's own error
    # (a bound that overflows is inf: the law's error terms then claim nothing, see DiscreteLoss)
    with np.errstate(over="ignore"):
        inverse_error = fft.transform_error(n, 2.0 / n * float(bound.sum()))
        weighted = bound * relative
        entry_error = 2.0 / n * float(weighted.sum()) + inverse_error
        # Parseval: ||dy||_2 = ||dY||_2 / sqrt(n), |dY_j| counted twice for the conjugate half
        l2_error = math.sqrt(2.0 / n * dot(weighted, weighted)) + math.sqrt(n) * inverse_error
    # the window starts at cyclic position (lo - base) mod n (a rotation by slicing: np.roll
    # costs several times as much at these lengths)
    shift = (lo - base) % n
    if shift + width <= n:
        y = y[shift : shift + width]
    else:
        y = np.concatenate((y[shift:], y[: shift + width - n]))
    # entries are exact probabilities up to entry_error: clipping at 0 only moves toward the truth
    np.maximum(y, 0.0, out=y)
    # composed losses are sums of the factors' losses: their errors add (1e-9: rounding of the sum)
    loss_error = sum(k * f.loss_error for f, k in factors) * (1 + 1e-9)
    if first.upper:
        return DiscreteLoss(
            step=first.step,
            offset=lo,
            probs=y,
            infinity_mass=min(1.0, infinity + above),
            upper=True,
            entry_error=entry_error,
            l2_error=l2_error,
            loss_error=loss_error,
            far_tail=composed_tail(factors),  # the factors' moments summed when first asked
        )
    # spurious mass the factors bring in: a factor ``f`` holding ``exact_f + spurious_f``
    # (``spurious_f >= 0`` of mass at most ``s_f``) composes to at most ``conv(exact) +
    # (prod_f (m_f + s_f)^{k_f} - prod_f m_f^{k_f})`` where the exact law has mass, ``m_f <= 1``
    # the exact finite masses; the excess is at most ``prod (1 + s_f)^{k_f} - 1 <= e^S - 1 <=
    # S (1 + S)`` for ``S = sum_f k_f s_f <= 1`` (rounded up by a few ulps). Discretized laws
    # carry none: 0 then, exactly.
    carried = sum(k * f.spurious_mass for f, k in factors)
    if carried <= 0:
        carried = 0.0
    elif carried <= 1:
        carried = min(1.0, carried * (1 + carried) * (1 + 8 * UNIT_ROUNDOFF))
    else:
        carried = 1.0
    return DiscreteLoss(
        step=first.step,
        offset=lo,
        probs=y,
        infinity_mass=infinity,
        upper=False,
        entry_error=entry_error,
        spurious_mass=below + above + carried,
        l2_error=l2_error,
        loss_error=loss_error,
    )
