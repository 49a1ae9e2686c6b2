"""Chernoff moments of discrete laws (plda.grid.moments): upper bounds, and tight ones."""

from __future__ import annotations

import mpmath
import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

import plda
from plda.discretization.discretize import discretize
from plda.grid.discrete import DiscreteLoss
from plda.grid.moments import log_mgf_ladder
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
