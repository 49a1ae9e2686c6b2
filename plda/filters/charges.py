"""What a filter records: a step's :class:`Charge`, a filter's :class:`Usage`, the refusal
:class:`BudgetExceededError`, and the zCDP price of a step (shared by filters and odometer)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from plda.filters.amounts import amount, exact

# ================================================================== values


class BudgetExceededError(RuntimeError):
    """A filter refused a step; nothing was recorded.

    Parameters
    ----------
    message : str
        What was refused and why.
    spent : Usage
        What the filter had recorded before the request (kept as ``spent``).
    requested : Charge
        The refused step (kept as ``requested``).
    remaining : float
        The largest ε of a pure step that still fits (kept as ``remaining``).
    """

    def __init__(self, message: str, spent: Usage, requested: Charge, remaining: float):
        super().__init__(message)
        self.spent = spent
        self.requested = requested
        self.remaining = remaining


@dataclass(frozen=True)
class Charge:
    """One step as recorded by a filter or odometer: the guarantees the step satisfies.

    Attributes
    ----------
    epsilon : float or None
        The step is (ε, δ)-DP; None for a step described only by ``rho`` or ``mu``.
    delta : float
        Its δ.
    rho : float or None
        The step is ρ-zCDP.
    mu : float or None
        The step is μ-GDP.
    label : str
        Free text for the history.
    """

    epsilon: float | None
    delta: float = 0.0
    rho: float | None = None
    mu: float | None = None
    label: str = ""

    def __str__(self) -> str:
        parts = []
        if self.epsilon is not None:
            parts += [f"epsilon={self.epsilon:.6g}", f"delta={self.delta:.6g}"]
        if self.rho is not None:
            parts.append(f"rho={self.rho:.6g}")
        if self.mu is not None:
            parts.append(f"mu={self.mu:.6g}")
        if self.label:
            parts.append(f"label={self.label!r}")
        return "(" + ", ".join(parts) + ")"


@dataclass(frozen=True)
class Usage:
    """What a filter has recorded, and how close its condition is to the limit.

    The condition reads ``statistic <= limit`` (and, for filters that admit approximate steps,
    ``delta_sum <= delta_limit``).

    Attributes
    ----------
    steps : int
        The number of recorded steps.
    epsilon_sum, delta_sum : float
        The sums of the recorded steps' ε and δ.
    statistic : float
        The quantity the filter's condition bounds (e.g. ``K`` for
        :class:`~plda.filters.AdvancedFilter`).
    limit : float
        Its limit.
    measure : str
        What ``statistic`` is, e.g. ``"sum of step rho (zCDP)"``.
    delta_limit : float
        The limit of ``delta_sum``.
    """

    steps: int
    epsilon_sum: float
    delta_sum: float
    statistic: float
    limit: float
    measure: str
    delta_limit: float

    def __str__(self) -> str:
        return (
            f"{self.steps} step{'' if self.steps == 1 else 's'}, "
            f"{self.measure} = {self.statistic:.6g} of {self.limit:.6g}, "
            f"sum of step deltas = {self.delta_sum:.6g} of {self.delta_limit:.6g}"
        )


# ================================================================== numbers


def parse_charge(epsilon, delta, rho, mu, label) -> Charge:
    """A step's description, checked and normalized (filters and the odometer).

    Parameters
    ----------
    epsilon, delta : float or None
        The step is (ε, δ)-DP; ``epsilon`` None if it is described otherwise.
    rho : float or None
        The step is ρ-zCDP.
    mu : float or None
        The step is μ-GDP.
    label : str
        Free text for the history.

    Returns
    -------
    Charge
        The step.

    Raises
    ------
    TypeError
        If an amount is not a real number, or ``label`` is not a str.
    ValueError
        If an amount is negative or not finite, none of ``epsilon``, ``rho``, ``mu`` is given,
        or ``delta`` is given without ``epsilon``.
    """
    epsilon = amount("epsilon", epsilon, optional=True)
    delta = amount("delta", delta)
    rho = amount("rho", rho, optional=True)
    mu = amount("mu", mu, optional=True)
    if not isinstance(label, str):
        raise TypeError(f"label must be a str, got {type(label).__name__}")
    if epsilon is None and rho is None and mu is None:
        raise ValueError("describe the step: give epsilon (and delta), rho or mu")
    if epsilon is None and delta > 0:
        raise ValueError("delta was given without epsilon; give the step's (epsilon, delta)")
    return Charge(epsilon, delta, rho, mu, label)


def zcdp_price(charge: Charge, who: str) -> Fraction:
    """Exact zCDP cost of a step: the smallest of ``rho``, ``mu^2/2`` and ``epsilon^2/2``.

    ``mu^2/2`` because GDP implies zCDP by data processing; ``epsilon^2/2`` for a pure step only
    (Bun & Steinke 2016, Prop. 3.3).

    Parameters
    ----------
    charge : Charge
        The step.
    who : str
        Who charges it, for the error message.

    Returns
    -------
    fractions.Fraction
        The step's ρ.

    Raises
    ------
    ValueError
        If the step has ``delta > 0`` and no ``rho`` or ``mu``: it has no zCDP price.
    """
    options = []
    if charge.rho is not None:
        options.append(exact(charge.rho))
    if charge.mu is not None:
        options.append(exact(charge.mu) ** 2 / 2)
    if charge.epsilon is not None and charge.delta == 0:
        options.append(exact(charge.epsilon) ** 2 / 2)
    if not options:
        raise ValueError(
            f"{who} charges zCDP: give rho (or mu) for a step with delta > 0, or a pure step "
            "(delta=0)"
        )
    return min(options)
