"""``plda epsilon/delta --strategy FILE.npy`` (issue 28, item 4): the command line gives the
library's certified bounds for a matrix mechanism, and refuses what does not describe one."""

from __future__ import annotations

import json

import numpy as np
import pytest

import plda.matrix as pm
from plda.cli import main


@pytest.fixture
def files(tmp_path):
    coefficients = tmp_path / "toeplitz.npy"
    np.save(coefficients, np.array([1.0, 0.5, 0.25]))
    banded = tmp_path / "banded.npy"
    np.save(banded, pm.toeplitz_strategy([1.0, 0.6, 0.3], 24).dense())
    cube = tmp_path / "cube.npy"
    np.save(cube, np.zeros((2, 2, 2)))
    return {"toeplitz": str(coefficients), "banded": str(banded), "cube": str(cube)}


def _json(capsys, argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cyclic_poisson_band_mf_is_the_library_answer(files, capsys):
    got = _json(capsys, ["epsilon", "--strategy", files["toeplitz"], "--strategy-steps", "30",
                         "--noise-multiplier", "1", "--sample-rate", "0.1", "--delta", "1e-5"])
    want = pm.CyclicPoissonBandMF(pm.toeplitz_strategy([1.0, 0.5, 0.25], 30), 1.0, 0.1)
    bounds = want.epsilon_bounds(1e-5)
    assert (got["epsilon_lower"], got["epsilon_upper"]) == (bounds.lower, bounds.upper)
    assert got["bands"] == 3 and got["rounds"] == 10 and got["exact"] is True


def test_a_dense_strategy_without_sampling_is_the_library_answer(files, capsys):
    got = _json(capsys, ["delta", "--strategy", files["banded"], "--noise-multiplier", "3",
                         "--participations", "3", "--min-separation", "8", "--epsilon", "1"])
    want = pm.MultiEpochMF(np.load(files["banded"]), 3.0, participations=3, min_separation=8)
    bounds = want.delta_bounds(1.0)
    assert (got["delta_lower"], got["delta_upper"]) == (bounds.lower, bounds.upper)
    assert got["sensitivity"] == want.sensitivity.value


@pytest.mark.filterwarnings("ignore::plda.AccuracyWarning")  # the bound's own gap
def test_every_step_poisson_sampled_is_the_library_answer(files, capsys):
    got = _json(capsys, ["epsilon", "--strategy", files["toeplitz"], "--strategy-steps", "30",
                         "--noise-multiplier", "4", "--sample-rate", "0.1",
                         "--strategy-sampling", "poisson", "--delta", "1e-5"])
    want = pm.PoissonMatrixMechanism(pm.toeplitz_strategy([1.0, 0.5, 0.25], 30), 4.0, 0.1)
    bounds = want.epsilon_bounds(1e-5)
    assert (got["epsilon_lower"], got["epsilon_upper"]) == (bounds.lower, bounds.upper)
    assert got["sampling"] == "poisson" and got["exact"] is False
    assert got["tail_probability"] == 1e-10


@pytest.mark.parametrize(("extra", "flag"), [
    (["--strategy-sampling", "poisson"], "--strategy-sampling"),  # without --sample-rate
    (["--sample-rate", "0.1", "--strategy-sampling", "poisson", "--bands", "3"], "--bands"),
])
def test_poisson_strategy_sampling_refuses_what_it_cannot_use(files, capsys, extra, flag):
    assert main(["epsilon", "--strategy", files["toeplitz"], "--noise-multiplier", "4",
                 "--delta", "1e-5", *extra]) == 2
    assert f"argument {flag}" in capsys.readouterr().err


def test_the_human_output_names_the_reduction(files, capsys):
    assert main(["epsilon", "--strategy", files["toeplitz"], "--noise-multiplier", "1",
                 "--sample-rate", "0.1", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    assert "cyclic Poisson BandMF" in out and "certified upper bound" in out


@pytest.mark.parametrize(("extra", "flag"), [
    (["--steps", "10"], "--steps"),
    (["--sampler", "shuffled"], "--sampler"),
    (["--group-size", "2"], "--group-size"),
    (["--relation", "replace_one"], "--relation"),
    (["--bands", "4"], "--bands"),
    (["--strategy-steps", "5"], "--strategy-steps"),
])
def test_flags_that_do_not_describe_a_matrix_mechanism_are_refused(files, capsys, extra, flag):
    code = main(["epsilon", "--strategy", files["banded"], "--noise-multiplier", "1",
                 "--delta", "1e-5", *extra])
    assert code == 2
    assert f"argument {flag}" in capsys.readouterr().err


@pytest.mark.parametrize(("name", "extra", "words"), [
    ("missing", ["--noise-multiplier", "1"], "cannot read"),
    ("cube", ["--noise-multiplier", "1"], "3-D"),
    ("banded", [], "--noise-multiplier"),
    ("banded", ["--noise-multiplier", "1", "--participations", "99"], "participations"),
    ("banded", ["--noise-multiplier", "1", "--sample-rate", "0.1", "--participations", "2"],
     "--participations"),
])
def test_bad_strategy_input_is_one_line_naming_the_flag(files, capsys, name, extra, words):
    path = files.get(name, "/nonexistent/strategy.npy")
    assert main(["epsilon", "--strategy", path, "--delta", "1e-5", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("plda: error: argument --") and words in err
    assert err.count("\n") == 1
