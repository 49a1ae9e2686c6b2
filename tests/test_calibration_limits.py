"""A calibration never answers with the limit of its search (issue 24, item 8).

``calibrate_steps`` stopped at ``max_steps`` and reported it with ``within_tolerance=True``
(noise multiplier 2, sample rate 1e-3, target epsilon 100: 10^7 steps at epsilon 8.12); a
target still met at the limit of a search is now a :class:`plda.CalibrationError` saying which
input to change, and the command line has ``--max-steps``. Errors never speak of grid points.
"""

from __future__ import annotations

import json

import pytest

import plda
from plda.calibration import (
    calibrate_noise_multiplier_detailed,
    calibrate_sample_rate_detailed,
    calibrate_steps,
    calibrate_steps_detailed,
)
from plda.calibration.evaluator import DPSGDEvaluator
from plda.calibration.targets import make_target
from plda.cli import main

DELTA = 1e-5
COARSE = 1e-2


def test_a_target_still_met_at_max_steps_is_an_error_naming_max_steps():
    with pytest.raises(plda.CalibrationError, match=r"steps=1000 still gives") as info:
        calibrate_steps_detailed(50.0, DELTA, 10.0, 1e-4, max_steps=1000, accuracy=COARSE)
    message = str(info.value)
    assert "pass a larger max_steps" in message and "grid" not in message
    with pytest.raises(plda.CalibrationError, match="max_steps"):
        calibrate_steps(50.0, DELTA, noise_multiplier=10.0, sample_rate=1e-4, max_steps=1000,
                        accuracy=COARSE)


def test_max_steps_is_the_answer_when_one_more_step_exceeds_the_target():
    k = calibrate_steps(1.0, DELTA, noise_multiplier=1.0, sample_rate=0.02, accuracy=COARSE)
    assert calibrate_steps(
        1.0, DELTA, noise_multiplier=1.0, sample_rate=0.02, max_steps=k, accuracy=COARSE
    ) == k
    with pytest.raises(plda.CalibrationError, match=f"steps={k - 1} still gives"):
        calibrate_steps(
            1.0, DELTA, noise_multiplier=1.0, sample_rate=0.02, max_steps=k - 1, accuracy=COARSE
        )


def test_a_target_met_at_the_smallest_noise_multiplier_searched_is_an_error():
    with pytest.raises(plda.CalibrationError, match=r"noise_multiplier=0.01 still gives") as info:
        calibrate_noise_multiplier_detailed(1e5, DELTA, sample_rate=0.01, steps=100, accuracy=0.1)
    assert "lower the target" in str(info.value)


def test_a_sample_rate_of_one_is_a_true_answer_not_a_limit():
    result = calibrate_sample_rate_detailed(
        100.0, DELTA, noise_multiplier=5.0, steps=2, accuracy=COARSE
    )
    assert result.value == 1.0 and result.epsilon_upper <= 100.0


def test_the_search_grid_is_coarsened_for_longer_compositions():
    """The epsilon search pins the grid step of its first evaluation; a much longer composition
    later in the search needs a coarser one (it raised "step=... needs 16875000 grid points")."""
    evaluate = DPSGDEvaluator(lambda k: (5.0, 1e-6, int(k)), make_target(1.0, DELTA), "add_remove")
    evaluate(100, COARSE, True)
    lower, upper = evaluate(10**9, COARSE, True)
    assert 0.0 <= lower <= upper < 1.0


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_command_line_takes_max_steps(capsys):
    base = ["calibrate", "--epsilon", "50", "--delta", "1e-5", "--noise-multiplier", "10",
            "--sample-rate", "1e-4", "--accuracy", "1e-2"]
    code, out, err = run(capsys, *base, "--max-steps", "1000")
    assert code == 2 and out == ""
    assert "steps=1000 still gives" in err and "pass a larger --max-steps" in err
    code, out, err = run(capsys, "calibrate", "--epsilon", "1", "--delta", "1e-5",
                         "--noise-multiplier", "1", "--sample-rate", "0.02", "--accuracy", "1e-2",
                         "--max-steps", "1e5", "--json")
    assert code == 0
    assert json.loads(out)["steps"] == calibrate_steps(
        1.0, DELTA, noise_multiplier=1.0, sample_rate=0.02, accuracy=COARSE
    )


def test_the_command_line_refuses_max_steps_when_steps_are_given(capsys):
    code, _, err = run(capsys, "calibrate", "--epsilon", "1", "--delta", "1e-5",
                       "--sample-rate", "0.02", "--steps", "100", "--max-steps", "1000")
    assert code == 2 and "argument --max-steps: only when calibrating the number of steps" in err


def test_the_command_line_applies_max_steps_to_other_samplers(capsys):
    code, _, err = run(capsys, "calibrate", "--epsilon", "100", "--delta", "1e-5",
                       "--noise-multiplier", "2", "--sampler", "without-replacement",
                       "--batch-size", "10", "--dataset-size", "10000", "--accuracy", "1e-2",
                       "--max-steps", "1000")
    assert code == 2 and "steps=1000 still gives" in err and "--max-steps" in err


def test_a_target_met_at_the_safe_end_only_at_the_requested_accuracy_is_calibrated():
    # the search's coarse grid reads high (here 5%): at the end of the range the target is met
    # only at the requested accuracy, and the coarse objective has no sign change to search;
    # scipy's "f(a) and f(b) must have different signs" escaped (plda calibrate --epsilon 1e-4
    # --delta 1e-5 --noise-multiplier 0.5 --steps 100000)
    from plda.calibration.core import solve
    from plda.calibration.problem import Parameter
    from plda.calibration.targets import make_target

    def evaluate(value, accuracy, search):
        return value * (1 - accuracy), value * (1.05 if accuracy > 1e-3 else 1.0)

    result = solve(evaluate, make_target(target_epsilon=1.0, target_delta=1e-5),
                   Parameter(name="x", low=1.0, high=100.0, increasing=True, start=10.0),
                   accuracy=1e-4)
    assert result.value == 1.0 and result.upper <= 1.0
