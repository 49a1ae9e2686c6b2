"""Permute-and-flip and report-noisy-max (issue 29, item 1).

Every reference is computed from the mechanism's definition, in mpmath: permute-and-flip by
summing over every visiting order, report-noisy-max with Laplace noise by integrating the
winner's density against the others' cdfs. Nothing here reads plda's closed forms.
"""

from __future__ import annotations

import functools
import itertools
import json
import math
import subprocess
import sys
import warnings

import mpmath
import numpy as np
import pytest
from selection_reference import homogeneous_hockey_stick, instances

import plda
from plda.mechanisms.noisy_max import (
    LOWER_LEADS,
    TwoCandidatePair,
    inward_lattice_pair,
    log_win_lose,
)

PLD = plda.PrivacyLossDistribution
EPS_PRIME = (0.0, 0.1, 0.5, 1.0, 2.0)


def bounds(mechanism, count, eps=EPS_PRIME, relation="add_remove"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        return PLD.from_mechanism(mechanism, count, relation=relation).delta_bounds(
            np.array(eps))


# ------------------------------------------------------------------ the mechanisms, enumerated
def permute_and_flip_law(utilities, epsilon):
    """Output law of permute-and-flip: visit the candidates in a uniformly random order, accept
    ``r`` with probability ``exp(eps (u_r - u*) / 2)`` (sensitivity 1), summed over orders."""
    u = [mpmath.mpf(x) for x in utilities]
    best = max(u)
    accept = [mpmath.exp(mpmath.mpf(epsilon) * (x - best) / 2) for x in u]
    law = [mpmath.mpf(0)] * len(u)
    orders = list(itertools.permutations(range(len(u))))
    for order in orders:
        survive = mpmath.mpf(1)
        for r in order:
            law[r] += survive * accept[r]
            survive *= 1 - accept[r]
    return [p / len(orders) for p in law]


def laplace_noisy_max_law(utilities, epsilon):
    """:func:`laplace_law` of the utilities shifted to start at 0 (the law is shift-invariant;
    the enumerations below meet each shape many times)."""
    low = min(utilities)
    return laplace_law(tuple(x - low for x in utilities), epsilon, mpmath.mp.dps)


@functools.cache
def laplace_law(utilities, epsilon, digits):
    """Output law of report-noisy-max with Laplace noise of scale ``2 / eps`` (sensitivity 1):
    ``P(r) = int f(x - u_r) prod_{s != r} F(x - u_s) dx``, split at every utility."""
    b = 2 / mpmath.mpf(epsilon)
    u = [mpmath.mpf(x) for x in utilities]

    def pdf(x):
        return mpmath.exp(-abs(x) / b) / (2 * b)

    def cdf(x):
        return mpmath.exp(x / b) / 2 if x < 0 else 1 - mpmath.exp(-x / b) / 2

    points = [-mpmath.inf, *sorted(set(u)), mpmath.inf]
    law = []
    for r in range(len(u)):
        def integrand(x, r=r):
            value = pdf(x - u[r])
            for s in range(len(u)):
                if s != r:
                    value *= cdf(x - u[s])
            return value
        with mpmath.workdps(digits):
            law.append(mpmath.quad(integrand, points))
    return law


LAWS = {"exponential": permute_and_flip_law, "laplace": laplace_noisy_max_law}


# ------------------------------------------------------------------ the guarantee relied on
@pytest.mark.parametrize("noise", ["exponential", "laplace"])
@pytest.mark.parametrize("candidates", [2, 3])
def test_every_enumerated_instance_is_epsilon_dp(noise, candidates):
    """The upper bound relies on the selection being ``epsilon``-DP: on every instance the
    loss of every output is within ``[-eps, eps]``, and close to it somewhere."""
    epsilon = 1.0
    largest = 0.0
    with mpmath.workdps(25):
        for u, v in instances(candidates):
            p, q = LAWS[noise](u, epsilon), LAWS[noise](v, epsilon)
            for a, b in zip(p, q, strict=True):
                loss = abs(float(mpmath.log(a / b)))
                assert loss <= epsilon * (1 + 1e-12), (u, v, loss)
                largest = max(largest, loss)
    assert largest > 0.5 * epsilon


@pytest.mark.parametrize("noise", ["exponential", "laplace"])
@pytest.mark.parametrize(("epsilon", "count", "candidates"),
                         [(1.0, 1, 2), (1.0, 1, 3), (0.5, 3, 2), (2.0, 2, 3), (0.3, 10, 2)])
def test_every_enumerated_run_is_inside_the_bracket_upper_side(noise, epsilon, count,
                                                                candidates):
    mechanism = (plda.PermuteAndFlip(epsilon) if noise == "exponential"
                 else plda.ReportNoisyMax(epsilon, noise="laplace"))
    got = bounds(mechanism, count)
    assert np.all(got.lower <= got.upper)
    with mpmath.workdps(25):
        for u, v in instances(candidates):
            p, q = LAWS[noise](u, epsilon), LAWS[noise](v, epsilon)
            for first, second in ((p, q), (q, p)):
                for e, upper in zip(EPS_PRIME, got.upper, strict=True):
                    exact = homogeneous_hockey_stick(first, second, count, e)
                    assert exact <= upper + 1e-12, (u, v, e, float(exact), upper)


# ------------------------------------------------------------------ the realized pairs
@pytest.mark.parametrize("noise", ["exponential", "laplace", "gumbel"])
@pytest.mark.parametrize("lead", [-4.0, -1.5, -1.0, 0.0, 0.7, 3.0])
def test_two_candidate_pair_is_the_selection_on_two_candidates(noise, lead):
    """The pair's law is the selection's on utilities ``(lead, 0)`` against ``(lead + 1, -1)``
    (each utility moves by the sensitivity 1)."""
    epsilon = 1.3
    with mpmath.workdps(30):
        if noise == "gumbel":  # the exponential mechanism at eta = eps / 2
            def law(u):
                w = [mpmath.exp(mpmath.mpf(epsilon) * x / 2) for x in u]
                return [x / mpmath.fsum(w) for x in w]
        else:
            def law(u):
                return LAWS[noise](u, epsilon)
        p, q = law((lead + 1, -1)), law((lead, 0))  # remove: P is the lead + 2 dataset
        losses = [float(mpmath.log(a / b)) for a, b in zip(p, q, strict=True)]
        for first in (lead, lead + 2.0):
            want = law((first, 0))
            got = log_win_lose(noise, epsilon, first)
            assert got == pytest.approx([float(mpmath.log(x)) for x in want], rel=1e-12,
                                        abs=1e-14)
    pair = TwoCandidatePair(epsilon=epsilon, noise=noise, lead=lead).privacy_loss("remove")
    order = np.argsort(losses)
    assert pair.atom_losses == pytest.approx(np.array(losses)[order], rel=1e-12, abs=1e-14)
    assert pair.atom_probs == pytest.approx([float(p[i]) for i in order], rel=1e-12)


@pytest.mark.parametrize("noise", ["exponential", "laplace"])
@pytest.mark.parametrize(("epsilon", "count"), [(1.0, 1), (1.0, 10), (0.1, 30)])
def test_lower_bound_is_a_realized_composition(noise, epsilon, count):
    """The lower bound is at most the largest exact composition of the realized pairs (in both
    directions), and reaches the lead -1 pair's within the accuracy."""
    mechanism = (plda.PermuteAndFlip(epsilon) if noise == "exponential"
                 else plda.ReportNoisyMax(epsilon, noise="laplace"))
    got = bounds(mechanism, count)
    with mpmath.workdps(30):
        exact = []
        for lead in LOWER_LEADS:
            p = LAWS[noise]((lead + 1, -1), epsilon)
            q = LAWS[noise]((lead, 0), epsilon)
            exact.append([max(homogeneous_hockey_stick(p, q, count, e),
                              homogeneous_hockey_stick(q, p, count, e)) for e in EPS_PRIME])
    exact = np.array(exact, dtype=float)
    assert np.all(got.lower <= exact.max(axis=0) + 1e-12)
    assert np.all(got.lower >= exact[0] * (1 - 2e-3) - 1e-12)
    assert np.all(got.lower <= got.upper)


@pytest.mark.parametrize("noise", ["exponential", "laplace"])
@pytest.mark.parametrize("epsilon", [0.01, 0.3, 2.0, 30.0])
def test_lattice_pairs_are_dominated_by_the_realized_pairs(noise, epsilon):
    """The pair moved inward has losses on a lattice, ``a' <= a`` and ``b' >= b``, so its
    tradeoff function ``max(0, 1 - e^a alpha, e^b (1 - alpha))`` is above the realized one's
    everywhere, in both directions: a certified lower bound stays one."""
    alphas = np.linspace(0.0, 1.0, 201)
    for lead in LOWER_LEADS:
        pair = TwoCandidatePair(epsilon=epsilon, noise=noise, lead=lead)
        moved = inward_lattice_pair(pair)
        for direction in ("remove", "add"):
            exact = pair.privacy_loss(direction)
            law = moved.privacy_loss(direction)
            if law.atom_losses.size == 1:  # moved to the pair without loss
                continue
            (b, a), (b2, a2) = exact.atom_losses, law.atom_losses
            assert b <= b2 < 0 < a2 <= a
            ratio = a2 / b2
            assert abs(ratio - round(ratio * 64) / 64) < 1e-9 or abs(
                1 / ratio - round(64 / ratio) / 64) < 1e-9
            for x in alphas:
                assert (max(0, 1 - math.exp(a2) * x, math.exp(b2) * (1 - x))
                        >= max(0, 1 - math.exp(a) * x, math.exp(b) * (1 - x)) - 1e-15)


@pytest.mark.parametrize("count", [1, 10])
def test_permute_and_flip_is_report_noisy_max_with_exponential_noise(count):
    """Same laws, same bracket; Gumbel noise is the exponential mechanism's bracket."""
    pf, rnm = bounds(plda.PermuteAndFlip(0.8), count), bounds(
        plda.ReportNoisyMax(0.8, noise="exponential"), count)
    np.testing.assert_array_equal(pf.upper, rnm.upper)
    np.testing.assert_array_equal(pf.lower, rnm.lower)
    em, gumbel = bounds(plda.ExponentialMechanism(0.8), count), bounds(
        plda.ReportNoisyMax(0.8, noise="gumbel"), count)
    np.testing.assert_array_equal(em.upper, gumbel.upper)
    np.testing.assert_array_equal(em.lower, gumbel.lower)


def test_upper_bound_is_the_epsilon_dp_randomized_response():
    for mechanism in (plda.PermuteAndFlip(0.5), plda.ReportNoisyMax(0.5)):
        got = bounds(mechanism, 5)
        rr = bounds(plda.ApproximateDP(0.5), 5)
        np.testing.assert_array_equal(got.upper, rr.upper)
        assert np.all(got.lower < got.upper)


@pytest.mark.parametrize("count", [1, 3, 10])
def test_replace_one_takes_the_guarantee_as_stated(count):
    for mechanism in (plda.PermuteAndFlip(0.7), plda.ReportNoisyMax(0.7)):
        add_remove = bounds(mechanism, count)
        replace_one = bounds(mechanism, count, relation="replace_one")
        np.testing.assert_array_equal(replace_one.upper, add_remove.upper)
        np.testing.assert_array_equal(replace_one.lower, add_remove.lower)


# ------------------------------------------------------------------ entry points
@pytest.mark.parametrize("mechanism", [plda.PermuteAndFlip(1.0), plda.ReportNoisyMax(1.0),
                                       plda.ReportNoisyMax(1.0, noise="gumbel")])
def test_warns_that_the_bracket_includes_the_analysis_gap(mechanism):
    with pytest.warns(plda.NotTightWarning, match="lower bound"):
        PLD.from_mechanism(mechanism, 3).epsilon_bounds(1e-5)


@pytest.mark.parametrize(("spec", "mechanism"), [
    ("permute_and_flip:epsilon=0.2", plda.PermuteAndFlip(0.2)),
    ("report_noisy_max:epsilon=0.2,noise=laplace", plda.ReportNoisyMax(0.2)),
])
def test_accountant_and_cli_agree_with_the_pld(spec, mechanism):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        want = PLD.from_mechanism(mechanism, 50).epsilon_bounds(1e-6)
        accountant = plda.PLDAccountant()
        accountant.compose(mechanism, 50)
        got = accountant.epsilon_bounds(1e-6)
    assert got.lower <= want.upper and want.lower <= got.upper
    done = subprocess.run(
        [sys.executable, "-m", "plda", "epsilon", "--mechanism", spec, "--count", "50",
         "--delta", "1e-6", "--json"], capture_output=True, text=True, check=True)
    answer = json.loads(done.stdout)
    assert answer["epsilon_lower"] <= want.upper and want.lower <= answer["epsilon_upper"]


def test_cli_refuses_an_unknown_noise():
    done = subprocess.run(
        [sys.executable, "-m", "plda", "epsilon", "--mechanism",
         "report_noisy_max:epsilon=0.2,noise=normal", "--delta", "1e-6"],
        capture_output=True, text=True)
    assert done.returncode == 2
    assert "noise must be one of" in done.stderr and "--mechanism" in done.stderr


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("value", [0.0, -1.0, math.nan, math.inf, 1e-9, 2e3])
def test_bad_epsilon_is_a_value_error_naming_it(value):
    for cls in (plda.PermuteAndFlip, plda.ReportNoisyMax):
        with pytest.raises(ValueError, match="epsilon"):
            cls(value)


@pytest.mark.parametrize("value", [True, "1", None])
def test_epsilon_of_another_type_is_a_type_error(value):
    for cls in (plda.PermuteAndFlip, plda.ReportNoisyMax):
        with pytest.raises(TypeError, match="epsilon"):
            cls(value)


def test_bad_noise_and_lead_are_named():
    with pytest.raises(ValueError, match="noise must be one of"):
        plda.ReportNoisyMax(1.0, noise="gaussian")
    with pytest.raises(TypeError, match="noise"):
        plda.ReportNoisyMax(1.0, noise=1)
    with pytest.raises(ValueError, match="lead"):
        TwoCandidatePair(epsilon=1.0, lead=math.inf)
    with pytest.raises(TypeError, match="lead"):
        TwoCandidatePair(epsilon=1.0, lead="1")


def test_a_large_epsilon_reads_its_two_point_pairs_without_overflow():
    # expm1(-low) overflowed for a realized pair's loss below -709: PermuteAndFlip(1000), inside
    # EPSILON_RANGE, raised OverflowError from epsilon_bounds
    from plda.mechanisms.noisy_max import two_point

    law = two_point(1000.0, -800.0)
    with mpmath.workdps(50):
        up, down = mpmath.expm1(800), -mpmath.expm1(-1000)
        exact_low = float(down / (up + down))
    assert abs(law.atom_probs[0] - exact_low) <= 1e-14 * exact_low
    assert abs(law.atom_probs[1] - 1.0) <= 1e-15
    lower, upper = plda.PrivacyLossDistribution.from_mechanism(
        plda.PermuteAndFlip(1000.0)).epsilon_bounds(1e-5)
    assert 0 < lower <= upper <= 1000.0


def _exact_losses(noise, epsilon, lead):
    """The remove law's losses ``(b, a)`` of a realized pair, at 40 digits with mpmath: the
    differences of ``log P(the first candidate wins)`` and of ``log P(it loses)`` between the
    datasets where it leads by ``lead + 2`` and by ``lead``."""
    with mpmath.workdps(40):
        def log_win_lose(first):
            x = mpmath.mpf(epsilon) * abs(mpmath.mpf(first)) / 2
            small = {"exponential": mpmath.exp(-x) / 2,
                     "laplace": mpmath.exp(-x) * (1 + x / 2) / 2,
                     "gumbel": 1 / (1 + mpmath.exp(x))}[noise]
            pair = (mpmath.log(1 - small), mpmath.log(small))
            return pair if first >= 0 else pair[::-1]

        p, q = log_win_lose(lead + 2), log_win_lose(lead)
        return sorted((p[0] - q[0], p[1] - q[1]))


@pytest.mark.parametrize("noise", ["exponential", "laplace", "gumbel"])
@pytest.mark.parametrize("epsilon", [0.001, 0.0123, 0.3, 2.0, 17.0, 30.0])
def test_lower_pairs_never_exceed_the_exact_losses(noise, epsilon):
    """Read as computed, the top loss of the lead -1 pair was eps (1 + 9e-16), above what an
    eps-DP selection allows: the pairs its lower bounds compose are moved inward by their
    rounding and clamped to [-eps, eps]."""
    for lead in LOWER_LEADS:
        b, a = _exact_losses(noise, epsilon, lead)
        law = inward_lattice_pair(TwoCandidatePair(epsilon=epsilon, noise=noise, lead=lead))
        losses = law.privacy_loss("remove").atom_losses
        if losses.size == 2:
            assert b <= losses[0] < 0 < losses[1] <= a
            assert -epsilon <= losses[0] and losses[1] <= epsilon
