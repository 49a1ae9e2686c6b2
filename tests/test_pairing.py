"""The optimistic discretization (:mod:`plda.discretization.optimistic`: pairing and the
martingale sweep): dominated by the true pair, and as accurate as the
pessimistic one where a Poisson-sampled Gaussian's bulk is narrower than a few cells."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis_settings import examples

import plda
from plda.discretization.discretize import discretize


@pytest.fixture(autouse=True)
def _precision():
    """This module's mpmath precision, set per test: a module-level assignment would leak into
    (and be overwritten by) the modules collected after it."""
    with mpmath.workdps(40):
        yield



def _law(q, sigma, direction):
    return plda.PoissonSampled(plda.Gaussian(sigma), q).privacy_loss(direction)


def _exact_delta(q, sigma, direction, eps):
    """Hockey-stick ``delta(eps)`` of one Poisson-sampled Gaussian (sensitivity 1), in closed
    form with mpmath: remove ``P = (1-q) N(0, s^2) + q N(1, s^2)``, ``Q = N(0, s^2)``; add is the
    swapped pair. The set where ``P > e^eps Q`` is a half-line ``x > x*`` (remove) or ``x < x*``
    (add), ``x*`` from ``log(1 - q + q e^{(2x - 1) / (2 s^2)}) = +-eps``."""
    q, s, e = mpmath.mpf(q), mpmath.mpf(sigma), mpmath.exp(mpmath.mpf(eps))
    cdf = lambda x: mpmath.ncdf(x / s)  # noqa: E731
    sf = lambda x: 1 - mpmath.ncdf(x / s) if x < 0 else mpmath.ncdf(-x / s)  # noqa: E731
    if direction == "remove":  # (1-q) + q e^{(2x-1)/(2s^2)} > e^eps
        if e <= 1 - q:
            return 1 - e
        x = (2 * s**2 * mpmath.log((e - 1 + q) / q) + 1) / 2
        return (1 - q) * sf(x) + q * sf(x - 1) - e * sf(x)
    # add: 1 > e^eps ((1-q) + q e^{(2x-1)/(2s^2)})
    if 1 / e <= 1 - q:
        return mpmath.mpf(0)
    x = (2 * s**2 * mpmath.log((1 / e - 1 + q) / q) + 1) / 2
    return cdf(x) - e * ((1 - q) * cdf(x) + q * cdf(x - 1))


def _grid_delta(version, eps):
    """``delta(eps) = sum_j M_j (1 - e^{eps - l_j})_+ + M_inf`` of a grid version, summed with
    fsum (each term carries one rounding)."""
    losses = (version.offset + np.arange(len(version.probs))) * version.step
    keep = losses > eps
    terms = version.probs[keep] * -np.expm1(eps - losses[keep])
    return math.fsum(terms.tolist()) + version.infinity_mass


def _mean_error(q, sigma, direction, step):
    """Errors of ``E_P[L]`` of the (upper, lower) versions on ``step``, against the upper
    version on a 16x finer grid (second order: its own error is 256x smaller)."""
    law = _law(q, sigma, direction)
    fine = discretize(law, step / 16)[0]

    def mean(v):
        return float(np.dot(v.probs, (v.offset + np.arange(len(v.probs))) * v.step))

    upper, lower = discretize(law, step)
    return mean(upper) - mean(fine), mean(lower) - mean(fine)


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(("q", "sigma", "step"), [(0.001, 0.8, 2.0**-12), (0.01, 1.0, 2.0**-9),
                                                  (0.2, 1.0, 2.0**-6), (0.001, 0.8, 2.0**-8)])
def test_lower_version_delta_is_below_the_exact_delta(q, sigma, step, direction):
    law = _law(q, sigma, direction)
    upper, lower = discretize(law, step)
    top = float((lower.offset + len(lower.probs)) * lower.step)
    for eps in np.concatenate([np.linspace(-0.01, 0.01, 41), np.linspace(0.0, min(top, 8.0), 80)]):
        exact = _exact_delta(q, sigma, direction, eps)
        assert _grid_delta(lower, eps) <= exact * (1 + 1e-12) + 1e-300, (eps, exact)
        assert _grid_delta(upper, eps) >= exact * (1 - 1e-12), (eps, exact)


@pytest.mark.parametrize("direction", ["remove", "add"])
def test_lower_version_keeps_both_masses_at_most_one(direction):
    # grids where the sweep runs (pairing, which rounds its mismatch down, raises the Q-mass
    # by about what it wastes of E_P[L]: 1e-7 for q = 0.01, sigma = 1 on 2^-10, where pairing
    # wastes less than SWEEP_WORTH times the upper version's error and is kept)
    for q, sigma, step in [(0.001, 0.8, 2.0**-12), (0.01, 0.8, 2.0**-9), (1.0, 1.0, 2.0**-10)]:
        lower = discretize(_law(q, sigma, direction), step)[1]
        losses = (lower.offset + np.arange(len(lower.probs))) * lower.step
        assert lower.probs.sum() <= 1 + 1e-12
        # each group's Q-mass is raised by e^{-l_g} times its (exactly zero) balance
        assert np.dot(lower.probs, np.exp(-losses)) <= 1 + 1e-9


@examples(25)
@given(
    q=st.floats(1e-4, 0.5),
    sigma=st.floats(0.5, 4.0),
    log2_step=st.integers(-13, -5),
    direction=st.sampled_from(["remove", "add"]),
)
def test_lower_version_is_dominated_property(q, sigma, log2_step, direction):
    lower = discretize(_law(q, sigma, direction), 2.0**log2_step)[1]
    losses = (lower.offset + np.arange(len(lower.probs))) * lower.step
    top = float(losses[lower.probs > 0].max())
    for eps in [-0.5 * q, 0.0, 0.3 * q, 0.25 * top, 0.5 * top, 0.9 * top]:
        exact = _exact_delta(q, sigma, direction, eps)
        assert _grid_delta(lower, eps) <= exact * (1 + 1e-12) + 1e-300, (eps, exact)


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(("q", "sigma", "step"), [(0.001, 0.8, 2.0**-12), (0.001, 0.8, 2.0**-13),
                                                  (0.01, 1.0, 2.0**-10),
                                                  (256 / 60000, 1.1, 2.0**-11)])
def test_lower_mean_is_as_accurate_as_the_upper_one(q, sigma, step, direction):
    # a bulk a few cells wide: pairing alone put its mismatch at the mode, -2.4e-5 against
    # +5e-9 for the upper version at q = 0.001, sigma = 0.8, h = 2^-12
    upper_error, lower_error = _mean_error(q, sigma, direction, step)
    assert lower_error <= 0 <= upper_error  # each on its side of the truth
    assert abs(lower_error) <= 10 * abs(upper_error), (upper_error, lower_error)


def test_lower_mean_improves_where_the_bulk_is_narrower_than_a_cell():
    # q = 0.001: the bulk lies in [log(1 - q), 0], a quarter of a cell at h = 2^-8. A dominated
    # grid version must then put its mass at -h or merge the positive losses into one group
    # (docs/concepts/discretization.md, The martingale sweep); the sweep loses 5x less than
    # pairing did (-1.2e-3)
    upper_error, lower_error = _mean_error(0.001, 0.8, "remove", 2.0**-8)
    assert -3e-4 <= lower_error <= 0 <= upper_error


@pytest.mark.parametrize("mechanism", [
    plda.PoissonSampled(plda.Laplace(scale=0.1), 0.01),
    plda.PoissonSampled(plda.Laplace(scale=1.0), 0.1),
    plda.PoissonSampled(plda.Gaussian(0.3), 0.5),
    plda.PoissonSampled(plda.Gaussian(2.0), 1e-4),
    plda.Gaussian(1.0),
    plda.Laplace(scale=3.0),
])
@pytest.mark.parametrize("log2_step", [-6, -9, -12])
def test_lower_version_stays_below_a_finer_upper_version(mechanism, log2_step):
    # every mass where it belongs, whichever end of the bulk the sweep starts from: the lower
    # version's delta never exceeds a finer upper version's (which is above the truth)
    step = 2.0**log2_step
    for direction in ("remove", "add"):
        law = mechanism.privacy_loss(direction)
        lower = discretize(law, step)[1]
        upper = discretize(law, step / 8)[0]
        assert lower.probs.sum() <= upper.probs.sum() + upper.infinity_mass + 1e-12
        for eps in [-0.1, -0.01, 0.0, 0.01, 0.1, 0.5, 1.0, 3.0]:
            assert _grid_delta(lower, eps) <= _grid_delta(upper, eps) * (1 + 1e-12) + 1e-300


@pytest.mark.parametrize(("step", "sweeps"), [(2.0**-9, True), (2.0**-13, False)])
def test_the_sweep_runs_only_where_pairing_wastes_much(monkeypatch, step, sweeps):
    # q = 0.01, sigma = 2: on 2^-9 pairing wastes far more of E_P[L] than the upper version's
    # own error; on 2^-13 (the bulk spans hundreds of cells) less than SWEEP_WORTH times it,
    # where the Python sweep would gain little
    from plda.discretization import optimistic

    calls = []
    original = optimistic.bulk_sweep

    def counting(*args):
        calls.append(1)
        return original(*args)

    monkeypatch.setattr(optimistic, "bulk_sweep", counting)
    discretize.function(_law(0.01, 2.0, "remove"), step)  # uncached
    assert bool(calls) == sweeps


# ------------------------------------------------------------- atoms off the grid (Laplace)
def _laplace_law(scale, q, group_size, direction):
    step = plda.PoissonSampled(plda.Laplace(scale), q, group_size=group_size)
    return step.privacy_loss(direction)


def _laplace_exact(scale, q, group_size, direction, eps):
    from mixture_reference import binomial_weights, laplace_mixture_delta

    return laplace_mixture_delta(scale, range(group_size + 1),
                                 binomial_weights(group_size, q), eps, direction)


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(("scale", "q", "group_size", "cells"),
                         [(2.0, 0.05, 1, 30), (2.0, 0.05, 1, 300), (0.5, 0.001, 1, 100),
                          (2.0, 0.05, 3, 60), (1.0, 0.01, 4, 200), (0.5, 0.9, 16, 50)])
def test_an_atom_heavy_law_stays_bracketed(scale, q, group_size, cells, direction):
    # a subsampled Laplace step holds most of its mass on two atoms at irrational losses; the
    # optimistic version merges each with its own cell and the nearest cells on one side
    # (atom_groups) instead of rounding it down: still dominated by the exact pair, on any grid
    law = _laplace_law(scale, q, group_size, direction)
    lo_loss, hi_loss = law.atom_losses.min(), law.atom_losses.max()
    upper, lower = discretize(law, (hi_loss - lo_loss) / cells * (1 + 1e-4))
    for eps in np.concatenate([np.linspace(lo_loss, hi_loss, 23), [0.0]]):
        exact = _laplace_exact(scale, q, group_size, direction, eps)
        assert _grid_delta(lower, eps) <= exact * (1 + 1e-12) + 1e-300, (eps, exact)
        assert _grid_delta(upper, eps) >= exact * (1 - 1e-12), (eps, exact)
    assert lower.probs.sum() <= 1 + 1e-12


@examples(15)
@given(
    scale=st.floats(0.2, 5.0),
    log_q=st.floats(-4.0, 0.0),
    group_size=st.integers(1, 5),
    cells=st.integers(3, 400),
    direction=st.sampled_from(["remove", "add"]),
)
def test_an_atom_heavy_law_is_dominated_property(scale, log_q, group_size, cells, direction):
    q = 10.0**log_q
    law = _laplace_law(scale, q, group_size, direction)
    lo_loss, hi_loss = law.atom_losses.min(), law.atom_losses.max()
    lower = discretize(law, (hi_loss - lo_loss) / cells * (1 + 1e-4))[1]
    for eps in [lo_loss, 0.0, 0.3 * hi_loss, 0.7 * hi_loss, 0.99 * hi_loss]:
        exact = _laplace_exact(scale, q, group_size, direction, eps)
        assert _grid_delta(lower, eps) <= exact * (1 + 1e-12) + 1e-300, (eps, exact)


@pytest.mark.parametrize("direction", ["remove", "add"])
@pytest.mark.parametrize(("scale", "q", "group_size", "cells", "waste"),
                         [(2.0, 0.05, 1, 30, 0.02), (2.0, 0.05, 1, 300, 0.02),
                          (0.5, 0.001, 1, 300, 0.005), (2.0, 0.05, 3, 300, 0.05),
                          (2.0, 0.05, 1, 1000, 1e-3), (0.5, 0.001, 1, 300, 2e-4),
                          (0.5, 0.001, 8, 1000, 1e-3), (0.5, 0.001, 8, 3000, 1e-3),
                          (1.0, 0.01, 4, 3000, 1e-3), (2.0, 0.05, 3, 1000, 2e-3)])
def test_atoms_are_merged_not_rounded_down(scale, q, group_size, cells, direction, waste):
    # rounded down alone, the two atoms cost their mass times their offset in the cell: the
    # lower version's E_P[L] fell 0.07 to 0.73 steps below the upper one's on these grids
    # (first order: over 5000 steps the epsilon bracket was 4% wide); merged, it is within
    # `waste` steps. Merged with a thin slice of *every* cell on one side, an atom lost about
    # p h D of the mean loss (D the law's width): 0.006 to 0.014 steps on the last six grids,
    # and Laplace-mixture brackets needed grids 4-5x finer than a density's. Merged with its
    # own cell and the nearest cells (the sweep tried both ways, its groups reaching ATOM_SPAN
    # cells: with four, the last two lost 0.009 and 0.011 steps), the loss is second order
    law = _laplace_law(scale, q, group_size, direction)
    lo_loss, hi_loss = law.atom_losses.min(), law.atom_losses.max()
    step = (hi_loss - lo_loss) / cells * (1 + 1e-4)
    upper, lower = discretize(law, step)

    def mean(v):
        return float(np.dot(v.probs, (v.offset + np.arange(len(v.probs))) * v.step))

    assert 0 <= mean(upper) - mean(lower) <= waste * step


@pytest.mark.parametrize(("scale", "q", "group_size", "count", "step", "gap"),
                         [(0.5, 0.001, 1, 10000, 1e-4, 6e-3), (0.5, 0.001, 8, 10000, 1e-4, 5e-4),
                          (2.0, 0.05, 3, 200, 3e-4, 5e-4), (1.0, 0.01, 4, 1000, 1.4977e-4, 1e-4)])
def test_a_composed_laplace_mixture_is_tight_on_a_coarse_grid(scale, q, group_size, count,
                                                             step, gap):
    # on these grids the brackets were 1.9e-2, 3.5e-3, 1.9e-3 and 1.7e-3 wide (relative) when the
    # atoms were merged with slices of every cell (the last one 8.4e-4 with sweep groups of four
    # cells); the default accuracy then took grids 4-5x finer
    # (PoissonSampled(Laplace(0.5), 0.001, group_size=8), 10000 steps: 296 MB, 0.8 s)
    mechanism = plda.PoissonSampled(plda.Laplace(scale), q, group_size=group_size)
    fixed = plda.PrivacyLossDistribution.from_mechanism(mechanism, count, step=step)
    lower, upper = fixed.epsilon_bounds(1e-5)
    assert 0 < upper - lower <= gap * upper
    # and it brackets the default-accuracy answer, computed on the grid the refinement chose
    chosen = plda.PrivacyLossDistribution.from_mechanism(mechanism, count).epsilon_bounds(1e-5)
    assert lower <= chosen.upper and chosen.lower <= upper
