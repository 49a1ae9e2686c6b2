"""Certified bracketing laws of ``S = W_1 + ... + W_t`` for random allocation of a Gaussian.

Random allocation of a record to one of ``t`` steps of a Gaussian with ``mu = sensitivity/sigma``
has the remove pair ``P = (1/t) sum_i N(mu e_i, I)`` vs ``Q = N(0, I)``; its likelihood ratio is
``dP/dQ = S / t`` with ``W_i = exp(mu Z_i - mu^2/2)`` i.i.d. under ``Q`` (lognormal, mean 1).
Both hockey-stick curves are expectations under ``Q`` of *convex* functions of ``S``:

* remove: ``delta(eps) = E_Q[(S/t - e^eps)_+]`` (increasing in ``S``),
* add (the reversed pair): ``delta(eps) = E_Q[(1 - e^eps S/t)_+]`` (decreasing in ``S``).

Upper version (a dominating pair): each ``W_i`` is replaced by a *mean-preserving spread* onto
the lattice ``k w`` (the mass of cell ``[k w, (k+1) w)`` is split between its two ends so that
its mean is kept), and the part above a cap ``B`` is spread to ``B`` and ``+inf`` (in the limit
this is Q-mass at ``B`` and P-mass ``E[(W - B)_+]/t`` at loss ``+inf``). Partial sums above a
cap are treated alike. By conditional Jensen, ``E f(S+) >= E f(S)`` for every convex ``f`` --
so for both directions and every ``eps`` -- and ``E[S+] = E[S]`` keeps it a normalized pair:
a pair whose hockey-stick curve dominates everywhere dominates in the Blackwell order, so
compositions stay upper bounds.

Lower versions (one per direction): each ``W_i`` is rounded *down* to the lattice for the
remove direction (``f`` increasing) and *up* for the add direction (``f`` decreasing); mass
above the caps is dropped (a sub-measure only lowers ``delta``), so one floor-rounded chain
serves both, the add side shifted by ``t`` lattice points. The pointwise coupling
``L- <= L`` (resp. ``>=``) survives composition, since the composed ``delta`` is
``E[(e^{sum L_j} - e^eps)_+]`` over the product of the ``Q``'s. These are sub-normalized
(``E[S-/t] < 1``): plda's delta formulas ``sum_{l > eps} q_l (e^l - e^eps)`` never use the
total mass, so they stay lower bounds.

Floating point: each FFT convolution's error is bounded in L2 norm (Higham's componentwise
FFT bound and Parseval). On the upper side it is charged as a Q-atom at ``S = 0`` plus mean
sent to ``S = +inf`` (which dominates any signed error for both convex functions, see
:func:`sum_laws`); on the lower side the bound is subtracted from every entry. Adding a
non-negative measure only raises every composed ``delta`` (the composed ``delta`` is a
multilinear, non-negative integral), so these charges stay valid under composition.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr

from plda import fft

_U = 2.0**-53


def _lognormal_cells(mu: float, w: float, cells: int):
    """Q-mass and first moment of ``W`` in the cells ``[k w, (k+1) w)``, ``k < cells``, and the
    mass, first moment above ``cells * w``. Uses ``P(W <= x) = Phi((log x + mu^2/2)/mu)`` and
    ``E[W; W <= x] = Phi((log x - mu^2/2)/mu)``; differences are taken of the cdf below the
    median and of the sf above it (no cancellation of numbers near 1)."""
    edges = np.arange(cells + 1) * w
    with np.errstate(divide="ignore"):
        logx = np.log(edges)
    a = (logx + mu * mu / 2) / mu
    b = (logx - mu * mu / 2) / mu

    def diffs(z):
        lo = ndtr(z)
        hi = ndtr(-z)
        use_hi = hi[:-1] < lo[:-1]
        d = np.where(use_hi, hi[:-1] - hi[1:], lo[1:] - lo[:-1])
        return np.maximum(d, 0.0), float(hi[-1])

    mass, mass_above = diffs(a)
    moment, moment_above = diffs(b)
    return mass, moment, mass_above, moment_above


def _spread(mass, moment, w):
    """Mean-preserving split of each cell onto its two lattice ends; returns lattice masses."""
    k = np.arange(len(mass))
    up = np.clip((moment - k * w * mass) / w, 0.0, mass)
    out = np.zeros(len(mass) + 1)
    out[:-1] += mass - up
    out[1:] += up
    return out


def _convolve(a, b):
    """Linear convolution by FFT, negatives clipped, with a bound on the L2 norm of its error.

    Forward transforms err by at most ``transform_error(n, ||x||_1)`` per entry (Higham
    §24.1); the product's error is then at most ``|A_j| dB + |B_j| dA + dA dB + 2u |A_j B_j|``,
    and by Parseval the inverse maps an error vector ``dY`` to one of L2 norm
    ``||dY||_2 / sqrt(n)`` (conjugate half counted twice), plus the inverse's own error
    ``sqrt(n) * transform_error(n, (2/n) sum |Y_j|)``.
    """
    n = fft.good_size(len(a) + len(b) - 1)
    fa = fft.rfft(a, n)
    fb = fa if b is a else fft.rfft(b, n)  # squarings (binary powering) transform once
    da = fft.transform_error(n, float(a.sum()))
    db = fft.transform_error(n, float(b.sum()))
    prod = fa * fb
    ma, mb = np.abs(fa) + da, np.abs(fb) + db
    dy = ma * db + mb * da + da * db + 2 * _U * ma * mb
    c = fft.irfft(prod, n)[: len(a) + len(b) - 1]
    inverse = fft.transform_error(n, 2.0 / n * float((ma * mb).sum()))
    l2 = math.sqrt(2.0 / n * float(np.dot(dy, dy))) + math.sqrt(n) * inverse
    return np.maximum(c, 0.0), l2 * (1 + 1e-6)


def _root_sum_squares(n: int) -> float:
    """``sqrt(sum_{k<n} k^2)``, rounded up."""
    return math.sqrt((n - 1) * n * (2 * n - 1) / 6.0) * (1 + 1e-12)


def _cap_upper(dist, cap, w):
    """Mean-preserving spread of the mass above lattice index ``cap`` to ``cap`` and ``+inf``;
    returns the capped distribution and the mean sent to infinity (in units of ``S``)."""
    if len(dist) <= cap + 1:
        return dist, 0.0
    tail = dist[cap + 1 :]
    k = np.arange(cap + 1, len(dist))
    excess = float(np.dot(tail, (k - cap) * w))
    out = dist[: cap + 1].copy()
    out[cap] += float(tail.sum())
    return out, excess


def sum_laws(mu: float, t: int, w: float, w_cap: float, s_cap_sd: float = 12.0):
    """Lattice laws (step ``w``) of ``S`` under ``Q``: ``(upper, inf_mean, lower_remove,
    lower_add)`` where ``upper`` is a mean-preserving spread of ``S`` except for the mean
    ``inf_mean`` sent to ``+inf``, ``lower_remove`` is pointwise below ``S`` and ``lower_add``
    pointwise above it on the mass it keeps."""
    cells = int(math.ceil(w_cap / w))
    mass, moment, mass_above, moment_above = _lognormal_cells(mu, w, cells)
    upper = _spread(mass, moment, w)
    upper[cells] += mass_above
    inf_mean = max(moment_above - cells * w * mass_above, 0.0) * (1 + 1e-9) + 1e-300
    # one floor-rounded chain serves both lower sides: W_i rounded down (mass above the cap
    # dropped: a sub-measure only lowers delta) is below W_i, and the same plus w is above it,
    # so S_down = sum floor(W_i) and S_up = S_down + t w (a shift by t lattice points)
    core = np.zeros(cells + 1)
    core[:-1] = mass * (1 - 8 * _U)
    sd = math.sqrt(math.expm1(mu * mu))

    def cap_for(k):
        return int(math.ceil((k + s_cap_sd * math.sqrt(k) * sd + w_cap) / w))

    # the cells' masses and moments carry a few ulps of error (ndtr differences) each: the
    # up-share of a cell may then miss its mean by that much; charged like the FFT errors
    upper[0] += 1e-13
    errors = {"up": 0.0, "inf": inf_mean + 1e-13 * float(moment.sum() + mass.sum())}

    def combine(x, y, k):
        (u, e1), (c, e2) = _convolve(x[0], y[0]), _convolve(x[1], y[1])
        cap = cap_for(k)
        u, extra = _cap_upper(u, cap, w)
        # FFT error e of the upper partial sum S_a: the computed measure plus a Q-atom of
        # mass sum|e_k| at S_a = 0 and mean sum|e_k| k w sent to S_a = +inf dominates the
        # exact one for both convex f (f(a + b) <= f(b) + a * slope for the increasing one,
        # f(a + b) <= f(b) for the decreasing one), whatever is added or composed later.
        # Cauchy-Schwarz: sum_k |e_k| k w <= ||e||_2 w sqrt(sum k^2), sum|e_k| <= sqrt(n)||e||_2
        errors["up"] += e1 * w * _root_sum_squares(len(u))
        u[0] += e1 * math.sqrt(len(u))
        errors["inf"] += extra
        # lower: the L2 error bounds every entry's error; subtracting it keeps entries below
        return u, np.maximum(c[: cap + 1] - e2, 0.0)

    # binary powering: the sum of the powers of two in t
    acc, acc_k = None, 0
    power, k, count = (upper, core), 1, t
    while True:
        if count & 1:
            acc_k += k
            acc = power if acc is None else combine(acc, power, acc_k)
        count >>= 1
        if not count:
            break
        k *= 2
        power = combine(power, power, k)
    up = acc[0]
    low_add = np.concatenate([np.zeros(t), acc[1]])
    return up, errors["inf"] + errors["up"], acc[1], low_add


def delta_bracket(mu: float, t: int, epsilon: float, w: float, w_cap: float):
    """``(lower, upper)`` on ``delta(epsilon)`` of one allocation epoch, remove direction, read
    directly off the lattice laws of :func:`sum_laws` (``delta = E_Q[(S/t - e^eps)_+]``)."""
    upper, inf_mean, low_r, _ = sum_laws(mu, t, w, w_cap)
    ratio_u = np.arange(len(upper)) * (w / t)
    ratio_l = np.arange(len(low_r)) * (w / t)
    e = math.exp(epsilon)
    hi = float(np.dot(upper, np.maximum(ratio_u - e, 0.0))) + inf_mean / t
    lo = float(np.dot(low_r, np.maximum(ratio_l - e, 0.0)))
    return lo * (1 - 1e-12), hi * (1 + 1e-12)
