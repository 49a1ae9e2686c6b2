"""Bounds on one step's Rényi cumulant ``K(alpha)`` and zCDP parameter, whatever the mechanism.

Closed forms first, then the Poisson-sampled Gaussian by cells, then any law through its
per-step grid laws, with joint convexity as the fallback (``docs/tradeoff.md``, "Rényi DP").
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal.errors import check_bracket
from plda.conversions.cumulants import (
    Cumulant,
    atoms_cumulant,
    discrete_gaussian_cumulant,
    gaussian_cumulant,
    laplace_cumulant,
    log_atom_sum,
)
from plda.conversions.sampled_gaussian import MARGIN, sampled_gaussian_cumulant
from plda.discretization.discretize import discretize
from plda.epochs.allocation import RandomAllocation
from plda.mechanisms.approximate import ApproximateDP
from plda.mechanisms.base import DIRECTIONS, Mechanism
from plda.mechanisms.discrete import DiscreteGaussian
from plda.mechanisms.gaussian import Gaussian, GaussianLaw
from plda.mechanisms.gaussian_mixture import GaussianMixture
from plda.mechanisms.imported import ZCDP, GaussianDP, RenyiDP, zcdp_rho
from plda.mechanisms.laplace import LaplaceLaw
from plda.mechanisms.law import ReversedLaw
from plda.mechanisms.revealed_mixture import RevealedMixtureLaw
from plda.mechanisms.subsampled import PoissonSampled, ReplaceOneSampledGaussianLaw, SubsampledLaw
from plda.mechanisms.symmetrized import SymmetrizedSubsampledLaw

#: grid points of a generic per-step discretization
_GRID_POINTS = 1 << 15


def _grid_cumulant(law, alpha: np.ndarray):
    """Bounds from the per-step optimistic and pessimistic grid laws (dominated / dominating
    pairs keep the order of every f-divergence); ``None`` for the upper one when the
    pessimistic law charged a continuous tail to ``+inf`` (a bound would need that tail)."""
    lo, hi = _support(law)
    step = max((hi - lo) / _GRID_POINTS, 1e-12)
    upper_law, lower_law = discretize(law, step)
    lower = log_atom_sum(lower_law.losses, lower_law.probs, alpha)
    if law.infinity_mass > 0:
        inf = np.full(alpha.shape, np.inf)
        return inf, inf
    charged = upper_law.infinity_mass > law.infinity_mass
    upper = None if charged else log_atom_sum(upper_law.losses, upper_law.probs, alpha)
    return lower, upper


def _support(law) -> tuple[float, float]:
    lo, hi = np.inf, -np.inf
    if law.has_continuous_part:
        a, b = law.tail_points(1e-24, "P")
        lo, hi = min(lo, a), max(hi, b)
    if len(law.atom_losses):
        lo, hi = min(lo, law.atom_losses.min()), max(hi, law.atom_losses.max())
    if not (np.isfinite(lo) and np.isfinite(hi)) or hi <= lo:
        return (0.0, 1.0)
    return float(lo), float(hi)


def step_cumulant(mechanism: Mechanism, direction: str, alpha: np.ndarray) -> Cumulant:
    """Bounds on one step's Rényi cumulant ``K(alpha) = log E_P[e^{(alpha-1) L}]``.

    In order of preference: closed forms (:mod:`plda.conversions.cumulants`); the
    Poisson-sampled Gaussian by cells (:mod:`plda.conversions.sampled_gaussian`), for every
    sampler whose law is its law; a revealed mixture's (truncated Poisson) and a symmetrized
    pair's (substitutions) from their components; any other law through its optimistic and
    pessimistic per-step grid laws (dominated and dominating pairs keep the order of every
    f-divergence); joint convexity, ``e^K <= 1 - q + q e^{K_base}``, where the pessimistic law
    charged a tail to ``+inf``; else ``+inf``. A random allocation's upper bound is at most
    ``num_selected`` uses of its base (joint convexity over the allocations).

    Parameters
    ----------
    mechanism : Mechanism
        The step, under add/remove semantics.
    direction : str
        Which of its privacy-loss laws: ``"remove"`` or ``"add"``.
    alpha : numpy.ndarray
        Rényi orders, each > 1.

    Returns
    -------
    Cumulant
        Bounds on ``K(alpha)``, one per order (``inf`` for a mass at infinite loss).
    """
    found = _step_cumulant(mechanism, direction, alpha)
    if type(mechanism) is RandomAllocation:
        # the record joins num_selected steps: with the other records' allocation drawn alike
        # under both hypotheses, the pair is a mixture of pairs of num_selected base uses, so
        # joint convexity bounds it by them (the bracket's dominating law pays for its tail
        # with a mass at +inf, and the k > 1 decomposition's law with one too)
        base = step_cumulant(mechanism.mechanism, direction, alpha).upper
        upper = np.minimum(found.upper, mechanism.num_selected * base)
        # (for num_selected > 1 the law is only dominating, with infinite K: below, the realized
        # post-processing of the epoch)
        lower = found.lower if mechanism.tight else step_cumulant(
            mechanism.lower_bound_mechanism(), direction, alpha).lower
        check_bracket(lower, upper, query="renyi_bounds")
        return Cumulant(lower=lower, upper=upper)
    return found


def _step_cumulant(mechanism: Mechanism, direction: str, alpha: np.ndarray) -> Cumulant:
    """:func:`step_cumulant` by the mechanism's own closed forms, else by its law."""
    if type(mechanism) is DiscreteGaussian:
        return discrete_gaussian_cumulant(mechanism.sigma, mechanism.sensitivity, alpha)
    if type(mechanism) is ZCDP:  # D_alpha <= rho alpha, met by GaussianDP(sqrt(2 rho))
        k = (alpha - 1) * mechanism.rho * alpha
        return Cumulant(lower=k, upper=k)
    if type(mechanism) is RenyiDP:
        return _renyi_dp_cumulant(mechanism, alpha)
    stated = getattr(mechanism, "renyi_guarantee", None)
    if isinstance(stated, RenyiDP):
        # a step certified through a Rényi curve of its own (RepeatAndSelect): that curve
        # above, and K >= 0 below (its realized lower bound is not a Rényi statement)
        upper = _renyi_dp_cumulant(stated, alpha).upper
        return Cumulant(lower=np.zeros(alpha.shape), upper=upper)
    if type(mechanism) is ApproximateDP and mechanism.delta > 0:
        inf = np.full(alpha.shape, np.inf)
        return Cumulant(lower=inf, upper=inf)
    if type(mechanism) is PoissonSampled and mechanism.group_size > 1:
        mechanism = mechanism.group_mixture()  # the same pair: its closed forms below
    if type(mechanism) is PoissonSampled and mechanism.sample_rate < 1:
        base = mechanism.mechanism
        if type(base) is Gaussian:
            return sampled_gaussian_cumulant(base.mu, mechanism.sample_rate, direction, alpha)
    law = mechanism.privacy_loss(direction)
    bracket = getattr(law, "bracket", None)
    if bracket is not None:
        # a law known through a dominating law and a dominated one (random allocation): the
        # dominating law's mass at +inf is the price of its certified tail, not the pair's, so
        # each side comes from its own law (Renyi divergence keeps the order of the pairs)
        dominating, dominated = bracket
        upper = _law_cumulant(dominating, alpha).upper
        lower = np.zeros(alpha.shape)  # K >= 0 for alpha > 1, whatever the pair
        if dominated is not None:
            lower = _law_cumulant(dominated, alpha).lower
        check_bracket(lower, upper, query="renyi_bounds")
        return Cumulant(lower=lower, upper=upper)
    return _law_cumulant(law, alpha, mechanism, direction)


def _renyi_dp_cumulant(mechanism: RenyiDP, alpha: np.ndarray) -> Cumulant:
    """Bounds on ``K`` of a step with stated Rényi bounds: ``D_alpha`` does not decrease in
    ``alpha`` (van Erven & Harremoës 2014, Thm. 3), so the bound at the next stated order
    holds (``inf`` beyond the last); the lower bound is the largest Gaussian within them."""
    orders, bounds = np.array(mechanism.orders), np.array(mechanism.epsilons)
    upper = np.full(alpha.shape, np.inf)
    for order, bound in zip(orders, bounds, strict=True):
        upper = np.where(alpha <= order, np.minimum(upper, bound), upper)
    mu = mechanism.lower_bound_mechanism().mu
    return Cumulant(lower=(alpha - 1) * alpha * mu**2 / 2, upper=(alpha - 1) * upper)


def _law_cumulant(law, alpha: np.ndarray, mechanism=None, direction=None) -> Cumulant:
    """Bounds on ``K(alpha)`` read from a privacy-loss law (closed forms first); the convexity
    fallback for the upper side also reads the ``mechanism`` and ``direction`` it came from,
    when given."""
    # closed forms by law, so that every mechanism whose law is a Gaussian's or a Laplace's (a
    # shuffled epoch's dominating pair, a one-step realized pair) gets them
    if type(law) is GaussianLaw:
        return gaussian_cumulant(law.mu, alpha)
    if type(law) is LaplaceLaw:
        return laplace_cumulant(law.epsilon0, alpha)
    # a Poisson-sampled Gaussian's law in either direction, whichever sampler has it (fixed-size
    # batches, a truncated Poisson sample that cannot truncate): its bounds by cells
    sampled, direction = (law.base, "add") if type(law) is ReversedLaw else (law, "remove")
    if type(sampled) is SubsampledLaw and type(sampled.base) is GaussianLaw:
        return sampled_gaussian_cumulant(sampled.base.mu, sampled.sample_rate, direction, alpha)
    if type(sampled) is RevealedMixtureLaw:
        return _revealed_cumulant(sampled, direction == "add", alpha)
    if type(law) is SymmetrizedSubsampledLaw:
        return _symmetrized_cumulant(law, alpha)
    if law.infinity_mass > 0:
        inf = np.full(alpha.shape, np.inf)
        return Cumulant(lower=inf, upper=inf)
    if not law.has_continuous_part and law.truncated_mass == 0:
        return atoms_cumulant(law.atom_losses, law.atom_probs, alpha)
    if law.has_continuous_part:
        lower, upper = _grid_cumulant(law, alpha)
    else:  # atoms with a truncated tail: the kept atoms are a lower bound
        lower, upper = log_atom_sum(law.atom_losses, law.atom_probs, alpha), None
    if upper is None:
        upper = _convexity_upper(law, alpha, mechanism, direction)
    margin = MARGIN * (1 + np.abs(upper))
    check_bracket(lower, upper + margin, query="renyi_bounds")
    return Cumulant(lower=lower, upper=upper + margin)


def _revealed_cumulant(law: RevealedMixtureLaw, reverse: bool, alpha: np.ndarray) -> Cumulant:
    """A revealed mixture's pair (:class:`~plda.mechanisms.revealed_mixture.RevealedMixtureLaw`)
    shows the drawn component, so ``e^K = sum_k w_k e^{K_k}`` exactly, in either order of the
    pair (``reverse``: each component's reversed pair); the sums rounded outwards."""
    parts = [_law_cumulant(c.reversed() if reverse else c, alpha) for c in law.components]
    with np.errstate(divide="ignore"):
        log_weights = np.log(np.asarray(law.weights, dtype=float))[:, None]
    lower = np.logaddexp.reduce(log_weights + np.array([p.lower for p in parts]), axis=0)
    upper = np.logaddexp.reduce(log_weights + np.array([p.upper for p in parts]), axis=0)
    margin = MARGIN * (1 + np.abs(upper))
    return Cumulant(lower=lower - MARGIN * (1 + np.abs(lower)), upper=upper + margin)


def _symmetrized_cumulant(law: SymmetrizedSubsampledLaw, alpha: np.ndarray) -> Cumulant:
    """The least symmetric pair dominating both directions of a subsampled pair ``R``
    (:class:`~plda.mechanisms.symmetrized.SymmetrizedSubsampledLaw`) is dominated by every
    symmetric pair that dominates both: ``R`` composed with its reverse and the base pair (its
    tradeoff curve is the largest symmetric one below ``f_R`` and ``f_R^{-1}``; Dong, Roth &
    Su 2022, Sec. 4.2), so ``K <= min(K_R + K_{R^-1}, K_base)``; it dominates both directions of
    ``R``, so ``K >= max(K_R, K_{R^-1})``."""
    r = law.subsampled
    remove, add = _law_cumulant(r, alpha), _law_cumulant(r.reversed(), alpha)
    upper = np.minimum(remove.upper + add.upper, _law_cumulant(r.base, alpha).upper)
    return Cumulant(lower=np.maximum(remove.lower, add.lower), upper=upper)


def _convexity_upper(law, alpha: np.ndarray, mechanism: Mechanism | None = None,
                     direction: str | None = None) -> np.ndarray:
    """Joint convexity of ``(a, b) -> a^alpha b^(1-alpha)``: a pair of mixtures
    ``((1-q) R + q A, (1-q) R + q B)`` has ``e^K <= 1 - q + q e^{K(A, B)}``. A Poisson-sampled
    step (``A, B`` its base's pair, in the base's own direction) and a Poisson-sampled Gaussian
    under replace-one (``A = N(mu, 1)``, ``B = N(-mu, 1)``: ``K = alpha (alpha-1) (2 mu)^2 / 2``)
    are such pairs. So is a :class:`~plda.GaussianMixture`, ``sum_k w_k (N(mu_k), N(0))`` (or
    reversed): ``e^K <= sum_k w_k e^{alpha (alpha-1) mu_k^2 / 2}``. ``law`` is the step's law,
    ``mechanism`` (when known) the step, ``direction`` the law's; ``+inf`` for anything else."""
    if type(mechanism) is GaussianMixture:
        shifts, weights = (np.asarray(v) for v in mechanism.components())
        with np.errstate(divide="ignore"):
            exponents = np.log(weights) + np.multiply.outer(alpha * (alpha - 1) / 2, shifts**2)
        return np.logaddexp.reduce(exponents, axis=-1)
    if type(mechanism) is PoissonSampled:
        q = mechanism.sample_rate
        base = step_cumulant(mechanism.mechanism, direction, alpha).upper
    elif type(law) is ReplaceOneSampledGaussianLaw:
        q = law.sample_rate
        base = gaussian_cumulant(2 * law.mu, alpha).upper
    else:
        return np.full(alpha.shape, np.inf)
    with np.errstate(over="ignore"):
        return np.logaddexp(math.log1p(-q), math.log(q) + base) if q < 1 else base


def step_rho(mechanism: Mechanism) -> float:
    """A bound on one step's zCDP parameter ``sup_alpha D_alpha / alpha`` (both directions).

    The ``rho`` a step states (``ZCDP``, ``GaussianDP``, ``Gaussian``:
    :func:`~plda.mechanisms.imported.zcdp_rho`), else closed forms (Bun & Steinke 2016):
    ``mu^2/2`` for a Gaussian pair, sampled or not (no amplification as ``alpha -> inf``),
    ``eps^2/2`` for an ``eps``-DP step; for a sampler, the ``rho`` of a pair that dominates its
    laws.

    Parameters
    ----------
    mechanism : Mechanism
        The step, under add/remove semantics.

    Returns
    -------
    float
        The bound; ``inf`` when none is known (e.g. a mass at infinite loss).
    """
    stated = zcdp_rho(mechanism)
    if stated is not None:
        return stated
    if type(mechanism) is DiscreteGaussian:
        # D_alpha <= alpha D^2 / (2 s^2) with equality at integer alpha D (CKS20)
        return mechanism.sensitivity**2 / (2 * mechanism.sigma**2)
    if type(mechanism) is GaussianMixture:
        # joint convexity over the components: D_alpha <= max_k alpha mu_k^2 / 2, both ways
        return max(mechanism.components()[0]) ** 2 / 2
    if type(mechanism) is PoissonSampled:
        # D_alpha(sampled) <= D_alpha(base) by joint convexity, in both directions; a group's
        # mixture: <= max over k <= K of the base's D_alpha at k times its shift (K^2 rho, all
        # its bases being Gaussian)
        rho = step_rho(mechanism.mechanism) * mechanism.group_size**2
        return min(rho, _pure_rho(mechanism))
    if type(mechanism) is RandomAllocation:
        # joint convexity over the allocations: D_alpha <= num_selected uses of the base's
        return mechanism.num_selected * step_rho(mechanism.mechanism)
    # any other step by the pairs that dominate its laws: a Gaussian pair (a shuffled epoch's),
    # fixed-size batches, truncated Poisson, substitutions
    return min(max(_law_rho(mechanism.privacy_loss(d)) for d in DIRECTIONS),
               _pure_rho(mechanism))


def _law_rho(law) -> float:
    """``sup_alpha D_alpha / alpha`` of a law's pair, from a pair known to dominate it
    (:func:`_dominated`): ``mu^2 / 2`` for a Gaussian pair, ``eps^2 / 2`` for a Laplace one (an
    ``eps``-DP pair, Bun & Steinke 2016, Prop. 1.4)."""
    def leaf(inner) -> float:
        if type(inner) is LaplaceLaw:
            return inner.epsilon0 * inner.epsilon0 / 2
        mu = _gaussian_leaf(inner)
        return mu * mu / 2
    return _dominated(law, leaf)


def _gaussian_leaf(inner) -> float:
    """The shift of the Gaussian pair a leaf law is, or dominated by: the replace-one sampled
    Gaussian by ``(N(mu), N(-mu))``, two ``mu`` apart; ``inf`` for any other leaf."""
    if type(inner) is GaussianLaw:
        return inner.mu
    if type(inner) is ReplaceOneSampledGaussianLaw:  # (odd loss: symmetric too)
        return 2 * inner.mu
    return math.inf


def _dominated(law, leaf) -> float:
    """``leaf`` of the pairs that dominate a law, the largest (``inf`` if none is known).

    A sampled pair ``(q P + (1-q) Q, Q)`` and its reverse are dominated by the base pair in the
    same order, a revealed mixture by its worst component (joint convexity of every
    hockey-stick divergence, hence of the profile and of each Rényi divergence), a symmetrized
    subsampled pair by its (symmetric) base pair."""
    reverse = type(law) is ReversedLaw
    inner = law.base if reverse else law
    if type(inner) is SubsampledLaw:
        return _dominated(inner.base.reversed() if reverse else inner.base, leaf)
    if type(inner) is RevealedMixtureLaw:
        return max(_dominated(c.reversed() if reverse else c, leaf) for c in inner.components)
    if type(inner) is SymmetrizedSubsampledLaw:  # (symmetric: either order)
        return _dominated(inner.subsampled.base, leaf)
    return leaf(inner)


def step_gdp_mu(mechanism: Mechanism) -> float:
    """A ``mu`` such that one step is ``mu``-GDP, from a Gaussian pair that dominates it.

    ``mu`` of a ``Gaussian`` or ``GaussianDP`` step; for a sampled step, its base's (the
    sampled pair's profile is at most the base pair's, in both orders, by joint convexity: no
    amplification is claimed), times the group size; ``sqrt(num_selected)`` base uses for a
    random allocation; else from the pairs that dominate its laws. A composition of such steps
    is ``sqrt(sum k mu^2)``-GDP (Dong, Roth & Su 2019, Cor. 3.3 and the monotonicity of
    composition in each tradeoff function).

    Parameters
    ----------
    mechanism : Mechanism
        The step, under add/remove semantics.

    Returns
    -------
    float
        The ``mu``; ``inf`` when no dominating Gaussian pair is known.
    """
    if type(mechanism) in (Gaussian, GaussianDP):
        return mechanism.mu
    if type(mechanism) is PoissonSampled:
        return step_gdp_mu(mechanism.mechanism) * mechanism.group_size
    if type(mechanism) is RandomAllocation:
        return step_gdp_mu(mechanism.mechanism) * math.sqrt(mechanism.num_selected)
    return max(_dominated(mechanism.privacy_loss(d), _gaussian_leaf) for d in DIRECTIONS)


def largest_loss(mechanism: Mechanism) -> float:
    """The largest absolute loss of a step over both directions: it is pure ``eps``-DP there.

    Parameters
    ----------
    mechanism : Mechanism
        The step, under add/remove semantics.

    Returns
    -------
    float
        The largest ``|L|``; ``inf`` if unbounded (a continuous tail, a mass at infinity).
    """
    largest = 0.0
    for direction in DIRECTIONS:
        law = mechanism.privacy_loss(direction)
        if law.infinity_mass > 0 or law.truncated_mass > 0:
            return math.inf
        if law.has_continuous_part:
            lo, hi = law.continuous_support
            largest = max(largest, abs(lo), abs(hi))
        if len(law.atom_losses):
            largest = max(largest, float(np.max(np.abs(law.atom_losses))))
    return largest


def _pure_rho(mechanism: Mechanism) -> float:
    """An ``eps``-DP step is ``eps^2/2``-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    largest = largest_loss(mechanism)
    return largest * largest / 2  # (a product overflows to inf; a power would raise)
