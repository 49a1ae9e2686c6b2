"""The exponential mechanism as an epsilon-bounded-range step (issue 29, item 1).

Exact references are computed in mpmath: the exponential mechanism itself, enumerated on small
integer-utility instances (every pair of utility vectors a record can move by at most 1, its
runs composed homogeneously and heterogeneously), the two-point pairs by binomial sums, and the
optimal composition of randomized response (Kairouz, Oh & Viswanath 2015) it must beat.
"""

from __future__ import annotations

import itertools
import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from selection_reference import homogeneous_hockey_stick, instances

import plda
from plda import testing
from plda.mechanisms.bounded_range import LOWER_SPLITS, BoundedRangePair, two_point_law

PLD = plda.PrivacyLossDistribution
EPS_PRIME = (0.0, 0.1, 0.5, 1.0, 2.0)


def bounds(mechanism, count, eps=EPS_PRIME):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        return PLD.from_mechanism(mechanism, count).delta_bounds(np.array(eps))


# ------------------------------------------------------------------ exact references
def em_law(utilities, eta):
    """Output probabilities of the exponential mechanism, ``exp(eta u_r) / Z`` (mpmath)."""
    weights = [mpmath.exp(eta * u) for u in utilities]
    total = mpmath.fsum(weights)
    return [w / total for w in weights]


def hockey_stick(p_runs, q_runs, eps):
    """``sum_o (P(o) - e^eps Q(o))_+`` of the product of the runs' output laws."""
    e = mpmath.exp(mpmath.mpf(eps))
    total = mpmath.mpf(0)
    for outputs in itertools.product(*(range(len(p)) for p in p_runs)):
        p = mpmath.fprod(run[o] for run, o in zip(p_runs, outputs, strict=True))
        q = mpmath.fprod(run[o] for run, o in zip(q_runs, outputs, strict=True))
        total += max(p - e * q, 0)
    return total


def worst_enumerated(epsilon, count, candidates, eps):
    """Largest delta(eps) of ``count`` homogeneous runs over :func:`instances`, both orders, of
    the exponential mechanism at ``eta = epsilon / 2`` (an ``epsilon``-BR step)."""
    eta = mpmath.mpf(epsilon) / 2
    worst = [mpmath.mpf(0)] * len(eps)
    for u, v in instances(candidates):
        p, q = em_law(u, eta), em_law(v, eta)
        for first, second in ((p, q), (q, p)):
            for i, e in enumerate(eps):
                worst[i] = max(worst[i], homogeneous_hockey_stick(first, second, count, e))
    return worst


def two_point_composition(epsilon, split, count, eps):
    """Exact delta(eps) of ``count`` runs of the two-point pair of split ``t`` (remove order)."""
    e, t, x = (mpmath.mpf(v) for v in (epsilon, split, eps))
    high = -mpmath.expm1(-t * e) / -mpmath.expm1(-e)
    total = mpmath.mpf(0)
    for j in range(count + 1):
        loss = j * (1 - t) * e - (count - j) * t * e
        if loss > x:
            total += (mpmath.binomial(count, j) * high**j * (1 - high) ** (count - j)
                      * -mpmath.expm1(x - loss))
    return total


# ------------------------------------------------------------------ the upper bound
@pytest.mark.parametrize(("epsilon", "count", "candidates"), [
    *((e, k, m) for e, k in ((0.5, 1), (1.0, 2), (2.0, 3), (0.3, 3)) for m in (2, 3)),
    (1.0, 10, 2), (0.3, 10, 2)])  # 10 runs on 3 candidates: 6 s more, nothing new to see
def test_every_enumerated_exponential_mechanism_is_below_the_upper_bound(
        epsilon, count, candidates):
    got = bounds(plda.ExponentialMechanism(epsilon), count)
    with mpmath.workdps(30):
        exact = worst_enumerated(epsilon, count, candidates, EPS_PRIME)
    assert np.all(got.lower <= got.upper)
    for e, value, upper in zip(EPS_PRIME, exact, got.upper, strict=True):
        assert value <= upper + 1e-12, (e, float(value), upper)


def test_adaptive_splits_are_covered():
    """Runs of different splits (an analyst choosing the next query from the last answer can
    make each step's split differ) stay below the upper bound, which no single split reaches."""
    epsilon = 1.0
    got = bounds(plda.ExponentialMechanism(epsilon), 3)
    with mpmath.workdps(30):
        runs = []
        for t in (0.5, 0.2, 0.8):
            law = two_point_law(epsilon, t)  # P probabilities (low, high); Q = P e^-loss
            p = [mpmath.mpf(x) for x in law.atom_probs]
            q = [pi * mpmath.exp(-mpmath.mpf(loss)) for pi, loss in
                 zip(p, law.atom_losses, strict=True)]
            runs.append((p, q))
        for i, e in enumerate(EPS_PRIME):
            value = hockey_stick([r[0] for r in runs], [r[1] for r in runs], e)
            assert value <= got.upper[i] + 1e-12


@given(epsilon=st.floats(1e-3, 30.0), eps_prime=st.floats(0.0, 1.0))
@example(epsilon=500.0, eps_prime=0.0)
@example(epsilon=1e-6, eps_prime=0.0)
@example(epsilon=1.0, eps_prime=0.984375)  # near the support's end delta's gap is 1.3e-3
@example(epsilon=1.0, eps_prime=0.99609375)  # and 2.2e-2
def test_one_step_upper_bound_is_the_supremum_over_splits(epsilon, eps_prime):
    """One step: the profile is ``(1 - e^-((eps - eps')/2))^2 / (1 - e^-eps)``, the supremum
    of the two-point profiles, attained at the split ``(eps - eps') / (2 eps)``."""
    x = eps_prime * epsilon
    got = bounds(plda.ExponentialMechanism(epsilon), 1, (x,))
    with mpmath.workdps(50):
        e = mpmath.mpf(epsilon)
        closed = mpmath.expm1(-(e - x) / 2) ** 2 / -mpmath.expm1(-e)
        best = (e - x) / (2 * e)
        attained = two_point_composition(epsilon, best, 1, x) if 0 < best < 1 else closed
    assert got.lower[0] <= closed <= got.upper[0]
    assert abs(attained - closed) <= 1e-12 * max(closed, 1e-300)
    if closed > 1e-12:
        # the accuracy is promised on epsilon: the upper curve lies within a relative 2e-3
        # horizontal shift of the exact one (near the support's end delta falls steeply, so
        # a vertical relative gap would not be the right measure)
        shifted = mpmath.expm1(-(e - x * (1 - 2e-3)) / 2) ** 2 / -mpmath.expm1(-e)
        assert got.upper[0] <= max(shifted, closed * (1 + 1e-3)) + 1e-15


@pytest.mark.parametrize(("epsilon", "count"), [(0.1, 10), (0.1, 1000), (1.0, 10), (0.5, 100)])
def test_strictly_below_randomized_response(epsilon, count):
    """The bound randomized response gives (every BR step is epsilon-DP; dp_accounting's
    reading) is strictly above, at several deltas, by its exact optimal composition."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        em = PLD.from_mechanism(plda.ExponentialMechanism(epsilon), count)
        for delta in (1e-3, 1e-6, 1e-9):
            rr = testing.approximate_dp_composition_epsilon(
                delta, step_epsilon=epsilon, step_delta=0.0, count=count)
            got = em.epsilon_bounds(delta)
            assert got.upper < rr, (delta, got, rr)
            assert got.lower <= got.upper


# ------------------------------------------------------------------ the lower bound
@pytest.mark.parametrize(("epsilon", "count"), [(1.0, 1), (0.1, 100), (1.0, 10), (0.05, 300)])
def test_lower_bound_reaches_the_realized_homogeneous_pairs(epsilon, count):
    """The lower bound is at least the (PLD-discretized) value of every realized homogeneous
    composition of the splits it uses, and at most the largest exact one."""
    got = bounds(plda.ExponentialMechanism(epsilon), count)
    with mpmath.workdps(40):
        for i, e in enumerate(EPS_PRIME):
            exact = [two_point_composition(epsilon, t, count, e) for t in LOWER_SPLITS]
            # the split-1/2 pair's own PLD lower bound is within the default accuracy of it
            assert got.lower[i] >= exact[0] * (1 - 2e-3) - 1e-12, (e, got.lower[i], exact[0])
            assert got.lower[i] <= max(exact) + 1e-12


def test_two_point_pair_is_an_exponential_mechanism_on_two_candidates():
    """Utilities ``(g, 0)`` against ``(g - 1, 1)`` (each moves by 1) at ``eta = eps / 2``: the
    pair has losses ``(1 - t) eps`` and ``-t eps`` with ``t = 1/2 + log(Z/Z') / eps``, and its
    law is :func:`two_point_law`'s for that split."""
    epsilon = 1.3
    eta = epsilon / 2
    for g in (-2.0, -0.4, 0.0, 0.7, 3.0):
        p = em_law((g, 0.0), mpmath.mpf(eta))
        q = em_law((g - 1.0, 1.0), mpmath.mpf(eta))
        losses = [float(mpmath.log(a / b)) for a, b in zip(p, q, strict=True)]
        split = -min(losses) / epsilon
        assert max(losses) - min(losses) == pytest.approx(epsilon, rel=1e-12)
        law = two_point_law(epsilon, split)
        high, low = max(losses), min(losses)
        assert law.atom_losses == pytest.approx([low, high], rel=1e-12, abs=1e-15)
        order = np.argsort(losses)
        assert law.atom_probs == pytest.approx([float(p[order[0]]), float(p[order[1]])],
                                               rel=1e-12)


@pytest.mark.parametrize("count", [1, 2, 3, 10])
def test_replace_one_takes_the_guarantee_as_stated(count):
    """The bounded-range parameter is stated for the relation of the utility's sensitivity:
    under replace-one the same step, the same bracket (as ``ApproximateDP``)."""
    add_remove = bounds(plda.ExponentialMechanism(0.7), count)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        replace_one = PLD.from_mechanism(plda.ExponentialMechanism(0.7), count,
                                         relation="replace_one").delta_bounds(
                                             np.array(EPS_PRIME))
    np.testing.assert_array_equal(replace_one.upper, add_remove.upper)
    np.testing.assert_array_equal(replace_one.lower, add_remove.lower)


# ------------------------------------------------------------------ entry points
def test_warns_that_the_bracket_includes_the_analysis_gap():
    with pytest.warns(plda.NotTightWarning, match="bounded-range"):
        PLD.from_mechanism(plda.ExponentialMechanism(1.0), 3).epsilon_bounds(1e-5)


def test_accountant_and_cli_agree_with_the_pld():
    import json
    import subprocess
    import sys

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        want = PLD.from_mechanism(plda.ExponentialMechanism(0.2), 50).epsilon_bounds(1e-6)
        accountant = plda.PLDAccountant()
        accountant.compose(plda.ExponentialMechanism(0.2), 50)
        got = accountant.epsilon_bounds(1e-6)
    assert got.lower <= want.upper and want.lower <= got.upper
    done = subprocess.run(
        [sys.executable, "-m", "plda", "epsilon", "--mechanism", "exponential:epsilon=0.2",
         "--count", "50", "--delta", "1e-6", "--json"],
        capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout)
    assert answer["epsilon_lower"] <= want.upper and want.lower <= answer["epsilon_upper"]


def test_poisson_sampled_exponential_mechanism_takes_its_lower_bound_from_sampled_pairs():
    """Sampling keeps the analysis: the upper law is the sampled dominating pair, the lower
    bound the sampled realized pairs (never the dominating pair's own discretized lower)."""
    sampled = plda.PoissonSampled(plda.ExponentialMechanism(1.0), 0.3)
    assert not sampled.tight
    assert [m.mechanism for m in sampled.lower_bound_mechanisms()] == [
        BoundedRangePair(epsilon=1.0, split=t) for t in LOWER_SPLITS]
    got = bounds(sampled, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        realized = [PLD.from_mechanism(m, 5).delta_bounds(np.array(EPS_PRIME)).upper
                    for m in sampled.lower_bound_mechanisms()]
    assert np.all(got.lower <= np.max(realized, axis=0) + 1e-12)
    assert np.all(got.lower <= got.upper)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("value", [0.0, -1.0, math.nan, math.inf, 1e-9, 2e3])
def test_bad_epsilon_is_a_value_error_naming_it(value):
    with pytest.raises(ValueError, match="epsilon"):
        plda.ExponentialMechanism(value)


@pytest.mark.parametrize("value", [True, "1", None])
def test_epsilon_of_another_type_is_a_type_error(value):
    with pytest.raises(TypeError, match="epsilon"):
        plda.ExponentialMechanism(value)


@pytest.mark.parametrize("split", [0.0, 1.0, -0.5, 2.0, math.nan])
def test_bad_split_is_a_value_error_naming_it(split):
    with pytest.raises(ValueError, match="split"):
        BoundedRangePair(epsilon=1.0, split=split)
