"""Certified two-sided bounds of an accountant's history as plain floats, for the adapters.

For a sampler without a known tight pair (:class:`~plda.TruncatedPoisson`,
:class:`~plda.Shuffled`) the accountant's lower bound composes each step's
``lower_bound_mechanism()`` (a pair realized by datasets); this module gives the adapters one
place to ask for both sides.
"""

from __future__ import annotations

import warnings

from plda.accounting.accountant import PLDAccountant
from plda.mechanisms import NotTightWarning
from plda.pld import Bounds

__all__ = ["delta_bounds", "epsilon_bounds", "is_tight"]


def is_tight(accountant: PLDAccountant) -> bool:
    """Whether every recorded mechanism's own pair is realized by datasets.

    Parameters
    ----------
    accountant : PLDAccountant
        The accountant asked.

    Returns
    -------
    bool
        True if every mechanism is ``tight`` (then the bounds of its own laws are certified
        on both sides as they stand).
    """
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
    """Certified bounds on epsilon at ``delta`` of what ``accountant`` recorded, as floats.

    Bracketed samplers included: their lower bound comes from ``lower_bound_mechanism()``
    (no :class:`~plda.NotTightWarning` is shown).

    Parameters
    ----------
    accountant : PLDAccountant
        The accountant asked.
    delta : float
        The target delta, in ``[0, 1]``.

    Returns
    -------
    Bounds
        ``Bounds(lower=..., upper=...)`` of floats, both certified.
    """
    return _query(accountant, "epsilon_bounds", delta)


def delta_bounds(accountant: PLDAccountant, epsilon: float) -> Bounds:
    """Certified bounds on delta at ``epsilon`` of what ``accountant`` recorded, as floats.

    Parameters
    ----------
    accountant : PLDAccountant
        The accountant asked.
    epsilon : float
        The epsilon, in ``[0, inf]``.

    Returns
    -------
    Bounds
        ``Bounds(lower=..., upper=...)`` of floats, both certified (as :func:`epsilon_bounds`).
    """
    return _query(accountant, "delta_bounds", epsilon)
