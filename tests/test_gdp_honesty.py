"""``gdp_mu`` is finite where a mu is certified and says why where none is (issue 24, item 9).

The README's ``pld.gdp_mu()`` returned ``inf`` without a word for DP-SGD: the last sample of the
certified profile's Chernoff tail, aimed at exactly the default floor 1e-250, came out a few
ulps above it (1.0000000000000114e-250), so the certificate never closed. Now it closes (a
certified mu of 1.64 for that run), an ``inf`` comes with a ``GaussianDPWarning`` saying which
``delta_floor`` to pass, and the tradeoff plot refuses ``reference_mu=inf`` saying what to pass.
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest

import plda
from plda.conversions import gdp, profile

STEP = plda.PoissonSampled(plda.Gaussian(sigma=1.1), sample_rate=256 / 60000)


@pytest.fixture(scope="module")
def dpsgd():
    return plda.PrivacyLossDistribution.from_mechanism(STEP, 2000)  # the README's run


def test_dpsgd_has_a_certified_mu_at_the_default_floor(dpsgd):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mu = dpsgd.gdp_mu()
        practical = dpsgd.gdp_mu(delta_floor=1e-9)
    assert not [w for w in record if "gdp_mu" in str(w.message)]
    assert math.isfinite(mu) and mu >= practical  # a lower floor certifies less
    assert 0.24 < practical < 0.25
    # the profile samples close at the floor: the last one is below it
    assert dpsgd.symmetric_profile().delta[-1] < profile.DELTA_FLOOR
    # not refuted: the certified lower bounds of delta (at every grid loss) stay below the
    # claimed GDP profiles
    lower = dpsgd.symmetric_profile("lower")
    for claimed, floor in ((mu, profile.DELTA_FLOOR), (practical, 1e-9)):
        gaussian = gdp.gaussian_delta(np.maximum(lower.epsilon, 0.0), claimed)
        assert np.all(lower.delta <= np.maximum(gaussian, floor))


def _one_warning(record, match: str):
    found = [w for w in record if issubclass(w.category, plda.GaussianDPWarning)]
    assert len(found) == 1, [str(w.message) for w in found]
    assert found[0].filename == __file__  # points at the caller's line
    assert match in str(found[0].message)
    assert "_" + "gdp" not in str(found[0].message)  # no private names


@pytest.mark.parametrize(
    "call",
    [
        lambda pld: pld.gdp_mu(),
        lambda pld: gdp.gdp_mu(pld.composed_laws()),
        lambda pld: pld.gdp_summary().mu,
    ],
    ids=["method", "conversion", "gdp_summary"],
)
def test_an_infinite_mu_says_why_and_what_to_pass(call):
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.ApproximateDP(1.0, 1e-6), 100)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        assert call(pld) == math.inf
    _one_warning(record, "pass delta_floor above 0.0001")
    # and what it says works: above the mass at infinity a finite mu is certified
    assert math.isfinite(pld.gdp_mu(delta_floor=2e-4))


def test_a_bracketed_sampler_whose_bound_keeps_a_delta_is_explained():
    step = plda.RandomAllocation(plda.Gaussian(1.0), num_steps=10)
    pld = plda.PrivacyLossDistribution.from_mechanism(step, 100)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mu = pld.gdp_mu()
    _one_warning(record, "infinite privacy loss")
    # the profile certifies no mu at the default floor; each epoch's allocation is dominated by
    # one use of its Gaussian (joint convexity), so 100 epochs are 10-GDP, and the warning says so
    assert 10.0 <= mu <= 10.0 * (1 + 1e-14)
    assert "returned instead: mu = 10" in str(record[-1].message)
    assert pld.gdp_mu(delta_floor=1e-7) < 10.0


def test_the_tradeoff_plot_refuses_an_infinite_reference_mu():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dpsgd = plda.PrivacyLossDistribution.from_mechanism(STEP, 100)
    figure, ax = plt.subplots()
    try:
        for log_scale in (False, True):
            with pytest.raises(ValueError, match=r"reference_mu must be a finite mu .*"
                               r"gdp_mu\(delta_floor=1e-9\)"):
                plda.plot.tradeoff(dpsgd, ax, reference_mu=math.inf, log_scale=log_scale)
        # what the message says to pass draws
        mu = dpsgd.gdp_mu(delta_floor=1e-9)
        plda.plot.tradeoff(dpsgd, ax, reference_mu=mu, alpha=np.linspace(0, 1, 11))
        assert any(line.get_label() == f"{mu:.3g}-GDP" for line in ax.get_lines())
    finally:
        plt.close(figure)


@pytest.mark.parametrize(
    "step",
    [plda.ApproximateDP(epsilon=1000.0), plda.DiscreteLaplace(parameter=200.0)],
    ids=["approximate-dp", "discrete-laplace"],
)
def test_a_long_run_of_large_losses_does_not_exhaust_memory(step):
    # a million steps of loss ~1e3 put the composed grid ~1e9 steps beyond 0: the certificate
    # built one segment per grid index up to there (hundreds of GB) before keeping those below
    # MAX_EPSILON; it raised MemoryError. Its answer is certified: never below the refuted mu.
    pld = plda.PrivacyLossDistribution.from_mechanism(step, 10**6)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mu = pld.gdp_mu()
        summary = pld.gdp_summary(delta_floor=1e-9)
    assert mu >= summary.mu_lower > 0
    assert summary.mu >= summary.mu_lower
    if math.isinf(mu):
        assert any(issubclass(w.category, plda.GaussianDPWarning) for w in record)


def test_below_a_far_support_the_profile_is_spread_samples_with_the_same_answers(monkeypatch):
    # below every law's lowest grid loss each profile is one line, so LINE_SAMPLES samples
    # spread there give the suprema one sample per grid loss gave (ApproximateDP(1000) x 10^6,
    # step 2.5e-5, had 2.8e7 of them: its gdp_mu took 20 minutes)
    alpha = np.array([0.0, 1e-300, 1e-200, 1e-120, 0.5])

    def answers():
        pld = plda.PrivacyLossDistribution.from_mechanism(plda.ApproximateDP(300.0), 3, step=0.01)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return (len(pld.symmetric_profile("lower").epsilon),
                    len(profile.grid_segments(list(pld.composed_laws().laws("upper").values()))[0]),
                    pld.tradeoff_bounds(alpha), pld.gdp_summary(delta_floor=1e-9))

    spread, kept = answers(), profile.LINE_SAMPLES
    monkeypatch.setattr(profile, "LINE_SAMPLES", 10**12)
    every = answers()
    assert spread[0] <= kept + 1 < 70_000 < every[0]
    assert spread[1] <= kept + 1 < 70_000 < every[1]
    np.testing.assert_allclose(spread[2].lower, every[2].lower, rtol=1e-12, atol=0)
    np.testing.assert_allclose(spread[2].upper, every[2].upper, rtol=1e-12, atol=0)
    assert spread[3].mu == every[3].mu
    assert spread[3].mu_lower == pytest.approx(every[3].mu_lower, rel=1e-12)


@pytest.mark.parametrize(
    ("step", "mu"),
    [(plda.Gaussian(2.0), 0.5), (plda.GaussianDP(0.3), 0.3),
     (plda.PoissonSampled(plda.Gaussian(2.0), 0.1), 0.5),
     (plda.PoissonSampled(plda.Gaussian(2.0), 0.1, group_size=3), 1.5),
     (plda.RandomAllocation(plda.Gaussian(1.0), num_steps=10, num_selected=2), math.sqrt(2)),
     (plda.PoissonSampled(plda.Gaussian(2.0), 0.1).under_replace_one(), 1.0),
     (plda.Laplace(1.0), math.inf), (plda.ZCDP(0.5), math.inf)],
    ids=["gaussian", "gdp", "poisson", "group", "allocation", "replace-one", "laplace", "zcdp"],
)
def test_each_step_has_the_mu_of_a_gaussian_pair_that_dominates_it(step, mu):
    from plda.conversions.per_step import step_gdp_mu

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        assert step_gdp_mu(step) == pytest.approx(mu, rel=1e-15)
    if math.isfinite(mu):  # dominated: the step's certified profile lies below G_mu's
        pld = plda.PrivacyLossDistribution.from_mechanism(step)
        eps = np.linspace(0.0, 4.0, 9)
        with mpmath.workdps(40):  # delta of mu-GDP (Dong, Roth & Su 2019, Cor. 2.13)
            bound = np.array([float(mpmath.ncdf(-e / mu + mu / 2)
                                    - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2))
                              for e in map(mpmath.mpf, eps)])
        assert np.all(pld.delta_bounds(eps).lower <= bound * (1 + 1e-9) + 1e-15)


def test_a_failed_grid_gets_the_closed_form_mu_without_runtime_warnings():
    # 175,852 steps of losses near 1e-11 overflow the grid's FFT: the profile certifies nothing,
    # and gdp_mu answered inf; the dominating Gaussians give sqrt(T) / sigma. Nor do its
    # internal infinities leak as numpy RuntimeWarnings
    step = plda.PoissonSampled(plda.Gaussian(1e4), 1e-9)
    pld = plda.PrivacyLossDistribution.from_mechanism(step, 175_852)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        mu = pld.gdp_mu(delta_floor=1e-9)
        pld.epsilon_bounds(1e-5), pld.delta_bounds(0.0), pld.tradeoff_bounds(0.01)
    assert math.sqrt(175_852) / 1e4 <= mu <= math.sqrt(175_852) / 1e4 * (1 + 1e-14)
    assert not [w for w in record if issubclass(w.category, RuntimeWarning)]
    assert "e.g. 1e-06" in str([w.message for w in record if w.category is plda.GaussianDPWarning])
