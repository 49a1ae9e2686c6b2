"""Zero-concentrated DP of a composition (Bun & Steinke 2016): the smallest ``rho`` with
``eps_alpha <= rho alpha`` for every ``alpha > 1``.
"""

from __future__ import annotations

import math

import numpy as np

from plda._internal.errors import check_bracket
from plda._internal.floats import UNIT_ROUNDOFF, round_up
from plda.bounds import Bounds
from plda.conversions.composed import ComposedLaws, steps_of
from plda.conversions.renyi import renyi_bounds
from plda.epochs.allocation import RandomAllocation
from plda.mechanisms.base import DIRECTIONS, Mechanism
from plda.mechanisms.discrete import DiscreteGaussian
from plda.mechanisms.gaussian import GaussianLaw
from plda.mechanisms.gaussian_mixture import GaussianMixture
from plda.mechanisms.laplace import LaplaceLaw
from plda.mechanisms.law import ReversedLaw
from plda.mechanisms.revealed_mixture import RevealedMixtureLaw
from plda.mechanisms.subsampled import PoissonSampled, ReplaceOneSampledGaussianLaw, SubsampledLaw
from plda.mechanisms.symmetrized import SymmetrizedSubsampledLaw


def _step_rho(mechanism: Mechanism) -> float:
    """``sup_alpha D_alpha / alpha`` bound of one step (both directions)."""
    laws = [mechanism.privacy_loss(direction) for direction in DIRECTIONS]
    if all(type(law) is GaussianLaw for law in laws):
        # a Gaussian pair (a Gaussian step, or one that is dominated by one, e.g. Shuffled)
        return max(law.mu for law in laws) ** 2 / 2
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
        rho = _step_rho(mechanism.mechanism) * mechanism.group_size**2
        return min(rho, _pure_rho(mechanism))
    if type(mechanism) is RandomAllocation:
        # joint convexity over the allocations: D_alpha <= num_selected uses of the base's
        return mechanism.num_selected * _step_rho(mechanism.mechanism)
    # any other sampler, by the pairs that dominate its laws (fixed-size batches, truncated
    # Poisson, substitutions)
    return min(max(_law_rho(law) for law in laws), _pure_rho(mechanism))


def _law_rho(law) -> float:
    """``sup_alpha D_alpha / alpha`` of a law's pair, from a pair known to dominate it.

    A sampled pair ``(q P + (1-q) Q, Q)`` and its reverse are dominated by the base pair in the
    same order (joint convexity); a revealed mixture by its worst component; a symmetrized
    subsampled pair by its (symmetric) base pair; the replace-one sampled Gaussian by
    ``(N(mu), N(-mu))``: ``rho = 2 mu^2``. ``inf`` for anything else."""
    reverse = type(law) is ReversedLaw
    inner = law.base if reverse else law
    if type(inner) is GaussianLaw:
        return inner.mu**2 / 2
    if type(inner) is LaplaceLaw:  # eps-DP: eps^2 / 2 (Bun & Steinke 2016, Prop. 1.4)
        return inner.epsilon0**2 / 2
    if type(inner) is SubsampledLaw:
        return _law_rho(inner.base.reversed() if reverse else inner.base)
    if type(inner) is RevealedMixtureLaw:
        return max(_law_rho(c.reversed() if reverse else c) for c in inner.components)
    if type(inner) is SymmetrizedSubsampledLaw:  # (symmetric: either order)
        return _law_rho(inner.subsampled.base)
    if type(inner) is ReplaceOneSampledGaussianLaw:  # (odd loss: symmetric too)
        return 2 * inner.mu**2
    return math.inf


def _largest_loss(mechanism: Mechanism) -> float:
    """Largest absolute finite loss over both directions (``inf`` if unbounded): the step is
    pure ``eps``-DP for this ``eps``."""
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
    return _largest_loss(mechanism) ** 2 / 2


def zcdp_bounds(composed: ComposedLaws) -> Bounds:
    """Certified bounds on the zCDP parameter of a composition (Bun & Steinke 2016).

    The parameter is the smallest ``rho`` with ``eps_alpha <= rho alpha`` for all ``alpha > 1``.
    Upper: the smaller of the per-step closed forms ``sum_f k_f rho_f`` (``mu^2/2`` for
    Gaussians, sampled or not; ``eps^2/2`` for ``eps``-DP steps; Bun & Steinke 2016) and a
    sandwich over a grid of orders; lower: ``max_i eps_{alpha_i} / alpha_i`` from the lower
    Rényi bounds (``docs/tradeoff.md``, "How the per-step bounds are computed").

    Parameters
    ----------
    composed : ComposedLaws
        The composition.

    Returns
    -------
    Bounds
        ``(lower, upper)`` on ``rho``; ``inf`` when no finite ``rho`` is known.

    Raises
    ------
    TypeError
        If ``composed`` is not :class:`~plda.conversions.composed.ComposedLaws`.
    """
    factors = steps_of(composed)
    # each step's rho is a product of a few correctly rounded operations (3u relative, see
    # _step_rho) and the sum of N non-negative terms adds N u: widen by twice that, upward
    closed = round_up(
        math.fsum(k * _step_rho(m) for m, k in factors), 2 * (len(factors) + 4) * UNIT_ROUNDOFF
    )
    grid = np.concatenate(
        [[1 + 1e-6], 1 + np.geomspace(1e-5, 1e-2, 30), np.geomspace(1.011, 1e4, 300)]
    )
    # past the grid: D_alpha / alpha <= rho_f, and <= eps_f / alpha for an eps_f-DP step
    beyond = sum(k * min(_step_rho(m), _largest_loss(m) / grid[-1]) for m, k in factors)
    bounds = renyi_bounds(composed, grid)
    lower = float(np.max(bounds.lower / grid))
    with np.errstate(invalid="ignore"):
        sandwich = max(
            float(bounds.upper[0]),  # (1, alpha_0]: eps_alpha <= eps_{alpha_0}, alpha > 1
            float(np.max(bounds.upper[1:] / grid[:-1])),
            beyond,  # [alpha_last, inf)
        )
    upper = min(closed, sandwich)
    check_bracket(lower, upper, query="zcdp_bounds")
    return Bounds(lower=lower, upper=upper)


def zcdp(composed: ComposedLaws) -> float:
    """Certified zCDP parameter: ``eps_alpha <= rho alpha`` for all ``alpha > 1``.

    The upper side of :func:`zcdp_bounds`.

    Parameters
    ----------
    composed : ComposedLaws
        The composition.

    Returns
    -------
    float
        ``rho``; ``inf`` when no finite ``rho`` is known (e.g. an ``(epsilon, delta > 0)``
        step).

    Raises
    ------
    TypeError
        If ``composed`` is not :class:`~plda.conversions.composed.ComposedLaws`.
    """
    return zcdp_bounds(composed).upper
