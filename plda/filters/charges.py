"""What a filter records: a step's :class:`Charge`, a filter's :class:`Usage`, the refusal
:class:`BudgetExceededError`, and the zCDP price of a step (shared by filters and odometer)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from plda.filters.amounts import amount, exact

# ================================================================== values


class BudgetExceededError(RuntimeError):
    """A filter refused a step; nothing was recorded.

    Attributes ``spent`` (:class:`Usage` before the request), ``requested`` (:class:`Charge`) and
    ``remaining`` (largest ε of a pure step that still fits) say why.
    """

    def __init__(self, message: str, spent: Usage, requested: Charge, remaining: float):
        super().__init__(message)
        self.spent = spent
        self.requested = requested
        self.remaining = remaining


@dataclass(frozen=True)
class Charge:
    """One step as recorded by a filter or odometer: the guarantees the step satisfies.

    ``epsilon``/``delta``: (ε, δ)-DP (``epsilon`` is ``None`` for a step described only by
    ``rho``/``mu``); ``rho``: ρ-zCDP; ``mu``: μ-GDP; ``label``: free text for the history.
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
    """What a filter has recorded: its condition reads ``statistic <= limit`` (and, for filters
    that admit approximate steps, ``delta_sum <= delta_limit``)."""

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
    """A step's description checked and normalized (filters and the odometer)."""
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
    """Exact zCDP cost of a step: ``rho`` if given, else ``mu^2/2`` (GDP implies zCDP by data
    processing), else ``epsilon^2/2`` for a pure step (Bun & Steinke 2016, Prop. 3.3); the
    smallest available. A step with ``delta > 0`` and no ``rho``/``mu`` has no zCDP price."""
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
