"""Plots render with the Agg backend to non-empty PNGs with the expected curves; the CLI helper
writes its PNG; importing the modules does not import matplotlib."""

from __future__ import annotations

import argparse
import subprocess
import sys

import numpy as np
import pytest

import plda

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from plda.plot import profiles  # noqa: E402
from plda.plot.cli import add_plot_parser, plot_command  # noqa: E402

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
STEP = plda.PoissonSampled(plda.Gaussian(1.0), sample_rate=0.02)


@pytest.fixture()
def ax():
    figure, axes = plt.subplots()
    yield axes
    plt.close(figure)


def save(ax, path):
    ax.figure.savefig(path, dpi=60)
    data = path.read_bytes()
    assert data.startswith(PNG_MAGIC) and len(data) > 2000
    return data


@pytest.fixture(scope="module")
def pld():
    return plda.PrivacyLossDistribution.from_mechanism(STEP).self_compose(200)


def test_tradeoff_plot(pld, ax, tmp_path):
    out = profiles.tradeoff(pld, ax, reference_mu=1.0)
    assert out is ax
    labels = [line.get_label() for line in ax.get_lines()]
    assert len(labels) == 3  # certified curve, perfect privacy, reference GDP
    assert any("GDP" in label for label in labels)
    assert len(ax.collections) == 1  # the certified band
    x, y = ax.get_lines()[0].get_data()
    np.testing.assert_allclose(y, plda.tradeoff.tradeoff(pld, x))
    assert ax.get_xlabel() and ax.get_ylabel()
    save(ax, tmp_path / "tradeoff.png")


def test_membership_inference_view(pld, ax, tmp_path):
    profiles.tradeoff(pld, ax, log_scale=True)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert len(ax.get_lines()) == 2  # max TPR and random guessing
    x, y = ax.get_lines()[0].get_data()
    assert np.all(y >= x) and np.all(y <= 1)
    save(ax, tmp_path / "mia.png")


def test_privacy_profile_plot(pld, ax, tmp_path):
    profiles.privacy_profile(pld, ax)
    assert ax.get_yscale() == "log"
    assert len(ax.get_lines()) == 1 and len(ax.collections) == 1
    x, y = ax.get_lines()[0].get_data()
    assert np.all(np.diff(y) <= 0)  # delta(eps) does not increase
    # the line is the certified upper bound on the composition's grid, point for point
    upper = np.max([law.delta(x) for law in pld.discrete("upper").values()], axis=0)
    np.testing.assert_array_equal(y, np.maximum(upper, 1e-300))
    # and the band runs from the certified lower bound up to it
    band = ax.collections[0].get_paths()[0].vertices
    inside = (band[:, 0] > x[0]) & (band[:, 0] < x[-1])
    assert np.all(band[inside, 1] <= np.interp(band[inside, 0], x, y) * (1 + 1e-12))
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == ["composition: δ(ε) upper bound"]
    assert "certified band" in [t.get_text() for t in ax.get_legend().get_texts()]
    save(ax, tmp_path / "profile.png")


def test_epsilon_against_steps(ax, tmp_path):
    steps = [10, 100, 1000]
    profiles.epsilon_vs_steps(STEP, steps, 1e-5, ax)
    (line,) = ax.get_lines()
    x, y = line.get_data()
    assert list(x) == steps and np.all(np.diff(y) > 0)
    for k, plotted in zip(steps, y, strict=True):  # each point is the certified upper bound
        bounds = plda.PrivacyLossDistribution.from_mechanism(STEP, k).epsilon_bounds(1e-5)
        assert bounds.lower <= plotted <= bounds.upper * (1 + 1e-2)
    assert ax.get_xscale() == "log"
    save(ax, tmp_path / "steps.png")


def test_accounting_comparison(ax, tmp_path):
    profiles.accounting_comparison(STEP, [50, 500], 1e-5, ax)
    lines = {line.get_label(): line.get_data()[1] for line in ax.get_lines()}
    assert len(lines) == 3  # PLD, RDP, GDP central limit
    pld_eps = lines["PLD (certified)"]
    rdp_eps = next(v for k, v in lines.items() if k.startswith("RDP"))
    assert np.all(rdp_eps >= pld_eps)  # RDP accounting loses against the PLD
    save(ax, tmp_path / "comparison.png")


def test_accounting_comparison_without_central_limit(ax):
    profiles.accounting_comparison(plda.Laplace(10.0), [5, 20], 1e-5, ax)
    lines = {line.get_label(): line.get_data()[1] for line in ax.get_lines()}
    assert len(lines) == 2 and "PLD (certified)" in lines
    exact = [
        plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(10.0), k).epsilon_bounds(1e-5)
        for k in (5, 20)
    ]
    for plotted, bounds in zip(lines["PLD (certified)"], exact, strict=True):
        assert bounds.lower <= plotted <= bounds.upper * (1 + 1e-2)


def test_new_figure_when_no_axes(pld):
    before = set(plt.get_fignums())
    ax = profiles.privacy_profile(pld)
    try:
        new = set(plt.get_fignums()) - before
        assert len(new) == 1 and ax.figure.number in new  # a fresh figure, not the current one
        assert len(ax.get_lines()) == 1
    finally:
        plt.close(ax.figure)


def test_bad_plot_arguments(pld, ax):
    with pytest.raises(TypeError, match="pld"):
        profiles.tradeoff("nope", ax)
    with pytest.raises(ValueError, match="reference_mu"):
        profiles.tradeoff(pld, ax, reference_mu=-1.0)
    with pytest.raises(ValueError, match="delta"):
        profiles.epsilon_vs_steps(STEP, [10], 2.0, ax)
    with pytest.raises(ValueError, match="steps"):
        profiles.epsilon_vs_steps(STEP, [0, 10], 1e-5, ax)
    with pytest.raises(TypeError, match="accountant_or_mechanism"):
        profiles.epsilon_vs_steps("nope", [10], 1e-5, ax)


def parse(*argv):
    parser = argparse.ArgumentParser(prog="plda")
    add_plot_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["plot", *argv])


@pytest.mark.parametrize("kind", ["tradeoff", "mia", "profile", "steps", "comparison"])
def test_plot_command_writes_png(kind, tmp_path):
    output = tmp_path / f"{kind}.png"
    args = parse(kind, "--steps", "300", "--points", "3", "--sample-rate", "0.02",
                 "--noise-multiplier", "1.0", "--reference-mu", "1.0", "-o", str(output),
                 "--dpi", "50", *(["--delta", "1e-5"] if kind in ("steps", "comparison") else []))
    message = plot_command(args)
    assert str(output) in message
    assert output.read_bytes().startswith(PNG_MAGIC)


@pytest.mark.parametrize(
    "argv,match",
    [
        (["tradeoff", "--steps", "0"], "steps"),
        (["tradeoff", "--delta", "1.5"], "delta"),
        (["tradeoff", "-o", "figure.txt"], "png"),
        (["tradeoff", "-o", "no/such/folder/figure.png"], "folder"),
        (["tradeoff", "--noise-multiplier", "-1"], "sigma"),
    ],
)
def test_plot_command_refuses_bad_arguments(argv, match, tmp_path):
    args = parse(*argv)
    with pytest.raises(ValueError, match=match):
        plot_command(args)


def test_importing_plda_modules_does_not_import_matplotlib():
    code = (
        "import sys, plda, plda.tradeoff, plda.renyi, plda.plot.profiles, plda.plot.cli; "
        "assert 'matplotlib' not in sys.modules, 'matplotlib imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("suffix, magic", [(".pdf", b"%PDF"), (".svg", b"<?xml")])
def test_plot_command_writes_pdf_and_svg_by_extension(suffix, magic, tmp_path):
    output = tmp_path / f"profile{suffix}"
    args = parse("profile", "--steps", "30", "--sample-rate", "0.02", "--noise-multiplier", "1.0",
                 "-o", str(output))
    plot_command(args)
    assert output.read_bytes().startswith(magic)


def test_plots_accept_an_accountant(ax):
    accountant = plda.PLDAccountant()
    accountant.step(noise_multiplier=1.0, sample_rate=0.02, count=30)
    plda.plot.privacy_profile(accountant, ax)
    assert ax.lines
    plda.plot.tradeoff(accountant, ax)
