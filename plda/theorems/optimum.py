"""The optimal composition of heterogeneous black-box ``(epsilon_i, delta_i)``-DP steps, as
certified bounds from the privacy-loss-distribution engine."""

from __future__ import annotations

from plda._internal.errors import check_bracket, quiet_accuracy, warn_if_inaccurate
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

    The worst case is the composition of the randomized responses ``RR_(epsilon_i, delta_i)``
    (Kairouz, Oh & Viswanath 2015; Murtagh & Vadhan 2016): a theorem. Computing it exactly is
    #P-hard for different steps, so plda composes their privacy-loss distributions and returns
    certified bounds. The parameters must be fixed before the interaction starts; for
    adaptively chosen ones only :mod:`plda.filters` gives guarantees.

    Parameters
    ----------
    steps : sequence
        The steps: ``(epsilon_i, delta_i)`` pairs, or objects with ``epsilon`` and ``delta``
        attributes (e.g. :class:`~plda.ApproximateDP`); ``epsilon_i >= 0`` finite,
        ``delta_i`` in [0, 1).
    delta : float
        The total delta, in [0, 1).
    method : {"auto", "pld", "exact"}, optional
        ``"exact"``: :func:`~plda.theorems.kairouz_oh_viswanath` (equal steps only); ``"pld"``:
        the composed PLDs; ``"auto"``: exact when all steps are equal, else PLD.
    accuracy : float, optional
        Target relative gap of the engine's bounds (its default: 1e-3).

    Returns
    -------
    Guarantee
        The optimal epsilon lies in ``[epsilon_lower, epsilon]``.

    Warns
    -----
    AccuracyWarning
        When the returned ``[epsilon_lower, epsilon]`` (by the PLD method) is wider than
        ``accuracy``; the warning names that interval.

    Raises
    ------
    ValueError
        For an unknown ``method``, ``method="exact"`` with different steps, an empty ``steps``
        or a value out of range.
    TypeError
        If ``steps`` is not a sequence of pairs, or a value is not a real number.
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
    with quiet_accuracy():  # judged below, on the interval returned (after the cap)
        lower, upper = (float(v) for v in pld.epsilon_bounds(target))
    # at eps = sum eps_i the optimum is exactly 1 - prod(1 - delta_i) (only the +inf mass is
    # left), so basic composition caps the grid's upper bound (it matters at delta -> 0)
    if covers_delta_mass(target, groups):
        upper = min(upper, sum_up(epsilons.tolist()))
    check_bracket(lower, upper, query="optimal composition")
    warn_if_inaccurate(lower, upper, pld.accuracy, query="theorems.optimal")
    return Guarantee(upper, target, "optimal composition (PLD, certified)", lower)


def _approximate_dp_pld(groups, accuracy: float | None = None):
    options = {} if accuracy is None else {"accuracy": accuracy}
    pld = None
    for (e, d), n in groups:
        part = PrivacyLossDistribution.from_mechanism(ApproximateDP(e, d), n, **options)
        pld = part if pld is None else pld.compose(part)
    return pld
