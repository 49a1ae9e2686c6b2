r"""Command line: certified epsilon / delta bounds and calibration for DP-SGD and mechanism lists.

Subcommands ``epsilon``, ``delta``, ``risk``, ``calibrate`` and ``plot``; ``plda`` with no
arguments prints the bounds of the reference DP-SGD run (MNIST-sized). Errors are reported on one
line naming the bad argument, with exit code 2; a missing required value is such an error (no
silent defaults). Examples: ``docs/accountant.md`` ("Command line"), and ``plda --help``.
"""

from plda.cli.app import main
from plda.cli.checks import UsageError
from plda.cli.commands import epsilon_command
from plda.cli.progress import StderrProgress, progress_printer
from plda.cli.specs import MECHANISM_SPECS, parse_mechanism

__all__ = [
    "MECHANISM_SPECS",
    "StderrProgress",
    "UsageError",
    "epsilon_command",
    "main",
    "parse_mechanism",
    "progress_printer",
]
