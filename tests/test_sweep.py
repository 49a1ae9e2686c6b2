"""plda.sweep: one record per configuration, in order, the same on every executor."""

import concurrent.futures
import importlib.util

import pytest

import plda
from plda.samplers import SAMPLERS as SPEC_SAMPLERS
from plda.sweep import SAMPLERS as SWEEP_SAMPLERS
from plda.sweep import sweep, sweep_to_dataframe

# the truncated-Poisson config's upper pair only dominates; the sweep takes the lower bound from
# the realized pair, so the warning about the dominating pair's lower bound does not apply
pytestmark = pytest.mark.filterwarnings("ignore::plda.NotTightWarning")

CONFIGS = [
    {"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 100, "delta": 1e-5},
    {"noise_multiplier": 2.0, "sample_rate": 0.02, "steps": 50, "delta": 1e-6, "accuracy": 1e-2},
    {"sample_rate": 0.01, "steps": 100, "target_epsilon": 1.0, "delta": 1e-5, "accuracy": 1e-2},
    {"noise_multiplier": 1.0, "steps": 100, "target_advantage": 0.1, "accuracy": 1e-2},
    # samplers: fixed-size batches, and a calibration under a truncated Poisson sampler
    {
        "noise_multiplier": 1.0,
        "sample_rate": 0.01,
        "steps": 100,
        "delta": 1e-5,
        "sampler": "without_replacement",
        "dataset_size": 1000,
    },
    {
        "sample_rate": 0.01,
        "steps": 100,
        "target_advantage": 0.1,
        "sampler": "truncated_poisson",
        "dataset_size": 1000,
        "max_batch_size": 20,
        "accuracy": 1e-2,
    },
]


@pytest.fixture(scope="module")
def serial():
    return sweep(CONFIGS)


def test_records_match_the_accountant_and_the_calibration(serial):
    assert len(serial) == len(CONFIGS)
    acct = plda.PLDAccountant()
    acct.step(1.0, 0.01, count=100)
    bounds = acct.epsilon_bounds(1e-5)
    assert serial[0]["epsilon_lower"] == bounds.lower
    assert serial[0]["epsilon_upper"] == bounds.upper
    calibrated = serial[2]
    assert calibrated["calibrated"] == "noise_multiplier"
    assert calibrated["epsilon_upper"] <= 1.0
    assert calibrated["noise_multiplier"] == plda.calibration.calibrate_noise_multiplier(
        1.0, 1e-5, sample_rate=0.01, steps=100, accuracy=1e-2
    )
    assert serial[3]["calibrated"] == "sample_rate" and serial[3]["upper"] <= 0.1
    assert serial[3]["objective"] == "advantage"
    # fixed-size batches: the accountant's bounds for the same step mechanism
    wor = plda.SampledWithoutReplacement(plda.Gaussian(sigma=1.0), batch_size=10, dataset_size=1000)
    acct = plda.PLDAccountant()
    acct.compose(wor, 100)
    assert serial[4]["epsilon_upper"] == acct.epsilon_bounds(1e-5).upper
    assert serial[4]["epsilon_upper"] > serial[0]["epsilon_upper"]  # not Poisson sampling
    truncated = serial[5]
    assert truncated["calibrated"] == "noise_multiplier" and truncated["upper"] <= 0.1
    assert 0 <= truncated["lower"] <= truncated["upper"]


@pytest.mark.parametrize("kind", ["thread", "process"])
def test_executors_give_identical_records(serial, kind):
    pool = (
        concurrent.futures.ThreadPoolExecutor(2)
        if kind == "thread"
        else concurrent.futures.ProcessPoolExecutor(1)
    )
    seen = []
    with pool:
        records = sweep(CONFIGS, executor=pool, progress=lambda f, m: seen.append((f, m)))
    assert records == serial
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert all(isinstance(m, str) for _, m in seen)


@pytest.mark.skipif(
    importlib.util.find_spec("distributed") is None, reason="dask.distributed not installed"
)
def test_dask_cluster_gives_identical_records(serial):
    import distributed

    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        records = sweep(CONFIGS, executor=client.get_executor())
    assert records == serial


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"noise_multiplier": -1.0}, r"configs\[1\]\['noise_multiplier'\]"),
        ({"sample_rate": 1.5}, r"configs\[1\]\['sample_rate'\]"),
        ({"steps": 0}, r"configs\[1\]\['steps'\]"),
        ({"delta": None}, r"configs\[1\]\['delta'\]: missing"),
        ({"sigma": 1.0}, r"configs\[1\]: unknown key 'sigma'"),
        ({"target_epsilon": 1.0}, r"configs\[1\]\['target_epsilon'\]: with a calibration target"),
        ({"relation": "swap"}, r"configs\[1\]\['relation'\]"),
        ({"sampler": "shuffle"}, r"configs\[1\]\['sampler'\]: must be one of"),
        ({"sampler": "without_replacement"}, r"configs\[1\]\['dataset_size'\]: missing"),
        (
            {"sampler": "without_replacement", "dataset_size": 150},
            r"configs\[1\]\['sample_rate'\]: .* whole batch size",
        ),
        ({"sampler": "truncated_poisson", "dataset_size": 10}, r"\['max_batch_size'\]: missing"),
    ],
)
def test_invalid_configs_are_refused_before_running(bad, match):
    ran = []
    config = dict(CONFIGS[0], **bad)
    config = {k: v for k, v in config.items() if v is not None}
    with pytest.raises(ValueError, match=match):
        sweep([CONFIGS[0], config], progress=lambda f, m: ran.append(f))
    assert ran == []  # nothing ran: the first config was not evaluated either


def test_bad_executor_and_progress():
    with pytest.raises(TypeError, match="executor"):
        sweep(CONFIGS[:1], executor=object())
    with pytest.raises(TypeError, match="progress"):
        sweep(CONFIGS[:1], progress=3)


def test_empty_sweep():
    assert sweep([]) == []


def test_serial_progress_reports_each_config_in_order(serial):
    seen = []
    assert sweep(CONFIGS[:2], progress=lambda f, m: seen.append((f, m))) == serial[:2]
    assert seen == [(0.5, "config 1/2 done"), (1.0, "config 2/2 done")]


@pytest.mark.skipif(importlib.util.find_spec("pandas") is None, reason="pandas not installed")
def test_records_make_a_dataframe(serial):
    frame = sweep_to_dataframe(serial)
    assert len(frame) == len(CONFIGS)
    assert frame["epsilon_upper"].iloc[0] == serial[0]["epsilon_upper"]


def test_sampler_names_are_those_of_sampled_mechanism_with_either_spelling():
    base = {"noise_multiplier": 2.0, "sample_rate": 0.01, "steps": 50, "delta": 1e-5,
            "dataset_size": 1000, "accuracy": 1e-2}
    hyphen = plda.sweep([{**base, "sampler": "without-replacement"}])[0]
    underscore = plda.sweep([{**base, "sampler": "without_replacement"}])[0]
    assert hyphen["epsilon_upper"] == underscore["epsilon_upper"]
    assert hyphen["sampler"] == underscore["sampler"] == "without-replacement"
    assert set(SWEEP_SAMPLERS) <= set(SPEC_SAMPLERS)  # one naming scheme


def test_the_old_step_factories_warn_and_build_what_the_registry_builds():
    import importlib

    from plda.samplers import SamplerStep

    module = importlib.import_module("plda.sweep")
    with pytest.warns(DeprecationWarning, match="0.2.0.*SamplerStep"):
        old = module.WithoutReplacementSampler(1000)
    assert old(2.0, 0.01) == SamplerStep("without-replacement", {"dataset_size": 1000})(2.0, 0.01)
    with pytest.warns(DeprecationWarning, match="0.2.0.*SamplerStep"):
        old = module.TruncatedPoissonSampler(1000, 15)
    new = SamplerStep("truncated-poisson", {"dataset_size": 1000, "max_batch_size": 15})
    assert old(1.0, 0.01) == new(1.0, 0.01)


# ------------------------------------------------ issue 25, item 6: the accountant's spellings
def test_target_delta_is_delta_as_the_calibration_spells_it():
    evaluated = {"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 100, "accuracy": 1e-2}
    calibrated = {"sample_rate": 0.01, "steps": 100, "target_epsilon": 1.0, "accuracy": 1e-2}
    old = sweep([{**evaluated, "delta": 1e-5}, {**calibrated, "delta": 1e-5}])
    new = sweep([{**evaluated, "target_delta": 1e-5}, {**calibrated, "target_delta": 1e-5}])
    assert new[0]["epsilon_upper"] == old[0]["epsilon_upper"]
    assert new[1]["noise_multiplier"] == old[1]["noise_multiplier"] == (
        plda.calibrate_noise_multiplier(1.0, target_delta=1e-5, sample_rate=0.01, steps=100,
                                        accuracy=1e-2))
    both = sweep([{**evaluated, "delta": 1e-5, "target_delta": 1e-5}])
    assert both[0]["epsilon_upper"] == old[0]["epsilon_upper"]
    with pytest.raises(ValueError, match=r"\['target_delta'\]: differs from 'delta'"):
        sweep([{**evaluated, "delta": 1e-5, "target_delta": 1e-6}])


def test_fixed_size_batches_take_batch_size_as_the_accountant_does():
    base = {"noise_multiplier": 2.0, "steps": 50, "delta": 1e-5, "accuracy": 1e-2,
            "sampler": "without-replacement", "dataset_size": 1000}
    by_size, by_rate = sweep([{**base, "batch_size": 10}, {**base, "sample_rate": 0.01}])
    assert by_size["epsilon_upper"] == by_rate["epsilon_upper"]
    assert by_size["sample_rate"] == 0.01 and by_size["batch_size"] == 10
    accountant = plda.PLDAccountant(accuracy=1e-2)
    accountant.step(2.0, count=50, sampler="without-replacement", batch_size=10,
                    dataset_size=1000)
    assert by_size["epsilon_upper"] == accountant.epsilon_bounds(1e-5).upper
    target = {k: v for k, v in base.items() if k not in ("noise_multiplier", "delta")}
    (calibrated,) = sweep([{**target, "batch_size": 10, "target_advantage": 0.1}])
    assert calibrated["noise_multiplier"] == plda.calibrate_noise_multiplier(
        steps=50, target_advantage=0.1, sampler="without-replacement", batch_size=10,
        dataset_size=1000, accuracy=1e-2)


@pytest.mark.parametrize(
    "sampler, sizes",
    [("shuffled", {"num_steps": 10}), ("random_allocation", {"num_steps": 10}),
     ("random-allocation", {"num_steps": 10, "num_selected": 2})],
)
def test_epoch_samplers_are_evaluated_as_the_accountant_records_them(sampler, sizes):
    config = {"noise_multiplier": 2.0, "steps": 30, "delta": 1e-5, "accuracy": 1e-2,
              "sampler": sampler, **sizes}
    (record,) = sweep([config])
    accountant = plda.PLDAccountant(accuracy=1e-2)
    accountant.step(2.0, count=30, sampler=sampler.replace("_", "-"), **sizes)
    bounds = accountant.epsilon_bounds(1e-5)
    assert (record["epsilon_lower"], record["epsilon_upper"]) == (bounds.lower, bounds.upper)


@pytest.mark.parametrize(
    "bad, match",
    [
        ({"sampler": "shuffled", "num_steps": 10, "sample_rate": 0.1},
         r"\['sample_rate'\]: does not apply to sampler 'shuffled'"),
        ({"sampler": "shuffled", "num_steps": 7}, r"\['steps'\]: must be a multiple of"),
        ({"sampler": "shuffled"}, r"\['num_steps'\]: missing"),
        ({"num_steps": 10}, r"\['num_steps'\]: does not apply to sampler 'poisson'"),
        ({"sampler": "poisson", "batch_size": 10}, r"\['batch_size'\]: does not apply"),
        ({"sampler": "without-replacement", "dataset_size": 1000, "batch_size": 20},
         r"\['batch_size'\]: batch_size=20 disagrees"),
        ({"sampler": "without-replacement", "dataset_size": 1000, "batch_size": "10"},
         r"\['batch_size'\]: batch_size must be an integer"),
    ],
)
def test_new_sampler_keys_are_checked_before_running(bad, match):
    config = {"noise_multiplier": 2.0, "steps": 30, "delta": 1e-5, **bad}
    if "sample_rate" not in bad and bad.get("sampler") in (None, "poisson", "without-replacement"):
        config["sample_rate"] = 0.01
    with pytest.raises(ValueError, match=match):
        sweep([config])


def test_epoch_samplers_are_not_calibrated():
    config = {"steps": 30, "target_epsilon": 1.0, "delta": 1e-5, "sampler": "shuffled",
              "num_steps": 10}
    with pytest.raises(ValueError, match=r"draws whole epochs"):
        sweep([config])


# ------------------------------------- audit: a missed accuracy is said, on every executor
MISSED = {"noise_multiplier": 1.0, "sample_rate": 1.0, "steps": 1, "delta": 1e-5,
          "accuracy": 1e-11}
MET = {"noise_multiplier": 1.0, "sample_rate": 1.0, "steps": 1, "delta": 1e-5, "accuracy": 1e-2}


def _exact_gaussian_epsilon(mu, delta):
    """epsilon(delta) of mu-GDP (Balle & Wang 2018) in mpmath, by bisection."""
    import mpmath

    with mpmath.workdps(40):
        mu, delta = mpmath.mpf(mu), mpmath.mpf(delta)

        def profile(e):
            return mpmath.ncdf(-e / mu + mu / 2) - mpmath.exp(e) * mpmath.ncdf(-e / mu - mu / 2)

        lo, hi = mpmath.mpf(0), mpmath.mpf(50)
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (lo, mid) if profile(mid) <= delta else (mid, hi)
        return hi


def _executors():
    yield "serial", None
    yield "thread", concurrent.futures.ThreadPoolExecutor(2)
    yield "process", concurrent.futures.ProcessPoolExecutor(1)
    if importlib.util.find_spec("distributed") is not None:  # pragma: no cover - optional
        import distributed

        cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                           dashboard_address=None)
        yield "dask", distributed.Client(cluster).get_executor()


def test_a_missed_accuracy_is_flagged_and_warned_once_on_every_executor():
    # the sweep computed inside quiet_accuracy(): sigma = 1, q = 1, one step at accuracy 1e-11
    # has a relative gap of 3.9e-10, and neither a warning nor the record said so, where
    # PLDAccountant warns for the same numbers
    exact = _exact_gaussian_epsilon(1.0, 1e-5)  # q = 1, one step: 1-GDP
    configs = [MET, MISSED, dict(MET, delta=1e-6), dict(MISSED, delta=1e-6)]
    seen = None
    for name, executor in _executors():
        with pytest.warns(plda.AccuracyWarning) as caught:
            if executor is None:
                records = sweep(configs)
            else:
                with executor:
                    records = sweep(configs, executor=executor)
        missed = [w for w in caught if issubclass(w.category, plda.AccuracyWarning)]
        assert len(missed) == 1, name
        message = str(missed[0].message)
        assert "2 of 4 configuration(s)" in message and "configs[1]" in message
        assert "configs[3]" in message and "configs[0]" not in message and "1e-11" in message
        assert [r["accuracy_met"] for r in records] == [True, False, True, False], name
        record = records[1]
        assert record["epsilon_lower"] <= exact <= record["epsilon_upper"]
        gap = (record["epsilon_upper"] - record["epsilon_lower"]) / record["epsilon_upper"]
        assert record["relative_gap"] == pytest.approx(gap, rel=1e-12)
        assert 1e-11 < record["relative_gap"] < 1e-8
        assert seen is None or records == seen, name  # identical whatever the executor
        seen = records
    # the accountant warns for the same numbers, and its bounds are the record's
    with pytest.warns(plda.AccuracyWarning):
        accountant = plda.PLDAccountant(accuracy=1e-11)
        accountant.step(1.0, 1.0, count=1)
        bounds = accountant.epsilon_bounds(1e-5)
    assert (seen[1]["epsilon_lower"], seen[1]["epsilon_upper"]) == (bounds.lower, bounds.upper)


def test_records_that_meet_their_accuracy_warn_nothing(recwarn):
    records = sweep([MET, dict(MET, accuracy=None)])
    assert all(r["accuracy_met"] for r in records)
    assert all(0 <= r["relative_gap"] <= 1e-2 for r in records)
    assert not [w for w in recwarn if issubclass(w.category, plda.AccuracyWarning)]


def test_a_calibration_that_misses_its_accuracy_is_flagged_as_the_calibration_warns():
    config = {"sample_rate": 1.0, "steps": 1, "delta": 1e-5, "target_epsilon": 4.0,
              "accuracy": 1e-11}
    with pytest.warns(plda.AccuracyWarning, match=r"calibration result"):
        direct = plda.calibration.calibrate_noise_multiplier_detailed(
            target_epsilon=4.0, target_delta=1e-5, sample_rate=1.0, steps=1, accuracy=1e-11)
    with pytest.warns(plda.AccuracyWarning, match=r"sweep: 1 of 1 .*configs\[0\]"):
        (record,) = sweep([config])
    assert record["noise_multiplier"] == direct.value and record["accuracy_met"] is False
    assert record["relative_gap"] == pytest.approx((direct.upper - direct.lower) / direct.upper)
    # the calibrated sigma's exact epsilon is within the record's certified bracket
    exact = _exact_gaussian_epsilon(1 / record["noise_multiplier"], 1e-5)
    assert record["lower"] <= exact <= record["upper"] <= 4.0


# ----------------------------- audit: every config is checked before anything runs
@pytest.mark.parametrize(
    "bad, match",
    [
        # accuracy=2 passed the check, config 0 ran, then the accountant refused it unnamed
        ({"accuracy": 2.0}, r"^configs\[1\]\['accuracy'\]: accuracy must be in \(0, 1\), got 2"),
        ({"accuracy": 1.0}, r"^configs\[1\]\['accuracy'\]: .*in \(0, 1\)"),
        # NaN was refused with the range (0, inf), not the allowed (0, 1)
        ({"accuracy": float("nan")}, r"^configs\[1\]\['accuracy'\]: .*in \(0, 1\), got nan"),
        ({"accuracy": 0.0}, r"^configs\[1\]\['accuracy'\]: .*in \(0, 1\)"),
        ({"accuracy": "1e-3"}, r"^configs\[1\]\['accuracy'\]: .*real number in \(0, 1\)"),
        # what only the sampler's mechanism checks
        ({"sample_rate": None, "sampler": "random-allocation", "num_steps": 10,
          "num_selected": 20}, r"^configs\[1\]\['num_selected'\]: .*\[1, 10\]"),
        ({"sample_rate": None, "sampler": "random-allocation", "num_steps": 10,
          "noise_multiplier": 0.1}, r"^configs\[1\]\['noise_multiplier'\]: .*at most 1\.45"),
        ({"sample_rate": None, "sampler": "without-replacement", "dataset_size": 100,
          "batch_size": 1000}, r"^configs\[1\]\['batch_size'\]: .*\[1, dataset_size=100\]"),
        ({"sample_rate": None, "sampler": "random-allocation", "num_steps": 10,
          "relation": "replace_one"}, r"^configs\[1\]\['sampler'\]: .*replace-one"),
    ],
)
def test_every_config_is_checked_before_anything_runs(bad, match):
    base = {"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 10, "delta": 1e-5}
    config = {k: v for k, v in dict(base, **bad).items() if v is not None}
    ran = []
    with pytest.raises(ValueError, match=match):
        sweep([base, config], progress=lambda f, m: ran.append(m))
    assert ran == []  # config 0 was not computed either


def test_a_calibration_target_accuracy_is_checked_before_anything_runs():
    base = {"noise_multiplier": 1.0, "sample_rate": 0.01, "steps": 10, "delta": 1e-5}
    calibrated = {"sample_rate": 0.01, "steps": 10, "delta": 1e-5, "target_epsilon": 1.0,
                  "accuracy": 2.0}
    ran = []
    with pytest.raises(ValueError, match=r"^configs\[1\]\['accuracy'\]: .*\(0, 1\)"):
        sweep([base, calibrated], progress=lambda f, m: ran.append(m))
    assert ran == []
