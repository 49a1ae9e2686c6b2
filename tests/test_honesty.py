"""Honesty signals (issue 12, items 5 and 6): a named warning when an interval misses the
requested accuracy, documented exceptions only, strict JSON from the command line."""

from __future__ import annotations

import json
import warnings

import pytest

import plda
from plda.cli import main


def _strict_json(text: str) -> dict:
    def reject(constant):
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=reject)


def test_a_missed_accuracy_is_said_with_an_accuracy_warning():
    # 1e9 DP-SGD steps exceed the grid cap: the interval is ~10% wide against 0.1% asked
    accountant = plda.PLDAccountant()
    accountant.step(1.0, 0.01, count=10**9)
    with pytest.warns(plda.AccuracyWarning, match="relative gap"):
        bounds = accountant.epsilon_bounds(1e-5)
    assert bounds.lower < bounds.upper < 1.2 * bounds.lower
    pld = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(1.0), 0.01), 10**9
    )
    with pytest.warns(plda.AccuracyWarning):
        pld.epsilon_bounds(1e-5)


def test_an_ordinary_run_gives_no_accuracy_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", plda.AccuracyWarning)
        accountant = plda.PLDAccountant()
        accountant.step(1.1, 256 / 60000, count=1000)
        bounds = accountant.epsilon_bounds(1e-5)
        pld = plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(scale=10.0), 100)
        pld.epsilon_bounds([1e-3, 1e-5, 1e-7])
    assert (bounds.upper - bounds.lower) <= 1e-3 * bounds.upper


def test_accuracy_warning_is_a_documented_plda_warning():
    # a plda warning, not a UserWarning: silencing UserWarning (as training scripts do) keeps it
    assert issubclass(plda.AccuracyWarning, plda.PLDAWarning)
    assert not issubclass(plda.AccuracyWarning, UserWarning)
    assert issubclass(plda.CalibrationError, ValueError)
    assert "AccuracyWarning" in plda.__all__ and "CalibrationError" in plda.__all__


@pytest.mark.slow
def test_calibration_at_a_billion_steps_raises_nothing_private():
    # it raised plda.accountant._TooLarge: the "add" direction's grid did not fit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.AccuracyWarning)
        result = plda.calibration.calibrate_noise_multiplier_detailed(
            target_epsilon=1.0, target_delta=1e-5, sample_rate=0.01, steps=10**9
        )
    assert result.epsilon_upper <= 1.0
    assert 800 < result.value < 2000  # the Gaussian-DP central-limit value is about 1216


def test_unreachable_targets_raise_a_calibration_error():
    with pytest.raises(plda.CalibrationError, match="unreachable"):
        plda.calibrate_steps(
            target_epsilon=0.01, target_delta=1e-5, noise_multiplier=0.5, sample_rate=0.5
        )
    with pytest.raises(ValueError, match="unreachable"):  # a CalibrationError is a ValueError
        plda.calibrate_noise_multiplier(
            target_epsilon=1e-9, target_delta=1e-12, sample_rate=1.0, steps=10**6
        )


def test_json_output_is_strict_and_null_means_no_finite_bound(capsys):
    code = main(
        ["epsilon", "--noise-multiplier", "1.1", "--sample-rate", "0.01", "--steps", "100",
         "--delta", "0", "--json"]
    )
    assert code == 0
    record = _strict_json(capsys.readouterr().out)
    assert record["epsilon_upper"] is None and record["epsilon"] is None
    assert record["epsilon_lower"] >= 0


def test_cli_refusal_is_one_line_and_exit_code_two(capsys):
    code = main(
        ["calibrate", "--epsilon", "1e-9", "--delta", "1e-12", "--sample-rate", "1.0",
         "--steps", "1000000"]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("plda: error:") and err.count("\n") == 1 and "Traceback" not in err


def test_cli_accuracy_warning_is_one_line(capsys):
    code = main(
        ["epsilon", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "1000000000",
         "--delta", "1e-5"]
    )
    err = capsys.readouterr().err
    assert code == 0
    assert err.startswith("plda: warning:") and err.count("\n") == 1
