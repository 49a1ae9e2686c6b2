"""Membership-inference risk of a composition: certified attack success rates.

A membership-inference attacker tests "the record is out" (false positive: saying *in* when it is
out) against "the record is in". Every such test is a hypothesis test between the output laws on
neighbouring datasets, so its error rates obey the f-DP tradeoff curve ``f`` of the mechanism
(Dong, Roth & Su 2019, "Gaussian differential privacy", Def. 2.1-2.3): at false-positive rate
``alpha`` the type-II error is at least ``f(alpha)``, i.e.

    TPR(alpha) <= 1 - f(alpha),        advantage = max_alpha (TPR - alpha) = delta(0),

where ``delta(0)`` is the hockey-stick divergence at ``eps = 0``, the total variation distance
between the two output laws. Kulynych, Gomez, Kaissis, du Pin Calmon & Troncoso 2024
("Attack-aware noise calibration for differential privacy", NeurIPS) calibrate the noise to these
two risks directly instead of to ``(epsilon, delta)``; :func:`plda.calibrate_noise_multiplier`
does the same with certified bounds.

Both helpers cover *both* neighbouring directions (add and remove) under ``"add_remove"``: the
curve is the symmetrized ``conv(min(T_remove, T_add))`` of :func:`plda.tradeoff.tradeoff`, and
``delta(0)`` is the larger of the two directions' values, so the bound holds whichever of the two
datasets the attacker is asked to tell apart.
"""

from __future__ import annotations

import numpy as np

from plda import tradeoff
from plda._internal.errors import check_bracket, one_warning_per_call
from plda.pld import Bounds, PrivacyLossDistribution

__all__ = ["advantage_bounds", "true_positive_rate_bounds"]


@one_warning_per_call
def true_positive_rate_bounds(pld: PrivacyLossDistribution, false_positive_rate) -> Bounds:
    """Certified bounds on the best membership-inference true-positive rate at a false-positive
    rate.

    ``TPR*(alpha) = 1 - f(alpha)`` with ``f`` the tradeoff curve of the composition, covering both
    neighbouring directions (Dong, Roth & Su 2019, Def. 2.1; Kulynych et al. 2024, Sec. 3).

    Parameters
    ----------
    pld
        The composition.
    false_positive_rate
        ``alpha`` in ``[0, 1]`` (float or array).

    Returns
    -------
    Bounds
        ``lower <= TPR*(alpha) <= upper``: ``upper`` is certified (no attack does better);
        ``lower`` is attained by the optimistic discretization. Both lie in ``[alpha, 1]``.
        ``1 - f`` is formed without cancellation, so small rates keep their relative accuracy.

    Examples
    --------
    >>> import plda
    >>> from plda.risk import true_positive_rate_bounds
    >>> step = plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01)
    >>> pld = plda.PrivacyLossDistribution.from_mechanism(step, 100)
    >>> tpr = true_positive_rate_bounds(pld, 1e-3)
    >>> 1e-3 <= tpr.lower <= tpr.upper < 0.01
    True
    """
    return tradeoff.true_positive_rate_bounds(pld, false_positive_rate)


@one_warning_per_call
def advantage_bounds(pld: PrivacyLossDistribution) -> Bounds:
    """Certified bounds on the membership-inference advantage ``max_alpha (TPR - FPR)``.

    ``adv = max_alpha (1 - alpha - f(alpha)) = delta(0) = TV(P, Q)``, the total variation
    distance of the output laws (Dong, Roth & Su 2019, Prop. 2.12 at ``eps = 0``; Kulynych et
    al. 2024, Sec. 3), the larger of the two neighbouring directions.

    Returns
    -------
    Bounds
        ``lower <= adv <= upper`` (floats in ``[0, 1]``); ``upper`` is certified.

    Examples
    --------
    >>> import plda
    >>> from plda.risk import advantage_bounds
    >>> pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=2.0))
    >>> adv = advantage_bounds(pld)  # exact: 2 Phi(1 / (2 sigma)) - 1 = 0.1974
    >>> adv.lower <= 0.19741265 <= adv.upper
    True
    """
    lower, upper = pld.delta_bounds(0.0)
    upper = float(np.clip(upper, 0.0, 1.0))
    lower = float(np.clip(lower, 0.0, 1.0))
    check_bracket(lower, upper, query="advantage_bounds")
    return Bounds(lower=lower, upper=upper)
