"""The cells of a continuous law on the grid (:mod:`plda.discretization.cells`): the coarse
cells of both tails keep the pessimistic version above and the optimistic version below the
exact delta, and the optimistic version a pair whose Q-mass is at most one."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import plda
from plda.discretization.cells import COARSE, FINE_TAIL
from plda.discretization.discretize import discretize


@pytest.fixture(autouse=True)
def _precision():
    with mpmath.workdps(40):
        yield


def _losses(version):
    return (version.offset + np.arange(len(version.probs))) * version.step


def _grid_delta(version, eps):
    """``delta(eps)`` of a grid version, summed with fsum."""
    losses = _losses(version)
    keep = losses > eps
    terms = version.probs[keep] * -np.expm1(eps - losses[keep])
    return math.fsum(terms.tolist()) + version.infinity_mass


def _gaussian_delta(mu, eps):
    """``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)`` at 40 digits."""
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)


def _lower_tail_is_coarse(law, version):
    """Whether the version's grid points below the point with FINE_TAIL of the mass below it
    are COARSE steps apart (nonzero only there)."""
    fine_lo, _ = law.tail_points(FINE_TAIL, "P")
    losses = _losses(version)
    below = np.flatnonzero((losses < fine_lo - 2 * version.step) & (version.probs > 0))
    return len(below) > 1 and bool(np.all(np.diff(below) % COARSE == 0))


@pytest.mark.parametrize(("sigma", "step"), [(0.1, 2.0**-6), (0.5, 2.0**-8), (1.0, 2.0**-10)])
def test_coarse_lower_tail_of_a_gaussian_stays_bracketed(sigma, step):
    # L ~ N(mu^2/2, mu^2) under P: the lower tail from 1e-24 to 1e-13 of the mass spans 2.75 mu
    # of loss, COARSE cells of one step each would be hundreds to thousands of cells
    mu = 1 / sigma
    law = plda.Gaussian(sigma).privacy_loss("remove")
    upper, lower = discretize(law, step)
    assert _lower_tail_is_coarse(law, upper) and _lower_tail_is_coarse(law, lower)
    for eps in np.linspace(-mu * mu / 2, mu * mu / 2 + 4 * mu, 25):
        exact = _gaussian_delta(mu, eps)
        assert _grid_delta(lower, eps) <= exact * (1 + 1e-12) + 1e-300, eps
        assert _grid_delta(upper, eps) >= exact * (1 - 1e-12), eps


@pytest.mark.parametrize(("sigma", "step"), [(0.1, 2.0**-6), (0.5, 2.0**-8)])
def test_coarse_lower_tail_keeps_the_lower_q_mass_at_most_one(sigma, step):
    # most of Q's mass lies in P's lower tail (mu = 10: Q(L < -23) = 0.997); rounding those
    # cells' losses down with their P-mass kept would raise the Q-mass by up to e^{COARSE h}
    # (1.9 at h = 2^-6); each cell's P-mass is e^{l_j} times its Q-mass there instead
    lower = discretize(plda.Gaussian(sigma).privacy_loss("remove"), step)[1]
    assert math.fsum((lower.probs * np.exp(-_losses(lower))).tolist()) <= 1 + 1e-12
    assert math.fsum(lower.probs.tolist()) <= 1 + 1e-12


@pytest.mark.parametrize(("q", "sigma", "count", "delta"), [(0.001, 0.8, 2000, 1e-6),
                                                            (0.01, 1.0, 300, 1e-5)])
def test_coarse_lower_tail_of_a_sampled_gaussian_composes_within_accuracy(q, sigma, count,
                                                                          delta):
    # the add direction's lower tail reaches loss -5 (q = 0.001, sigma = 0.8); its coarse
    # cells move at most FINE_TAIL of mass per step by at most COARSE steps
    pld = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(sigma), q)
    ).self_compose(count)
    fine = pld.with_accuracy(1e-6).epsilon_bounds(delta)
    coarse = pld.epsilon_bounds(delta)
    assert max(coarse.lower, fine.lower) <= min(coarse.upper, fine.upper)
    assert (coarse.upper - coarse.lower) / coarse.upper <= 1e-3


def _counting_pdf(monkeypatch):
    """Count the density evaluations of every law (points asked for)."""
    from plda.mechanisms.law import PrivacyLossLaw

    counted = [0]
    original = PrivacyLossLaw.continuous_pdf

    def counting(self, x, hypothesis="P"):
        counted[0] += np.size(x)
        return original(self, x, hypothesis)

    monkeypatch.setattr(PrivacyLossLaw, "continuous_pdf", counting)
    return counted


@pytest.mark.parametrize("sigma, q, step", [(1.0, 0.01, 2.0**-10), (0.8, 1e-3, 5e-4)])
def test_cells_with_negligible_cdf_error_skip_the_quadrature(monkeypatch, sigma, q, step):
    from plda.discretization.cells import NEGLIGIBLE_CDF_ERROR, cell_moments

    law = plda.PoissonSampled(plda.Gaussian(sigma), q).privacy_loss("remove")
    lo = math.floor(law.tail_points(1e-24, "P")[0] / step)
    mid = math.ceil(law.tail_points(FINE_TAIL, "P")[1] / step)
    counted = _counting_pdf(monkeypatch)
    full = cell_moments(law, step, lo, mid)
    integrated, counted[0] = counted[0], 0
    quick = cell_moments(law, step, lo, mid, NEGLIGIBLE_CDF_ERROR)
    # most cells keep their cdf moments: fewer than half the density evaluations
    assert counted[0] < integrated / 2
    # every moment consistent with the fully integrated one, within both error bars
    for i in range(0, 6, 2):
        assert np.all(np.abs(quick[i] - full[i]) <= quick[i + 1] + full[i + 1] + 1e-300)
    # and the error the shortcut adds is at most the negligible amount
    denom = -math.expm1(-step)
    extra = (quick[1] - full[1]) + (quick[3] - full[3] + quick[5] - full[5]) / denom
    assert float(np.sum(np.maximum(extra, 0.0))) <= NEGLIGIBLE_CDF_ERROR


def test_tilted_plans_integrate_every_cell(monkeypatch):
    import plda.discretization.discretize as module

    asked = []
    original = module.cell_moments
    monkeypatch.setattr(module, "cell_moments",
                        lambda *a: asked.append(a[-1]) or original(*a))
    law = plda.PoissonSampled(plda.Gaussian(1.0), 0.01).privacy_loss("remove")
    module.discretize.function(law, 2.0**-9, True, 1e-30, 1e-30)
    module.discretize.function(law, 2.0**-9, True)
    assert asked[0] == 0.0 and asked[1] > 0.0


def test_quadrature_runs_in_blocks_of_bounded_size(monkeypatch):
    """A grid coarsened to huge losses integrates each cell over up to 1024 pieces of 6 nodes:
    at shift / sigma = 1e10 that asked numpy for 6144 x 205197 doubles (9.4 GiB) per array.
    The cells go through in blocks of at most QUADRATURE_BLOCK entries, with the same
    numbers (here a block of 4096 entries over cells of 3 pieces)."""
    from plda.discretization import cells

    law = plda.GaussianMixture(sigma=1.0, sensitivities=(0.0, 100.0),
                               probabilities=(0.5, 0.5)).privacy_loss("remove")
    density = type(law).continuous_pdf
    largest = []

    def recorded(self, x, hypothesis):
        largest.append(np.size(x))
        return density(self, x, hypothesis)

    step = 2.5
    lo, hi = (math.floor(x / step) for x in law.tail_points(1e-24, "P"))
    monkeypatch.setattr(type(law), "continuous_pdf", recorded)
    monkeypatch.setattr(cells, "QUADRATURE_BLOCK", 1 << 12)
    blocked = cells.cell_moments(law, step, lo, hi + 1)
    assert 0 < max(largest) <= 1 << 12
    monkeypatch.setattr(cells, "QUADRATURE_BLOCK", 1 << 40)
    whole = cells.cell_moments(law, step, lo, hi + 1)
    assert max(largest) > 1 << 12
    for a, b in zip(blocked, whole, strict=True):
        np.testing.assert_array_equal(a, b)


def _mixture_delta(mu, eps):
    """``delta(eps)`` of ``0.5 N(0, 1) + 0.5 N(mu, 1)`` against ``N(0, 1)`` at 40 digits: the
    loss ``log(1/2 + e^{mu y - mu^2/2} / 2)`` passes ``eps`` at ``y = (mu^2/2 + log(2 e^eps -
    1)) / mu``."""
    mu, eps = mpmath.mpf(mu), mpmath.mpf(eps)
    y = (mu * mu / 2 + mpmath.log(2 * mpmath.exp(eps) - 1)) / mu
    return (mpmath.ncdf(-y) + mpmath.ncdf(mu - y)) / 2 - mpmath.exp(eps) * mpmath.ncdf(-y)


def test_wide_cells_whose_v_overflows_skip_the_quadrature(monkeypatch):
    """Cells wider than ~710 make every quadrature v overflow (e^{h(1 - x)}), and such cells
    take their cdf moments whole: the 1024 pieces of ten density evaluations each (a mixture
    at shift / sigma 1e4, the grid of epsilon(1e-5): minutes) were computed and discarded.
    Now none is computed; the versions still bracket the exact delta."""
    mu, step = 1e4, 29695.109271808964  # the grid of epsilon(1e-5), 1688 cells
    law = plda.GaussianMixture(sigma=1.0, sensitivities=(0.0, mu),
                               probabilities=(0.5, 0.5)).privacy_loss("remove")
    counted = _counting_pdf(monkeypatch)
    upper, lower = discretize.function(law, step)
    assert counted[0] == 0
    for eps in [0.0, 1.0, mu * mu / 8, mu * mu / 2 - 3 * mu, mu * mu / 2 + 3 * mu]:
        exact = float(_mixture_delta(mu, eps))
        assert _grid_delta(lower, eps) <= exact * (1 + 1e-12) + 1e-300, eps
        assert _grid_delta(upper, eps) >= exact * (1 - 1e-12), eps


def test_wide_cells_are_integrated_on_pieces_widening_from_their_bottom(monkeypatch):
    """A cell h wide (1 < h < 710) was integrated over h pieces 1 wide: at shift / sigma 3e3 a
    minute a query. Pieces 1 wide up to 8 above its bottom, then four an octave, resolve the
    layer where u's and v's integrands change in 8 + 4 log2(h / 8) pieces (here 29 where
    there were 300); the versions still bracket the exact delta."""
    mu, step = 1e3, 300.0
    law = plda.GaussianMixture(sigma=1.0, sensitivities=(0.0, mu),
                               probabilities=(0.5, 0.5)).privacy_loss("remove")
    cells = math.ceil(law.tail_points(1e-30, "P")[1] / step) + 1  # (from the cell at -h)
    counted = _counting_pdf(monkeypatch)
    upper, lower = discretize.function(law, step)
    # 10 nodes a piece, at most every cell (and a junction cell's split, 1536): about 300 a
    # cell, where pieces 1 wide took 3000
    assert counted[0] <= 300 * cells
    for eps in [0.0, 1.0, mu * mu / 8, mu * mu / 2 - 3 * mu, mu * mu / 2, mu * mu / 2 + 3 * mu]:
        exact = float(_mixture_delta(mu, eps))
        assert _grid_delta(lower, eps) <= exact * (1 + 1e-12) + 1e-300, eps
        assert _grid_delta(upper, eps) >= exact * (1 - 1e-12), eps


def test_cells_whose_error_bar_covers_them_are_rounded_up_whole():
    """Past losses of ~700 a cell's Q-mass underflows and u is known only in [0, p]: split
    with that error bar at both ends, the pessimistic version held such a cell twice (a
    mixture at shift / sigma 1e4: total mass 1.5, delta 1 below epsilon = shift^2 / 2, and
    1.5^5000 overflowed a composition). Rounded up whole it holds it once, and still
    bounds the exact delta from above."""
    mu, step = 1e4, 29695.109271808964
    law = plda.GaussianMixture(sigma=1.0, sensitivities=(0.0, mu),
                               probabilities=(0.5, 0.5)).privacy_loss("remove")
    upper, lower = discretize.function(law, step)
    assert math.fsum(upper.probs.tolist()) + upper.infinity_mass <= 1 + 1e-9
    for eps in [0.0, 1.0, mu * mu / 8, mu * mu / 2 - 3 * mu]:
        exact = float(_mixture_delta(mu, eps))
        assert _grid_delta(upper, eps) >= exact * (1 - 1e-12), eps
        assert _grid_delta(lower, eps) <= exact * (1 + 1e-12) + 1e-300, eps
        if eps < mu * mu / 4:  # (near the shifted cluster a cell holds all of it)
            assert _grid_delta(upper, eps) <= exact * (1 + 1e-3), eps


def test_wide_cells_whose_q_mass_underflowed_keep_their_cdf_moments():
    # past a loss of ~667 a cell's Q-mass underflows and its cdf moments only say u in [0, p]:
    # each version moves the cell to one end (one step of loss against 667 or more). Wide
    # cells were integrated on up to 34 pieces of ten density evaluations each instead: a
    # mixture of weight 1e-3 at shift 1e3 evaluated its density 491,636 times at step 300,
    # and at shift 1e4 a query took 50 s. Both versions keep their mass
    from plda.mechanisms.law import PrivacyLossLaw

    points = []
    density = PrivacyLossLaw.continuous_pdf

    def counted(self, x, hypothesis="P"):
        points.append(np.size(x))
        return density(self, x, hypothesis)

    law = plda.GaussianMixture(sigma=1.0, sensitivities=(0.0, 1e3),
                               probabilities=(0.999, 0.001)).privacy_loss("remove")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PrivacyLossLaw, "continuous_pdf", counted)
        upper, lower = discretize(law, 300.0)
    assert sum(points) < 10_000
    assert 1.0 <= upper.probs.sum() + upper.infinity_mass <= 1.0 + 1e-12
    assert 1.0 - 1e-12 <= lower.probs.sum() + lower.infinity_mass <= 1.0
