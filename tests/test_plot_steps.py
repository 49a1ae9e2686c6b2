"""Epsilon over training steps reads the first k recorded steps (issue 24, item 7).

A 600-step accountant was plotted as its whole history repeated k times (epsilon 18.3 / 38.3 /
63.2 at k = 100 / 300 / 600 where the truth is 0.72 / 1.07 / 1.44). Each point is checked
against an independent accountant built with k steps.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import plda
from plda.conversions.gdp import gaussian_delta

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from plda.adapters.opacus import PLDOpacusAccountant  # noqa: E402
from plda.plot import accounting_comparison, epsilon_vs_steps  # noqa: E402

DELTA = 1e-5
ACCURACY = 1e-2  # the plots' default


@pytest.fixture()
def ax():
    figure, axes = plt.subplots()
    yield axes
    plt.close(figure)


def curve(ax, label_start: str) -> np.ndarray:
    (line,) = [line for line in ax.get_lines() if line.get_label().startswith(label_start)]
    return np.asarray(line.get_data()[1], dtype=float)


def band(ax) -> tuple[np.ndarray, np.ndarray]:
    """``(upper, lower)`` of the certified band (the primary line, then the thin edge)."""
    upper, lower = ax.get_lines()[:2]
    return np.asarray(upper.get_data()[1]), np.asarray(lower.get_data()[1])


def fresh(history, relation="add_remove") -> plda.PLDAccountant:
    accountant = plda.PLDAccountant(relation=relation, accuracy=ACCURACY)
    for mechanism, count in history:
        accountant.compose(mechanism, count)
    return accountant


def assert_brackets_match(plotted_upper, plotted_lower, references):
    """Each plotted band overlaps the independent accountant's (both are certified brackets of
    the same number) and is no wider than the accuracy allows."""
    for upper, lower, reference in zip(plotted_upper, plotted_lower, references, strict=True):
        bounds = reference.epsilon_bounds(DELTA)
        assert lower <= bounds.upper and bounds.lower <= upper
        assert upper <= bounds.upper * (1 + 2 * ACCURACY)
        assert lower >= bounds.lower * (1 - 2 * ACCURACY)


STEP = plda.PoissonSampled(plda.Gaussian(1.0), sample_rate=0.01)


@pytest.mark.parametrize("relation", ["add_remove", "replace_one"])
def test_an_accountant_is_plotted_at_the_prefixes_of_its_history(ax, relation):
    accountant = plda.PLDAccountant(relation=relation)
    accountant.step(noise_multiplier=1.0, sample_rate=0.01, count=600)
    epsilon_vs_steps(accountant, [100, 300, 600], DELTA, ax)
    upper, lower = band(ax)
    assert_brackets_match(upper, lower, [fresh([(STEP, k)], relation) for k in (100, 300, 600)])
    if relation == "add_remove":  # the numbers
        np.testing.assert_allclose(upper, [0.72, 1.07, 1.44], atol=0.01)


def test_a_mixed_history_is_cut_inside_its_runs(ax):
    history = [
        (STEP, 40),
        (plda.Laplace(scale=20.0), 3),
        (plda.PoissonSampled(plda.Gaussian(0.7), sample_rate=0.02), 60),
    ]
    accountant = fresh(history)
    steps = [20, 42, 43, 80, 103]
    epsilon_vs_steps(accountant, steps, DELTA, ax)
    upper, lower = band(ax)
    prefixes = [
        [(STEP, 20)],
        [(STEP, 40), (plda.Laplace(scale=20.0), 2)],
        history[:2],
        [*history[:2], (history[2][0], 37)],
        history,
    ]
    assert_brackets_match(upper, lower, [fresh(p) for p in prefixes])


def test_a_step_count_beyond_the_history_is_refused():
    accountant = fresh([(STEP, 50)])
    with pytest.raises(ValueError, match="beyond the 50 steps recorded"):
        epsilon_vs_steps(accountant, [10, 51], DELTA)
    with pytest.raises(ValueError, match="beyond the 50 steps recorded"):
        accounting_comparison(accountant, [100], DELTA)
    with pytest.raises(ValueError, match="no recorded steps"):
        epsilon_vs_steps(plda.PLDAccountant(), [1], DELTA)


@pytest.mark.parametrize("plot", [epsilon_vs_steps, accounting_comparison])
@pytest.mark.parametrize("delta", [0, 1, 2.0, -1e-5, float("nan")])
def test_delta_out_of_range_names_one_range(plot, delta):
    # the message said (0, 1) at 0 and 1 but [0, 1] beyond them (issue 25, item 6)
    with pytest.raises(ValueError, match=r"^delta must be in \(0, 1\), got"):
        plot(STEP, [1], delta)


@pytest.mark.parametrize("delta", ["1e-5", None, True])
def test_delta_that_is_not_a_number_is_a_type_error(delta):
    with pytest.raises(TypeError, match="^delta must be a real number in"):
        epsilon_vs_steps(STEP, [1], delta)


def test_a_mechanism_is_one_step_repeated(ax):
    epsilon_vs_steps(STEP, [100, 600], DELTA, ax)
    upper, lower = band(ax)
    assert_brackets_match(upper, lower, [fresh([(STEP, k)]) for k in (100, 600)])


def test_a_pld_of_one_mechanism_is_its_steps_and_one_of_several_is_refused(ax):
    pld = plda.PrivacyLossDistribution.from_mechanism(STEP, 600)
    epsilon_vs_steps(pld, [100, 600], DELTA, ax)
    upper, lower = band(ax)
    assert_brackets_match(upper, lower, [fresh([(STEP, k)]) for k in (100, 600)])
    mixed = pld.compose(plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(10.0)))
    with pytest.raises(ValueError, match="no order"):
        epsilon_vs_steps(mixed, [10], DELTA)


def test_the_opacus_adapter_is_plotted_at_its_prefixes(ax):
    adapter = PLDOpacusAccountant()
    for _ in range(300):
        adapter.step(noise_multiplier=1.0, sample_rate=0.01)
    epsilon_vs_steps(adapter, [30, 300], DELTA, ax)
    upper, lower = band(ax)
    assert_brackets_match(upper, lower, [fresh([(STEP, k)]) for k in (30, 300)])
    with pytest.raises(ValueError, match="beyond the 300 steps recorded"):
        epsilon_vs_steps(adapter, [301], DELTA)


def test_the_opacus_adapter_on_one_pass_epochs_is_refused():
    adapter = PLDOpacusAccountant(relation="replace_one")
    adapter.account_one_pass(num_batches=4)
    for _ in range(8):
        adapter.step(noise_multiplier=1.0, sample_rate=0.25)
    with pytest.raises(ValueError, match="epochs"):
        epsilon_vs_steps(adapter, [4], DELTA)


def test_the_dp_accounting_adapter_is_plotted_at_its_prefixes(ax):
    dp_accounting = pytest.importorskip("dp_accounting")
    from plda.adapters import PLDPrivacyAccountant

    adapter = PLDPrivacyAccountant()
    event = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0))
    adapter.compose(event, 300)
    epsilon_vs_steps(adapter, [30, 300], DELTA, ax)
    upper, lower = band(ax)
    assert_brackets_match(upper, lower, [fresh([(STEP, k)]) for k in (30, 300)])


def test_accounting_comparison_reads_the_prefixes_for_every_accounting(ax):
    accountant = fresh([(STEP, 600)])
    accounting_comparison(accountant, [100, 600], DELTA, ax)
    upper, lower = band(ax)
    assert_brackets_match(upper, lower, [fresh([(STEP, k)]) for k in (100, 600)])
    rdp = curve(ax, "RDP")
    for plotted, k in zip(rdp, (100, 600), strict=True):
        reference = plda.PrivacyLossDistribution.from_mechanism(STEP, k, accuracy=ACCURACY)
        assert plotted == pytest.approx(reference.renyi_epsilon(DELTA), rel=1e-9)
    # the GDP central limit: mu = q sqrt(k (e^(1/sigma^2) - 1)) (Bu, Dong, Long & Su 2020)
    gdp = curve(ax, "GDP central limit")
    for plotted, k in zip(gdp, (100, 600), strict=True):
        mu = 0.01 * math.sqrt(k * math.expm1(1.0))
        assert gaussian_delta(plotted, mu) == pytest.approx(DELTA, rel=1e-6)
