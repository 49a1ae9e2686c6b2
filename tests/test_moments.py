"""Chernoff moments of discrete laws (plda.grid.moments): upper bounds, and tight ones."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import plda
from plda.discretization.discretize import discretize
from plda.grid.discrete import DiscreteLoss
from plda.grid.moments import (
    ladder_chernoff,
    ladder_range,
    ladder_start,
    ladder_sums,
    ladder_walk,
    log_mgf_ladder,
)
from tests.hypothesis_settings import examples


def _exact(law: DiscreteLoss, j0: int, j1: int) -> np.ndarray:
    """``log sum_i p_i e^{+-t l_i}`` at ``t = 2^(j/2)``, in 40-digit arithmetic."""
    with mpmath.workdps(40):
        step = mpmath.mpf(law.step)
        terms = [(law.offset + i, mpmath.mpf(float(p))) for i, p in enumerate(law.probs) if p > 0]
        out = []
        for j in range(j0, j1 + 1):
            t = mpmath.mpf(2) ** (mpmath.mpf(j) / 2)
            up = mpmath.fsum(p * mpmath.exp(t * i * step) for i, p in terms)
            down = mpmath.fsum(p * mpmath.exp(-t * i * step) for i, p in terms)
            out.append((mpmath.log(up), mpmath.log(down)))
        return np.array(out, dtype=float)


def _check(law: DiscreteLoss, j0: int, j1: int) -> None:
    up, down = log_mgf_ladder(law, j0, j1)
    exact = _exact(law, j0, j1)
    # upper bounds (what Chernoff's inequality needs), and within 1e-9 of the truth
    assert np.all(up >= exact[:, 0]) and np.all(down >= exact[:, 1])
    assert np.all(up - exact[:, 0] < 1e-9) and np.all(down - exact[:, 1] < 1e-9)


def test_moments_of_a_dp_sgd_step_bound_and_match_the_exact_ones():
    law = plda.PoissonSampled(plda.Gaussian(0.9), 0.01).privacy_loss("remove")
    # orders up to 2^9 (e^{t l} reaches e^{3000} at the far end: the blocks must not overflow)
    _check(discretize(law, 2.0**-9)[0], -6, 18)


@given(
    offset=st.integers(-5000, 5000),
    length=st.integers(1, 3000),
    step_exponent=st.integers(-14, 0),
    seed=st.integers(0, 2**32 - 1),
    tiny=st.booleans(),
)
@examples(25)
# tiny masses whose products underflowed: the bound held but was 40 too high in the log
@example(offset=0, length=69, step_exponent=0, seed=0, tiny=True)
def test_moments_are_upper_bounds_on_any_grid(offset, length, step_exponent, seed, tiny):
    rng = np.random.default_rng(seed)
    probs = rng.random(length) * (rng.random(length) < 0.7)
    if tiny:  # masses near the smallest normal double: products underflow inside the blocks
        probs = probs * 1e-300
    probs[0] = max(probs[0], 1e-3)
    law = DiscreteLoss(step=2.0**step_exponent, offset=offset, probs=probs, infinity_mass=0.0,
                       upper=True)
    _check(law, -4, 8)


def test_orders_beyond_the_block_exponent_take_one_entry_per_block():
    # t h = 2^10 > 150: a block of three entries would overflow its table
    law = DiscreteLoss(step=1.0, offset=-3, probs=np.array([0.2, 0.0, 0.5, 1e-200, 0.3]),
                       infinity_mass=0.0, upper=True)
    _check(law, 14, 20)


def test_a_law_without_finite_mass_has_moments_minus_infinity():
    law = DiscreteLoss(step=0.1, offset=0, probs=np.zeros(3), infinity_mass=1.0, upper=True)
    up, down = log_mgf_ladder(law, 0, 2)
    assert np.all(up == -np.inf) and np.all(down == -np.inf)


def _every_order_cuts(factors, tail, order_range, min_spread):
    """The cuts of a composition by the best of every ladder order (what the walk replaces)."""
    variance = sum(k * f.spread()[1] for f, k in factors)
    j0, j1 = ladder_range(variance, order_range, min_spread)
    up, down = ladder_sums(factors, j0, j1)
    orders = 2.0 ** (np.arange(j0, j1 + 1) / 2)
    finite_up, finite_down = up < np.inf, down < np.inf
    hi = np.min((up[finite_up] - math.log(tail)) / orders[finite_up], initial=np.inf)
    lo = -np.min((down[finite_down] - math.log(tail)) / orders[finite_down], initial=np.inf)
    return lo, hi, j1 - j0 + 1


@given(
    sigma=st.floats(0.5, 8.0),
    log_q=st.floats(-4.0, 0.0),
    count=st.integers(1, 100000),
    log2_step=st.integers(-12, -6),
    tail=st.sampled_from([1e-20, 1e-10, 1e-3]),
)
@examples(25)
def test_the_walk_finds_the_best_ladder_order(sigma, log_q, count, log2_step, tail):
    # the cut exponent is quasi-convex in the order, so the downhill walk's cuts are those of
    # every order (a tie broken by rounding may differ in the last bits)
    mechanism = plda.PoissonSampled(plda.Gaussian(sigma), 10.0**log_q)
    step = 2.0**log2_step
    factors = [(discretize(mechanism.privacy_loss("remove"), step)[0], count),
               (discretize(mechanism.privacy_loss("add"), step)[0], 1)]
    lo, hi, *_ = ladder_chernoff(factors, tail, (0.25, 64.0), step)
    lo_all, hi_all, _ = _every_order_cuts(factors, tail, (0.25, 64.0), step)
    assert hi == pytest.approx(hi_all, rel=1e-12, abs=1e-12)
    assert lo == pytest.approx(lo_all, rel=1e-12, abs=1e-12)


def test_the_walk_visits_a_few_orders_of_a_long_dp_sgd_run():
    # B3 (q = 0.001, sigma = 0.8, 1e5 steps): 17 ladder orders, the walk visits 6
    law = discretize(plda.PoissonSampled(plda.Gaussian(0.8), 0.001).privacy_loss("remove"),
                     2.0**-13)[0]
    _, _, orders, log_up, log_down = ladder_chernoff([(law, 100000)], 1e-20, (0.25, 64.0),
                                                     2.0**-13)
    *_, every = _every_order_cuts([(law, 100000)], 1e-20, (0.25, 64.0), 2.0**-13)
    assert len(orders) <= 6 < every
    assert len(log_up) == len(log_down) == len(orders)


def test_a_walk_that_meets_only_overflowed_orders_tries_every_order():
    # orders 0..4 overflowed (inf) or undefined (nan); order 6 bounds the tail
    values = {j: (math.inf if j < 5 else float(j), math.nan if j < 5 else float(j))
              for j in range(0, 9)}
    lo, hi, orders, _, _ = ladder_walk(values.__getitem__, 0, 8, 2, 1e-3)
    expected = min((j - math.log(1e-3)) / 2.0 ** (j / 2) for j in range(5, 9))
    assert hi == expected and lo == -expected
    assert len(orders) == 9


def test_the_walk_starts_at_the_gaussian_order_within_the_range():
    assert ladder_start(1.0, 1e-20, 1e-3, -10, 10) == round(2 * math.log2(math.sqrt(
        2 * math.log(1e20))))
    assert ladder_start(1e-12, 1e-20, 1e-3, -10, 10) == 10  # clipped


@given(
    offset=st.integers(-3000, 3000),
    length=st.integers(1, 2000),
    step_exponent=st.integers(-12, -2),
    count=st.integers(1, 10**6),
    seed=st.integers(0, 2**32 - 1),
    tail=st.sampled_from([1e-20, 1e-8]),
)
@examples(25)
def test_the_walk_finds_the_best_order_of_any_grid_law(offset, length, step_exponent, count,
                                                       seed, tail):
    # arbitrary masses (gaps, spikes, heavy ends): the quasi-convexity holds for any law
    rng = np.random.default_rng(seed)
    probs = rng.random(length) ** 4 * (rng.random(length) < 0.6)
    probs[rng.integers(length)] += 1e-3
    probs /= probs.sum() * (1 + 1e-9)
    step = 2.0**step_exponent
    law = DiscreteLoss(step=step, offset=offset, probs=probs, infinity_mass=0.0, upper=True)
    lo, hi, *_ = ladder_chernoff([(law, count)], tail, (0.25, 64.0), step)
    lo_all, hi_all, _ = _every_order_cuts([(law, count)], tail, (0.25, 64.0), step)
    assert hi == pytest.approx(hi_all, rel=1e-12, abs=1e-12)
    assert lo == pytest.approx(lo_all, rel=1e-12, abs=1e-12)



@pytest.mark.parametrize(("length", "step_exponent"), [(200_000, -14), (100_000, -13), (5000, -8)])
def test_long_laws_take_product_tables_within_the_charged_rounding(length, step_exponent):
    # beyond 1024 entries a side the block tables are products of two exponentials (a
    # one-shot query builds each once, for laws of ~10^5 entries); a sparse law reaching the
    # tables' far ends checks every order's bound against 40 digits
    rng = np.random.default_rng(length)
    probs = np.zeros(length)
    probs[rng.choice(length, 300, replace=False)] = rng.random(300)
    probs[[0, -1]] = 0.25
    law = DiscreteLoss(step=2.0**step_exponent, offset=-length // 3, probs=probs,
                       infinity_mass=0.0, upper=True)
    _check(law, -6, 8)
