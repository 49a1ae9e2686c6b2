"""The entry point: parse, dispatch, and turn every refusal into one line with exit code 2."""

from __future__ import annotations

import sys
import warnings

from plda._internal.errors import AccuracyWarning, one_warning_per_call
from plda.cli.calibrate import calibrate_command
from plda.cli.checks import UsageError
from plda.cli.commands import delta_command, epsilon_command, epsilon_text
from plda.cli.parser import build_parser
from plda.cli.plot import plot_command
from plda.cli.risk import risk_command
from plda.mechanisms import SamplerAssumptionWarning

__all__ = ["ONE_LINE_WARNINGS", "REFERENCE", "main"]

#: the reference DP-SGD run that ``plda`` with no arguments prints (a demonstration only: a
#: subcommand never falls back on these values)
#: warnings shown as one line ``plda: warning: ...`` on stderr
ONE_LINE_WARNINGS = (AccuracyWarning, SamplerAssumptionWarning)

REFERENCE = {"noise_multiplier": 1.1, "sample_rate": 256 / 60000, "steps": 14062, "delta": 1e-5}


@one_warning_per_call
def main(argv: list[str] | None = None) -> int:
    """Run the command line: parse, dispatch, print the answer.

    An :class:`plda.AccuracyWarning` or a :class:`plda.SamplerAssumptionWarning` (an assumption
    about the data loader that the bounds rest on) is one line on stderr; so is every error.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit code: 0, or 2 on a usage error or an input the library refuses.
    """
    with warnings.catch_warnings(record=True) as caught:
        for category in ONE_LINE_WARNINGS:
            warnings.simplefilter("always", category)
        code = _run(argv)
    shown = set()
    for warning in caught:
        if issubclass(warning.category, ONE_LINE_WARNINGS):
            line = f"plda: warning: {' '.join(str(warning.message).split())}"
            if line not in shown:  # a calibration meets the same law many times: say it once
                print(line, file=sys.stderr)
                shown.add(line)
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return code


def _run(argv: list[str] | None) -> int:
    try:
        args = build_parser().parse_args(argv)
        if args.command is None:
            print(epsilon_command(**REFERENCE))
            return 0
        if args.command == "plot":
            print(plot_command(args))
            return 0
        command = {
            "epsilon": epsilon_text,
            "delta": delta_command,
            "calibrate": calibrate_command,
            "risk": risk_command,
        }
        print(command[args.command](args))
        return 0
    except ImportError as exc:  # plotting without matplotlib
        print(f"plda: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except UsageError as exc:
        print(f"plda: error: {exc}", file=sys.stderr)
        return 2
    except (ValueError, TypeError) as exc:
        print(f"plda: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
