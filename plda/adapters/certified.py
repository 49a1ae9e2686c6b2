"""Certified two-sided bounds of an accountant whose history holds bracketed samplers.

For a sampler without a known tight pair (:class:`~plda.TruncatedPoisson`,
:class:`~plda.Shuffled`) the accountant's own lower bound brackets the *dominating* pair, not
the sampler: it may lie above the sampler's true epsilon. The certified lower bound composes
each step's ``lower_bound_mechanism()`` (a pair realized by actual datasets, or a
post-processing of one) instead: every realized pair's epsilon is at most the true one, and
composing realized pairs of the same two datasets is realized too. The upper bound is the
accountant's own.
"""

from __future__ import annotations

import warnings

from plda.accountant import PLDAccountant
from plda.mechanisms import NotTightWarning
from plda.pld import Bounds

__all__ = ["delta_bounds", "epsilon_bounds", "is_tight"]


def is_tight(accountant: PLDAccountant) -> bool:
    """Whether every recorded mechanism's own pair is realized (then the accountant's bounds
    are certified on both sides as they stand)."""
    return all(mechanism.tight for mechanism, _ in accountant.history)


def _realized(accountant: PLDAccountant) -> PLDAccountant:
    """An accountant of the realized lower pairs, with the same relation and accuracy."""
    lower = PLDAccountant(relation=accountant.relation, accuracy=accountant.accuracy)
    for mechanism, count in accountant.history:
        lower.compose(mechanism.lower_bound_mechanism(), count)
    return lower


def _query(accountant: PLDAccountant, method: str, value) -> Bounds:
    if is_tight(accountant):
        bounds = getattr(accountant, method)(value)
        return Bounds(lower=float(bounds.lower), upper=float(bounds.upper))
    with warnings.catch_warnings():
        # the lower side is taken from the realized pairs: the upper query's reminder that its
        # own lower bound is not the sampler's does not apply to what is returned here
        warnings.simplefilter("ignore", NotTightWarning)
        upper = float(getattr(accountant, method)(value).upper)
        lower = float(getattr(_realized(accountant), method)(value).lower)
    return Bounds(lower=min(lower, upper), upper=upper)


def epsilon_bounds(accountant: PLDAccountant, delta: float) -> Bounds:
    """Certified ``Bounds(lower=..., upper=...)`` on epsilon at ``delta`` for the mechanisms
    the accountant recorded, bracketed samplers included (lower bound from their
    ``lower_bound_mechanism()``)."""
    return _query(accountant, "epsilon_bounds", delta)


def delta_bounds(accountant: PLDAccountant, epsilon: float) -> Bounds:
    """Certified ``Bounds(lower=..., upper=...)`` on delta at ``epsilon`` (as
    :func:`epsilon_bounds`)."""
    return _query(accountant, "delta_bounds", epsilon)
