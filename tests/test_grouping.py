"""Grouping the narrow factors of a one-shot composition (plda.engine.grouping): the grouped
composition brackets the exact answer as the ungrouped one does, and its error terms carry the
group's rounding."""

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
from plda.engine import composer as composer_module
from plda.engine.composer import Composer, compose
from plda.engine.grouping import group_spectrum, group_support, plan_group
from plda.engine.spectra import spectrum_of
from plda.grid.discrete import DiscreteLoss
from plda.pld import direction_laws

STEP = 2.0**-9
WIDE_SIGMA = 0.8
NARROW_SIGMAS = np.linspace(3.0, 8.0, 24)


def _gaussian_laws(step=STEP):
    """``(upper, lower)`` discretized laws of one wide and many narrow Gaussians."""
    sigmas = [WIDE_SIGMA, *NARROW_SIGMAS]
    return [discretize(plda.Gaussian(sigma=float(s)).privacy_loss("remove"), step) for s in sigmas]


def _exact_gaussian_delta(eps: float) -> float:
    """delta(eps) of the composition: mu-GDP with mu^2 = sum 1/sigma^2 (Dong, Roth & Su 2022),
    ``Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2)``, in 50 digits."""
    mpmath.mp.dps = 50
    mu = mpmath.sqrt(sum(1 / mpmath.mpf(float(s)) ** 2 for s in [WIDE_SIGMA, *NARROW_SIGMAS]))
    e = mpmath.mpf(eps)
    return float(mpmath.ncdf(-e / mu + mu / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2))


def _versions(pairs, group: bool):
    return tuple(
        Composer(tail=1e-20, group=group).compose([(pair[i], 1) for pair in pairs], 1 << 22)
        for i in (0, 1)
    )


def test_plan_groups_the_narrow_factors_only_when_it_pays():
    # 50 narrow factors next to one as wide as the window: the narrow ones form the group
    sizes = [(341_228, 1)] + [(100 + 15 * i, 1) for i in range(50)]
    group = plan_group(sizes, 307_200)
    assert group == list(range(1, 51))
    # never everything, never a group as wide as the window, nothing for two factors
    assert plan_group([(1000, 1)] * 3, 4096) == []
    assert plan_group([(10, 1), (300_000, 1)], 307_200) == []
    assert 2 * group_support([sizes[i] for i in group]) <= 307_200
    # counts widen a factor: 40 steps of a 1000-point law span 40 * 999 + 1 points
    assert group_support([(1000, 40)]) == 39_961


def test_grouped_composition_brackets_the_exact_gaussian_profile(monkeypatch):
    pairs = _gaussian_laws()
    grouped_calls = []
    original = composer_module.group_spectrum

    def spy(members, n, multiply):
        grouped_calls.append(len(members))
        return original(members, n, multiply)

    monkeypatch.setattr(composer_module, "group_spectrum", spy)
    upper, lower = _versions(pairs, group=True)
    assert grouped_calls and all(k >= 2 for k in grouped_calls)  # the narrow ones were grouped
    plain_upper, plain_lower = _versions(pairs, group=False)
    eps = np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    exact = np.array([_exact_gaussian_delta(float(e)) for e in eps])
    # pessimism: the grouped upper version is above the exact profile, the lower one below
    assert np.all(upper.delta(eps) >= exact)
    assert np.all(lower.delta(eps) <= exact)
    # and each bracket contains the other one's truth: they overlap, and are about as tight
    assert np.all(plain_upper.delta(eps) >= lower.delta(eps))
    assert np.all(upper.delta(eps) >= plain_lower.delta(eps))
    gap = upper.delta(eps) - lower.delta(eps)
    plain_gap = plain_upper.delta(eps) - plain_lower.delta(eps)
    assert np.all(gap <= 1.01 * plain_gap + 1e-12)
    # error terms are finite, non-negative, and the group's rounding shows in them
    for law in (upper, lower):
        for value in (law.entry_error, law.l2_error, law.spurious_mass, law.loss_error):
            assert math.isfinite(value) and value >= 0
    assert upper.entry_error > 0 and upper.l2_error > 0


def test_grouped_epsilon_brackets_the_exact_one_through_the_public_api():
    # plain Gaussians are merged exactly, so the narrow factors here are Laplace laws next to a
    # wide subsampled Gaussian (the case the grouping is for): the grouped bounds must contain
    # the ungrouped ones' truth
    eps0 = np.linspace(0.02, 0.1, 20)
    pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=1.5))
    for e in eps0:
        pld = pld.compose(plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(1 / e)))
    lower, upper = pld.epsilon_bounds(1e-6)
    step = pld.grid_step
    pairs = [discretize(law, step) for law, _ in direction_laws(pld)["remove"]]
    sizes = [(len(pair[0].probs), 1) for pair in pairs]
    assert plan_group(sizes, Composer().length([(pair[0], 1) for pair in pairs]))
    plain_upper, plain_lower = _versions(pairs, group=False)
    assert lower <= float(plain_upper.epsilon(1e-6))
    assert float(plain_lower.epsilon(1e-6)) <= upper
    assert lower <= upper


@pytest.mark.parametrize("n", [1024, 8192])  # 8192: frequencies far from the peaks too
def test_group_spectrum_bounds_its_error_against_the_exact_spectrum(n):
    """Members with dyadic masses convolve exactly in integers; the exact spectrum of the group
    at every frequency of the long transform (mpmath, 40 digits) lies within the certified
    error ``eta`` of the computed one."""
    rng = np.random.default_rng(3)
    members, ints = [], []
    for i in range(5):
        weights = rng.integers(1, 1 << 20, size=6 + 3 * i)
        ints.append(weights)
        probs = weights / float(1 << 25)  # exact (dyadic), and a mass below 1
        members.append((DiscreteLoss(step=0.01, offset=-2 * i, probs=probs), 1 + (i == 2)))
    exact = [1]
    scale = 1
    for weights, (_, count) in zip(ints, members, strict=True):
        for _ in range(count):
            exact = list(np.convolve(np.array(exact, dtype=object), weights.astype(object)))
            scale *= 1 << 25
    spectrum = group_spectrum(members, n, Composer()._product)
    x = spectrum.powers[0]
    eta = spectrum.relative * np.exp(spectrum.amplitude_log)
    mpmath.mp.dps = 40
    for j in [*range(0, 40), *range(40, n // 2 + 1, n // 128 + 1), n // 2]:
        w = -2 * mpmath.pi * j / n
        true = sum(mpmath.mpf(int(c)) * mpmath.expj(w * t) for t, c in enumerate(exact)) / scale
        assert abs(complex(true) - x[j]) <= eta[j]
        assert np.exp(spectrum.amplitude_log[j]) >= abs(complex(true))
    assert np.all(np.isfinite(eta)) and np.all(eta > 0)


def test_a_composed_factor_widens_its_spectrum_error_by_its_l1_error():
    p = np.full(100, 0.01)
    plain = DiscreteLoss(step=0.1, offset=0, probs=p)
    noisy = DiscreteLoss(step=0.1, offset=0, probs=p, entry_error=1e-15, l2_error=5e-15)
    a, b = spectrum_of(plain, 256), spectrum_of(noisy, 256)
    # eta = relative * (|X| + eta); ||e||_1 <= min(len * entry_error, sqrt(len) * l2_error),
    # here min(1e-13, 5e-14), is added to the transform's own rounding
    eta_plain = a.relative * np.exp(a.amplitude_log)
    eta_noisy = b.relative * np.exp(b.amplitude_log)
    assert np.allclose(eta_noisy - eta_plain, 5e-14, rtol=1e-9, atol=0)


def test_spurious_mass_of_a_factor_is_carried_into_the_lower_version():
    p = np.full(10, 0.09)
    laws = [
        DiscreteLoss(step=0.1, offset=0, probs=p, upper=False, spurious_mass=1e-9 * (i + 1))
        for i in range(3)
    ]
    out = compose([(law, 1) for law in laws])
    assert out.spurious_mass >= 6e-9


def test_grouping_is_deterministic_and_does_not_touch_history_composers():
    pairs = _gaussian_laws()
    first = _versions(pairs, group=True)
    second = _versions(pairs, group=True)
    for a, b in zip(first, second, strict=True):
        assert np.array_equal(a.probs, b.probs) and a.offset == b.offset
        assert a.entry_error == b.entry_error and a.l2_error == b.l2_error
    assert not Composer(keep=True, group=True).group  # a history reuses per-factor spectra


@examples(25)
@given(
    sizes=st.lists(st.integers(min_value=2, max_value=40), min_size=3, max_size=7),
    seed=st.integers(min_value=0, max_value=2**31 - 1),
    wide=st.integers(min_value=600, max_value=2000),
)
def test_grouped_matches_ungrouped_within_the_certified_errors(sizes, seed, wide):
    """Random laws next to one wide law: grouped and ungrouped compositions differ by no more
    than the sum of their certified per-entry errors (both are the exact law up to them)."""
    rng = np.random.default_rng(seed)
    factors = []
    for size in [wide, *sizes]:
        p = rng.random(size) ** 4
        p /= p.sum()
        factors.append((DiscreteLoss(step=0.05, offset=-(size // 2), probs=p), 1))
    assert plan_group([(len(f.probs), 1) for f, _ in factors], Composer(tail=1e-30).length(factors))
    grouped = Composer(tail=1e-30, group=True).compose(factors, 1 << 20)
    plain = Composer(tail=1e-30, group=False).compose(factors, 1 << 20)
    assert grouped.offset == plain.offset and len(grouped.probs) == len(plain.probs)
    slack = grouped.entry_error + plain.entry_error
    assert np.all(np.abs(grouped.probs - plain.probs) <= slack)
    assert grouped.entry_error < 1e-12 and math.isfinite(grouped.l2_error)


@pytest.mark.parametrize("upper_index", [0, 1])
def test_group_members_with_infinite_mass_keep_it(upper_index):
    pairs = [discretize(plda.Laplace(scale=1 / e).privacy_loss("remove"), 1e-3)
             for e in np.linspace(0.02, 0.1, 12)]
    wide = discretize(plda.PoissonSampled(plda.Gaussian(1.0), 0.5).privacy_loss("remove"), 1e-3)
    eps_dp = discretize(plda.ApproximateDP(0.05, 1e-7).privacy_loss("remove"), 1e-3)
    laws = [p[upper_index] for p in [*pairs, wide, eps_dp]]
    grouped = Composer(group=True).compose([(law, 1) for law in laws], 1 << 22)
    plain = Composer(group=False).compose([(law, 1) for law in laws], 1 << 22)
    assert grouped.infinity_mass == plain.infinity_mass
    assert grouped.infinity_mass >= 1e-7 * (1 - 1e-9)


def _dyadic_group(rng, sizes, counts):
    """Members with dyadic masses (exact in floats) and their exact composition, in integers
    over ``scale``."""
    members, exact, scale = [], [1], 1
    for i, (size, count) in enumerate(zip(sizes, counts, strict=True)):
        weights = rng.integers(1, 1 << 20, size=size)
        members.append((DiscreteLoss(step=0.01, offset=i - 2, probs=weights / float(1 << 25)),
                        count))
        for _ in range(count):
            exact = list(np.convolve(np.array(exact, dtype=object), weights.astype(object)))
            scale *= 1 << 25
    return members, exact, scale


@examples(12)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=30), min_size=2, max_size=5),
    counts=st.lists(st.integers(min_value=1, max_value=3), min_size=5, max_size=5),
    factor=st.integers(min_value=2, max_value=40),
    seed=st.integers(min_value=0, max_value=2**31 - 1),
)
def test_group_spectrum_error_bound_holds_at_every_frequency(sizes, counts, factor, seed):
    """Random dyadic groups, long transforms 2 to 40 times the group's length (even and odd
    lengths, frequencies near and far from the peaks): the exact spectrum lies within the
    certified error of the computed one."""
    members, exact, scale = _dyadic_group(
        np.random.default_rng(seed), sizes, counts[: len(sizes)]
    )
    width = len(exact)
    n = 2 * max(width, 16) * factor + (factor % 2)
    spectrum = group_spectrum(members, n, Composer()._product)
    x, eta = spectrum.powers[0], spectrum.relative * np.exp(spectrum.amplitude_log)
    mpmath.mp.dps = 40
    step = max(1, (n // 2) // 60)
    for j in sorted({*range(0, min(25, n // 2 + 1)), *range(0, n // 2 + 1, step), n // 2}):
        w = -2 * mpmath.pi * j / n
        true = sum(mpmath.mpf(int(c)) * mpmath.expj(w * t) for t, c in enumerate(exact)) / scale
        assert abs(complex(true) - x[j]) <= eta[j]


@pytest.mark.parametrize("phases", ["random", "aligned"])
@pytest.mark.parametrize("n", [256, 1000, 4096])
def test_group_spectrum_carries_injected_spectrum_errors_to_every_frequency(phases, n):
    """A product whose spectrum is off by up to b_k (errors of 1e-6, far above rounding, with
    random or aligned phases): at every frequency of the long transform the computed spectrum
    stays within its certified error of the exact one (the kernel bound near the peaks, the
    Cauchy–Schwarz bound for the rest and away from them)."""
    rng = np.random.default_rng(11)
    law = DiscreteLoss(step=0.01, offset=0, probs=rng.random(40) / 40)
    members = [(law, 1), (law, 1)]
    exact = np.convolve(law.probs, law.probs)
    def multiply(factors, length):
        assert length >= len(exact)  # the group's own length holds its support
        y_exact = np.fft.rfft(exact, length)
        b = 1e-6 * (1 + rng.random(len(y_exact)))
        b[3] = 5e-5  # a few peaks
        b[17] = 2e-5
        angle = rng.uniform(0, 2 * np.pi, len(b)) if phases == "random" else np.zeros(len(b))
        noisy = y_exact + b * np.exp(1j * angle)
        bound = np.abs(y_exact) + b
        return noisy, np.log(bound), b / bound

    spectrum = group_spectrum(members, n, multiply)
    x, eta = spectrum.powers[0], spectrum.relative * np.exp(spectrum.amplitude_log)
    truth = np.fft.rfft(exact, n)
    assert np.all(np.abs(x - truth) <= eta + 1e-13)
    # and the bound is not vacuous: near w = 0 it is of the order of the injected errors
    assert eta[0] < 1e-4


@pytest.mark.parametrize(("size", "n"), [(30, 300), (30, 1000), (30, 8192), (100, 1000)])
def test_group_spectrum_bound_holds_against_errors_aligned_with_the_kernel(size, n):
    """Worst-case spectrum errors: at each target frequency j*, errors of size |K_kj*| phased
    to add up there (Cauchy–Schwarz is then nearly tight), next to a few large peaks; the
    certified error still covers the exact spectrum at j* and everywhere else. Targets: at and
    near w = 0, between two short-transform frequencies next to a peak, and (size 100) more
    than NEAR short-transform frequencies away from every peak."""
    from plda._internal import fft

    rng = np.random.default_rng(5)
    law = DiscreteLoss(step=0.01, offset=0, probs=rng.random(size) / size)
    members = [(law, 1), (law, 1)]
    exact = np.convolve(law.probs, law.probs)
    n_g = fft.good_size(max(len(exact), 16))
    targets = [0, 1, 3, int(9.5 * n / n_g), n // 2 - 1]
    for target in targets:

        def multiply(factors, length, target=target):
            y_exact = np.fft.rfft(exact, length)
            k = np.arange(len(y_exact))
            t = np.arange(length)
            theta = 2 * np.pi * (k[:, None] / length - target / n)
            kernel = np.exp(1j * theta * t[None, :]).sum(axis=1) / length  # K_{k, target}
            b = 1e-6 * (np.abs(kernel) + 1e-3)
            b[[9, 13, 17, 21]] = 3e-6  # the peaks, away from most targets
            noisy = y_exact + b * np.exp(-1j * np.angle(kernel))
            bound = np.abs(y_exact) + b
            return noisy, np.log(bound), b / bound

        spectrum = group_spectrum(members, n, multiply)
        x, eta = spectrum.powers[0], spectrum.relative * np.exp(spectrum.amplitude_log)
        truth = np.fft.rfft(exact, n)
        error = np.abs(x - truth)
        assert np.all(error <= eta + 1e-13), target
        assert error[target] > 0.3 * eta[target]  # the bound is nearly reached there
