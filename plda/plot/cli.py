"""``plda plot ...``: write a PNG of a DP-SGD run's privacy (the lead wires it into plda.cli).

Wiring (in ``plda.cli._parser``)::

    from plda.plot.cli import add_plot_parser
    add_plot_parser(sub)

and in ``main``: ``if args.command == "plot": print(plot_command(args)); return 0``
(``ImportError`` when matplotlib is missing: report it like a bad argument).
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["add_plot_parser", "plot_command"]

KINDS = ("tradeoff", "mia", "profile", "steps", "comparison")


#: output formats, chosen by the file extension of ``--output``
FORMATS = (".png", ".pdf", ".svg")


def add_plot_parser(subparsers) -> argparse.ArgumentParser:
    """Register the ``plot`` subcommand on an ``argparse`` subparsers object."""
    plot = subparsers.add_parser(
        "plot",
        help="write a PNG, PDF or SVG: tradeoff curve, membership-inference view, privacy profile, "
        "epsilon over steps, or accountings compared",
    )
    plot.add_argument("kind", choices=KINDS, help="what to plot")
    plot.add_argument("--noise-multiplier", type=float, default=1.1)
    plot.add_argument("--sample-rate", type=float, default=256 / 60000)
    plot.add_argument("--steps", type=int, default=14062,
                      help="steps of the run (largest step count for 'steps'/'comparison')")
    plot.add_argument("--delta", type=float, default=1e-5)
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
    """Draw the plot ``args.kind`` for the DP-SGD run of ``args`` (Poisson-sampled Gaussian
    steps) and save it as a PNG; returns a one-line message naming the file.

    Raises ``ValueError`` on bad arguments (before any computation) and ``ImportError`` when
    matplotlib is not installed.
    """
    if args.kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {args.kind!r}")
    steps = _count("steps", args.steps)
    points = _count("points", args.points)
    dpi = _count("dpi", args.dpi, minimum=10)
    if not 0 < args.delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {args.delta!r}")
    output = Path(args.output) if args.output is not None else Path(f"plda-{args.kind}.png")
    if output.suffix.lower() not in FORMATS:
        raise ValueError(
            f"output must end in one of {', '.join(FORMATS)} (the format), got {str(output)!r}"
        )
    if not output.parent.is_dir():  # one-line error before any computation, not a traceback
        raise ValueError(f"output folder {str(output.parent)!r} does not exist")
    # the mechanism validates noise multiplier and sample rate
    from plda.mechanisms import Gaussian, PoissonSampled
    from plda.pld import PrivacyLossDistribution

    step = PoissonSampled(Gaussian(sigma=args.noise_multiplier), sample_rate=args.sample_rate)
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError("plda plot needs matplotlib (pip install 'plda[plot]')") from exc

    from plda.plot import profiles

    figure = Figure(figsize=(6.4, 4.8) if args.kind in ("steps", "comparison") else (6, 5.5))
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    pld = PrivacyLossDistribution.from_mechanism(step).self_compose(steps)
    run = f"σ = {args.noise_multiplier:g}, q = {args.sample_rate:.4g}, {steps} steps"
    if args.kind in ("tradeoff", "mia"):
        profiles.tradeoff(pld, ax, reference_mu=args.reference_mu,
                          log_scale=args.kind == "mia", label="DP-SGD")
    elif args.kind == "profile":
        profiles.privacy_profile(pld, ax, label="DP-SGD")
    else:
        counts = _geometric(max(1, steps // 1000), steps, points)
        if args.kind == "steps":
            profiles.epsilon_vs_steps(step, counts, args.delta, ax)
        else:
            profiles.accounting_comparison(step, counts, args.delta, ax)
    ax.set_title(f"{ax.get_title()}\n{run}", fontsize="medium")
    figure.tight_layout()
    figure.savefig(output, dpi=dpi)
    return f"wrote {output}"


def _geometric(first: int, last: int, count: int) -> list[int]:
    """About ``count`` step counts from ``first`` to ``last``, evenly spaced in log scale."""
    import numpy as np

    return sorted({int(v) for v in np.round(np.geomspace(first, last, count))})
