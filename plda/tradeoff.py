"""f-DP tradeoff curves, their membership-inference reading, and Gaussian DP of a composition.

Tradeoff function of a pair ``(P, Q)`` (Dong, Roth & Su 2019, Def. 2.1): the smallest type-II
error ``beta`` of a test of ``P`` against ``Q`` whose type-I error is at most ``alpha``,
``T(P, Q)(alpha) = inf{1 - E_Q[phi] : E_P[phi] <= alpha}``. It is the convex conjugate of the
privacy profile ``delta(eps) = E_P[(1 - e^(eps - L))_+]`` (ibid., Prop. 2.12):

    T(alpha) = max(0, sup_{eps in R} e^-eps (1 - alpha - delta(eps))).

Under add/remove a mechanism is ``f``-DP for ``f = conv(min(T_remove, T_add))``, the largest
tradeoff function below both ordered pairs (the same symmetrization as the subsampling operator
``C_q`` of Dong, Roth & Su 2019, Sec. 4.2; Zhu, Dong & Wang 2022). When the add pair is the
remove pair reversed (every plda mechanism, Poisson-sampled ones included) ``T_add`` is the
inverse function of ``T_remove`` and ``f`` is symmetric, so (ibid., Prop. 2.12)

    f(alpha) = max(0, sup_{eps >= 0} max(1 - delta(eps) - e^eps alpha,
                                         e^-eps (1 - delta(eps) - alpha)))

with ``delta = max(delta_remove, delta_add)``, the profile the accountant reports.

On a grid law ``delta`` is ``A_j - e^eps B_j`` between grid losses, so the supremum is attained at
the grid losses (where the curve has its vertices ``(P(L <= l_j), Q(L > l_j))``) and, for two
directions, where the two profiles cross. Every ``eps`` with a certified upper bound on
``delta(eps)`` gives a line below ``f`` (a certified lower bound, from the pessimistic grid law
with its error terms, plus its Chernoff tail); the optimistic grid law gives an upper bound once
*every* candidate ``eps`` is included. The envelope of these lines is built once per
discretization and evaluated by binary search.

Membership inference: an attacker testing "record out" against "record in" has, at false-positive
rate ``alpha``, true-positive rate at most ``1 - f(alpha)``; the largest advantage
``TPR - FPR`` is ``delta(0)`` (total variation).

Gaussian DP: ``mu``-GDP means ``f >= G_mu``, ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)``, which
is ``delta(eps) <= Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` for all ``eps >= 0``
(ibid., Cor. 2.13).
"""

from __future__ import annotations

from plda._internal.errors import GaussianDPWarning
from plda.bounds import Bounds
from plda.conversions import gdp as _gdp_module
from plda.conversions import profile as _profile_module
from plda.conversions import tradeoff as _tradeoff_module
from plda.conversions.composed import ComposedLaws
from plda.conversions.envelope import LowerEnvelope
from plda.conversions.gdp import (
    GaussianComparison,
    GaussianDPSummary,
    gaussian_delta,
    gaussian_tradeoff,
    log_gaussian_delta,
)
from plda.conversions.profile import DELTA_FLOOR, ProfileSamples
from plda.pld import PrivacyLossDistribution

__all__ = [
    "DELTA_FLOOR",
    "GaussianComparison",
    "GaussianDPSummary",
    "GaussianDPWarning",
    "LowerEnvelope",
    "ProfileSamples",
    "gaussian_delta",
    "gaussian_dp",
    "gaussian_tradeoff",
    "gdp_comparison",
    "gdp_mu",
    "log_gaussian_delta",
    "max_advantage",
    "max_true_positive_rate",
    "symmetric_profile",
    "tradeoff",
    "tradeoff_bounds",
    "true_positive_rate_bounds",
]


def _composed(pld: PrivacyLossDistribution) -> ComposedLaws:
    if not isinstance(pld, PrivacyLossDistribution):
        raise TypeError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
    return pld.composed_laws()


def tradeoff(pld: PrivacyLossDistribution, alpha, *, direction: str | None = None):
    """Certified lower bound on the tradeoff function ``f(alpha)`` (smallest type-II error at
    type-I error ``alpha``) of the composition: it is ``f``-DP for this curve.

    Parameters
    ----------
    pld
        The composition.
    alpha
        Type-I error(s) in ``[0, 1]`` (float or array).
    direction
        ``None`` (default): the add/remove curve ``conv(min(T_remove, T_add))``, symmetric.
        ``"remove"`` or ``"add"``: the tradeoff ``T(P, Q)`` of that ordered pair alone.

    Returns
    -------
    ``beta`` with ``beta <= f(alpha)``: convex, non-increasing, at most ``1 - alpha``.
    """
    return _tradeoff_module.tradeoff(_composed(pld), alpha, direction=direction)


def tradeoff_bounds(pld: PrivacyLossDistribution, alpha, *, direction: str | None = None):
    """``(lower, upper)`` bounds on the tradeoff function at ``alpha`` (see :func:`tradeoff`);
    the upper one comes from the optimistic grid law: the true curve lies between."""
    return _tradeoff_module.tradeoff_bounds(_composed(pld), alpha, direction=direction)


def max_true_positive_rate(pld: PrivacyLossDistribution, false_positive_rate):
    """Certified upper bound on the true-positive rate of any membership-inference test at
    ``false_positive_rate``: ``TPR <= 1 - f(FPR)`` (computed without forming ``1 - (1 - x)``,
    so small rates keep their relative accuracy)."""
    return true_positive_rate_bounds(pld, false_positive_rate).upper


def true_positive_rate_bounds(pld: PrivacyLossDistribution, false_positive_rate) -> Bounds:
    """``(lower, upper)``: the best membership-inference test at ``false_positive_rate`` has a
    true-positive rate between the two (the lower one is achieved by the optimistic pair)."""
    return _tradeoff_module.true_positive_rate_bounds(_composed(pld), false_positive_rate)


def max_advantage(pld: PrivacyLossDistribution) -> Bounds:
    """``(lower, upper)`` bounds on the membership-inference advantage
    ``max_alpha (1 - alpha - f(alpha)) = max(TPR - FPR) = delta(0)`` (total variation)."""
    _composed(pld)  # a TypeError for anything but a PLD
    lower, upper = pld.delta_bounds(0.0)
    return Bounds(lower=float(lower), upper=float(upper))


def symmetric_profile(pld: PrivacyLossDistribution, bound: str = "upper") -> ProfileSamples:
    """Samples of ``max(delta_remove, delta_add)`` on ``eps >= 0`` from the ``bound`` grid law
    (``"upper"``: certified upper bounds with the Chernoff tail; ``"lower"``: certified lower
    bounds at every grid loss and crossing)."""
    return _profile_module.symmetric_profile(_composed(pld), bound)


def gdp_mu(pld: PrivacyLossDistribution, *, delta_floor: float = DELTA_FLOOR) -> float:
    """Smallest ``mu`` such that the composition is certified ``mu``-GDP, ``f >= G_mu``.

    Certified through the profile: the pessimistic profile (grid losses and Chernoff tail) stays
    below ``delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` for all
    ``eps >= 0`` (Dong, Roth & Su 2019, Cor. 2.13), down to ``delta_floor``: the composition is
    ``(eps, max(delta_mu(eps), delta_floor))``-DP for every ``eps``. Exact (rounded up) for
    compositions of Gaussians (ibid., Cor. 3.3).

    The certified profile cannot resolve ``delta`` below the FFT's error bound (about
    ``1e-10`` for long compositions) except through its Chernoff tail, which is loose; with the
    default floor (1e-250) the certified ``mu`` then reflects that resolution (1.64 for 2,000
    DP-SGD steps at ``q = 256/60000``, ``sigma = 1.1``, against 0.244 at ``delta_floor=1e-9``).
    A larger ``delta_floor`` (e.g. ``1e-9``) certifies GDP on the range that matters in
    practice.

    Parameters
    ----------
    pld
        The composition.
    delta_floor
        The profile level below which the comparison stops, in ``[1e-250, 1)``.

    Returns
    -------
    float
        The certified ``mu``; ``inf`` when no finite ``mu`` is certified (a mass at infinite
        privacy loss above the floor, or a certified profile that stays above it), with a
        :class:`GaussianDPWarning` saying which and what to pass instead.

    Raises
    ------
    TypeError
        If ``pld`` is not a :class:`~plda.PrivacyLossDistribution`.
    ValueError
        If ``delta_floor`` is outside ``[1e-250, 1)``.

    Examples
    --------
    >>> import plda
    >>> step = plda.PoissonSampled(plda.Gaussian(sigma=1.1), sample_rate=256 / 60000)
    >>> pld = plda.PrivacyLossDistribution.from_mechanism(step, 2000)
    >>> round(plda.tradeoff.gdp_mu(pld, delta_floor=1e-9), 3)
    0.244
    """
    return _gdp_module.gdp_mu(_composed(pld), delta_floor=delta_floor)


def gaussian_dp(
    pld: PrivacyLossDistribution, *, delta_floor: float = DELTA_FLOOR
) -> GaussianDPSummary:
    """Certified ``mu``, the ``mu`` below which GDP is refuted, and the best-fit ``mu`` (see
    :class:`GaussianDPSummary` and :func:`gdp_mu`)."""
    return _gdp_module.gaussian_dp(_composed(pld), delta_floor=delta_floor)


def gdp_comparison(pld: PrivacyLossDistribution, alpha=None, mu: float | None = None):
    """The composition's tradeoff bounds and ``G_mu`` at ``alpha`` (default: 400 points dense at
    both ends); ``mu`` defaults to the certified :func:`gdp_mu`."""
    return _gdp_module.gdp_comparison(_composed(pld), alpha, mu)
