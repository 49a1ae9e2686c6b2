"""Calibration takes a sampler by name, as the accountant does (issue 25, item 6).

``calibrate_*`` took ``sampler`` as a callable only, while ``PLDAccountant.step``,
``sampled_mechanism`` and the command line take a name of the one registry
(:data:`plda.samplers.STEP_SAMPLERS`) with its sizes. A name gives the very result of the
registry's own callable (:class:`plda.samplers.SamplerStep`), and the callable form still works.
"""

from __future__ import annotations

import warnings

import pytest

import plda
from plda.calibration import (
    calibrate_noise_multiplier_detailed,
    calibrate_sample_rate_detailed,
    calibrate_steps_detailed,
)
from plda.samplers import SamplerStep

COARSE = 1e-2
DELTA = 1e-5
N = 1000


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():  # truncation's NotTightWarning, coarse AccuracyWarning
        warnings.simplefilter("ignore", plda.PLDAWarning)
        yield


def test_poisson_by_name_is_the_default():
    kwargs = dict(sample_rate=0.02, steps=50, accuracy=COARSE)
    assert plda.calibrate_noise_multiplier(1.0, DELTA, sampler="poisson", **kwargs) == (
        plda.calibrate_noise_multiplier(1.0, DELTA, **kwargs))


def test_fixed_size_batches_by_name_match_the_registry_step_and_the_accountant():
    by_name = calibrate_noise_multiplier_detailed(
        1.0, DELTA, steps=50, sampler="without-replacement", batch_size=20, dataset_size=N,
        accuracy=COARSE)
    by_rate = calibrate_noise_multiplier_detailed(
        1.0, DELTA, 0.02, 50, sampler="without-replacement", dataset_size=N, accuracy=COARSE)
    by_callable = calibrate_noise_multiplier_detailed(
        1.0, DELTA, 0.02, 50, sampler=SamplerStep("without-replacement", {"dataset_size": N}),
        accuracy=COARSE)
    assert by_name == by_rate == by_callable
    poisson = plda.calibrate_noise_multiplier(1.0, DELTA, 0.02, 50, accuracy=COARSE)
    assert by_name.value > poisson  # fixed-size batches need more noise
    accountant = plda.PLDAccountant(accuracy=COARSE)
    accountant.step(by_name.value, count=50, sampler="without-replacement", batch_size=20,
                    dataset_size=N)
    assert accountant.epsilon_bounds(DELTA).upper == by_name.epsilon_upper <= 1.0


def test_names_in_the_sample_rate_and_steps_calibrations():
    sizes = {"dataset_size": N, "max_batch_size": 25}
    step = SamplerStep("truncated-poisson", sizes)
    rate = calibrate_sample_rate_detailed(
        1.0, DELTA, 1.0, 50, sampler="truncated-poisson", accuracy=COARSE, **sizes)
    assert rate == calibrate_sample_rate_detailed(
        1.0, DELTA, 1.0, 50, sampler=step, accuracy=COARSE)
    steps = calibrate_steps_detailed(
        1.0, DELTA, 2.0, 0.02, sampler="truncated-poisson", accuracy=COARSE, **sizes)
    assert steps == calibrate_steps_detailed(1.0, DELTA, 2.0, 0.02, sampler=step,
                                             accuracy=COARSE)
    fixed = plda.calibrate_steps(1.0, DELTA, 3.0, sampler="without-replacement",
                                 batch_size=20, dataset_size=N, accuracy=COARSE)
    assert fixed == plda.calibrate_steps(
        1.0, DELTA, 3.0, 0.02, sampler=SamplerStep("without-replacement", {"dataset_size": N}),
        accuracy=COARSE) > 1


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"sampler": "shuffled"}, ValueError, "draws whole epochs"),
        ({"sampler": "random-allocation"}, ValueError, "draws whole epochs"),
        ({"sampler": "fixed"}, ValueError, "sampler must be one of"),
        ({"sampler": 3}, TypeError, "sampler must be None"),
        ({"dataset_size": N}, ValueError, "dataset_size applies to a sampler given by name"),
        ({"sampler": "poisson", "dataset_size": N}, ValueError,
         "dataset_size does not apply to sampler='poisson'"),
        ({"sampler": "truncated-poisson", "dataset_size": N}, ValueError,
         "needs max_batch_size"),
        ({"sampler": "without-replacement", "dataset_size": N, "batch_size": 30}, ValueError,
         "batch_size=30 disagrees"),
        ({"sampler": "without-replacement", "dataset_size": "1000"}, TypeError,
         "dataset_size must be an integer"),
    ],
)
def test_refusals_name_the_argument(kwargs, error, words):
    with pytest.raises(error, match=words):
        plda.calibrate_noise_multiplier(1.0, DELTA, 0.02, 50, **kwargs)


def test_fixed_size_batches_have_no_sample_rate_to_calibrate():
    with pytest.raises(ValueError, match="calibrate the noise multiplier or the steps"):
        plda.calibrate_sample_rate(1.0, DELTA, 1.0, 50, sampler="without-replacement",
                                   dataset_size=N)
