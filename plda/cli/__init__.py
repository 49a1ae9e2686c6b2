"""Command line: certified epsilon / delta bounds and calibration for DP-SGD and mechanism lists.

``plda`` with no arguments prints the bounds of the reference DP-SGD run (MNIST-sized: sample
rate 256/60000, noise multiplier 1.1, 14062 steps, delta 1e-5).

Examples::

    plda epsilon --noise-multiplier 1.1 --sample-rate 0.00427 --steps 14062 --delta 1e-5
    plda delta --noise-multiplier 1.1 --sample-rate 0.00427 --steps 14062 --epsilon 2
    plda epsilon --mechanism gaussian:sigma=2 --count 10 --mechanism laplace:scale=3 --delta 1e-6
    plda calibrate --epsilon 1 --delta 1e-5 --sample-rate 0.01 --steps 1000
    plda epsilon ... --json

Errors are reported on one line naming the bad argument, with exit code 2.

The package: :mod:`plda.cli.parser` (flags), :mod:`plda.cli.specs` (what is accounted),
:mod:`plda.cli.commands` (``epsilon``, ``delta``), :mod:`plda.cli.calibrate`,
:mod:`plda.cli.progress` and :mod:`plda.cli.app` (:func:`main`, the entry point).
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
