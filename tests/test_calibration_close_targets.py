"""A true-positive-rate target just above its false-positive rate is calibrated, or refused.

Such a target sits within a relative 1e-5 of the rate's floor (every test reaches TPR = FPR),
far inside the requested relative gap of the final checks (1e-4), so their grid could not
resolve it: ``sample_rate=0.01, steps=10, target_true_positive_rate=0.0100001,
at_false_positive_rate=0.01`` ended in the internal "calibration of noise_multiplier did not
converge", although a :class:`plda.PLDAccountant` certifies the target at ``sigma=1e4``. The
final checks now refine their grid at the safe end of the range until the target is resolved,
and a target missed even there is the documented "unreachable" error.
"""

from __future__ import annotations

import pytest

import plda
from plda.calibration import calibrate_noise_multiplier_detailed

Q, T, FPR = 0.01, 10, 0.01


def test_a_reachable_target_close_to_the_false_positive_rate_is_calibrated():
    target = 0.0100001
    result = calibrate_noise_multiplier_detailed(
        sample_rate=Q, steps=T, target_true_positive_rate=target, at_false_positive_rate=FPR
    )
    assert 1e-2 <= result.value <= 1e4
    assert result.lower <= result.upper <= target
    assert result.within_tolerance
    # the accountant that will track the run certifies the target at the result
    accountant = plda.PLDAccountant()
    accountant.step(result.value, Q, count=T)
    assert accountant.true_positive_rate_bounds(FPR).upper <= target
    assert calibrate_noise_multiplier_detailed(
        sample_rate=Q, steps=T, target_true_positive_rate=target, at_false_positive_rate=FPR
    ).value == result.value  # deterministic


@pytest.mark.parametrize("target", [0.01000001, 0.01000008])
def test_an_unreachable_target_close_to_the_false_positive_rate_says_so(target):
    # at sigma = 1e4 the true rate is 0.0100000843: above both targets
    match = r"unreachable: even noise_multiplier=1e\+04"
    with pytest.raises(plda.CalibrationError, match=match) as info:
        calibrate_noise_multiplier_detailed(
            sample_rate=Q, steps=T, target_true_positive_rate=target, at_false_positive_rate=FPR
        )
    message = str(info.value)
    assert "did not converge" not in message
    # the target is shown as given (not rounded to 0.01), the bound with digits that differ
    assert f"target_true_positive_rate={target!r} " in message
