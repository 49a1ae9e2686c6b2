"""The grid law's epsilon(delta) (plda.grid.discrete)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import plda
from plda.discretization.discretize import discretize
from plda.grid.discrete import DiscreteLoss


def _law() -> DiscreteLoss:
    law = plda.PoissonSampled(plda.Gaussian(0.9), 0.01).privacy_loss("remove")
    return discretize(law, 2.0**-9)[0]


def _fresh(law: DiscreteLoss) -> DiscreteLoss:
    """The same version, with nothing remembered."""
    return dataclasses.replace(law)


def test_a_version_remembers_its_epsilons_per_delta():
    # the driver asks a version for its gap and then for its answer: the second ask reads the
    # first one's answer; another delta, or an array of them, is solved for itself
    law = _law()
    calls = []
    solve = law._epsilon_one

    def counting(d):
        calls.append(d)
        return solve(d)

    object.__setattr__(law, "_epsilon_one", counting)
    try:
        first = law.epsilon(np.array(1e-5))
        assert law.epsilon(np.array(1e-5)) == first
        assert calls == [1e-5]
        both = law.epsilon(np.array([1e-3, 1e-5]))
        assert calls == [1e-5, 1e-3]
    finally:
        object.__delattr__(law, "_epsilon_one")
    fresh = _fresh(law)
    assert both[1] == first == fresh.epsilon(np.array(1e-5))
    assert both[0] == fresh.epsilon(np.array(1e-3)) and both[0] < first


def test_a_walk_down_the_ladder_computes_each_order_once(monkeypatch):
    # a Chernoff walk asks one order at a time, next to those it has: each call extends the
    # orders its way (centred on the order asked, every call recomputed two known orders; a
    # tilted factor of 8e4 entries costs 0.3 ms per order). The bounds do not depend on it.
    import plda.grid.discrete as discrete

    computed = []
    ladder = discrete.log_mgf_ladder

    def counting(law, j0, j1):
        computed.extend(range(j0, j1 + 1))
        return ladder(law, j0, j1)

    monkeypatch.setattr(discrete, "log_mgf_ladder", counting)
    law = _fresh(_law())
    walked = [law.ladder_log_mgf(j, j) for j in range(13, 1, -1)]
    walked += [law.ladder_log_mgf(j, j) for j in range(14, 18)]  # and back up
    assert len(computed) == len(set(computed)) <= len(walked) + 6
    whole = ladder(law, 2, 17)
    for j, (up, down) in zip([*range(13, 1, -1), *range(14, 18)], walked, strict=True):
        assert up[0] == whole[0][j - 2] and down[0] == whole[1][j - 2]


def test_a_version_whose_composition_overflowed_claims_nothing():
    # 1e5 steps of a law holding 0.2% too much mass overflow the FFT: the composed entries are
    # NaN and the error terms infinite; delta(eps) was NaN, now the bound that needs nothing
    upper, lower = discretize(plda.PoissonSampled(plda.Gaussian(0.9), 0.01).privacy_loss(
        "remove"), 2.0**-9)
    nan = np.full(len(upper.probs), np.nan)
    broken_upper = dataclasses.replace(upper, probs=nan, entry_error=np.inf, l2_error=np.inf)
    broken_lower = dataclasses.replace(lower, probs=nan, entry_error=np.inf, l2_error=np.inf)
    eps = np.array([0.0, 0.5])
    claimed = broken_upper.delta(eps)  # 1, or the Chernoff bound of its moments where smaller
    assert np.all((claimed <= 1.0) & (claimed >= lower.delta(eps)))
    assert np.all(broken_lower.delta(eps) == 0.0)


def test_discrete_laplace_refuses_a_loss_the_engine_cannot_square():
    # a pure-DP epsilon of 1e160 once reached the engine and failed with "math domain error"
    with pytest.raises(ValueError, match=r"parameter \* sensitivity .* at most 1e\+150"):
        plda.DiscreteLaplace(1e160)
    with pytest.raises(ValueError, match="parameter"):
        plda.DiscreteLaplace(1e145, 10**6)
    mechanism = plda.DiscreteLaplace(1e150)
    with pytest.raises(ValueError, match="parameter"):
        mechanism.under_replace_one()
    composed = plda.PrivacyLossDistribution.from_mechanism(plda.DiscreteLaplace(1e100), 3)
    assert composed.epsilon_bounds(1e-5).upper == pytest.approx(3e100, rel=1e-9)
