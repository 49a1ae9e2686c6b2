"""Calibration: results meet their target within the stated tolerance; unreachable targets."""

import pytest

import plda
from plda.accountant import PLDAccountant
from plda.calibration import (
    calibrate_noise_multiplier,
    calibrate_noise_multiplier_detailed,
    calibrate_sample_rate_detailed,
    calibrate_steps,
    calibrate_steps_detailed,
)

COARSE = 1e-2
DELTA = 1e-5


def achieved(sigma, rate, steps, accuracy=COARSE):
    acct = PLDAccountant(accuracy=accuracy)
    acct.step(sigma, rate, count=steps)
    return acct.epsilon(DELTA)


@pytest.mark.parametrize("target", [0.01, 1.0, 50.0])
def test_noise_multiplier_meets_target_within_tolerance(target):
    result = calibrate_noise_multiplier_detailed(
        target, DELTA, sample_rate=0.01, steps=200, accuracy=COARSE, rtol=1e-2
    )
    assert result.within_tolerance
    assert target * (1 - 1e-2) <= result.epsilon_upper <= target
    # the value checks out with an independent accountant at the same accuracy
    assert achieved(result.value, 0.01, 200) == result.epsilon_upper
    # and a slightly smaller noise would break the target (the result is not overly safe)
    assert achieved(result.value * 0.97, 0.01, 200) > target * (1 - 1e-2)


def test_noise_multiplier_float_api_matches_detailed():
    sigma = calibrate_noise_multiplier(1.0, DELTA, sample_rate=0.02, steps=100, accuracy=COARSE)
    detailed = calibrate_noise_multiplier_detailed(
        1.0, DELTA, sample_rate=0.02, steps=100, accuracy=COARSE
    )
    assert sigma == detailed.value


def test_noise_multiplier_for_the_default_accuracy():
    result = calibrate_noise_multiplier_detailed(1.0, DELTA, sample_rate=0.01, steps=1000)
    assert 0.999 * 1.0 <= result.epsilon_upper <= 1.0
    assert 1.3 < result.value < 1.5


@pytest.mark.parametrize(
    "target, rate, steps",
    [(1.0, 0.01, 1000), (8.0, 256 / 60000, 14062), (0.01, 0.01, 100), (1.0, 1.0, 10)],
)
def test_gaussian_dp_start_keeps_the_search_short(target, rate, steps):
    # the central-limit guess lands within a factor 1.25 of the answer on DP-SGD settings, so
    # one bracketing move, a short Brent search and one or two final checks suffice
    from math import exp

    from plda.calibration import _gdp_noise_multiplier

    result = calibrate_noise_multiplier_detailed(
        target, DELTA, sample_rate=rate, steps=steps, accuracy=COARSE
    )
    guess = exp(_gdp_noise_multiplier(target, DELTA, rate, steps))
    assert result.value / 1.25 <= guess <= result.value * 1.25
    assert result.evaluations <= 8
    assert result.within_tolerance


def test_sample_rate_meets_target():
    result = calibrate_sample_rate_detailed(
        1.0, DELTA, noise_multiplier=1.0, steps=300, accuracy=COARSE, rtol=1e-2
    )
    assert 0.99 <= result.epsilon_upper <= 1.0
    assert achieved(1.0, result.value, 300) == result.epsilon_upper
    # a full batch already meets a generous target: the rate saturates at 1
    saturated = calibrate_sample_rate_detailed(
        100.0, DELTA, noise_multiplier=5.0, steps=2, accuracy=COARSE
    )
    assert saturated.value == 1.0 and saturated.epsilon_upper <= 100.0


def test_steps_is_the_largest_count_meeting_target():
    result = calibrate_steps_detailed(1.0, DELTA, 1.0, 0.02, accuracy=COARSE)
    k = int(result.value)
    assert achieved(1.0, 0.02, k) <= 1.0 < achieved(1.0, 0.02, k + 1)
    assert calibrate_steps(1.0, DELTA, 1.0, 0.02, accuracy=COARSE) == k
    capped = calibrate_steps_detailed(50.0, DELTA, 10.0, 1e-4, max_steps=1000, accuracy=COARSE)
    assert capped.value == 1000


def test_unreachable_targets_say_which_bound_failed():
    with pytest.raises(ValueError, match=r"one step already gives epsilon_upper=.*above"):
        calibrate_steps(0.01, DELTA, noise_multiplier=0.5, sample_rate=0.5, accuracy=COARSE)
    with pytest.raises(ValueError, match=r"unreachable: even noise_multiplier=1e\+04"):
        calibrate_noise_multiplier(1e-6, 1e-10, sample_rate=1.0, steps=1, accuracy=COARSE)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"target_epsilon": 0.0}, "target_epsilon"),
        ({"target_delta": 0.0}, "target_delta"),
        ({"target_delta": 1.0}, "target_delta"),
        ({"sample_rate": 1.5}, "sample_rate"),
        ({"steps": 0}, "steps"),
    ],
)
def test_bad_arguments(kwargs, name):
    args = {"target_epsilon": 1.0, "target_delta": DELTA, "sample_rate": 0.01, "steps": 10}
    args.update(kwargs)
    with pytest.raises(ValueError, match=name):
        calibrate_noise_multiplier(**args)


def test_calibrated_noise_plugs_into_the_accountant():
    sigma = calibrate_noise_multiplier(2.0, DELTA, sample_rate=0.05, steps=50, accuracy=COARSE)
    acct = PLDAccountant(accuracy=COARSE)
    for _ in range(50):
        acct.step(noise_multiplier=sigma, sample_rate=0.05)
    assert acct.epsilon(DELTA) <= 2.0
    # and the calibration is tight: 1% less noise breaks the target
    tighter = PLDAccountant(accuracy=COARSE)
    tighter.step(noise_multiplier=0.99 * sigma, sample_rate=0.05, count=50)
    assert tighter.epsilon_bounds(DELTA).lower > 2.0 * (1 - COARSE)


def test_calibrate_steps_does_bounded_work_and_is_exact():
    # the final search bisects at the requested accuracy (it walked one step at a time, which
    # ran past 60 s on long horizons): few evaluations, and the count is the largest that fits
    result = plda.calibration.calibrate_steps_detailed(
        target_epsilon=0.2, target_delta=1e-5, noise_multiplier=2.0, sample_rate=0.001
    )
    assert result.evaluations <= 64
    assert result.epsilon_upper <= 0.2
    beyond = PLDAccountant()
    beyond.step(2.0, 0.001, count=result.value + 1)
    assert beyond.epsilon(1e-5) > 0.2
