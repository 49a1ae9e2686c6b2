"""``--sampler``: which batch sampler a DP-SGD run used, and the size flags each one needs.

Every sampler, its size flags and its mechanism come from the sampler registry,
:data:`plda.samplers.SAMPLERS` (default ``poisson``). ``--steps`` counts training steps, a whole
number of epochs for the epoch samplers; a flag the sampler does not use is an error, and so is
a missing one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from plda.cli.checks import UsageError, check_positive, check_rate, check_steps, require
from plda.mechanisms import Gaussian, Mechanism
from plda.samplers import SAMPLERS as REGISTRY
from plda.samplers import SIZES, sampled_mechanism
from plda.samplers import flag as size_flag

__all__ = [
    "DEFAULT_SAMPLER",
    "DRAW_FLAGS",
    "SAMPLERS",
    "SIZE_FLAGS",
    "SamplerRun",
    "add_sampler_flags",
    "check_unused",
    "sampler_run",
]

#: the sampler assumed without ``--sampler``: Poisson sampling, what Opacus's DPDataLoader runs
DEFAULT_SAMPLER = "poisson"

#: sampler -> its required size flags (besides --noise-multiplier and --steps), from the
#: sampler registry (:data:`plda.samplers.SAMPLERS`)
SAMPLERS: dict[str, tuple[str, ...]] = {name: spec.flags for name, spec in REGISTRY.items()}
#: optional size flags (random allocation: each record in --num-selected steps, default 1)
OPTIONAL_FLAGS: dict[str, tuple[str, ...]] = {
    name: spec.optional_flags for name, spec in REGISTRY.items() if spec.optional_flags
}
#: every size flag -> its namespace attribute
SIZE_FLAGS = {size_flag(size): size for size in SIZES}
#: the flags of a protected unit that enters several draws per step
DRAW_FLAGS = {
    "--group-size": "records of the protected unit (a user's examples): a mixture per step, "
    "binomial under poisson, hypergeometric under without-replacement (default 1; "
    "replace_one: poisson only, the double mixture)",
    "--accumulation-steps": "Poisson micro-batches summed per optimizer step before the noise "
    "(default 1; poisson)",
}


def add_sampler_flags(parser, integer) -> None:
    """Add the ``--sampler`` flag and the size flags to a subcommand's parser.

    ``--sample-rate`` is one of the DP-SGD flags, added with them.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser.
    integer : callable
        The ``argparse`` type of the counts (parses ``1e6``-style counts).
    """
    samplers = "; ".join(
        f"{spec.summary}: {' '.join(spec.flags)}"
        + "".join(f" [{option}]" for option in spec.optional_flags)
        for spec in REGISTRY.values()
    )
    parser.add_argument(
        "--sampler",
        choices=tuple(SAMPLERS),
        default=None,
        metavar="SAMPLER",
        help="how batches were drawn (default: poisson, the sampler Opacus's DPDataLoader "
        f"runs). One of: {samplers}",
    )
    for size, text in SIZES.items():
        if size != "sample_rate":
            parser.add_argument(size_flag(size), type=integer, help=text)
    for flag, text in DRAW_FLAGS.items():
        parser.add_argument(flag, type=integer, help=text)


@dataclass(frozen=True)
class SamplerRun:
    """A DP-SGD run's sampler and sizes, as the command line gave them.

    Attributes
    ----------
    sampler : str
        The registry name of the sampler.
    sizes : dict
        Its size flags' values, by namespace attribute (``sample_rate``, ``batch_size``, ...).
    steps : int or None
        Training steps; None while they are being calibrated.
    draws : dict
        ``group_size`` and ``accumulation_steps`` where given (:data:`DRAW_FLAGS`).
    relation : str
        ``--relation``: it sets the range of the noise multiplier (its floor doubles under
        replace-one).
    """

    sampler: str
    sizes: dict
    steps: int | None
    draws: dict = field(default_factory=dict)
    relation: str = "add_remove"

    @property
    def epoch_length(self) -> int:
        """Steps per composed mechanism: ``--num-steps`` for epoch samplers, else 1."""
        return self.sizes["num_steps"] if REGISTRY[self.sampler].epoch else 1

    def count(self, steps: int | None = None) -> int:
        """Composed mechanisms for ``steps`` training steps (epochs for epoch samplers).

        Parameters
        ----------
        steps : int, optional
            Training steps (default: :attr:`steps`).

        Returns
        -------
        int
            ``steps // epoch_length``.
        """
        steps = self.steps if steps is None else steps
        return steps // self.epoch_length

    @property
    def nominal_rate(self) -> float:
        """The chance that a record is in a given step's batch (a starting guess only)."""
        return REGISTRY[self.sampler].nominal_rate(self.sizes)

    def step(self, sigma: float) -> Mechanism:
        """The mechanism of one step (one epoch for epoch samplers) at noise ``sigma``.

        Parameters
        ----------
        sigma : float
            The noise multiplier.

        Returns
        -------
        Mechanism
            :func:`plda.sampled_mechanism` of ``Gaussian(sigma)`` with the run's sizes.

        Raises
        ------
        UsageError
            For what the library refuses, naming the flag its message names first (the noise
            for ``sensitivity / sigma``, which is ``1 / --noise-multiplier`` here), else the
            sampler.
        """
        try:
            return sampled_mechanism(Gaussian.from_noise_multiplier(sigma, self.relation),
                                     self.sampler, **self.sizes, **self.draws)
        except (TypeError, ValueError) as exc:
            raise UsageError(f"argument {self._flag(str(exc))}: {exc}") from None

    def _flag(self, message: str) -> str:
        """The flag a library message is about: the one whose argument it names first (it was
        always '--sampler NAME', also for a --noise-multiplier or --sample-rate the user
        wrote and a --sampler the user did not)."""
        flags = {"noise_multiplier": "--noise-multiplier", "sensitivity / sigma": (
            "--noise-multiplier"), **{size: flag for flag, size in SIZE_FLAGS.items()},
            **{flag[2:].replace("-", "_"): flag for flag in DRAW_FLAGS}}
        for name in sorted(flags, key=len, reverse=True):
            if message.startswith(f"{name} "):
                return flags[name]
        return f"--sampler {self.sampler}"

    def described(self, sigma: float, **calibrated) -> dict:
        """The run as a JSON-ready dict, keyed by the flags in the order of :data:`SIZE_FLAGS`.

        Parameters
        ----------
        sigma : float or None
            The noise multiplier.
        **calibrated
            A calibrated parameter's value (``steps=...``, ``sample_rate=...``).

        Returns
        -------
        dict
            ``noise_multiplier``, the sizes, ``steps``, ``sampler`` and, for an epoch sampler,
            ``epochs``.
        """
        values = {"noise_multiplier": sigma, **self.sizes, **self.draws, "steps": self.steps,
                  **calibrated}
        order = ("noise_multiplier", *SIZE_FLAGS.values(), "group_size", "accumulation_steps",
                 "steps")
        record = {key: values[key] for key in order if key in values}
        record["sampler"] = self.sampler
        if REGISTRY[self.sampler].epoch and record["steps"] is not None:
            record["epochs"] = self.count(record["steps"])
        return record


def check_unused(args) -> str:
    """The sampler of ``args``, refusing a size flag it does not use.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    str
        The sampler (``poisson`` without ``--sampler``).

    Raises
    ------
    UsageError
        For a size flag the sampler does not use (it would otherwise be ignored silently).
    """
    sampler = getattr(args, "sampler", None) or DEFAULT_SAMPLER
    takes = SAMPLERS[sampler] + OPTIONAL_FLAGS.get(sampler, ())
    for flag, attr in SIZE_FLAGS.items():
        if getattr(args, attr, None) is not None and flag not in takes:
            raise UsageError(
                f"argument {flag}: not used by --sampler {sampler} (it takes "
                f"{' '.join(takes)}); pass the --sampler that ran"
            )
    return sampler


def sampler_run(args, missing: tuple[str, ...] = (), calibrated: str | None = None) -> SamplerRun:
    """The sampler and sizes of a DP-SGD command line, checked.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    missing : tuple of str, optional
        Other required flags not given, reported with the missing size flags.
    calibrated : str, optional
        A flag left out on purpose (it is calibrated).

    Returns
    -------
    SamplerRun
        The run.

    Raises
    ------
    UsageError
        For a flag the sampler does not use, a bad value, missing flags, or ``--steps`` not a
        whole number of epochs.
    """
    sampler = check_unused(args)
    takes = SAMPLERS[sampler] + OPTIONAL_FLAGS.get(sampler, ())
    sizes = {}
    for flag in takes:
        value = getattr(args, SIZE_FLAGS[flag], None)
        if value is not None:
            check = check_rate if flag == "--sample-rate" else check_steps
            sizes[SIZE_FLAGS[flag]] = check(flag, value)
    given = {"--noise-multiplier": args.noise_multiplier, "--steps": args.steps}
    if given["--noise-multiplier"] is not None:
        check_positive("--noise-multiplier", given["--noise-multiplier"])
    if given["--steps"] is not None:
        check_steps("--steps", given["--steps"])
    absent = [f for f, v in given.items() if v is None and f != calibrated]
    absent += [f for f in SAMPLERS[sampler] if SIZE_FLAGS[f] not in sizes and f != calibrated]
    require(absent + list(missing))
    draws = {}
    for flag in DRAW_FLAGS:
        value = getattr(args, flag[2:].replace("-", "_"), None)
        if value is not None:
            draws[flag[2:].replace("-", "_")] = check_steps(flag, value)
    run = SamplerRun(sampler=sampler, sizes=sizes, steps=args.steps, draws=draws,
                     relation=getattr(args, "relation", "add_remove"))
    if REGISTRY[sampler].epoch and args.steps is not None:
        epoch = sizes["num_steps"]
        if args.steps % epoch:
            whole = -(-args.steps // epoch) * epoch
            raise UsageError(
                f"argument --steps: must be a whole number of epochs (a multiple of "
                f"--num-steps {epoch}) for --sampler {sampler}, got {args.steps}; pass "
                f"--steps {whole} (whole epochs: its upper bound also bounds the shorter run)"
            )
    return run
