"""GaussianMixture and gradient accumulation (issue 24, item 2).

References are computed here, outside plda: one step exactly in mpmath
(:mod:`mixture_reference`: the likelihood ratio is monotone, so ``delta`` is a sum of normal
cdfs at the crossing), compositions by an independent numerical convolution of the one-step
loss distribution (numpy / scipy.signal, with tolerances).
"""

from __future__ import annotations

import json
import math
import warnings

import mpmath
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from hypothesis_settings import examples
from mixture_reference import accumulation_delta, binomial_weights, mixture_delta
from scipy.signal import fftconvolve
from scipy.special import ndtr

import plda
from plda._internal.binomial import binomial_probabilities

DELTA = 1e-5
ISSUE = (0.8, 0.05, 4)  # noise multiplier, per-micro-batch rate, micro-batches


def _accumulation(sigma, q, m):
    """One step over ``m`` micro-batches, as the accountant builds it (``group_size=m``)."""
    return plda.sampled_mechanism(plda.Gaussian(sigma), "poisson", sample_rate=q,
                                  accumulation_steps=m)


def _worst_delta(mechanism, eps):
    """Exact-law ``delta(eps)``, the larger of the two directions (float, no discretization)."""
    return max(float(mechanism.privacy_loss(d).delta(eps)) for d in ("remove", "add"))


# ------------------------------------------------------------------ one step, exact
@pytest.mark.parametrize(("sigma", "sensitivities", "probabilities"), [
    (0.8, (0, 1, 2, 3, 4), None),  # the issue's accumulation, exact binomial weights
    (1.0, (0, 1, 2, 3), (0.1, 0.2, 0.3, 0.4)),
    (0.5, (0.3, 1.7), (0.5, 0.5)),  # no zero shift: the loss is unbounded below
    (3.0, (0, 0.5, 6.0), (0.9, 0.0999, 0.0001)),
])
def test_one_step_both_directions_match_the_exact_mixture(sigma, sensitivities, probabilities):
    if probabilities is None:
        mechanism = _accumulation(*ISSUE)
        sensitivities, probabilities = range(5), binomial_weights(4, 0.05)
    else:
        mechanism = plda.GaussianMixture(sigma, sensitivities, probabilities)
    eps = np.array([0.0, 0.3, 1.0, 3.0, 6.0])
    bounds = plda.PrivacyLossDistribution.from_mechanism(mechanism).delta_bounds(eps)
    with mpmath.workdps(40):
        for i, e in enumerate(eps):
            exact = {d: mixture_delta(sigma, sensitivities, probabilities, e, d)
                     for d in ("remove", "add")}
            for direction, value in exact.items():
                law = float(mechanism.privacy_loss(direction).delta(e))
                assert law == pytest.approx(float(value), rel=1e-9, abs=1e-300)
            assert bounds.lower[i] <= max(exact.values()) <= bounds.upper[i]


def test_the_issue_example_is_accounted_as_the_mixture():
    # issue 24: one step at sigma 0.8, q 0.05, m 4: delta(3) is 1.08e-3, and the one Poisson
    # step at rate m q that plda (and Opacus) used to record gives 6.4e-5
    with mpmath.workdps(40):
        exact = float(accumulation_delta(*ISSUE, 3.0))
    assert exact == pytest.approx(1.0834832e-3, rel=1e-6)
    accountant = plda.PLDAccountant()
    accountant.step(noise_multiplier=0.8, sample_rate=0.05, accumulation_steps=4)
    bounds = accountant.delta_bounds(3.0)
    assert bounds.lower <= exact <= bounds.upper <= 1.001 * exact
    old = plda.PLDAccountant()
    old.step(noise_multiplier=0.8, sample_rate=0.2)
    assert old.delta(3.0) == pytest.approx(6.4337e-5, rel=1e-3)
    assert old.delta(3.0) < bounds.lower / 16


def test_one_micro_batch_is_the_plain_poisson_step_bit_for_bit():
    for sigma, q in ((0.8, 0.05), (1.1, 0.01), (2.0, 1.0)):
        plain = plda.PoissonSampled(plda.Gaussian(sigma), q)
        mechanism = _accumulation(sigma, q, 1)
        assert type(mechanism) is plda.PoissonSampled and mechanism == plain
        one, other = plda.PLDAccountant(), plda.PLDAccountant()
        one.step(sigma, q, count=50, accumulation_steps=1)
        other.step(sigma, q, count=50)
        assert one.history == other.history
        assert one.epsilon_bounds(DELTA) == other.epsilon_bounds(DELTA)


def test_a_single_shift_is_the_gaussian_mechanism():
    mixture = plda.GaussianMixture(2.0, (0.0, 3.0), (0.0, 1.0))
    gaussian = plda.Gaussian(2.0, 3.0)
    assert mixture.symmetric
    law = mixture.privacy_loss("remove")
    assert type(law) is type(gaussian.privacy_loss("remove")) and law.mu == gaussian.mu
    ours = plda.PrivacyLossDistribution.from_mechanism(mixture, 7).epsilon_bounds(DELTA)
    exact = plda.testing.gaussian_epsilon(DELTA, math.sqrt(7) * 3.0 / 2.0)
    assert ours.lower <= exact <= ours.upper
    # every shift 0: nothing is released
    assert plda.PrivacyLossDistribution.from_mechanism(
        plda.GaussianMixture(1.0, (0.0, 0.0), (0.5, 0.5))).epsilon(DELTA) == 0.0


# ------------------------------------------------------------------ binomial weights
@pytest.mark.parametrize(("trials", "rate"), [
    (4, 0.05), (64, 0.01), (300, 0.3), (7, 0.999999), (50, 1e-12), (1000, 0.37),
])
def test_binomial_weights_are_within_an_ulp_and_the_merged_tail_moves_up(trials, rate):
    counts, probabilities = binomial_probabilities(trials, rate)
    with mpmath.workdps(50):
        exact = binomial_weights(trials, rate)
        kept = set(counts)
        for k, p in zip(counts, probabilities, strict=True):
            if k == trials and any(j not in kept for j in range(trials + 1)):
                # the merged tail was added here: at least the true mass of what it stands for
                assert p >= exact[k] + mpmath.fsum(exact[j] for j in range(trials + 1)
                                                   if j not in kept)
            elif exact[k] > 1e-300:
                assert abs(p / exact[k] - 1) <= 2.0**-53
        moved = mpmath.fsum(exact[j] for j in range(trials + 1) if j not in kept)
        assert moved <= 1e-309
    assert counts == tuple(sorted(counts)) and math.fsum(probabilities) == pytest.approx(1.0)


def test_binomial_weights_are_fast_for_many_micro_batches():
    counts, probabilities = binomial_probabilities(10_000, 0.37)
    assert len(counts) < 5000 and math.fsum(probabilities) == pytest.approx(1, abs=1e-15)


# ------------------------------------------------------------------ composition
def _convolved_delta(mechanism, steps, eps, cells=40_000, bin_width=2e-4):
    """``delta(eps)`` of ``steps`` runs, by convolving the one-step loss distribution: the
    output axis cut into ``cells`` cells (each merged: a post-processing), the cells' losses
    binned to ``bin_width`` and the histogram convolved by FFT. Both directions, the larger."""
    mixture = mechanism.group_mixture() if type(mechanism) is plda.PoissonSampled else mechanism
    shifts, weights = (np.array(v) for v in mixture.components())
    y = np.linspace(-12.0, 12.0 + shifts.max(), cells + 1)
    p = np.diff(ndtr(np.subtract.outer(y, shifts)) @ weights)
    q = np.diff(ndtr(y))
    keep = (p > 0) & (q > 0)
    p, q = p[keep], q[keep]
    loss = np.log(p) - np.log(q)
    out = []
    for losses, probs in ((loss, p), (-loss, q)):  # remove: under P; add: -loss under Q
        lo = math.floor(losses.min() / bin_width)
        index = np.round(losses / bin_width).astype(int) - lo
        hist = np.bincount(index, weights=probs)
        total = hist
        for _ in range(steps - 1):
            total = np.maximum(fftconvolve(total, hist), 0.0)
        grid = (np.arange(total.size) + steps * lo) * bin_width
        above = grid > eps
        out.append(float(np.sum(total[above] * -np.expm1(eps - grid[above]))))
    return max(out)


@pytest.mark.parametrize("steps", [2, 3, 10])
def test_composition_matches_an_independent_convolution(steps):
    mechanism = _accumulation(1.0, 0.1, 3)
    eps = np.array([0.5, 1.5, 3.0])
    bounds = plda.PrivacyLossDistribution.from_mechanism(mechanism, steps).delta_bounds(eps)
    # the accountant's entry point: its own grid, the same law (a group of 3 draws)
    accountant = plda.PLDAccountant()
    accountant.step(1.0, 0.1, count=steps, group_size=3)
    recorded = accountant.delta_bounds(eps)
    for i, e in enumerate(eps):
        reference = _convolved_delta(mechanism, steps, e)
        # the reference carries its cells' and bins' errors (a few 1e-4 relative)
        for lower, upper in ((bounds.lower[i], bounds.upper[i]),
                             (recorded.lower[i], recorded.upper[i])):
            assert lower <= reference * (1 + 2e-3) + 1e-12
            assert upper >= reference * (1 - 2e-3) - 1e-12
            assert upper <= reference * (1 + 5e-3) + 1e-12


# ------------------------------------------------------------------ monotonicity
@given(
    sigma=st.floats(0.4, 4.0), rate=st.floats(1e-3, 0.9), steps=st.integers(1, 6),
    eps=st.floats(0.0, 4.0),
)
@example(sigma=0.8, rate=0.05, steps=4, eps=3.0)
@examples(25)
def test_delta_grows_with_the_micro_batches_and_the_rate(sigma, rate, steps, eps):
    here = _worst_delta(_accumulation(sigma, rate, steps), eps)
    more_batches = _worst_delta(_accumulation(sigma, rate, steps + 1), eps)
    higher_rate = _worst_delta(_accumulation(sigma, min(1.0, 1.25 * rate), steps), eps)
    slack = 1e-12 + 1e-9 * here  # the laws' own rounding
    assert more_batches >= here - slack and higher_rate >= here - slack


@given(
    shifts=st.lists(st.floats(0.0, 3.0), min_size=2, max_size=4),
    raw=st.lists(st.floats(0.05, 1.0), min_size=4, max_size=4),
    which=st.integers(0, 3), bump=st.floats(0.01, 1.0), eps=st.floats(0.0, 4.0),
)
@example(shifts=[0.0, 7.327127762787527e-286], raw=[1.0] * 4, which=0, bump=1.0, eps=0.0)
@examples(25)
def test_delta_grows_with_a_sensitivity(shifts, raw, which, bump, eps):
    if max(shifts) < 0.01:  # below 1e-150 the mixture is refused (outside the certified range)
        shifts[0] = 1.0
    weights = [w / math.fsum(raw[: len(shifts)]) for w in raw[: len(shifts)]]
    which %= len(shifts)
    bumped = list(shifts)
    bumped[which] += bump  # a stochastically larger shift: a dominating pair
    here = _worst_delta(plda.GaussianMixture(1.0, shifts, weights), eps)
    there = _worst_delta(plda.GaussianMixture(1.0, bumped, weights), eps)
    scaled = _worst_delta(plda.GaussianMixture(1.0, [1.5 * c for c in shifts], weights), eps)
    assert there >= here - 1e-12 - 1e-9 * here and scaled >= here - 1e-12 - 1e-9 * here


# ------------------------------------------------------------------ relations
def test_replace_one_with_several_micro_batches_is_the_double_mixture():
    """Accumulation under replace-one is the Poisson group's double mixture (issue 26); a
    mixture of arbitrary shifts stays add/remove only, and its refusal says what to use."""
    accountant = plda.PLDAccountant(relation="replace_one")
    accountant.step(1.0, 0.01, count=50, accumulation_steps=2)
    group = plda.PoissonSampled(plda.Gaussian(1.0), 0.01, group_size=2)
    ours = accountant.epsilon_bounds(DELTA)
    expected = plda.PrivacyLossDistribution.from_mechanism(
        group, 50, relation="replace_one").epsilon_bounds(DELTA)
    assert max(ours.lower, expected.lower) <= min(ours.upper, expected.upper)  # one law
    assert accountant.history == ((group, 50),)
    with pytest.raises(ValueError, match="no replace-one analysis.*group_size=K.*add_remove"):
        plda.PrivacyLossDistribution.from_mechanism(group.group_mixture(),
                                                    relation="replace_one").epsilon(DELTA)


# ------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"sigma": 0.0}, ValueError, "sigma"),
    ({"sigma": "1"}, TypeError, "sigma"),
    ({"sensitivities": (0.0, -1.0)}, ValueError, "sensitivities must be >= 0"),
    ({"sensitivities": (0.0, math.nan)}, ValueError, "sensitivities must hold finite"),
    ({"sensitivities": "01"}, TypeError, "sensitivities must be a sequence"),
    ({"sensitivities": (0.0, 1.0, 2.0)}, ValueError, "one length"),
    ({"probabilities": (0.5, 0.6)}, ValueError, "sum to 1"),
    ({"probabilities": (1.5, -0.5)}, ValueError, r"probabilities must be in \[0, 1\]"),
    ({"probabilities": (True, False)}, TypeError, "probabilities must hold real numbers"),
    ({"probabilities": ()}, ValueError, "probabilities must hold 1 to"),
    ({"sensitivities": (0.0, 1e300)}, ValueError, r"max\(sensitivities\) / sigma"),
    # losses up to 5e19: a MemoryError (10 GiB per array) before, minutes after
    ({"sensitivities": (0.0, 1e10)}, plda.UncoveredParametersError,
     r"max\(sensitivities\) / sigma must be at most 1e\+08"),
])
def test_bad_mixtures_name_the_argument(kwargs, error, match):
    arguments = {"sigma": 1.0, "sensitivities": (0.0, 1.0), "probabilities": (0.9, 0.1)}
    with pytest.raises(error, match=match):
        plda.GaussianMixture(**(arguments | kwargs))


@pytest.mark.parametrize(("args", "error", "match"), [
    ((1.0, 0.01, 0), ValueError, "accumulation_steps"),
    ((1.0, 0.01, 10_001), ValueError, "accumulation_steps"),
    ((1.0, 0.01, 2.5), ValueError, "accumulation_steps"),
    ((1.0, 0.0, 2), ValueError, "sample_rate"),
    ((1.0, 1e-13, 2), ValueError, "sample_rate"),
    ((-1.0, 0.01, 2), ValueError, "sigma"),
])
def test_bad_accumulations_name_the_argument(args, error, match):
    with pytest.raises(error, match=match):
        _accumulation(*args)


def test_the_accountant_refuses_accumulation_with_other_samplers_and_records_nothing():
    accountant = plda.PLDAccountant()
    with pytest.raises(ValueError, match="accumulation_steps=2 applies to sampler='poisson'"):
        accountant.step(1.0, batch_size=10, dataset_size=1000, sampler="without-replacement",
                        accumulation_steps=2)
    with pytest.raises(TypeError, match="accumulation_steps"):
        accountant.step(1.0, 0.01, accumulation_steps=True)
    assert len(accountant) == 0


# ------------------------------------------------------------------ serialization
def test_state_dict_and_saved_pld_round_trip_the_mixture(tmp_path):
    accountant = plda.PLDAccountant()
    accountant.step(0.8, 0.05, count=3, accumulation_steps=4)
    accountant.step(1.0, 0.01, count=2)
    accountant.compose(plda.GaussianMixture(1.0, (0.0, 1.0, 2.0), (0.5, 0.3, 0.2)), 2)
    state = json.loads(json.dumps(accountant.state_dict()))
    loaded = plda.PLDAccountant.from_state_dict(state)
    assert loaded.history == accountant.history
    assert loaded.epsilon(DELTA) == accountant.epsilon(DELTA)
    plda.save_pld(accountant.pld, tmp_path / "pld.json")
    assert plda.load_pld(tmp_path / "pld.json").components == accountant.pld.components
    grouped = state["history"][0]["mechanism"]
    assert grouped["type"] == "PoissonSampled" and grouped["group_size"] == 4
    grouped["group_size"] = 2.5
    with pytest.raises(ValueError, match="group_size"):
        plda.PLDAccountant.from_state_dict(state)
    grouped["group_size"] = 4
    entry = state["history"][2]["mechanism"]
    assert entry["type"] == "GaussianMixture" and entry["sensitivities"] == [0, 1, 2]
    entry["probabilities"] = ["a", "b"]
    with pytest.raises(ValueError, match="list of numbers"):
        plda.PLDAccountant.from_state_dict(state)
    entry["probabilities"] = [0.5, 0.5, 0.5]
    with pytest.raises(ValueError, match="sum to 1"):
        plda.PLDAccountant.from_state_dict(state)


def test_no_warning_on_an_ordinary_query():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        accountant = plda.PLDAccountant()
        accountant.step(1.0, 0.01, count=100, accumulation_steps=8)
        bounds = accountant.epsilon_bounds(DELTA)
    assert 0 < bounds.lower <= bounds.upper <= bounds.lower * 1.001


def test_tail_points_ignore_light_far_components():
    # 256 micro-batches at q = 1e-3: components up to k ~ 110 carry mass down to 1e-310; the
    # range kept for a 1e-30 tail must follow the mass, not the largest shift (which would put
    # the upper end near loss 35,000 and starve the grid)
    law = _accumulation(1.0, 1e-3, 256).privacy_loss("remove")
    for hypothesis in ("P", "Q"):
        a, b = law.tail_points(1e-30, hypothesis)
        assert law.continuous_cdf(a, hypothesis) <= 1e-30
        assert law.continuous_sf(b, hypothesis) <= 1e-30
        assert b < 200


def test_renyi_bounds_are_finite_and_bracket_the_exact_divergence():
    # remove: int p^2 / q = sum_jk w_j w_k e^{mu_j mu_k}; add: int q^2 / p by quadrature. The
    # upper bound is joint convexity over the components (before: +inf, the grid's charged tail)
    mechanism = _accumulation(1.0, 0.05, 3)
    bounds = plda.PrivacyLossDistribution.from_mechanism(mechanism).renyi_bounds(2.0)
    shifts, weights = mechanism.group_mixture().components()
    with mpmath.workdps(30):
        remove = mpmath.log(mpmath.fsum(
            wj * wk * mpmath.exp(mj * mk)
            for mj, wj in zip(shifts, weights, strict=True)
            for mk, wk in zip(shifts, weights, strict=True)))

        def p(y):
            return mpmath.fsum(w * mpmath.npdf(y, m) for m, w in zip(shifts, weights, strict=True))

        add = mpmath.log(mpmath.quad(lambda y: mpmath.npdf(y) ** 2 / p(y), [-mpmath.inf, 0, 3,
                                                                               mpmath.inf]))
    exact = float(max(remove, add))
    assert bounds.lower <= exact <= bounds.upper < math.inf


def test_huge_shifts_are_refused_only_for_mixtures():
    """A single shift is the Gaussian law (its own range, up to 1e15); a Poisson-sampled
    Gaussian and the fixed-size samplers are mixtures, refused past 1e8 naming their own
    arguments (the doubled sensitivity of a substitution included)."""
    plda.GaussianMixture(sigma=1.0, sensitivities=(1e10,), probabilities=(1.0,))
    plda.PoissonSampled(plda.Gaussian(1e-10), 1.0)
    plda.PoissonSampled(plda.Gaussian(1e-8), 0.5)
    cases = [
        (lambda: plda.PoissonSampled(plda.Gaussian(1e-10), 0.5), r"^sensitivity / sigma"),
        (lambda: plda.PoissonSampled(plda.GaussianDP(1e10), 0.5), r"^mu"),
        (lambda: plda.PoissonSampled(plda.Gaussian(1e-5), 0.5, group_size=10**4),
         r"^group_size \* sensitivity / sigma"),
        (lambda: plda.SampledWithoutReplacement(plda.Gaussian(1e-8), 10, 100),
         r"^2 \* sensitivity / sigma"),
        (lambda: plda.TruncatedPoisson(plda.Gaussian(1e-8), 0.1, 20, 100),
         r"^2 \* sensitivity / sigma"),
    ]
    for make, match in cases:
        with pytest.raises(plda.UncoveredParametersError, match=match + ".* at most 1e\\+08"):
            make()


def _binomial_mixture_epsilon(shift, steps, delta):
    """``epsilon(delta)`` of ``steps`` runs of ``0.5 N(0, 1) + 0.5 N(shift, 1)`` against
    ``N(0, 1)`` at a shift so large that each loss is ``log(1/2)``, or ``shift^2/2 + shift z +
    log(1/2)`` for the shifted component: ``K`` of them (binomial) sum to a normal; solved by
    bisection on ``P(L > eps)`` (the losses within 40 of eps move it by 1e-9 relative)."""
    from scipy.stats import binom

    k = np.arange(1, steps + 1)
    weights = binom.pmf(k, steps, 0.5)
    means = steps * math.log(0.5) + k * shift * shift / 2
    spreads = shift * np.sqrt(k)
    low, high = 0.0, float(means[-1] + 40 * spreads[-1])
    for _ in range(200):
        middle = (low + high) / 2
        mass = float(np.dot(weights, ndtr((means - middle) / spreads)))
        low, high = (middle, high) if mass > delta else (low, middle)
    return high


def test_an_accountant_at_a_huge_shift_stays_tight_without_overflow():
    """At shift / sigma 1e4 the pessimistic step held its shifted half twice (its cells' Q-mass
    underflows and u was split with an error bar as large as the cell): mass 1.5, so 5000
    steps composed by an accountant overflowed its spectra's binary powers (numpy's
    RuntimeWarnings), the grid claimed nothing and epsilon(1e-5) was [1.26e11, 2.50e11].
    Rounded up whole, the cells compose to a bracket of the binomial mixture's 2e-3 wide."""
    mixture = plda.GaussianMixture(sigma=1.0, sensitivities=(0.0, 1e4), probabilities=(0.5, 0.5))
    accountant = plda.PLDAccountant()
    accountant.compose(mixture, 5000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lower, upper = accountant.epsilon_bounds(DELTA)
    exact = _binomial_mixture_epsilon(1e4, 5000, DELTA)
    assert lower <= exact * (1 + 1e-7) and upper >= exact * (1 - 1e-7)
    assert upper <= lower * (1 + 2e-3)
