"""Plots render with the Agg backend to non-empty PNGs with the expected curves; the CLI helper
writes its PNG; importing the modules does not import matplotlib."""

from __future__ import annotations

import argparse
import subprocess
import sys

import mpmath
import numpy as np
import pytest

import plda

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.collections import LineCollection, PolyCollection  # noqa: E402

from plda.cli.plot import add_plot_parser, plot_command  # noqa: E402
from plda.filters import FilterComparison  # noqa: E402
from plda.plot import profiles  # noqa: E402
from plda.plot import steps as steps_plots  # noqa: E402
from plda.plot.common import BAND_LABEL, describe_band, draw_band  # noqa: E402
from plda.plot.filters import filter_comparison  # noqa: E402

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


def legend_texts(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def band_label(ax):
    (label,) = [t for t in legend_texts(ax) if t.startswith(BAND_LABEL)]
    return label


def drawn(line):
    """The finite points of a line (gaps are NaN)."""
    x, y = (np.asarray(v, dtype=float) for v in line.get_data())
    keep = np.isfinite(y)
    return x[keep], y[keep]


def floors(ax):
    """(level, x0, x1) of each dashed numerical floor."""
    out = []
    for collection in ax.collections:
        if isinstance(collection, LineCollection):
            for segment in collection.get_segments():
                (x0, y0), (x1, y1) = segment
                assert y0 == y1  # a floor is a level
                out.append((y0, x0, x1))
    return out


def band_vertices(ax):
    return np.concatenate([
        path.vertices for c in ax.collections if isinstance(c, PolyCollection)
        for path in c.get_paths()
    ])


def test_tradeoff_plot(pld, ax, tmp_path):
    out = profiles.tradeoff(pld, ax, reference_mu=1.0)
    assert out is ax
    labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert len(labels) == 3  # certified curve, perfect privacy, reference GDP
    assert any("GDP" in label for label in labels)
    assert len(ax.collections) == 1  # the certified band
    lower_line, upper_line = ax.get_lines()[:2]  # the certified curve and the band's other edge
    x, y = lower_line.get_data()
    np.testing.assert_allclose(y, pld.tradeoff(x))
    np.testing.assert_allclose(upper_line.get_data()[1], pld.tradeoff_bounds(x).upper)
    assert lower_line.get_label() == "composition: certified lower bound on β"
    # the band is far thinner than the line here: its entry says so, with its largest width
    label = band_label(ax)
    width = float(label.rsplit("≤", 1)[1].strip(" )"))
    gap = np.max(upper_line.get_data()[1] - y)
    assert gap > 0 and width == pytest.approx(gap, rel=0.06)
    assert ax.get_xlabel() and ax.get_ylabel()
    save(ax, tmp_path / "tradeoff.png")


def test_membership_inference_view(pld, ax, tmp_path):
    profiles.tradeoff(pld, ax, log_scale=True)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    named = [line for line in ax.get_lines() if not line.get_label().startswith("_")]
    assert len(named) == 2  # max TPR and random guessing
    x, y = drawn(named[0])
    assert np.all(y >= x) and np.all(y <= 1)
    assert not floors(ax)  # down to FPR 1e-10 this run is resolved
    assert band_label(ax)
    save(ax, tmp_path / "mia.png")


def test_membership_inference_marks_the_floor_at_tiny_false_positive_rates(pld, ax):
    alpha = np.geomspace(1e-25, 1, 300)
    profiles.tradeoff(pld, ax, log_scale=True, alpha=alpha)
    upper_line, lower_line = ax.get_lines()[:2]
    x, upper = drawn(upper_line)
    lower = drawn(lower_line)[1]
    # only resolved points are drawn: positive lower bound, bounds within a factor 10
    assert np.all(lower > 0) and np.all(upper <= 10 * lower)
    ((level, x0, x1),) = floors(ax)
    assert x0 == alpha[0] and x1 < x.min()  # the floor covers the small FPRs left out
    bounds = pld.true_positive_rate_bounds(alpha[alpha <= x1])
    assert np.all(bounds.upper <= level)  # what the floor claims is certified
    assert any(t.startswith("numerical floor: only TPR ≤") for t in legend_texts(ax))
    assert np.all(band_vertices(ax)[:, 1] > 0)


def gaussian_delta(epsilon: float, mu: float = 1.0) -> float:
    """Exact delta(eps) of the Gaussian mechanism (Balle & Wang 2018), at 60 digits."""
    with mpmath.workdps(60):
        e, m = mpmath.mpf(epsilon), mpmath.mpf(mu)
        return float(mpmath.ncdf(m / 2 - e / m) - mpmath.exp(e) * mpmath.ncdf(-m / 2 - e / m))


def test_privacy_profile_plot(pld, ax, tmp_path):
    profiles.privacy_profile(pld, ax)
    assert ax.get_yscale() == "log"
    upper_line, lower_line = ax.get_lines()
    x, y = upper_line.get_data()
    assert np.all(np.diff(y) <= 0)  # delta(eps) does not increase
    # the line is the certified upper bound: never below the engine's certified lower bound
    some = slice(None, None, 50)
    bounds = pld.with_accuracy(pld.accuracy).delta_bounds(x[some])
    assert np.all(y[some] >= bounds.lower)
    # and the band runs from the certified lower bound up to it
    assert np.all(lower_line.get_data()[1] <= y)
    assert upper_line.get_label() == "composition: certified upper bound on δ(ε)"
    assert BAND_LABEL in band_label(ax)
    save(ax, tmp_path / "profile.png")


def test_privacy_profile_marks_the_floor_instead_of_drawing_it(pld, ax):
    # the reproduction of issue 15 item 8: over a wide range the old plot drew the FFT's rounding
    # floor (~1e-11), then a drop to the truncated tail's mass, then a band down to 1e-300. Now
    # tilts resolve delta down to ~1e-73 here (eps ~ 25; the laws' kept tail held it at 1e-28)
    epsilon = np.linspace(0, 50, 200)
    profiles.privacy_profile(pld, ax, epsilon=epsilon)
    upper_line, lower_line = ax.get_lines()
    x, upper = drawn(upper_line)
    lower = drawn(lower_line)[1]
    assert np.all(lower > 0) and np.all(upper <= 10 * lower)  # resolved points only
    assert x.max() > 20  # far below the FFT's floor (delta ~ 1e-11 near eps = 4.5) on tilts
    ((level, x0, x1),) = floors(ax)
    assert x1 == epsilon[-1] and x0 == epsilon[np.searchsorted(epsilon, x.max()) + 1]
    assert np.all(upper >= level)  # no drawn upper bound below the floor
    assert level < 1e-60
    # no vertical drop: consecutive drawn points of either edge within a decade (up to eps 20:
    # past it a delta query's tilt groups, at most three tilts per call, leave its upper bound
    # up to 14 times its lower one at a group's end, and steps of 1.4 decades between groups)
    for line in (upper_line, lower_line):
        t, y = (np.asarray(v, dtype=float) for v in line.get_data())
        pairs = np.isfinite(y[1:]) & np.isfinite(y[:-1]) & (t[1:] <= 20)
        assert np.all(np.abs(np.diff(np.log10(y)))[pairs] < 1)
    assert np.all(band_vertices(ax)[:, 1] >= lower.min() * (1 - 1e-12))
    assert ax.get_ylim()[0] >= min(level, lower.min()) / 4  # nothing drawn down to 1e-300
    assert any(t.startswith("numerical floor: only δ ≤") for t in legend_texts(ax))


def test_privacy_profile_of_the_issue_run(ax):
    # issue 15 item 8: q = 0.01, sigma = 1, 1000 steps, eps in [0, 12]. The old plot drew the
    # FFT's rounding floor flat (3e-11 from eps 3.7 to 4.7), the truncated tail's mass flat (1e-20
    # at eps 8.0-8.2, after a drop of 1.16 decades in one point) and the band down to 1e-300.
    # Then a floor at the laws' truncated tails' mass (1e-29, past eps = 9); now tilted queries
    # keep the laws further out, and the whole range is drawn (down to ~2e-39)
    run = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(1.0), sample_rate=0.01), count=1000
    )
    epsilon = np.linspace(0, 12, 200)
    profiles.privacy_profile(run, ax, epsilon=epsilon)
    upper_line, lower_line = ax.get_lines()
    x, upper = drawn(upper_line)
    lower = drawn(lower_line)[1]
    step = np.searchsorted(epsilon, 0.3)  # eps moves by 0.3: delta falls by over 20 %
    assert np.all(upper[step:] < 0.8 * upper[:-step])  # no flat stretch drawn as data
    assert np.all(np.abs(np.diff(np.log10(upper))) < 1)  # and no drop
    assert np.all(lower > 0) and np.all(band_vertices(ax)[:, 1] >= lower.min())
    assert floors(ax) == [] and x.max() == epsilon[-1] and upper.min() < 1e-35


def test_privacy_profile_of_a_gaussian_against_the_closed_form(ax):
    gaussian = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(1.0))
    epsilon = np.linspace(0, 40, 81)
    profiles.privacy_profile(gaussian, ax, epsilon=epsilon)
    upper_line, lower_line = ax.get_lines()
    x, upper = drawn(upper_line)
    lower = drawn(lower_line)[1]
    exact = np.array([gaussian_delta(e) for e in x])
    assert np.all(lower <= exact) and np.all(exact <= upper)
    # resolved down to ~1e-300 (eps 37.5), then a floor to the end of the range
    marked = floors(ax)
    assert all(gaussian_delta(x0) <= level for level, x0, _ in marked)  # certified where drawn
    (level, x0, x1) = marked[-1]
    assert x0 > x.max() > 35 and x1 == 40 and ax.get_ylim()[0] > 1e-310


def test_privacy_profile_refined(ax):
    gaussian = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(1.0))
    epsilon = np.linspace(0, 40, 81)
    profiles.privacy_profile(gaussian, ax, epsilon=epsilon, refine=True)
    x, upper = drawn(ax.get_lines()[0])
    exact = np.array([gaussian_delta(e) for e in x])
    assert np.all(exact <= upper) and x.max() > 10  # resolved much further on a finer grid


def test_privacy_profile_certified_zero(ax):
    pure = plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(1.0), count=2)
    profiles.privacy_profile(pure, ax, epsilon=np.linspace(0, 3, 61))
    zero = [line for line in ax.get_lines() if line.get_label().startswith("certified δ = 0")]
    (marker,) = zero
    at = marker.get_xdata()[0]
    assert 2 <= at <= 2.1  # two Laplace(1) steps: delta = 0 from eps = 2 on
    assert np.all(pure.delta_bounds(np.linspace(at, 3, 5)).upper == 0)
    _, upper = drawn(ax.get_lines()[0])
    assert np.all(upper > 0)


def test_describe_band_only_when_thinner_than_the_line(ax):
    x = np.linspace(0, 1, 50)
    upper = np.geomspace(1, 1e-6, 50)
    line, band = draw_band(ax, x, upper / 100, upper, primary="upper", label="u", color="C0")
    ax.set_yscale("log")
    describe_band(ax, band, x, upper / 100, upper, linewidth=line.get_linewidth())
    assert band.get_label() == BAND_LABEL  # two decades wide: visible, nothing to add
    describe_band(ax, band, x, upper * (1 - 1e-4), upper, linewidth=line.get_linewidth())
    assert "≤ 0.0001" in band.get_label()


def test_bad_profile_arguments(pld, ax):
    with pytest.raises(ValueError, match="resolved_ratio"):
        profiles.privacy_profile(pld, ax, resolved_ratio=1.0)
    with pytest.raises(TypeError, match="refine"):
        profiles.privacy_profile(pld, ax, refine="yes")
    with pytest.raises(ValueError, match="epsilon"):
        profiles.privacy_profile(pld, ax, epsilon=[-1.0])
    with pytest.raises(ValueError, match="epsilon must hold at least one"):  # (IndexError)
        profiles.privacy_profile(pld, ax, epsilon=[])
    with pytest.raises(ValueError, match="alpha"):
        profiles.tradeoff(pld, ax, log_scale=True, alpha=[0.0])


def test_epsilon_against_steps(ax, tmp_path):
    steps = [10, 100, 1000]
    steps_plots.epsilon_vs_steps(STEP, steps, 1e-5, ax)
    upper_line, lower_line = ax.get_lines()
    x, y = upper_line.get_data()
    low = lower_line.get_data()[1]
    assert list(x) == steps and np.all(np.diff(y) > 0)
    for k, plotted, below in zip(steps, y, low, strict=True):  # the certified band, per point
        bounds = plda.PrivacyLossDistribution.from_mechanism(STEP, k).epsilon_bounds(1e-5)
        assert bounds.lower <= plotted <= bounds.upper * (1 + 1e-2)
        assert below <= bounds.upper and below <= plotted
    assert ax.get_xscale() == "log"
    assert upper_line.get_label() == "PLD: certified upper bound on ε (δ = 1e-05)"
    assert "thinner than the line" in band_label(ax)  # 1e-2 accuracy: a hairline band
    save(ax, tmp_path / "steps.png")


def named_lines(ax):
    return {line.get_label(): line.get_data()[1] for line in ax.get_lines()
            if not line.get_label().startswith("_")}


def test_accounting_comparison(ax, tmp_path):
    steps_plots.accounting_comparison(STEP, [50, 500], 1e-5, ax)
    lines = named_lines(ax)
    assert len(lines) == 3  # PLD, RDP, GDP central limit
    pld_eps = lines["PLD: certified upper bound on ε"]
    rdp_eps = next(v for k, v in lines.items() if k.startswith("RDP"))
    assert np.all(rdp_eps >= pld_eps)  # RDP accounting loses against the PLD
    assert any("approximation, not a bound" in k for k in lines)
    assert band_label(ax)
    save(ax, tmp_path / "comparison.png")


def test_accounting_comparison_without_central_limit(ax):
    steps_plots.accounting_comparison(plda.Laplace(10.0), [5, 20], 1e-5, ax)
    lines = named_lines(ax)
    assert len(lines) == 2 and "PLD: certified upper bound on ε" in lines
    exact = [
        plda.PrivacyLossDistribution.from_mechanism(plda.Laplace(10.0), k).epsilon_bounds(1e-5)
        for k in (5, 20)
    ]
    for plotted, bounds in zip(lines["PLD: certified upper bound on ε"], exact, strict=True):
        assert bounds.lower <= plotted <= bounds.upper * (1 + 1e-2)


def test_new_figure_when_no_axes(pld):
    before = set(plt.get_fignums())
    ax = profiles.privacy_profile(pld)
    try:
        new = set(plt.get_fignums()) - before
        assert len(new) == 1 and ax.figure.number in new  # a fresh figure, not the current one
        assert len(ax.get_lines()) == 2  # the upper bound and the band's lower edge
    finally:
        plt.close(ax.figure)


def test_bad_plot_arguments(pld, ax):
    with pytest.raises(TypeError, match="pld"):
        profiles.tradeoff("nope", ax)
    with pytest.raises(ValueError, match="reference_mu"):
        profiles.tradeoff(pld, ax, reference_mu=-1.0)
    with pytest.raises(ValueError, match="delta"):
        steps_plots.epsilon_vs_steps(STEP, [10], 2.0, ax)
    with pytest.raises(ValueError, match="steps"):
        steps_plots.epsilon_vs_steps(STEP, [0, 10], 1e-5, ax)
    with pytest.raises(TypeError, match="accountant_or_mechanism"):
        steps_plots.epsilon_vs_steps("nope", [10], 1e-5, ax)


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
        "import sys, plda, plda.conversions.queries, plda.plot.profiles, plda.cli.plot; "
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


def test_plots_accept_an_accountant():
    accountant = plda.PLDAccountant()
    accountant.step(noise_multiplier=1.0, sample_rate=0.02, count=200)
    draws = [
        lambda source, ax: profiles.privacy_profile(source, ax),
        lambda source, ax: profiles.tradeoff(source, ax),
        lambda source, ax: profiles.tradeoff(source, ax, log_scale=True),
    ]
    for draw in draws:  # the accountant's history is drawn as the PLD of the same steps
        figure, (left, right) = plt.subplots(1, 2)
        try:
            draw(accountant, left)
            draw(plda.PrivacyLossDistribution.from_mechanism(STEP, 200), right)
            for a, b in zip(left.get_lines(), right.get_lines(), strict=True):
                np.testing.assert_allclose(a.get_data()[1], b.get_data()[1], rtol=1e-9)
        finally:
            plt.close(figure)
    # epsilon over steps reads the first k recorded steps: here the same as k runs of STEP
    figure, (left, right) = plt.subplots(1, 2)
    try:
        steps_plots.epsilon_vs_steps(accountant, [10, 100], 1e-5, left)
        steps_plots.epsilon_vs_steps(STEP, [10, 100], 1e-5, right)
        np.testing.assert_allclose(left.get_lines()[0].get_data()[1],
                                   right.get_lines()[0].get_data()[1], rtol=1e-9)
        steps_plots.accounting_comparison(accountant, [10], 1e-5, left)
    finally:
        plt.close(figure)
    # before the first step nothing is released: delta is 0 everywhere, which a log axis
    # does not draw (it raised "no recorded steps")
    axes = profiles.privacy_profile(plda.PLDAccountant())
    assert np.all(np.isnan(axes.get_lines()[0].get_data()[1]))
    plt.close(axes.figure)


def test_filter_plot_marks_refused_steps(ax):
    comparison = FilterComparison(
        epsilon=1.0, delta=1e-6, step_epsilons=(0.01, 0.1, 0.5),
        columns=("basic", "advanced RRUV16"), counts=((100, 50), (10, 0), (2, None)),
    )
    filter_comparison(comparison, ax=ax)
    assert len(ax.get_lines()) == 2  # one line per column
    crosses = [c for c in ax.collections if c.get_label() == "_no step"]
    (cross,) = crosses  # one zero (a None is "not computed": not marked)
    ((x, y),) = cross.get_offsets()
    assert x == 0.1 and 0 < y < 1  # below every possible count, on the log axis
    assert ax.get_ylim()[0] < y
    assert any("no step allowed" in t for t in legend_texts(ax))
    basic = next(line for line in ax.get_lines() if line.get_label() == "basic")
    assert list(basic.get_data()[1]) == [100, 10, 2]


# ------------------------------------------------ one plot API (issue 25, item 6)
def test_dir_lists_the_plot_functions_and_each_takes_the_style_arguments():
    import inspect

    import plda.plot

    functions = {"tradeoff", "privacy_profile", "epsilon_vs_steps", "accounting_comparison",
                 "composition_comparison", "filter_comparison"}
    assert functions == set(plda.plot.__all__)
    assert functions <= set(dir(plda.plot))
    for name in functions:
        parameters = inspect.signature(getattr(plda.plot, name)).parameters
        assert {"ax", "color", "linestyle", "label"} <= set(parameters), name


def primary_lines(ax):
    return [line for line in ax.get_lines() if line.get_gid() == "plda-curve"]


def test_tradeoff_curves_overlay_on_one_axes(pld, ax):
    other = plda.PrivacyLossDistribution.from_mechanism(STEP).self_compose(50)
    profiles.tradeoff(pld, ax, label="200 steps", reference_mu=1.0)
    profiles.tradeoff(other, ax, label="50 steps", color="C3", linestyle="--", reference_mu=1.0)
    first, second = primary_lines(ax)
    assert first.get_color() == "C0" and second.get_color() == "C3"  # the default: the cycle
    assert first.get_linestyle() == "-" and second.get_linestyle() == "--"
    texts = legend_texts(ax)
    assert texts.count("perfect privacy (β = 1 − α)") == 1 and texts.count("1-GDP") == 1
    assert "200 steps: certified lower bound on β" in texts
    assert "50 steps: certified lower bound on β" in texts
    assert band_label(ax)  # one band entry for both bands
    assert len(ax.collections) == 2


def test_privacy_profiles_overlay_and_the_limits_cover_both(pld, ax):
    short = plda.PrivacyLossDistribution.from_mechanism(STEP).self_compose(20)
    profiles.privacy_profile(pld, ax, epsilon=np.linspace(0, 3, 40))
    low = ax.get_ylim()[0]
    profiles.privacy_profile(short, ax, epsilon=np.linspace(0, 6, 40), label="20 steps")
    assert ax.get_xlim() == (0, 6) and ax.get_ylim()[0] <= low
    assert [line.get_color() for line in primary_lines(ax)] == ["C0", "C1"]
    assert sum(t.startswith(BAND_LABEL) for t in legend_texts(ax)) == 1


def test_steps_plots_take_a_color_a_linestyle_and_a_label(ax):
    steps_plots.epsilon_vs_steps(STEP, [10, 100], 1e-5, ax, label="q = 0.02")
    steps_plots.epsilon_vs_steps(plda.PoissonSampled(plda.Gaussian(2.0), 0.02), [10, 100],
                                 1e-5, ax, label="σ = 2", color="k", linestyle=":")
    first, second = primary_lines(ax)
    assert first.get_label() == "q = 0.02: certified upper bound on ε (δ = 1e-05)"
    assert second.get_color() == "k" and second.get_linestyle() == ":"
    figure, other = plt.subplots()
    try:
        steps_plots.accounting_comparison(STEP, [10, 50], 1e-5, other, label="run",
                                          color="tab:purple", linestyle={"rdp": "-."})
        lines = {line.get_label(): line for line in other.get_lines()
                 if not line.get_label().startswith("_")}
        assert set(lines) == {"run: PLD: certified upper bound on ε",
                              "run: RDP accounting (certified)",
                              "run: GDP central limit (approximation, not a bound)"}
        assert {line.get_color() for line in lines.values()} == {"tab:purple"}
        assert lines["run: RDP accounting (certified)"].get_linestyle() == "-."
        assert lines["run: PLD: certified upper bound on ε"].get_linestyle() == "-"
    finally:
        plt.close(figure)


def test_theorem_and_filter_plots_overlay_with_labels(ax):
    from plda.plot.composition import composition_comparison

    composition_comparison(0.1, 0.001, max_steps=10, ax=ax, label="ε₀ = 0.1")
    composition_comparison(0.2, 0.001, max_steps=10, ax=ax, label="ε₀ = 0.2", linestyle=":")
    texts = legend_texts(ax)
    assert "ε₀ = 0.1: basic composition" in texts and "ε₀ = 0.2: optimal (KOV exact)" in texts
    dotted = [line for line in ax.get_lines() if line.get_label().startswith("ε₀ = 0.2")]
    assert {line.get_linestyle() for line in dotted} == {":"}
    figure, other = plt.subplots()
    try:
        comparison = FilterComparison(
            epsilon=1.0, delta=1e-6, step_epsilons=(0.01, 0.1),
            columns=("basic", "advanced RRUV16"), counts=((100, 50), (10, 3)),
        )
        filter_comparison(comparison, ax=other, label="budget 1", color={"basic": "k"})
        basic = next(line for line in other.get_lines() if line.get_label() == "budget 1: basic")
        assert basic.get_color() == "k"
    finally:
        plt.close(figure)


def test_plots_accept_the_adapters_wherever_they_accept_an_accountant():
    from plda.adapters.opacus import PLDOpacusAccountant

    accountant = plda.PLDAccountant()
    accountant.step(noise_multiplier=1.0, sample_rate=0.02, count=200)
    adapters = [PLDOpacusAccountant()]
    for _ in range(200):
        adapters[0].step(noise_multiplier=1.0, sample_rate=0.02)
    try:
        import dp_accounting

        from plda.adapters import PLDPrivacyAccountant
    except ImportError:
        pass
    else:
        event = dp_accounting.PoissonSampledDpEvent(0.02, dp_accounting.GaussianDpEvent(1.0))
        adapters.append(PLDPrivacyAccountant().compose(event, 200))
    draws = [
        lambda source, ax: profiles.privacy_profile(source, ax),
        lambda source, ax: profiles.tradeoff(source, ax, log_scale=True),
    ]
    for adapter in adapters:
        for draw in draws:
            figure, (left, right) = plt.subplots(1, 2)
            try:
                draw(adapter, left)
                draw(accountant, right)
                for a, b in zip(left.get_lines(), right.get_lines(), strict=True):
                    np.testing.assert_allclose(a.get_data()[1], b.get_data()[1], rtol=1e-9)
            finally:
                plt.close(figure)
    one_pass = PLDOpacusAccountant(relation="replace_one")
    one_pass.account_one_pass(num_batches=4)
    one_pass.step(noise_multiplier=1.0, sample_rate=0.25)
    with pytest.raises(ValueError, match="epochs"):
        profiles.tradeoff(one_pass)


def test_epoch_samplers_are_plotted_at_whole_epochs_of_training_steps(ax):
    accountant = plda.PLDAccountant(accuracy=1e-2)
    accountant.step(1.0, count=20, sampler="random-allocation", num_steps=10)
    steps_plots.epsilon_vs_steps(accountant, [10, 20], 1e-5, ax)
    x, upper = primary_lines(ax)[0].get_data()
    epoch = plda.RandomAllocation(plda.Gaussian(1.0), 10)
    for k, plotted in zip(x, upper, strict=True):  # k training steps: k / 10 epochs
        bounds = plda.PrivacyLossDistribution.from_mechanism(
            epoch, int(k) // 10, accuracy=1e-2).epsilon_bounds(1e-5)
        assert plotted == pytest.approx(bounds.upper, rel=1e-9)
    with pytest.raises(ValueError, match="inside an epoch"):
        steps_plots.epsilon_vs_steps(accountant, [15], 1e-5)
    with pytest.raises(ValueError, match="inside an epoch"):
        steps_plots.epsilon_vs_steps(epoch, [5], 1e-5)


def test_privacy_profile_lower_line_is_the_realized_one_where_a_factor_is_not_tight(ax):
    # fixed-size batches under replace-one: the dominating pair's optimistic version says
    # delta(0) >= 0.8004, but only the symmetric input's 0.776277 is known to be reached (mpmath
    # in tests/test_symmetrized.py); the plot drew the former as a certified lower bound
    wor = plda.SampledWithoutReplacement(plda.Gaussian(1.0), batch_size=9, dataset_size=10)
    with pytest.warns(plda.NotTightWarning):
        pld = plda.PrivacyLossDistribution.from_mechanism(wor, 2, relation="replace_one")
        profiles.privacy_profile(pld, ax, epsilon=[0.0, 0.1, 0.2])
    upper_line, lower_line = ax.get_lines()[:2]
    assert lower_line.get_data()[1][0] <= 0.776278
    assert upper_line.get_data()[1][0] >= 0.776277


def test_an_inverted_bracket_is_raised_by_the_plots_not_clamped(pld, ax, monkeypatch):
    # the plots envelope the bounds (both still certified); a lower bound above an upper one
    # after that is a defect to report, never a band to draw clamped onto its upper edge
    def inverted(self, targets):  # 2e-6 above 1e-6 from epsilon 1 on
        targets = np.asarray(targets)
        return plda.Bounds(lower=np.where(targets > 1.0, 2e-6, 0.0),
                           upper=np.full(targets.shape, 1e-6))

    monkeypatch.setattr(plda.PrivacyLossDistribution, "delta_bounds", inverted)
    with pytest.raises(plda.InvertedBracketError):
        profiles.privacy_profile(pld, ax, epsilon=np.linspace(0, 3, 7), refine=True)
    monkeypatch.setattr(plda.PrivacyLossDistribution, "true_positive_rate_bounds",
                        lambda self, a: plda.Bounds(lower=np.where(a > 0.5, 0.9, 0.0),
                                                    upper=np.full(np.shape(a), 0.8)))
    with pytest.raises(plda.InvertedBracketError):
        profiles.tradeoff(pld, ax, log_scale=True, alpha=np.linspace(0.1, 1, 7))
