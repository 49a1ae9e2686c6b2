r"""The privacy profile of tuning by random stopping, bounded from the base run's profile.

Koskela, Redberg & Wang (ICML 2024, "Privacy Profiles for Private Selection") bound the
``(eps, delta)`` profile of the best-of-``K`` selection directly from the base run's profile,
through the derivative of the probability generating function ``Q(x) = E[x^K]`` of ``K``,
instead of through Rényi divergences. This module is our own version of that recipe, written
so that every number it returns is a certified upper bound on ``delta``.

The argument (one direction; the other swaps the roles of the neighbours)
-----------------------------------------------------------------------
Let one run output ``y`` with law ``P`` (``P'`` on the neighbour), the score order being any
fixed total order. Attaching an independent uniform tie-breaker to every run changes neither
the base's profile nor, after dropping it, the selection's output, so by post-processing we
may take ``P`` and ``P'`` atomless. Write ``s(y) = P(score > y)`` (the mass above ``y``,
uniform on [0, 1] under ``P``) and ``s'`` likewise. The selection's output then has density
``Q'(1 - s(y)) p(y)`` (plus an atom ``Q(0)`` at "no run", the same on both sides, which adds
nothing for ``eps >= 0``), so

    delta_A(eps) = sup_S int_S [Q'(1 - s) p - e^eps Q'(1 - s') p'].

With ``Q'(1 - s) = E[K] rho(s)``, ``rho`` falling from ``rho(0) = 1``:

- truncated negative binomial ``D_{eta, gamma}`` (geometric ``eta = 1``, logarithmic
  ``eta = 0``): ``rho(s) = (gamma / (gamma + (1 - gamma) s))^(eta + 1)``;
- Poisson of mean ``mu``: ``rho(s) = exp(-mu s)``.

Cut [0, 1] into bands ``a_0 = 0 < a_1 < ... < a_J = 1`` of ``s``. The neighbour's upper
tail is an event, so the base's profile bounds it: ``s' <= e^e1 s + delta(e1)`` for every
``e1`` (and ``s' <= 1``). On band ``j`` (``a_{j-1} <= s < a_j``) take ``c_j`` at least the
supremum of ``log(rho(s) / rho(s'))``; for one ``e1`` the function ``s -> log(rho(s) /
rho(e^e1 s + delta(e1)))`` is monotone (the log of a ratio of affine functions, or affine for
Poisson), so

    c_j = min( min_e1 max_{s in {a_{j-1}, a_j}} log(rho(s) / rho(e^e1 s + delta(e1))),
               log(rho(a_{j-1}) / rho(1)) ).

Then ``rho(s') >= e^-c_j rho(s)`` and ``rho(s) <= rho(a_{j-1})``, so the integrand on band
``j`` is at most ``E[K] rho(a_{j-1}) [p - e^(eps - c_j) p']``. Let ``C_k = max_{j <= k} c_j``
(a larger ``c`` only loosens) and ``W_k = rho(a_{k-1})`` (non-increasing, ``W_{J+1} = 0``).
Summing by parts (``W_j = sum_{k >= j} (W_k - W_{k+1})``), using that ``delta`` falls with its
argument and that the top ``k`` bands hold ``P``-mass ``a_k``:

    delta_A(eps) <= E[K] sum_k (W_k - W_{k+1}) min(a_k, delta(eps - C_k)),          (*)

where ``delta`` is the larger of the base's two directions, read at negative arguments through
``delta(t) = 1 - e^t + e^t delta_rev(-t)`` (the complement of the optimal set). The paper's
ingredients (``Q'``, the base's profile on the tail events of the score order); this banded
form, its summation by parts and its proof are ours, and the tests check it against exact
enumeration. For an ``eps0``-DP base
and geometric ``K``, ``c_j <= 2 eps0`` (``rho(s) / rho(e^eps0 s) <= e^(2 eps0)``), so the
bound vanishes beyond ``3 eps0``: Liu & Talwar's limit. With ``K = 1`` (``gamma -> 1``) every
``c_j`` and weight but the last vanish and (*) is the base's own profile.

Every step rounds towards a larger ``delta`` (see the comments in the code).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["RunCountLaw", "profile_delta_bound"]

#: relative padding of every float result that enters the bound: the formulas below lose a
#: few ulps (1e-16 each), 1e-12 covers them with a wide margin and changes nothing visible
PAD = 1e-12
#: the band edges ``a_k``: 0, then 10^-18 ... 1 evenly in log (the top of the score order,
#: where ``s`` is small, carries the weight ``E[K]``; the bands must be fine there)
BANDS = np.concatenate([[0.0], np.logspace(-18.0, 0.0, 361)])


def _up(x):
    """``x`` rounded up by a relative ``PAD`` and to the next float (``x >= 0``); an exact 0
    (a product with a zero delta, a zero gap) stays 0."""
    x = np.asarray(x, dtype=float)
    return np.where(x > 0.0, np.nextafter(x * (1.0 + PAD), np.inf), x)


def _down(x):
    """``x`` rounded down by a relative ``PAD`` and to the previous float (``x >= 0``)."""
    return np.maximum(np.nextafter(np.asarray(x, dtype=float) * (1.0 - PAD), -np.inf), 0.0)


@dataclass(frozen=True)
class RunCountLaw:
    r"""The law of the number of runs ``K``, through ``Q'(1 - s) = E[K] rho(s)``.

    Parameters
    ----------
    kind : str
        ``"truncated_negative_binomial"`` (``K >= 1``, ``P(K = k) ∝ binom(k + eta - 1, k)
        (1 - gamma)^k``) or ``"poisson"``.
    mean : float
        ``E[K]`` (the Poisson mean ``mu``; for the truncated negative binomial the value its
        ``gamma`` and ``eta`` give).
    eta : float, optional
        The shape, above -1 (truncated negative binomial only).
    gamma : float, optional
        ``gamma`` in (0, 1) (truncated negative binomial only).

    Raises
    ------
    ValueError
        If ``kind`` is unknown or a parameter is out of range.
    """

    kind: str
    mean: float
    eta: float = 1.0
    gamma: float = 0.5

    def __post_init__(self):
        if self.kind not in ("truncated_negative_binomial", "poisson"):
            raise ValueError(f"unknown law of K: {self.kind!r}")
        if not (self.mean > 0.0 and math.isfinite(self.mean)):
            raise ValueError(f"mean must be positive and finite, got {self.mean!r}")
        if self.kind != "poisson" and not (self.eta > -1.0 and 0.0 < self.gamma < 1.0):
            raise ValueError(f"need eta > -1 and 0 < gamma < 1, got {self.eta!r}, "
                             f"{self.gamma!r}")

    def log_ratio(self, a, gap):
        r"""``log(rho(a) / rho(a + gap))`` for ``a, gap >= 0``, rounded up.

        The second tail is given by its excess ``gap`` over the first, not by its value: the
        difference of two close masses would lose the digits that matter most (near the
        top of the score order the excess is far below the masses).

        Parameters
        ----------
        a : array_like of float
            An upper-tail mass in [0, 1].
        gap : array_like of float
            The excess of the second one, ``>= 0`` (``a + gap`` may exceed 1: ``rho`` keeps
            falling on ``[0, inf)``, so a larger ``gap`` only gives a larger value; an
            infinite ``gap`` gives ``inf``).

        Returns
        -------
        numpy.ndarray
            ``(eta + 1) log1p((1 - gamma) gap / (gamma + (1 - gamma) a))`` (truncated
            negative binomial) or ``mu gap`` (Poisson), each ``>= 0``.
        """
        a = np.asarray(a, dtype=float)
        gap = np.maximum(np.asarray(gap, dtype=float), 0.0)
        if self.kind == "poisson":
            return _up(self.mean * gap)
        # a few correctly rounded operations without cancellation (log1p of a ratio): the
        # relative error is a few ulps, covered by _up's PAD
        g = self.gamma
        return _up((self.eta + 1.0) * np.log1p((1.0 - g) * gap / (g + (1.0 - g) * a)))

    def weight_steps(self, edges):
        r"""``rho(a_{k-1}) - rho(a_k)`` for consecutive edges, then ``rho(a_{J-1})``, rounded up.

        Parameters
        ----------
        edges : numpy.ndarray
            ``0 = a_0 < ... < a_J = 1``.

        Returns
        -------
        numpy.ndarray
            ``J`` non-negative steps summing to (a hair above) ``rho(0) = 1``.
        """
        # rho(a) = exp(-log_ratio(0, a)); rho(a_{k-1}) - rho(a_k) = rho(a_{k-1}) (1 - e^-D_k)
        # with D_k = log(rho(a_{k-1}) / rho(a_k)): -expm1 keeps the small steps at the top
        # exact instead of the difference of two numbers near 1. log_ratio is rounded up, so
        # the exponent -log_ratio(0, a) is low: rho(a_{k-1}) must be rounded up separately.
        lo, hi = edges[:-1], edges[1:]
        # hi - lo: one correctly rounded subtraction of two floats (relative error 1 ulp)
        rho_lo = _up(np.exp(-_down(self._log_ratio_plain(0.0 * lo, lo))))
        steps = _up(rho_lo * _up(-np.expm1(-self.log_ratio(lo, hi - lo))))
        steps[-1] = rho_lo[-1]  # the last band: W_J - W_{J+1} = rho(a_{J-1}) - 0
        return np.minimum(steps, 1.0)

    def _log_ratio_plain(self, a, gap):
        """``log(rho(a) / rho(a + gap))`` as computed (not rounded; for a lower bound)."""
        if self.kind == "poisson":
            return self.mean * gap
        g = self.gamma
        return (self.eta + 1.0) * np.log1p((1.0 - g) * gap / (g + (1.0 - g) * a))


def _extended_delta(base_eps: np.ndarray, base_delta: np.ndarray, theta: np.ndarray):
    """Upper bound on the base's ``delta(theta)``, any real ``theta``, from a grid.

    ``delta`` does not grow with its argument, so the value at the largest grid point at or
    below ``theta`` bounds it (a step function from the safe side). Below 0,
    ``delta(t) = 1 - e^t + e^t delta_rev(-t)`` (the optimal set's complement), with the
    reverse direction's ``delta`` read the same way at ``-t`` (the grid holds the larger of
    the two directions)."""
    pos = np.abs(theta)
    i = np.searchsorted(base_eps, pos, side="right") - 1  # base_eps[0] == 0 <= |theta|
    d = base_delta[i]
    neg = theta < 0
    if np.any(neg):
        t = theta[neg]
        # -expm1(t) = 1 - e^t without cancellation; both terms rounded up
        d_neg = _up(_up(-np.expm1(t)) + _up(np.exp(t) * d[neg]))
        d = d.copy()
        d[neg] = d_neg
    return np.minimum(d, 1.0)


def profile_delta_bound(base_eps, base_delta, epsilons, law: RunCountLaw,
                        edges: np.ndarray = BANDS) -> np.ndarray:
    r"""Certified upper bounds on the selection's ``delta(eps)`` from the base's profile.

    Implements (*) of the module docstring: with ``Q'(1 - s) = E[K] rho(s)`` the derivative
    of the generating function of ``K`` and bands ``a_k`` of the upper-tail mass,

    ``delta_A(eps) <= E[K] sum_k (rho(a_{k-1}) - rho(a_k)) min(a_k, delta(eps - C_k))``,
    ``C_k = max_{j <= k} c_j``, ``c_j = min(min_e1 max_{s = a_{j-1}, a_j} log(rho(s) /
    rho(e^e1 s + delta(e1))), log(rho(a_{j-1}) / rho(1)))``,

    a banded form of the approach of Koskela, Redberg & Wang (2024): the privacy profile of
    private tuning bounded through ``Q'`` and the base's profile (random stopping with a
    truncated negative binomial or Poisson ``K``). Valid for both directions when
    ``base_delta`` bounds both.

    Parameters
    ----------
    base_eps : array_like of float
        A grid of epsilons, increasing, starting at 0.
    base_delta : array_like of float
        Certified upper bounds on the base's ``delta`` at ``base_eps``, the larger of the two
        directions (``add`` and ``remove``).
    epsilons : array_like of float
        Where the selection's ``delta`` is wanted, each ``>= 0``.
    law : RunCountLaw
        The law of ``K``.
    edges : numpy.ndarray, optional
        The band edges ``0 = a_0 < ... < a_J = 1`` (default :data:`BANDS`); any edges give a
        valid bound, finer ones a tighter one.

    Returns
    -------
    numpy.ndarray
        Upper bounds on ``delta_A`` at ``epsilons``, in [0, 1], non-increasing in epsilon.

    Raises
    ------
    ValueError
        If the grid does not start at 0, is not increasing, a delta is outside [0, 1],
        an epsilon is negative, or the edges are not ``0 < ... < 1``.
    """
    e_b = np.asarray(base_eps, dtype=float)
    d_b = np.asarray(base_delta, dtype=float)
    eps = np.asarray(epsilons, dtype=float)
    if e_b.ndim != 1 or e_b.size == 0 or e_b[0] != 0.0 or np.any(np.diff(e_b) <= 0):
        raise ValueError("base_eps must be increasing and start at 0")
    if d_b.shape != e_b.shape or np.any(~(d_b >= 0.0)) or np.any(d_b > 1.0):
        raise ValueError("base_delta must hold one delta in [0, 1] per base epsilon")
    if np.any(~(eps >= 0.0)):
        raise ValueError("epsilons must be >= 0")
    edges = np.asarray(edges, dtype=float)
    if edges[0] != 0.0 or edges[-1] != 1.0 or np.any(np.diff(edges) <= 0):
        raise ValueError("edges must run from 0 to 1, increasing")
    # each grid delta bounds delta at every larger epsilon too: the running minimum is valid
    d_b = np.minimum.accumulate(np.minimum(d_b, 1.0))
    # c_j >= sup of log(rho(s) / rho(s')) over band j. For each e1 of the grid (fewer e1 than
    # all reals: a larger c_j, safe), s' <= e^e1 s + delta(e1) and log(rho(s) / rho(e^e1 s +
    # delta(e1))) is monotone in s (a log of a ratio of two affine functions of s, or affine
    # for Poisson), so its sup over the band is at an end; and s' <= 1 gives
    # log(rho(s) / rho(1)), largest at the band's top a_{j-1}. The sup of the smaller of two
    # functions is at most the smaller of their sups. exp and sums rounded up.
    # The excess of e^e1 s + delta(e1) over s is expm1(e1) s + delta(e1), computed as such
    # (no cancellation), each product and sum rounded up. e1 is kept below 700 (exp
    # overflows near 709; fewer e1 only loosen).
    lo, hi = edges[:-1], edges[1:]
    keep = e_b < 700.0
    grow = _up(np.expm1(e_b[keep]))[None, :]
    d1 = d_b[keep][None, :]
    at_lo = law.log_ratio(lo[:, None], _up(_up(grow * lo[:, None]) + d1))
    at_hi = law.log_ratio(hi[:, None], _up(_up(grow * hi[:, None]) + d1))
    # 1 - lo: one correctly rounded subtraction (relative error 1 ulp, no cancellation that
    # matters: rho(lo) / rho(1) is far from 1 wherever this side is the smaller)
    c = np.minimum(np.min(np.maximum(at_lo, at_hi), axis=1), law.log_ratio(lo, _up(1.0 - lo)))
    big_c = np.maximum.accumulate(c)  # C_k, non-decreasing: the summation by parts needs it
    steps = law.weight_steps(edges)  # rounded up
    mean = float(_up(law.mean))
    # theta = eps - C_k rounded down (a lower argument, a larger delta): subtract then step
    # one float down
    theta = np.nextafter(eps[:, None] - big_c[None, :], -np.inf)
    d = _extended_delta(e_b, d_b, theta.ravel()).reshape(theta.shape)
    m = np.minimum(hi[None, :], d)
    # the sum of non-negative terms: float error below 1e-13 relative, covered by _up's PAD
    # after the factor sum(steps) <= 1 + tiny; one more _up for the product with E[K]
    total = _up(mean * _up(np.sum(steps[None, :] * m, axis=1) * (1.0 + 1e-12)))
    total = np.where(np.isnan(total), 1.0, np.minimum(total, 1.0))  # never a NaN: at worst 1
    # delta_A does not grow with eps: a bound at a smaller eps holds at a larger one
    order = np.argsort(eps, kind="stable")
    total[order] = np.minimum.accumulate(total[order])
    return total
