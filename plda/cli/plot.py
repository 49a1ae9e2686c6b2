"""``plda plot ...``: write a PNG, PDF or SVG of a DP-SGD run's privacy.

No silent defaults: ``--noise-multiplier``, ``--sample-rate`` (or the ``--sampler``'s size
flags) and ``--steps`` are required, and so is ``--delta`` for the plots that need one; the
other plots refuse a ``--delta`` they would ignore. ``plda.cli.main`` reports a ``ValueError``
(and the ``ImportError`` of a missing matplotlib) as one line with exit code 2.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from plda.cli.checks import UsageError, integer
from plda.cli.samplers import (
    DEFAULT_SAMPLER,
    SAMPLERS,
    add_sampler_flags,
    check_unused,
    sampler_run,
)

__all__ = ["add_plot_parser", "plot_command"]

KINDS = ("tradeoff", "mia", "profile", "steps", "comparison")


#: the plots that take a ``--delta``
DELTA_KINDS = ("steps", "comparison")

#: output formats, chosen by the file extension of ``--output``
FORMATS = (".png", ".pdf", ".svg")


def add_plot_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``plot`` subcommand on an ``argparse`` subparsers object.

    Parameters
    ----------
    subparsers : argparse._SubParsersAction
        What ``parser.add_subparsers()`` returned.

    Returns
    -------
    argparse.ArgumentParser
        The ``plot`` subcommand's parser.
    """
    plot = subparsers.add_parser(
        "plot",
        help="write a PNG, PDF or SVG: tradeoff curve, membership-inference view, privacy profile, "
        "epsilon over steps, or accountings compared",
    )
    plot.add_argument("kind", choices=KINDS, help="what to plot")
    plot.add_argument("--noise-multiplier", type=float, help="noise multiplier sigma (required)")
    plot.add_argument("--sample-rate", type=float,
                      help="Poisson sample rate q (required with --sampler poisson)")
    plot.add_argument("--steps", type=integer,
                      help="steps of the run, e.g. 14062 or 1e6 (required; the largest step "
                      "count for 'steps'/'comparison')")
    plot.add_argument("--delta", type=float,
                      help="delta (required for 'steps' and 'comparison', refused otherwise)")
    add_sampler_flags(plot, integer)
    plot.add_argument("--points", type=int, default=12,
                      help="step counts on the curve for 'steps'/'comparison'")
    plot.add_argument("--reference-mu", type=float, default=None,
                      help="add the mu-GDP tradeoff curve ('tradeoff', 'mia')")
    plot.add_argument("--output", "-o", type=Path, default=None,
                      help=".png, .pdf or .svg path (default: plda-<kind>.png)")
    plot.add_argument("--dpi", type=int, default=150)
    return plot


def _count(name: str, value, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


def plot_command(args: argparse.Namespace) -> str:
    """Draw the plot ``args.kind`` of the DP-SGD run of ``args`` and save it.

    As a PNG, PDF or SVG, by the extension of ``--output``; ``--sampler`` replaces
    ``--sample-rate`` by its size flags in the ``tradeoff``, ``mia`` and ``profile`` plots, for
    the samplers whose PLD band is certified on both sides.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    str
        A one-line message naming the file written.

    Raises
    ------
    ValueError
        On bad or missing arguments, before any computation.
    ImportError
        When matplotlib is not installed.
    """
    if args.kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {args.kind!r}")
    # the values given are checked first (the error names a bad value), then the missing ones
    steps = None if args.steps is None else _count("steps", args.steps)
    points = _count("points", args.points)
    dpi = _count("dpi", args.dpi, minimum=10)
    sigma, rate = args.noise_multiplier, args.sample_rate
    if sigma is not None and not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"--noise-multiplier: sigma must be a finite number > 0, got {sigma!r}")
    if rate is not None and not 0 < rate <= 1:
        raise ValueError(f"--sample-rate must be in (0, 1], got {rate!r}")
    uses_delta = args.kind in DELTA_KINDS
    if args.delta is not None and not 0 < args.delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {args.delta!r}")
    if args.delta is not None and not uses_delta:
        raise ValueError(
            f"--delta is not used by 'plot {args.kind}' (only by {', '.join(DELTA_KINDS)})"
        )
    output = Path(args.output) if args.output is not None else Path(f"plda-{args.kind}.png")
    if output.suffix.lower() not in FORMATS:
        raise ValueError(
            f"output must end in one of {', '.join(FORMATS)} (the format), got {str(output)!r}"
        )
    if not output.parent.is_dir():  # one-line error before any computation, not a traceback
        raise ValueError(f"output folder {str(output.parent)!r} does not exist")
    try:
        sampler = check_unused(args)
    except UsageError as exc:
        raise ValueError(str(exc)) from None
    if sampler != DEFAULT_SAMPLER and uses_delta:
        raise ValueError(
            f"--sampler {sampler}: 'plot {args.kind}' draws Poisson-sampled runs only; for "
            f"{sampler} use 'plda epsilon --sampler {sampler}' at the step counts you need"
        )
    required = {"--noise-multiplier": sigma}
    required.update({flag: getattr(args, flag[2:].replace("-", "_")) for flag in SAMPLERS[sampler]})
    required["--steps"] = steps
    if uses_delta:
        required["--delta"] = args.delta
    missing = [flag for flag, value in required.items() if value is None]
    if missing:  # no silent defaults (issue 15): the run is the user's, never a reference run
        raise ValueError(f"the following arguments are required: {', '.join(missing)}")
    from plda.pld import PrivacyLossDistribution

    try:  # the mechanism validates the noise multiplier and the sampler's sizes
        sampled = sampler_run(args)
        step = sampled.step(sigma)
    except UsageError as exc:
        raise ValueError(str(exc)) from None
    if not step.tight:
        raise ValueError(
            f"--sampler {sampler}: a plot draws one PLD's certified band, and this sampler's "
            "lower bound comes from a second, realized pair; use 'plda epsilon' or 'plda risk' "
            f"with --sampler {sampler} for its certified bracket"
        )
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("plda plot needs matplotlib (pip install 'plda[plot]')") from exc

    from plda.plot import profiles
    from plda.plot import steps as steps_plots

    figure = Figure(figsize=(6.4, 4.8) if args.kind in ("steps", "comparison") else (6, 5.5))
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    pld = PrivacyLossDistribution.from_mechanism(step).self_compose(sampled.count())
    run = f"σ = {sigma:g}, {_sampling(sampled)}, {steps} steps"
    if args.kind in ("tradeoff", "mia"):
        profiles.tradeoff(pld, ax, reference_mu=args.reference_mu,
                          log_scale=args.kind == "mia", label="DP-SGD")
    elif args.kind == "profile":
        profiles.privacy_profile(pld, ax, label="DP-SGD")
    else:
        counts = _geometric(max(1, steps // 1000), steps, points)
        if args.kind == "steps":
            steps_plots.epsilon_vs_steps(step, counts, args.delta, ax)
        else:
            steps_plots.accounting_comparison(step, counts, args.delta, ax)
    ax.set_title(f"{ax.get_title()}\n{run}", fontsize="medium")
    figure.tight_layout()
    figure.savefig(output, dpi=dpi)
    return f"wrote {output}"


def _sampling(run) -> str:
    """The sampler in a plot title: ``q = 0.004267`` for Poisson sampling."""
    sizes = run.sizes
    if run.sampler == "poisson":
        return f"q = {sizes['sample_rate']:.4g}"
    if run.sampler == "without-replacement":
        return f"batches of {sizes['batch_size']} of {sizes['dataset_size']}"
    return f"{run.sampler.replace('-', ' ')}, {sizes['num_steps']} steps per epoch"


def _geometric(first: int, last: int, count: int) -> list[int]:
    """About ``count`` step counts from ``first`` to ``last``, evenly spaced in log scale."""
    import numpy as np

    return sorted({int(v) for v in np.round(np.geomspace(first, last, count))})
