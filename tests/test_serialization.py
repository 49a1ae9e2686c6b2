"""Saved accountant states and PLD recipes (:mod:`plda.serialization`): every plda step,
the selection step of ``plda.selection`` included, round-trips with the same bounds."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.stats import norm

import plda
from plda import PrivacyLossDistribution as PLD


def test_a_selection_step_round_trips_through_a_state_and_a_recipe(tmp_path):
    """state_dict() raised TypeError for a history holding a RepeatAndSelect (its module stands
    beside plda.serialization, which did not know it; its base may be a whole PLD)."""
    run = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(1.0), 0.01), 50)
    accountant = plda.PLDAccountant()
    accountant.step(noise_multiplier=1.0, sample_rate=0.01, count=10)
    accountant.compose(plda.RepeatAndSelect(plda.Gaussian(5.0), 10.0))
    accountant.compose(plda.RepeatAndSelect(run, 5.0, "poisson"))
    state = json.loads(json.dumps(accountant.state_dict()))
    restored = plda.PLDAccountant.from_state_dict(state)
    assert restored.epsilon_bounds(1e-5) == accountant.epsilon_bounds(1e-5)
    pld = PLD.from_mechanism(plda.RepeatAndSelect(run, 5.0, shape=0.5), 2)
    plda.save_pld(pld, tmp_path / "selection.json")
    assert plda.load_pld(tmp_path / "selection.json").epsilon_bounds(1e-5) == \
        pld.epsilon_bounds(1e-5)


def test_a_selection_of_an_unsavable_base_is_still_refused():
    mu = 0.5  # the Gaussian pair's loss: N(mu^2 / 2, mu^2) under P, N(-mu^2 / 2, mu^2) under Q
    custom = plda.CustomMechanism(plda.LossLaw(
        cdf_p=lambda x: norm.cdf(x, mu * mu / 2, mu), sf_p=lambda x: norm.sf(x, mu * mu / 2, mu),
        cdf_q=lambda x: norm.cdf(x, -mu * mu / 2, mu),
        sf_q=lambda x: norm.sf(x, -mu * mu / 2, mu),
        pdf_p=lambda x: norm.pdf(x, mu * mu / 2, mu), support=(-np.inf, np.inf)))
    accountant = plda.PLDAccountant()
    accountant.compose(plda.RepeatAndSelect(custom, 3.0))
    with pytest.raises(TypeError, match="to be serialized, got CustomMechanism"):
        accountant.state_dict()
