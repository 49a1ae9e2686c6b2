r"""Command line: certified epsilon / delta bounds and calibration for DP-SGD and mechanism lists.

``plda`` with no arguments prints the bounds of the reference DP-SGD run (MNIST-sized: sample
rate 256/60000, noise multiplier 1.1, 14062 steps, delta 1e-5).

Examples::

    plda epsilon --noise-multiplier 1.1 --sample-rate 0.00427 --steps 14062 --delta 1e-5
    plda delta --noise-multiplier 1.1 --sample-rate 0.00427 --steps 14062 --epsilon 2
    plda epsilon --mechanism gaussian:sigma=2 --count 10 --mechanism laplace:scale=3 --delta 1e-6
    plda calibrate --epsilon 1 --delta 1e-5 --sample-rate 0.01 --steps 1000
    plda calibrate --target-true-positive-rate 0.02 --at-false-positive-rate 1e-3 \
        --sample-rate 0.01 --steps 1000
    plda epsilon --noise-multiplier 1.1 --steps 14062 --delta 1e-5 \
        --sampler without-replacement --batch-size 256 --dataset-size 60000
    plda risk --noise-multiplier 1 --sample-rate 0.01 --steps 1000 --false-positive-rate 1e-3
    plda epsilon ... --json

Errors are reported on one line naming the bad argument, with exit code 2; a missing required
value is such an error (no silent defaults). ``--sampler`` defaults to ``poisson``, the sampler
Opacus's ``DPDataLoader`` runs.

The package: :mod:`plda.cli.parser` (flags), :mod:`plda.cli.specs` (what is accounted),
:mod:`plda.cli.samplers` (``--sampler`` and its size flags), :mod:`plda.cli.commands`
(``epsilon``, ``delta``), :mod:`plda.cli.risk`, :mod:`plda.cli.targets` and
:mod:`plda.cli.calibrate` (with :mod:`plda.cli.sampler_calibration`), :mod:`plda.cli.plot`
(``plda plot``, drawn by :mod:`plda.plot`), :mod:`plda.cli.progress` and :mod:`plda.cli.app`
(:func:`main`, the entry point).
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
