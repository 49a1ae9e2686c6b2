"""The ``argparse`` parser of ``plda`` (errors: one line, exit code 2, see ``main``)."""

from __future__ import annotations

import argparse

from plda import __version__
from plda.bounds import RELATIONS
from plda.cli.checks import UsageError, integer
from plda.cli.matrix import add_strategy_flags
from plda.cli.plot import add_plot_parser
from plda.cli.risk import add_risk_flags
from plda.cli.samplers import add_sampler_flags
from plda.cli.targets import add_target_flags
from plda.pld import DEFAULT_ACCURACY

__all__ = ["DESCRIPTION", "MechanismAction", "Parser", "build_parser"]

DESCRIPTION = (
    "Command line: certified epsilon / delta bounds and calibration for DP-SGD and mechanism lists."
)


class Parser(argparse.ArgumentParser):
    """An ``argparse`` parser whose errors are :class:`UsageError` (one line, exit code 2).

    Built like ``argparse.ArgumentParser``.
    """

    def error(self, message):  # one line, exit code 2 (handled in main)
        """Raise the parse error as a :class:`UsageError` (``argparse`` would exit).

        Parameters
        ----------
        message : str
            The parser's message.

        Raises
        ------
        UsageError
            Always.
        """
        raise UsageError(message)


class MechanismAction(argparse.Action):
    """``--mechanism SPEC`` appends ``[SPEC, 1]``; ``--count K`` sets the last one's count."""

    def __call__(self, parser, namespace, values, option_string=None):
        items = getattr(namespace, "mechanisms", None) or []
        if option_string == "--mechanism":
            items.append([values, 1])
        else:
            if not items:
                raise UsageError("argument --count: must follow a --mechanism")
            items[-1][1] = values
        namespace.mechanisms = items


def _common(p, quantity: str) -> None:
    p.add_argument("--noise-multiplier", type=float, help="DP-SGD noise multiplier sigma")
    p.add_argument("--sample-rate", type=float, help="DP-SGD Poisson sample rate q")
    p.add_argument("--steps", type=integer, help="number of DP-SGD steps (e.g. 14062 or 1e6)")
    add_sampler_flags(p, integer)
    p.add_argument(
        "--mechanism",
        action=MechanismAction,
        metavar="SPEC",
        help="a mechanism, e.g. gaussian:sigma=2, laplace:scale=3, "
        "discrete_laplace:parameter=1, approximate_dp:epsilon=1,delta=1e-6; add "
        "sample_rate=q for Poisson sampling (repeatable)",
    )
    p.add_argument(
        "--count",
        action=MechanismAction,
        type=integer,
        metavar="K",
        help="runs of the preceding --mechanism (default 1)",
    )
    if quantity in ("--delta", "--epsilon"):
        add_strategy_flags(p)
    if quantity == "--delta":
        # no default: a missing --delta is an error (checked after the given values)
        p.add_argument("--delta", type=float, help="delta (required)")
    elif quantity == "--epsilon":
        p.add_argument(quantity, type=float, required=True, help="epsilon")
    else:
        add_risk_flags(p)
    p.add_argument("--relation", default="add_remove", choices=RELATIONS)
    p.add_argument(
        "--accuracy",
        type=float,
        default=DEFAULT_ACCURACY,
        help="target relative gap of the epsilon bounds (default 1e-3)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="machine-readable output (strict JSON; null means no finite bound)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``plda`` and its subcommands.

    Returns
    -------
    argparse.ArgumentParser
        A :class:`Parser` with the subcommands ``epsilon``, ``delta``, ``risk``,
        ``calibrate`` and ``plot``.
    """
    parser = Parser(prog="plda", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"plda {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=Parser)
    _common(sub.add_parser("epsilon", help="certified epsilon bounds at a delta"), "--delta")
    _common(sub.add_parser("delta", help="certified delta bounds at an epsilon"), "--epsilon")
    _common(
        sub.add_parser(
            "risk",
            help="certified membership-inference risk: true-positive rate at a false-positive "
            "rate, and the advantage",
        ),
        "risk",
    )
    cal = sub.add_parser(
        "calibrate",
        help="the missing DP-SGD parameter (noise multiplier, sample rate or steps) for a "
        "target: epsilon at a delta, or a membership-inference risk",
    )
    add_target_flags(cal)
    cal.add_argument("--noise-multiplier", type=float)
    cal.add_argument("--sample-rate", type=float)
    cal.add_argument("--steps", type=integer)
    cal.add_argument(
        "--max-steps",
        type=integer,
        help="when calibrating the steps (no --steps): the most steps searched (default 1e7; "
        "a target still met there is an error, never a result pinned at the limit)",
    )
    add_sampler_flags(cal, integer)
    cal.add_argument("--relation", default="add_remove", choices=RELATIONS)
    cal.add_argument("--accuracy", type=float, default=DEFAULT_ACCURACY)
    cal.add_argument(
        "--json",
        action="store_true",
        help="strict JSON output (null: no finite bound): the run's parameters, sampler, "
        "relation, calibrated, objective, the target, the certified lower and upper bounds "
        "of the objective, within_tolerance",
    )
    add_plot_parser(sub)  # `plda plot ...`: matplotlib is imported only when a plot is drawn
    return parser
