"""Command line: outputs, JSON, exit codes, one-line errors naming the argument."""

import importlib
import json
import subprocess
import sys
import warnings

import pytest

import plda
from plda.cli import main, parse_mechanism


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_epsilon_dpsgd_json_matches_the_engine(capsys):
    code, out, err = run(
        capsys,
        "epsilon",
        "--noise-multiplier",
        "1.0",
        "--sample-rate",
        "0.02",
        "--steps",
        "50",
        "--delta",
        "1e-5",
        "--accuracy",
        "1e-2",
        "--json",
    )
    assert code == 0 and err == ""
    data = json.loads(out)
    pld = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(1.0), 0.02), 50, accuracy=1e-2
    )
    assert (data["epsilon_lower"], data["epsilon_upper"]) == tuple(pld.epsilon_bounds(1e-5))
    assert data["epsilon"] == data["epsilon_upper"] and data["steps"] == 50


def test_mechanism_list_human_and_json(capsys):
    argv = [
        "epsilon",
        "--mechanism",
        "gaussian:sigma=2",
        "--count",
        "10",
        "--mechanism",
        "laplace:scale=3",
        "--delta",
        "1e-6",
        "--accuracy",
        "1e-2",
    ]
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "certified upper bound" in out and "10 x gaussian:sigma=2" in out
    code, out, _ = run(capsys, *argv, "--json")
    data = json.loads(out)
    pld = plda.PrivacyLossDistribution(
        ((plda.Gaussian(2.0), 10), (plda.Laplace(3.0), 1)), accuracy=1e-2
    )
    assert data["epsilon_upper"] == pld.epsilon(1e-6)
    assert data["mechanisms"][0] == {"mechanism": "gaussian:sigma=2", "count": 10}


def test_delta_command(capsys):
    code, out, _ = run(
        capsys,
        "delta",
        "--mechanism",
        "gaussian:sigma=1",
        "--count",
        "4",
        "--epsilon",
        "1",
        "--accuracy",
        "1e-2",
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and 0 < data["delta_lower"] <= data["delta_upper"] < 1


def test_calibrate_command(capsys):
    code, out, _ = run(
        capsys,
        "calibrate",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--sample-rate",
        "0.02",
        "--steps",
        "100",
        "--accuracy",
        "1e-2",
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and data["calibrated"] == "noise_multiplier"
    assert data["epsilon_upper"] <= 1.0 and data["within_tolerance"]
    code, out, _ = run(
        capsys,
        "calibrate",
        "--epsilon",
        "1",
        "--delta",
        "1e-5",
        "--sample-rate",
        "0.02",
        "--noise-multiplier",
        "1.0",
        "--accuracy",
        "1e-2",
    )
    assert code == 0 and out.startswith("steps = ")


def test_parse_mechanism_specs():
    assert parse_mechanism("gaussian:sigma=2") == plda.Gaussian(2.0)
    assert parse_mechanism("laplace:scale=3,sensitivity=2") == plda.Laplace(3.0, 2.0)
    assert parse_mechanism("discrete_laplace:parameter=0.5") == plda.DiscreteLaplace(0.5)
    assert parse_mechanism("approximate_dp:epsilon=1,delta=1e-6") == plda.ApproximateDP(1, 1e-6)
    assert parse_mechanism("gaussian:sigma=2,sample_rate=0.1") == plda.PoissonSampled(
        plda.Gaussian(2.0), 0.1
    )


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["epsilon", "--sample-rate", "2"], "--sample-rate"),
        (["epsilon", "--noise-multiplier", "-1"], "--noise-multiplier"),
        (["epsilon", "--steps", "0"], "--steps"),
        (["epsilon", "--delta", "1.5"], "--delta"),
        (["epsilon", "--accuracy", "0"], "--accuracy"),
        (["epsilon", "--steps", "many"], "--steps"),
        (["epsilon", "--steps", "100000000000000000000"], "--steps"),  # (it named 'count')
        (["epsilon", "--mechanism", "foo:x=1"], "--mechanism"),
        (["epsilon", "--mechanism", "gaussian:sigma=-1"], "--mechanism"),
        (["epsilon", "--mechanism", "gaussian:width=1"], "--mechanism"),
        (["epsilon", "--count", "3"], "--count"),
        (["epsilon", "--mechanism", "gaussian:sigma=1", "--count", "0"], "--count"),
        (["delta"], "--epsilon"),
        (["calibrate", "--epsilon", "1", "--delta", "1e-5", "--steps", "3"], "--sample-rate"),
        (
            [
                "calibrate",
                "--epsilon",
                "-1",
                "--delta",
                "1e-5",
                "--steps",
                "3",
                "--sample-rate",
                "0.1",
            ],
            "--epsilon",
        ),
        (["epsilon", "--relation", "bounded"], "--relation"),
        (["frobnicate"], "frobnicate"),
        (["plot", "bogus"], "bogus"),
    ],
)
def test_errors_are_one_line_with_exit_code_2(capsys, argv, flag):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("plda: error:") and flag in err


def test_unreachable_calibration_is_an_error(capsys):
    code, _, err = run(
        capsys,
        "calibrate",
        "--epsilon",
        "0.001",
        "--delta",
        "1e-5",
        "--noise-multiplier",
        "0.5",
        "--sample-rate",
        "0.5",
        "--accuracy",
        "1e-2",
    )
    assert code == 2 and "one step already gives" in err and err.count("\n") == 1


@pytest.mark.slow
def test_python_dash_m_plda_prints_the_reference_bounds():
    done = subprocess.run(
        [sys.executable, "-m", "plda"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0
    assert "14062 steps" in done.stdout and "epsilon <= 2.38" in done.stdout


@pytest.mark.parametrize(
    "argv, missing",
    [
        # this used to run silently with the reference run's 14062 steps
        (["epsilon", "--noise-multiplier", "1", "--sample-rate", "0.01", "--delta", "1e-5"],
         "--steps"),
        (["epsilon", "--noise-multiplier", "1", "--sample-rate", "0.01", "--steps", "10"],
         "--delta"),
        (["epsilon", "--mechanism", "gaussian:sigma=2"], "--delta"),
        (["delta", "--epsilon", "1", "--steps", "10"], "--noise-multiplier, --sample-rate"),
    ],
)
def test_missing_required_values_are_an_error_not_a_default(capsys, argv, missing):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "required" in err and missing in err


def test_steps_accepts_integer_valued_scientific_notation(capsys):
    argv = ["epsilon", "--noise-multiplier", "2", "--sample-rate", "0.01", "--delta", "1e-5",
            "--json", "--accuracy", "1e-2"]
    code, out, _ = run(capsys, *argv, "--steps", "1e2")
    assert code == 0 and json.loads(out)["steps"] == 100
    code, out, err = run(capsys, *argv, "--steps", "1.5")
    assert code == 2 and out == "" and "--steps" in err and "integer" in err
    assert err.count("\n") == 1


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"plda {plda.__version__}"


def test_progress_printer_only_on_a_terminal():
    import io

    from plda.cli import StderrProgress, progress_printer

    assert progress_printer(io.StringIO()) is None  # a pipe or a log: no progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    printer = progress_printer(stream)
    assert isinstance(printer, StderrProgress)
    printer(0.5, "noise multiplier in [1.0, 2.0]")
    printer(1.0, "done")
    printer.close()
    text = stream.getvalue()
    assert " 50.0% noise multiplier in [1.0, 2.0]" in text and "100.0% done" in text
    assert "\n" not in text  # redraws one line, never scrolls


def test_package_is_typed_and_lists_lazy_submodules():
    from importlib import resources

    assert resources.files("plda").joinpath("py.typed").is_file()
    for name in ("adapters", "plot", "theorems", "calibration"):
        assert name in dir(plda)
    assert "accountant" not in dir(plda)  # deprecated (plda.PLDAccountant), removed in 0.2.0


# ------------------------------------------------------------------ samplers (issue 14)
EPS_ARGS = ["epsilon", "--noise-multiplier", "2", "--delta", "1e-5", "--accuracy", "1e-2"]

SAMPLER_CASES = {
    "poisson": (["--sample-rate", "0.02", "--steps", "40"],
                lambda g: (plda.PoissonSampled(g, 0.02), 40)),
    "without-replacement": (["--batch-size", "20", "--dataset-size", "1000", "--steps", "40"],
                            lambda g: (plda.SampledWithoutReplacement(g, 20, 1000), 40)),
    "truncated-poisson": (
        ["--sample-rate", "0.02", "--max-batch-size", "25", "--dataset-size", "1000",
         "--steps", "40"],
        lambda g: (plda.TruncatedPoisson(g, 0.02, 25, 1000), 40),
    ),
    "shuffled": (["--num-steps", "2", "--steps", "4"], lambda g: (plda.Shuffled(g, 2), 2)),
    "random-allocation": (["--num-steps", "5", "--steps", "10"],
                          lambda g: (plda.RandomAllocation(g, 5), 2)),
}


@pytest.mark.parametrize("sampler", list(SAMPLER_CASES))
def test_sampler_bounds_are_the_library_bracket(capsys, sampler):
    flags, build = SAMPLER_CASES[sampler]
    code, out, _ = run(capsys, *EPS_ARGS, "--sampler", sampler, *flags, "--json")
    assert code == 0
    data = json.loads(out)
    mechanism, count = build(plda.Gaussian(2.0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NotTightWarning / SamplerAssumptionWarning
        upper = plda.PrivacyLossDistribution.from_mechanism(mechanism, count, accuracy=1e-2)
        lower = plda.PrivacyLossDistribution.from_mechanism(
            mechanism.lower_bound_mechanism(), count, accuracy=1e-2
        )
        expected_upper = upper.epsilon_bounds(1e-5).upper
        expected_lower = lower.epsilon_bounds(1e-5).lower
    assert data["sampler"] == sampler
    assert data["epsilon_upper"] == pytest.approx(expected_upper, rel=1e-12)
    assert data["epsilon_lower"] == pytest.approx(expected_lower, rel=1e-12)
    assert data["epsilon_lower"] <= data["epsilon_upper"]
    code, out, _ = run(capsys, *EPS_ARGS, "--sampler", sampler, *flags)  # human output
    assert code == 0 and "certified upper bound" in out and f"{data['steps']} steps" in out


def test_the_default_sampler_is_poisson_and_help_says_so(capsys):
    flags = SAMPLER_CASES["poisson"][0]
    _, default, _ = run(capsys, *EPS_ARGS, *flags, "--json")
    _, explicit, _ = run(capsys, *EPS_ARGS, *flags, "--json", "--sampler", "poisson")
    assert json.loads(default) == json.loads(explicit)
    with pytest.raises(SystemExit):
        main(["epsilon", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default: poisson" in text and "Opacus" in text and "DPDataLoader" in text


def test_delta_command_takes_a_sampler(capsys):
    code, out, _ = run(capsys, "delta", "--noise-multiplier", "1", "--epsilon", "1",
                       "--sampler", "without-replacement", "--batch-size", "20",
                       "--dataset-size", "1000", "--steps", "40", "--accuracy", "1e-2", "--json")
    data = json.loads(out)
    assert code == 0 and data["sampler"] == "without-replacement"
    assert 0 < data["delta_lower"] <= data["delta_upper"] < 1


@pytest.mark.parametrize(
    "sampler, flags, missing",
    [
        ("without-replacement", ["--batch-size", "20"], "--dataset-size"),
        ("without-replacement", [], "--batch-size, --dataset-size"),
        ("truncated-poisson", ["--sample-rate", "0.02", "--dataset-size", "1000"],
         "--max-batch-size"),
        ("shuffled", [], "--num-steps"),
        ("random-allocation", [], "--num-steps"),
        ("poisson", [], "--sample-rate"),
    ],
)
def test_a_sampler_without_its_size_flags_is_an_error(capsys, sampler, flags, missing):
    code, out, err = run(capsys, *EPS_ARGS, "--steps", "10", "--sampler", sampler, *flags)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "required" in err and missing in err


@pytest.mark.parametrize(
    "argv, words",
    [
        # a flag the sampler does not use would be ignored silently
        (["--sampler", "shuffled", "--num-steps", "5", "--sample-rate", "0.1"],
         ["--sample-rate", "not used by --sampler shuffled"]),
        (["--sample-rate", "0.1", "--batch-size", "10"], ["--batch-size", "poisson"]),
        # the epoch samplers count whole epochs
        (["--sampler", "shuffled", "--num-steps", "3"], ["--steps", "multiple", "--steps 12"]),
        # the library's own refusals, one line, naming the argument
        (["--sampler", "without-replacement", "--batch-size", "20", "--dataset-size", "10"],
         ["batch_size", "dataset_size"]),
        (["--sampler", "random-allocation", "--num-steps", "5", "--num-selected", "6"],
         ["num_selected"]),
        (["--sampler", "random-allocation", "--num-steps", "5", "--relation", "replace_one"],
         ["--relation", "replace_one", "RandomAllocation"]),
        (["--sampler", "bogus"], ["--sampler"]),
        (["--sampler", "shuffled", "--num-steps", "0"], ["--num-steps"]),
    ],
)
def test_sampler_errors_are_one_line_with_exit_code_2(capsys, argv, words):
    argv = ["--steps", "10", *argv] if "--steps" not in argv else argv
    code, out, err = run(capsys, *EPS_ARGS, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("plda: error:")
    for word in words:
        assert word in err


def test_sampler_flags_are_refused_with_a_mechanism_list(capsys):
    code, _, err = run(capsys, "epsilon", "--mechanism", "gaussian:sigma=1", "--delta", "1e-5",
                       "--sampler", "shuffled")
    assert code == 2 and "--sampler" in err and err.count("\n") == 1


def test_shuffled_loader_assumption_is_one_warning_line(capsys):
    # parameters no other test uses: the law (and its warning) is computed once per process
    code, out, err = run(capsys, "epsilon", "--noise-multiplier", "1.37", "--delta", "1e-5",
                         "--accuracy", "1e-2", "--sampler", "shuffled", "--num-steps", "2",
                         "--steps", "2")
    assert code == 0 and "certified upper bound" in out
    lines = [line for line in err.splitlines() if "slot" in line]
    assert len(lines) == 1 and lines[0].startswith("plda: warning:")


# ------------------------------------------------------------------ risk targets (issue 15)
CAL_FAST = ["--sample-rate", "0.05", "--steps", "20", "--accuracy", "1e-2", "--json"]


def test_calibrate_to_a_true_positive_rate_target_is_the_library_result(capsys):
    code, out, err = run(capsys, "calibrate", "--target-true-positive-rate", "0.05",
                         "--at-false-positive-rate", "1e-3", *CAL_FAST)
    assert code == 0, err
    data = json.loads(out)
    expected = plda.calibrate_noise_multiplier(
        sample_rate=0.05, steps=20, target_true_positive_rate=0.05,
        at_false_positive_rate=1e-3, accuracy=1e-2,
    )
    assert data["calibrated"] == "noise_multiplier" and data["objective"] == "true_positive_rate"
    assert data["noise_multiplier"] == pytest.approx(expected, rel=1e-12)
    assert data["true_positive_rate_lower"] <= data["true_positive_rate_upper"] <= 0.05
    assert data["at_false_positive_rate"] == 1e-3
    code, out, _ = run(capsys, "calibrate", "--target-true-positive-rate", "0.05",
                       "--at-false-positive-rate", "1e-3", *CAL_FAST[:-1])
    assert code == 0 and "true-positive rate 0.05 at false-positive rate 0.001" in out
    assert "<= true-positive rate <=" in out


def test_calibrate_to_an_advantage_target_calibrates_any_parameter(capsys):
    code, out, _ = run(capsys, "calibrate", "--target-advantage", "0.2", "--noise-multiplier",
                       "1", "--sample-rate", "0.05", "--accuracy", "1e-2", "--json")
    data = json.loads(out)
    expected = plda.calibrate_steps(noise_multiplier=1.0, sample_rate=0.05,
                                    target_advantage=0.2, accuracy=1e-2)
    assert code == 0 and data["calibrated"] == "steps" and data["steps"] == expected
    assert data["advantage_lower"] <= data["advantage_upper"] <= 0.2
    code, out, _ = run(capsys, "calibrate", "--target-advantage", "0.2", *CAL_FAST)
    data = json.loads(out)
    assert code == 0 and data["objective"] == "advantage" and data["advantage_upper"] <= 0.2


def test_calibrate_json_echoes_the_relation_it_calibrated_under(capsys):
    # the same key as the other records (plda epsilon --json), which a calibration feeds
    code, out, _ = run(capsys, "epsilon", "--noise-multiplier", "1", "--delta", "1e-5",
                       *CAL_FAST[:-1], "--json")
    assert code == 0 and json.loads(out)["relation"] == "add_remove"
    code, out, _ = run(capsys, "calibrate", "--target-advantage", "0.2", *CAL_FAST)
    assert code == 0 and json.loads(out)["relation"] == "add_remove"  # the default
    code, out, err = run(capsys, "calibrate", "--target-advantage", "0.2", *CAL_FAST,
                         "--relation", "replace_one")
    assert code == 0, err
    data = json.loads(out)
    assert data["relation"] == "replace_one"
    expected = plda.calibrate_noise_multiplier(sample_rate=0.05, steps=20, target_advantage=0.2,
                                               relation="replace_one", accuracy=1e-2)
    assert data["noise_multiplier"] == pytest.approx(expected, rel=1e-12)
    code, out, err = run(capsys, "calibrate", "--epsilon", "3", "--delta", "1e-5", "--sampler",
                         "without-replacement", "--batch-size", "10", "--dataset-size", "200",
                         "--steps", "20", "--relation", "replace_one", "--accuracy", "1e-2",
                         "--json")
    assert code == 0, err
    assert json.loads(out)["relation"] == "replace_one"  # a sampler's calibration too


@pytest.mark.parametrize(
    "targets, words",
    [
        ([], ["exactly one target", "none"]),
        (["--epsilon", "1", "--delta", "1e-5", "--target-advantage", "0.1"],
         ["exactly one target", "--epsilon and --target-advantage"]),
        (["--target-true-positive-rate", "0.1"], ["required", "--at-false-positive-rate"]),
        (["--epsilon", "1"], ["required", "--delta"]),
        (["--target-advantage", "0.1", "--delta", "1e-5"], ["--delta", "only used with --epsilon"]),
        (["--epsilon", "1", "--delta", "1e-5", "--at-false-positive-rate", "0.1"],
         ["--at-false-positive-rate", "--target-true-positive-rate"]),
        (["--target-true-positive-rate", "1e-4", "--at-false-positive-rate", "1e-3"],
         ["--target-true-positive-rate", "(0.001, 1)"]),
        (["--target-true-positive-rate", "0.1", "--at-false-positive-rate", "0"],
         ["--at-false-positive-rate"]),
        (["--target-advantage", "1"], ["--target-advantage", "(0, 1)"]),
    ],
)
def test_calibration_target_errors_are_one_line_with_exit_code_2(capsys, targets, words):
    code, out, err = run(capsys, "calibrate", *targets, "--sample-rate", "0.05", "--steps", "20")
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("plda: error:")
    for word in words:
        assert word in err


@pytest.mark.parametrize(
    "flags, calibrated",
    [
        (["--sampler", "without-replacement", "--batch-size", "10", "--dataset-size", "200",
          "--steps", "20"], "noise_multiplier"),
        (["--sampler", "truncated-poisson", "--sample-rate", "0.05", "--max-batch-size", "12",
          "--dataset-size", "200", "--steps", "20"], "noise_multiplier"),
        (["--sampler", "random-allocation", "--num-steps", "4", "--noise-multiplier", "2"],
         "steps"),
    ],
)
def test_calibrate_with_a_sampler_meets_the_target_on_that_sampler(capsys, flags, calibrated):
    code, out, err = run(capsys, "calibrate", "--epsilon", "3", "--delta", "1e-5", *flags,
                         "--accuracy", "1e-2", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["calibrated"] == calibrated and data["epsilon_upper"] <= 3.0
    assert 0 <= data["epsilon_lower"] <= data["epsilon_upper"]
    # an independent check with `plda epsilon` at the calibrated value: the same bounds
    check = ["epsilon", "--delta", "1e-5", "--accuracy", "1e-2", "--json", *flags]
    if calibrated == "noise_multiplier":
        check += ["--noise-multiplier", repr(data["noise_multiplier"])]
    else:
        check += ["--steps", str(data["steps"])]
        assert data["steps"] % 4 == 0 and data["epochs"] == data["steps"] // 4
    _, again, _ = run(capsys, *check)
    again = json.loads(again)
    assert again["epsilon_upper"] == pytest.approx(data["epsilon_upper"], rel=1e-9)
    assert again["epsilon_lower"] == pytest.approx(data["epsilon_lower"], rel=1e-9)


@pytest.mark.parametrize(
    "flags, words",
    [
        # a sampler's sizes are given, only the noise multiplier or the steps is calibrated
        (["--sampler", "shuffled", "--num-steps", "4"],
         ["--noise-multiplier/--steps", "missing: --noise-multiplier, --steps"]),
        (["--sampler", "shuffled", "--num-steps", "4", "--noise-multiplier", "2", "--steps",
          "8"], ["exactly one of the two", "missing: none"]),
        (["--sampler", "without-replacement", "--batch-size", "10", "--noise-multiplier", "2",
          "--steps", "20"], ["required", "--dataset-size"]),
        (["--sampler", "shuffled", "--num-steps", "4", "--noise-multiplier", "2", "--steps",
          "4", "--sample-rate", "0.1"], ["--sample-rate", "not used by --sampler shuffled"]),
    ],
)
def test_calibrate_sampler_errors(capsys, flags, words):
    code, out, err = run(capsys, "calibrate", "--epsilon", "1", "--delta", "1e-5", *flags)
    assert code == 2 and out == "" and err.count("\n") == 1
    for word in words:
        assert word in err


def test_risk_command_reports_the_certified_attack_bounds(capsys):
    argv = ["risk", "--noise-multiplier", "2", "--sample-rate", "0.05", "--steps", "20",
            "--accuracy", "1e-2", "--false-positive-rate", "0.01", "0.1"]
    code, out, _ = run(capsys, *argv, "--json")
    assert code == 0
    data = json.loads(out)
    pld = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(2.0), 0.05), 20, accuracy=1e-2
    )
    for i, alpha in enumerate((0.01, 0.1)):
        tpr = pld.true_positive_rate_bounds(alpha)
        assert data["true_positive_rate_lower"][i] == pytest.approx(tpr.lower, rel=1e-12)
        assert data["true_positive_rate_upper"][i] == pytest.approx(tpr.upper, rel=1e-12)
        assert alpha <= data["true_positive_rate_lower"][i]
    adv = pld.advantage_bounds()
    assert data["advantage_upper"] == pytest.approx(adv.upper, rel=1e-12)
    assert data["advantage_lower"] == pytest.approx(adv.lower, rel=1e-12)
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "at false-positive rate 0.01:" in out and "<= advantage <=" in out


def test_risk_command_with_a_bracketed_sampler_takes_the_realized_lower_bound(capsys):
    code, out, _ = run(capsys, "risk", "--noise-multiplier", "2", "--sampler",
                       "truncated-poisson", "--sample-rate", "0.05", "--max-batch-size", "12",
                       "--dataset-size", "200", "--steps", "20", "--accuracy", "1e-2",
                       "--false-positive-rate", "0.01", "--json")
    data = json.loads(out)
    trunc = plda.TruncatedPoisson(plda.Gaussian(2.0), 0.05, 12, 200)
    realized = plda.PrivacyLossDistribution.from_mechanism(
        trunc.lower_bound_mechanism(), 20, accuracy=1e-2
    )
    assert code == 0
    assert data["advantage_lower"] == pytest.approx(realized.advantage_bounds().lower, rel=1e-12)
    assert data["advantage_lower"] < data["advantage_upper"]


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["--false-positive-rate", "-0.1"], "--false-positive-rate"),
        (["--false-positive-rate", "1.5"], "--false-positive-rate"),
        (["--false-positive-rate", "nan"], "--false-positive-rate"),
        (["--steps", "x"], "--steps"),
    ],
)
def test_risk_command_errors(capsys, argv, flag):
    code, out, err = run(capsys, "risk", "--noise-multiplier", "2", "--sample-rate", "0.05",
                         *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and flag in err


def test_risk_command_takes_the_false_positive_rates_the_api_takes(capsys):
    # the API's true_positive_rate_bounds takes alpha in [0, 1]; the CLI refused 0 and 1
    code, out, _ = run(capsys, "risk", "--noise-multiplier", "2", "--sample-rate", "0.05",
                       "--steps", "10", "--accuracy", "1e-2", "--false-positive-rate", "0", "1",
                       "--json")
    data = json.loads(out)
    pld = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(2.0), 0.05), 10, accuracy=1e-2)
    assert code == 0 and data["false_positive_rate"] == [0.0, 1.0]
    for i, alpha in enumerate((0.0, 1.0)):
        bounds = pld.true_positive_rate_bounds(alpha)
        assert data["true_positive_rate_lower"][i] == float(bounds.lower)
        assert data["true_positive_rate_upper"][i] == float(bounds.upper)


# ------------------------------------------------------------------ plda plot (issue 15 item 6)
PLOT_RUN = ["--noise-multiplier", "1", "--sample-rate", "0.02", "--steps", "30"]


@pytest.mark.parametrize(
    "argv, missing",
    [
        (["profile"], "--noise-multiplier, --sample-rate, --steps"),
        (["tradeoff", "--noise-multiplier", "1", "--sample-rate", "0.02"], "--steps"),
        (["steps", *PLOT_RUN], "--delta"),  # used to be a silent 1e-5
        (["comparison", "--steps", "30", "--delta", "1e-5"], "--noise-multiplier, --sample-rate"),
    ],
)
def test_plot_missing_values_are_an_error_not_a_default(capsys, tmp_path, argv, missing):
    code, out, err = run(capsys, "plot", *argv, "-o", str(tmp_path / "figure.png"))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "required" in err and missing in err
    assert not (tmp_path / "figure.png").exists()


def test_plot_refuses_a_delta_it_would_ignore(capsys, tmp_path):
    code, _, err = run(capsys, "plot", "tradeoff", *PLOT_RUN, "--delta", "1e-5",
                       "-o", str(tmp_path / "figure.png"))
    assert code == 2 and "--delta" in err and "not used" in err and err.count("\n") == 1


@pytest.mark.parametrize("suffix, magic", [(".pdf", b"%PDF"), (".svg", b"<?xml"),
                                           (".png", b"\x89PNG")])
def test_plot_writes_pdf_svg_png_and_takes_steps_in_scientific_notation(capsys, tmp_path,
                                                                         suffix, magic):
    pytest.importorskip("matplotlib")
    output = tmp_path / f"profile{suffix}"
    code, out, err = run(capsys, "plot", "profile", "--noise-multiplier", "1", "--sample-rate",
                         "0.02", "--steps", "3e1", "-o", str(output))
    assert code == 0, err
    assert out.strip() == f"wrote {output}" and output.read_bytes().startswith(magic)


def test_plot_to_a_missing_folder_is_a_one_line_error(capsys, tmp_path):
    output = tmp_path / "no" / "such" / "figure.pdf"
    code, out, err = run(capsys, "plot", "profile", *PLOT_RUN, "-o", str(output))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("plda: error: output folder") and "does not exist" in err


@pytest.mark.parametrize(
    "argv",
    [
        ["epsilon", "--steps", "1e6"],
        ["delta", "--epsilon", "1", "--steps", "1e6"],
        ["calibrate", "--steps", "1e6"],
        ["risk", "--steps", "1e6"],
        ["plot", "profile", "--steps", "1e6"],
    ],
)
def test_every_command_accepts_integral_steps_in_scientific_notation(argv):
    from plda.cli.parser import build_parser

    assert build_parser().parse_args(argv).steps == 10**6


def documented_commands() -> list[tuple[str, list[str]]]:
    """``(where, argv)`` of every ``plda ...`` line in the shell blocks of README and docs
    (``$ `` prompts, ``\\`` continuations and ``#`` comments removed)."""
    import shlex
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    found = []
    for page in [root / "README.md", *sorted((root / "docs").rglob("*.md"))]:
        lines = page.read_text(encoding="utf-8").splitlines()
        in_shell, command, start = False, "", 0
        for number, line in enumerate(lines, 1):
            fence = line.strip()
            if fence.startswith("```"):
                in_shell = not in_shell and fence[3:].strip() in ("bash", "console", "sh", "shell")
                continue
            if not in_shell:
                continue
            text = line.strip().removeprefix("$ ")
            if not command and not text.startswith("plda "):
                continue
            start = start if command else number
            command += " " + text.split(" #")[0].rstrip().removesuffix("\\")
            if not text.split(" #")[0].rstrip().endswith("\\"):
                found.append((f"{page.name}:{start}", shlex.split(command)[1:]))
                command = ""
    return found


def test_every_documented_command_line_parses():
    from plda.cli.parser import build_parser

    commands = documented_commands()
    assert any(argv[:1] == ["risk"] for _, argv in commands)  # the page shows the new command
    from plda.cli.samplers import sampler_run
    from plda.cli.specs import composition
    from plda.cli.targets import calibration_target

    for where, argv in commands:
        try:
            args = build_parser().parse_args(argv)
            # the checks each command runs before computing (flags, sizes, targets, samplers)
            if getattr(args, "strategy", None) is not None:  # a matrix mechanism
                from plda.cli.matrix import matrix_reduction

                matrix_reduction(args)
            elif args.command in ("epsilon", "delta", "risk"):
                composition(args)
            elif args.command == "calibrate":
                calibration_target(args)
                flags = ("--noise-multiplier", "--sample-rate", "--steps")
                left_out = [f for f in flags if getattr(args, f[2:].replace("-", "_")) is None]
                sampler_run(args, calibrated=left_out[0])
        except Exception as exc:  # noqa: BLE001 - name the page and line
            pytest.fail(f"{where}: plda {' '.join(argv)}: {exc}")


def test_the_console_script_and_python_dash_m_reach_main():
    import re
    from pathlib import Path

    import plda.cli

    pyproject = (Path(__file__).resolve().parents[1] / "pyproject.toml").read_text("utf-8")
    target = re.search(r'^plda = "([\w.]+):(\w+)"$', pyproject, re.MULTILINE)
    assert target, "the [project.scripts] entry of plda"
    assert getattr(importlib.import_module(target[1]), target[2]) is plda.cli.main
    done = subprocess.run([sys.executable, "-m", "plda", "--version"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == f"plda {plda.__version__}"


def test_plot_takes_a_sampler_whose_band_is_certified(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    output = tmp_path / "wor.svg"
    code, out, err = run(capsys, "plot", "profile", "--noise-multiplier", "2", "--steps", "20",
                         "--sampler", "without-replacement", "--batch-size", "10",
                         "--dataset-size", "200", "-o", str(output))
    assert code == 0, err
    assert output.read_bytes().startswith(b"<?xml")


@pytest.mark.parametrize(
    "argv, words",
    [
        # a bracket from two pairs cannot be drawn as one PLD's band
        (["tradeoff", "--sampler", "shuffled", "--num-steps", "2"], ["shuffled", "plda epsilon"]),
        (["steps", "--sampler", "without-replacement", "--batch-size", "10", "--dataset-size",
          "200", "--delta", "1e-5"], ["Poisson-sampled runs only"]),
        (["tradeoff", "--sampler", "without-replacement", "--batch-size", "10"],
         ["required", "--dataset-size"]),
        (["tradeoff", "--sample-rate", "0.1", "--num-steps", "2"], ["--num-steps", "not used"]),
    ],
)
def test_plot_sampler_errors(capsys, tmp_path, argv, words):
    code, out, err = run(capsys, "plot", *argv, "--noise-multiplier", "2", "--steps", "20",
                         "-o", str(tmp_path / "figure.png"))
    assert code == 2 and out == "" and err.count("\n") == 1
    for word in words:
        assert word in err


def test_random_allocation_with_several_steps_per_record(capsys):
    """--num-selected > 1 is accepted and gives the library's bracket (issue 14)."""
    flags = ["--sampler", "random-allocation", "--num-steps", "6", "--num-selected", "2",
             "--steps", "12"]
    code, out, _ = run(capsys, *EPS_ARGS, *flags, "--json")
    assert code == 0
    data = json.loads(out)
    epoch = plda.RandomAllocation(plda.Gaussian(2.0), 6, 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NotTightWarning
        upper = plda.PrivacyLossDistribution.from_mechanism(epoch, 2, accuracy=1e-2)
        lower = plda.PrivacyLossDistribution.from_mechanism(
            epoch.lower_bound_mechanism(), 2, accuracy=1e-2
        )
        expected_upper = upper.epsilon_bounds(1e-5).upper
        expected_lower = lower.epsilon_bounds(1e-5).lower
    assert data["epsilon_upper"] == pytest.approx(expected_upper, rel=1e-12)
    assert data["epsilon_lower"] == pytest.approx(expected_lower, rel=1e-12)
    assert data["epsilon_lower"] < data["epsilon_upper"]
    code, out, _ = run(capsys, *EPS_ARGS, *flags)  # human output
    assert code == 0 and "2 of 6 steps per epoch" in out
