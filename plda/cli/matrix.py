"""``plda epsilon/delta --strategy FILE.npy``: a matrix mechanism's certified bounds."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from plda.cli.checks import UsageError, check_accuracy
from plda.cli.samplers import SIZE_FLAGS
from plda.matrix import (
    CyclicPoissonBandMF,
    MultiEpochMF,
    PoissonMatrixMechanism,
    toeplitz_strategy,
)

__all__ = ["add_strategy_flags", "matrix_reduction", "strategy_from_file"]

#: flags that describe DP-SGD or a mechanism list, not a matrix mechanism
_OTHER_FLAGS = ("steps", "mechanisms", "sampler", "group_size", "accumulation_steps",
                *(size for size in SIZE_FLAGS.values() if size != "sample_rate"))


def add_strategy_flags(parser) -> None:
    """The matrix-mechanism flags of ``plda epsilon`` and ``plda delta``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser.
    """
    parser.add_argument(
        "--strategy", metavar="FILE",
        help="a matrix mechanism's strategy C: a .npy file with a square lower-triangular "
        "array, or with a 1-D array of Toeplitz coefficients (then give --strategy-steps)")
    parser.add_argument(
        "--strategy-steps", type=int, metavar="N",
        help="with Toeplitz coefficients: the number of steps n (default: as many as "
        "coefficients)")
    parser.add_argument(
        "--participations", type=int, metavar="K",
        help="without --sample-rate: the most steps a record takes part in (default 1)")
    parser.add_argument(
        "--min-separation", type=int, metavar="S",
        help="without --sample-rate: the least distance between two of them (default 1)")
    parser.add_argument(
        "--strategy-sampling", choices=("cyclic", "poisson"), default=None,
        help="with --sample-rate: 'cyclic' (default), cyclic Poisson BandMF, each step "
        "sampling its own part of the data (an exact reduction); 'poisson', every step "
        "sampling the whole data (any strategy; a certified upper bound by conditional "
        "composition)")
    parser.add_argument(
        "--bands", type=int, metavar="B",
        help="with --sample-rate (cyclic Poisson BandMF): the number of parts (default: the "
        "strategy's bands)")


def strategy_from_file(path: str, steps: int | None):
    """The strategy stored at ``path`` (``numpy.load``; no pickles).

    Parameters
    ----------
    path : str
        A ``.npy`` file: a 2-D array ``C`` or a 1-D array of Toeplitz coefficients.
    steps : int or None
        For coefficients, the number of steps.

    Returns
    -------
    numpy.ndarray or ToeplitzStrategy
        What :mod:`plda.matrix` takes.

    Raises
    ------
    UsageError
        Naming ``--strategy`` if the file cannot be read or holds another shape, or
        ``--strategy-steps`` given with a 2-D array.
    """
    try:
        array = np.load(Path(path), allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise UsageError(f"argument --strategy: cannot read {path!r} as a .npy array: "
                         f"{' '.join(str(exc).split())}") from None
    if array.ndim == 1:
        try:
            return toeplitz_strategy(array, steps)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"argument --strategy: {exc}") from None
    if array.ndim != 2:
        raise UsageError(f"argument --strategy: {path!r} holds a {array.ndim}-D array; give a "
                         "square matrix or a 1-D array of Toeplitz coefficients")
    if steps is not None:
        raise UsageError("argument --strategy-steps: only with Toeplitz coefficients (a 1-D "
                         f"array); {path!r} holds a {array.shape[0]}x{array.shape[1]} matrix")
    return array


def matrix_reduction(args):
    """The reduction the flags describe, and its description for the output.

    ``--sample-rate`` gives cyclic Poisson BandMF (:class:`~plda.matrix.CyclicPoissonBandMF`),
    or with ``--strategy-sampling poisson`` every step Poisson-sampled
    (:class:`~plda.matrix.PoissonMatrixMechanism`); without it, the unsampled
    multi-participation mechanism (:class:`~plda.matrix.MultiEpochMF`).

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line (``strategy`` set).

    Returns
    -------
    tuple
        ``(reduction, description)``: what answers ``epsilon_bounds`` and ``delta_bounds``
        (a :class:`~plda.matrix.MatrixReduction` or a
        :class:`~plda.matrix.PoissonMatrixMechanism`) and a dict.

    Raises
    ------
    UsageError
        Naming the flag that is missing, out of range or not for a matrix mechanism.
    """
    given = [name for name in _OTHER_FLAGS if getattr(args, name, None) not in (None, [], 1)]
    if getattr(args, "sampler", None) in (None, "poisson"):
        given = [name for name in given if name != "sampler"]
    if given:
        flag = "--" + given[0].replace("_", "-").replace("mechanisms", "mechanism")
        raise UsageError(f"argument {flag}: not with --strategy (the strategy's size is the "
                         "number of steps; a matrix mechanism is accounted on its own)")
    if args.relation != "add_remove":
        raise UsageError("argument --relation: a matrix mechanism is accounted under "
                         "add_remove (each record's contribution is clipped to norm 1)")
    check_accuracy(args.accuracy)
    if args.noise_multiplier is None:
        raise UsageError("argument --noise-multiplier: required with --strategy")
    strategy = strategy_from_file(args.strategy, args.strategy_steps)
    described = {"strategy": args.strategy, "noise_multiplier": args.noise_multiplier}
    sampling = getattr(args, "strategy_sampling", None)
    if sampling is not None and args.sample_rate is None:
        raise UsageError("argument --strategy-sampling: only with --sample-rate")
    try:
        if args.sample_rate is not None:
            if args.participations is not None or args.min_separation is not None:
                raise UsageError("argument --participations: not with --sample-rate (Poisson "
                                 "sampling sets the participations)")
            if sampling == "poisson":
                if args.bands is not None:
                    raise UsageError("argument --bands: only with cyclic Poisson BandMF (not "
                                     "with --strategy-sampling poisson)")
                reduction = PoissonMatrixMechanism(strategy, args.noise_multiplier,
                                                   args.sample_rate)
                described.update(sample_rate=args.sample_rate, sampling="poisson",
                                 tail_probability=reduction.charged_tail, exact=False)
                return reduction, described
            reduction = CyclicPoissonBandMF(strategy, args.noise_multiplier, args.sample_rate,
                                            bands=args.bands)
            described.update(sample_rate=args.sample_rate, bands=reduction.bands,
                             rounds=reduction.rounds)
        else:
            if args.bands is not None:
                raise UsageError("argument --bands: only with --sample-rate (cyclic Poisson "
                                 "BandMF)")
            reduction = MultiEpochMF(strategy, args.noise_multiplier,
                                     participations=args.participations or 1,
                                     min_separation=args.min_separation or 1)
            described.update(participations=reduction.participations,
                             min_separation=reduction.min_separation,
                             sensitivity=reduction.sensitivity.value)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"argument --strategy: {' '.join(str(exc).split())}") from None
    described["exact"] = reduction.exact
    return reduction, described
