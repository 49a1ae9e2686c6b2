"""plda._internal.floats: products on the calling thread, and blocked discounted tail sums."""

from __future__ import annotations

import subprocess
import sys

import mpmath
import numpy as np
from hypothesis import example, given
from hypothesis import strategies as st

from plda._internal.floats import discounted_tails, tail_rounding
from tests.hypothesis_settings import examples

U = 2.0**-53


def exact_tails(values, ratio):
    mpmath.mp.prec = 200
    r = mpmath.mpf(float(ratio))
    out, acc = [], mpmath.mpf(0)
    for v in reversed([mpmath.mpf(float(x)) for x in values]):
        acc = v + r * acc
        out.append(acc)
    return out[::-1]


@examples(40)
@given(
    n=st.integers(1, 300),
    log_step=st.floats(-12, 3),
    exponent=st.floats(-300, 0),
    seed=st.integers(0, 2**32 - 1),
)
@example(n=1, log_step=-12.0, exponent=0.0, seed=0)
@example(n=2, log_step=-1.0, exponent=0.0, seed=2)
@example(n=3, log_step=0.0, exponent=-10.0, seed=3)
@example(n=64, log_step=-4.0, exponent=-5.0, seed=4)
@example(n=65, log_step=3.0, exponent=-300.0, seed=1)
def test_discounted_tails_are_within_their_rounding_bound_of_the_exact_sums(
    n, log_step, exponent, seed
):
    rng = np.random.default_rng(seed)
    values = rng.random(n) * 10.0 ** rng.uniform(exponent, 0, n)
    ratio = np.exp(-(10.0**log_step))
    got = discounted_tails(values, ratio)
    bound = tail_rounding(n) * U
    assert tail_rounding(n) <= 3 * n  # within what the callers charge
    for j, want in enumerate(exact_tails(values, ratio)):
        assert abs(mpmath.mpf(float(got[j])) - want) <= bound * want


def test_the_rounding_bound_stays_within_what_the_callers_charge():
    assert all(tail_rounding(n) <= 3 * n for n in range(1, 100_000))


def test_discounted_tails_edge_ratios_and_lengths():
    assert len(discounted_tails(np.zeros(0), 0.5)) == 0
    values = np.arange(1.0, 131.0)
    assert np.array_equal(discounted_tails(values, 0.0), values)  # no discount reaches back
    assert np.allclose(discounted_tails(values, 1.0), np.cumsum(values[::-1])[::-1], rtol=1e-15)


def test_importing_plda_does_not_import_scipy_stats_or_signal():
    # ~27 MB of memory; the accountant's memory target (issue 13) counts it
    code = (
        "import sys, plda; acct = plda.PLDAccountant(); "
        "acct.step(noise_multiplier=1.0, sample_rate=0.01); acct.epsilon(1e-5); "
        "print(sorted(m for m in ('scipy.stats', 'scipy.signal') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
