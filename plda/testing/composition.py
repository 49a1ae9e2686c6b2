"""Exact reference for the optimal composition of ``(epsilon0, delta0)``-DP steps.

Every such step is dominated by the randomized response ``RR_(eps0, delta0)``, and ``k`` of them
compose as ``k`` independent copies (Kairouz, Oh & Viswanath 2015, Thm. 3.3; Murtagh & Vadhan
2016): a loss ``+inf`` with probability ``1 - (1 - delta0)^k``, else ``(k - 2i) eps0`` with
``i ~ Binomial(k, 1/(1+e^eps0))``, summed in log space with Loader's binomial masses.
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal import validation as check
from plda._internal.caches import cached
from plda._internal.floats import UNIT_ROUNDOFF
from plda.testing._internal.atoms import FloatAtoms
from plda.testing._internal.binomial import kov_log_masses
from plda.testing._internal.numerics import (
    DEFAULT_DPS,
    Profile,
    profile_delta,
    profile_epsilon,
)

#: log-masses below this are dropped from the float sums (their total is below 1e-340)
_LOG_MASS_FLOOR = -800.0


@cached(maxsize=8)
def _float_atoms(step_epsilon: float, step_delta: float, count: int) -> FloatAtoms:
    if step_delta == 1:  # every run may reveal the record: delta = 1 at every epsilon
        return FloatAtoms(np.zeros(1, np.int64), 1.0, np.array([-math.inf]), 0.0,
                          infinity_mass=1.0)
    log_keep = count * math.log1p(-step_delta)
    infinity = -math.expm1(log_keep)
    if step_epsilon == 0:
        return FloatAtoms(np.zeros(1, np.int64), 1.0, np.array([log_keep]),
                          4 * UNIT_ROUNDOFF * (1 + abs(log_keep)), infinity_mass=infinity)
    log_masses, log_errors = kov_log_masses(step_epsilon, count)
    log_masses = log_masses + log_keep
    log_errors = log_errors + 4 * UNIT_ROUNDOFF * abs(log_keep)
    keep = log_masses >= min(_LOG_MASS_FLOOR, float(np.max(log_masses)))
    i = np.arange(count + 1)
    dropped = i[~keep]
    i = i[keep][::-1]  # ascending losses (count - 2i) * step_epsilon
    return FloatAtoms(
        count - 2 * i, step_epsilon, log_masses[keep][::-1], log_errors[keep][::-1],
        infinity_mass=infinity,
        dropped_mass=len(dropped) * math.exp(_LOG_MASS_FLOOR),
        dropped_max_loss=(count - 2 * int(dropped.min())) * step_epsilon * (1 + 4 * UNIT_ROUNDOFF)
        if len(dropped) else -math.inf,
    )


def _precise_delta(step_epsilon: float, step_delta: float, count: int):
    """``(delta, slope)`` in mpmath, summing only the terms that matter at the working precision
    (located with the float log-terms; the sequence of terms is log-concave in ``i``, so they
    form one run)."""
    atoms = _float_atoms(step_epsilon, step_delta, count)

    def infinity_mass(mp):  # 1 - (1 - delta0)^k without cancellation
        return -mp.expm1(count * mp.log1p(-mp.mpf(step_delta)))

    def precise_delta(mp, eps):
        keep_all = (1 - mp.mpf(step_delta)) ** count
        infinity = infinity_mass(mp)
        e0 = mp.mpf(step_epsilon)
        if e0 == 0:
            return infinity + (keep_all if eps < 0 else 0), keep_all * (eps < 0)
        # i runs over 0..m with (count - 2i) e0 > eps
        m = int(mp.ceil((count - eps / e0) / 2)) - 1
        while m >= 0 and (count - 2 * m) * e0 <= eps:
            m -= 1
        while m + 1 <= count and (count - 2 * (m + 1)) * e0 > eps:
            m += 1
        if m < 0:
            return infinity, mp.zero
        i = np.arange(m + 1)
        log_masses, _ = kov_log_masses(step_epsilon, count)
        x = np.minimum(float(eps) - (count - 2 * i) * step_epsilon, -1e-300)
        log_terms = log_masses[: m + 1] + np.log(-np.expm1(x))
        window = mp.dps * math.log(10) + math.log(count + 1) + 30
        run = np.nonzero(log_terms >= np.max(log_terms) - window)[0]
        first, last = int(run[0]), int(run[-1])
        p = 1 / (1 + mp.exp(e0))  # probability of a step with loss -e0
        ratio = mp.exp(-e0)  # P-mass ratio of i+1 to i, times (count - i)/(i + 1)
        mass = mp.binomial(count, first) * p**first * (1 - p) ** (count - first)
        delta, slope = mp.zero, mp.zero
        step_up = mp.exp(2 * e0)  # e^{-loss} grows by e^{2 e0} from i to i + 1
        q_factor = mp.exp(-(count - 2 * first) * e0)  # e^{-loss} of the current term
        e_eps = mp.exp(eps)
        for j in range(first, last + 1):
            q_mass = mass * q_factor  # Q-mass of the atom
            ratio_to_eps = e_eps * q_factor
            if ratio_to_eps > 0.5:  # 1 - e^{eps - loss} would cancel: use expm1
                delta += mass * -mp.expm1(eps - (count - 2 * j) * e0)
            else:
                delta += mass - e_eps * q_mass
            slope += q_mass
            mass *= ratio * (count - j) / (j + 1)
            q_factor *= step_up
        return infinity + keep_all * delta, keep_all * slope

    return Profile(
        atoms.delta, precise_delta, atoms.infinity_mass, infinity_mass,
        # the atoms' largest loss, rounded up: count * step_epsilon rounds to nearest, and 10
        # runs of 0.1 lie 5.5e-17 above the float 1.0, which left epsilon(1e-20) = inf
        max_loss=atoms.max_loss,
    )


def _profile(step_epsilon, step_delta, count) -> Profile:
    step_epsilon = check.nonnegative_float("step_epsilon", step_epsilon, upper=math.inf)
    step_delta = check.probability("step_delta", step_delta)
    count = check.count("count", count, minimum=1)
    return _precise_delta(step_epsilon, step_delta, count)


def approximate_dp_composition_delta(
    epsilon,
    *,
    step_epsilon: float,
    step_delta: float,
    count: int,
    precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """Exact ``delta(epsilon)`` of the optimal composition of ``(epsilon0, delta0)``-DP steps.

    ``delta = 1 - (1-d0)^k + (1-d0)^k sum_{i: (k-2i) e0 > eps} C(k,i) (e^((k-i) e0) -
    e^(eps + i e0)) / (1+e^e0)^k`` with ``e0 = step_epsilon``, ``d0 = step_delta``, ``k = count``
    (Kairouz, Oh & Viswanath 2015, Thm. 3.3). Float results are accurate to about ``1e-13``
    relative for any ``count`` up to ``10^7``.

    Parameters
    ----------
    epsilon : float or array_like
        ``epsilon >= 0``.
    step_epsilon : float
        Each step's epsilon ``e0 >= 0``.
    step_delta : float
        Each step's delta ``d0`` in ``[0, 1]``.
    count : int
        The number of steps ``k >= 1``.
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``delta(epsilon)``, rounded to nearest (an array for an array ``epsilon``).

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    return profile_delta(_profile(step_epsilon, step_delta, count), epsilon, precise, dps)


def approximate_dp_composition_epsilon(
    delta,
    *,
    step_epsilon: float,
    step_delta: float,
    count: int,
    precise: bool = False,
    dps: int = DEFAULT_DPS,
):
    """Exact ``epsilon(delta)`` of the optimal composition, rounded up (certified).

    The inverse of :func:`approximate_dp_composition_delta`.

    Parameters
    ----------
    delta : float or array_like
        ``delta`` in ``[0, 1]``.
    step_epsilon : float
        Each step's epsilon ``e0 >= 0``.
    step_delta : float
        Each step's delta ``d0`` in ``[0, 1]``.
    count : int
        The number of steps ``k >= 1``.
    precise : bool, optional
        Evaluate with mpmath at ``dps`` digits and return ``mpmath.mpf``.
    dps : int, optional
        Decimal digits of the precise evaluation, in ``[15, 10000]``.

    Returns
    -------
    float, numpy.ndarray or mpmath.mpf
        ``epsilon(delta)``, rounded up: the exact ``delta`` at it is at most ``delta``.
        ``inf`` when ``delta`` is at most ``1 - (1 - step_delta)^count``.

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    ImportError
        With ``precise=True``, if mpmath is not installed.
    """
    return profile_epsilon(_profile(step_epsilon, step_delta, count), delta, precise, dps)


def approximate_dp_tradeoff(alpha, epsilon: float, delta: float = 0.0):
    """Tradeoff function of one ``(epsilon, delta)``-DP step.

    ``beta(alpha) = max(0, 1 - delta - e^eps alpha, e^-eps (1 - delta - alpha))`` (Kairouz, Oh &
    Viswanath 2015; Dong, Roth & Su 2019, Prop. 2.5).

    Parameters
    ----------
    alpha : float or array_like
        Type-I error(s) in ``[0, 1]``.
    epsilon : float
        The step's epsilon ``>= 0``.
    delta : float, optional
        The step's delta in ``[0, 1]``.

    Returns
    -------
    float or numpy.ndarray
        ``beta(alpha)``.

    Raises
    ------
    ValueError
        If an argument is out of range (``TypeError``: not a number).
    """
    epsilon = check.nonnegative_float("epsilon", epsilon, upper=math.inf)
    delta = check.probability("delta", delta)
    a = check.array_in("alpha", alpha, 0.0, 1.0)
    beta = np.maximum(
        0.0, np.maximum(1 - delta - math.exp(epsilon) * a, math.exp(-epsilon) * (1 - delta - a))
    )
    return float(beta) if np.ndim(alpha) == 0 else beta
