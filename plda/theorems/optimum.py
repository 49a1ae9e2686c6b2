"""The optimal composition of heterogeneous black-box ``(epsilon_i, delta_i)``-DP steps, as
certified bounds from the privacy-loss-distribution engine."""

from __future__ import annotations

from plda._internal.errors import check_bracket
from plda.mechanisms import ApproximateDP
from plda.pld import PrivacyLossDistribution
from plda.theorems.common import (
    Guarantee,
    covers_delta_mass,
    delta_value,
    group_steps,
    parse_steps,
    sum_up,
)
from plda.theorems.kov import kairouz_oh_viswanath


# ----------------------------------------------------------------------------- optimal (PLD)
def optimal(
    steps, delta: float, *, method: str = "auto", accuracy: float | None = None
) -> Guarantee:
    """Optimal composition of black-box ``(epsilon_i, delta_i)``-DP steps at total ``delta``.

    The parameters (steps, their epsilons and deltas, the count) must be fixed before the
    interaction starts: for adaptively chosen parameters this theorem does not hold, and only
    the privacy filters and odometer of :mod:`plda.filters` give guarantees.

    Theorem (Kairouz, Oh & Viswanath 2015; Murtagh & Vadhan 2016): the worst case is the
    composition of the randomized responses ``RR_(epsilon_i, delta_i)`` (``plda.ApproximateDP``);
    computing it exactly is #P-hard for heterogeneous steps (Murtagh & Vadhan), so plda composes
    their privacy-loss distributions (identical steps grouped with ``self_compose``) and returns
    certified bounds: the optimal epsilon lies in ``[epsilon_lower, epsilon]``.

    ``method``: ``"auto"`` (exact :func:`kairouz_oh_viswanath` when all steps are equal, else
    ``"pld"``), ``"pld"`` or ``"exact"`` (homogeneous steps only). ``accuracy`` is passed to the
    engine (target relative gap of the bounds).
    """
    epsilons, deltas = parse_steps(steps)
    target = delta_value("delta", delta)
    if method not in ("auto", "pld", "exact"):
        raise ValueError(f"method must be one of 'auto', 'pld', 'exact', got {method!r}")
    groups = group_steps(epsilons, deltas)
    if method == "exact" or (method == "auto" and len(groups) == 1):
        if len(groups) != 1:
            raise ValueError("method='exact' needs identical steps; use method='pld'")
        (e, d), n = groups[0]
        return kairouz_oh_viswanath(e, d, n, delta_total=target)
    pld = _approximate_dp_pld(groups, accuracy)
    lower, upper = (float(v) for v in pld.epsilon_bounds(target))
    # at eps = sum eps_i the optimum is exactly 1 - prod(1 - delta_i) (only the +inf mass is
    # left), so basic composition caps the grid's upper bound (it matters at delta -> 0)
    if covers_delta_mass(target, groups):
        upper = min(upper, sum_up(epsilons.tolist()))
    check_bracket(lower, upper, query="optimal composition")
    return Guarantee(upper, target, "optimal composition (PLD, certified)", lower)


def _approximate_dp_pld(groups, accuracy: float | None = None):
    options = {} if accuracy is None else {"accuracy": accuracy}
    pld = None
    for (e, d), n in groups:
        part = PrivacyLossDistribution.from_mechanism(ApproximateDP(e, d), n, **options)
        pld = part if pld is None else pld.compose(part)
    return pld
