"""Certified two-sided bounds of an accountant whose history holds bracketed samplers.

For a sampler without a known tight pair (:class:`~plda.TruncatedPoisson`,
:class:`~plda.Shuffled`) the discretized laws bracket the *dominating* pair, whose lower end
may lie above the sampler's true epsilon. The accountant's lower bound therefore composes each
step's ``lower_bound_mechanism()`` instead (a pair realized by actual datasets, or a
post-processing of one): every realized pair's epsilon is at most the true one, and composing
realized pairs of the same two datasets is realized too. This module gives the adapters one
place to ask for both sides as plain floats.
"""

from __future__ import annotations

import warnings

from plda.accounting.accountant import PLDAccountant
from plda.mechanisms import NotTightWarning
from plda.pld import Bounds

__all__ = ["delta_bounds", "epsilon_bounds", "is_tight"]


def is_tight(accountant: PLDAccountant) -> bool:
    """Whether every recorded mechanism's own pair is realized (then the accountant's bounds
    are certified on both sides as they stand)."""
    return all(mechanism.tight for mechanism, _ in accountant.history)


def _query(accountant: PLDAccountant, method: str, value) -> Bounds:
    with warnings.catch_warnings():
        # the accountant already takes its lower bound from the realized pairs: the reminder
        # that the dominating pair is not realized is about the interval's width, which the
        # adapters report as it is
        warnings.simplefilter("ignore", NotTightWarning)
        bounds = getattr(accountant, method)(value)
    return Bounds(lower=float(bounds.lower), upper=float(bounds.upper))


def epsilon_bounds(accountant: PLDAccountant, delta: float) -> Bounds:
    """Certified ``Bounds(lower=..., upper=...)`` on epsilon at ``delta`` for the mechanisms
    the accountant recorded, bracketed samplers included (lower bound from their
    ``lower_bound_mechanism()``)."""
    return _query(accountant, "epsilon_bounds", delta)


def delta_bounds(accountant: PLDAccountant, epsilon: float) -> Bounds:
    """Certified ``Bounds(lower=..., upper=...)`` on delta at ``epsilon`` (as
    :func:`epsilon_bounds`)."""
    return _query(accountant, "delta_bounds", epsilon)
