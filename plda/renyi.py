"""Rényi differential privacy and zero-concentrated DP of a composition, and their conversion to
``(epsilon, delta)``.

Rényi divergence of order ``alpha > 1`` of one ordered pair (Mironov 2017):
``D_alpha(P || Q) = log E_Q[(dP/dQ)^alpha] / (alpha - 1) = log E_P[e^{(alpha-1) L}] / (alpha - 1)``,
``+inf`` when ``P(L = +inf) > 0``. The cumulant ``K(alpha) = (alpha - 1) D_alpha`` adds up under
composition, so the composition's Rényi curve is computed *per step*, exactly up to the per-step
discretization, and never from the composed grid (whose truncated tail would make it infinite):
``eps_alpha = max_direction sum_f k_f K_f(alpha) / (alpha - 1)``.

Per step, lower and upper bounds on ``K_f`` come from, in order of preference:

* closed forms — Gaussian ``alpha mu^2 / 2``; Laplace (Mironov 2017, Table II); discrete Gaussian
  through its theta function (Canonne, Kamath & Steinke 2020); finite atom laws (exact sums);
* the Poisson-sampled Gaussian: ``E_Q0[h(R)]`` over the base Gaussian pair, ``R = dP0/dQ0``,
  for the convex ``h(y) = (1 - q + q y)^beta`` (``beta = alpha`` remove, ``1 - alpha`` add),
  bounded cell by cell below by Jensen and above by the chord (the per-cell versions of the
  optimistic merge and the pessimistic connect-the-dots), with closed-form Gaussian tails;
* any other law: its optimistic and pessimistic per-step grid laws (dominated and dominating
  pairs); a pessimistic law that charged a tail to ``+inf`` falls back to joint convexity for a
  Poisson-sampled step, ``e^{K} <= 1 - q + q e^{K_base}`` (under replace-one, ``K_base`` of the
  Gaussian pair shifted by ``2 mu``), else ``+inf``.

A step that is not ``tight`` (:class:`~plda.Shuffled`, :class:`~plda.TruncatedPoisson`) takes its
upper bound from its own (dominating) laws and its lower bound from its
``lower_bound_mechanism()``, a pair realized by neighbouring datasets.

zCDP (Bun & Steinke 2016): the smallest ``rho`` with ``eps_alpha <= rho alpha`` for all
``alpha > 1``.

Conversion to ``(epsilon, delta)`` (Canonne, Kamath & Steinke 2020, Prop. 12; Asoodeh et al.
2021; the same as Balle et al. 2020, Thm. 21): for every ``alpha > 1``
``delta = exp((alpha - 1)(eps_alpha - epsilon)) (1 - 1/alpha)^(alpha - 1) / alpha``, i.e.
``epsilon = eps_alpha + log(1 - 1/alpha) - (log delta + log alpha) / (alpha - 1)``.
"""

from __future__ import annotations

from plda.bounds import Bounds
from plda.conversions import renyi as _renyi_module
from plda.conversions import zcdp as _zcdp_module
from plda.conversions.composed import ComposedLaws
from plda.conversions.renyi import DEFAULT_ORDERS, delta_from_renyi, epsilon_from_renyi
from plda.pld import PrivacyLossDistribution

__all__ = [
    "DEFAULT_ORDERS",
    "delta_from_renyi",
    "epsilon_from_renyi",
    "renyi",
    "renyi_bounds",
    "renyi_delta",
    "renyi_epsilon",
    "zcdp",
    "zcdp_bounds",
]


def _composed(pld: PrivacyLossDistribution) -> ComposedLaws:
    if not isinstance(pld, PrivacyLossDistribution):
        raise TypeError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
    return pld.composed_laws()


def renyi_bounds(pld: PrivacyLossDistribution, order) -> Bounds:
    """``(lower, upper)`` bounds on the Rényi-DP curve ``eps_alpha`` of the composition at
    ``order`` (any real ``alpha > 1``, vectorized); ``inf`` where it is infinite (a mass at
    infinite loss, e.g. an ``(epsilon, delta > 0)`` step)."""
    return _renyi_module.renyi_bounds(_composed(pld), order)


def renyi(pld: PrivacyLossDistribution, order):
    """Certified Rényi-DP curve: the composition is ``(alpha, eps_alpha)``-RDP with this
    ``eps_alpha`` (an upper bound) at each ``order = alpha > 1``.

    ``eps_alpha = max_direction sum_f k_f D_alpha(step_f)`` (Mironov 2017, Prop. 1), each step's
    divergence bounded from its per-step law, never from the composed grid.
    """
    return _renyi_module.renyi(_composed(pld), order)


def zcdp_bounds(pld: PrivacyLossDistribution) -> Bounds:
    """``(lower, upper)`` bounds on the smallest ``rho`` with ``eps_alpha <= rho alpha`` for every
    ``alpha > 1`` (Bun & Steinke 2016); see :func:`plda.conversions.zcdp.zcdp_bounds`."""
    return _zcdp_module.zcdp_bounds(_composed(pld))


def zcdp(pld: PrivacyLossDistribution) -> float:
    """Certified zCDP parameter: ``eps_alpha <= rho alpha`` for all ``alpha > 1`` (``inf`` when
    no finite ``rho`` is known, e.g. an ``(epsilon, delta > 0)`` step)."""
    return _zcdp_module.zcdp(_composed(pld))


def renyi_epsilon(pld: PrivacyLossDistribution, delta, *, orders=None):
    """Certified ``epsilon(delta)`` by RDP accounting: the certified Rényi curve of the
    composition converted with :func:`epsilon_from_renyi` at ``orders`` (default: a geometric
    grid refined around its best order) — what an RDP accountant reports, for comparison with
    ``pld.epsilon(delta)`` on the same composition."""
    return _renyi_module.renyi_epsilon(_composed(pld), delta, orders=orders)


def renyi_delta(pld: PrivacyLossDistribution, epsilon, *, orders=None):
    """Certified ``delta(epsilon)`` by RDP accounting (see :func:`renyi_epsilon`)."""
    return _renyi_module.renyi_delta(_composed(pld), epsilon, orders=orders)
