"""What the command line accounts: ``--mechanism`` specs, or DP-SGD flags."""

from __future__ import annotations

from plda.cli.checks import UsageError, require
from plda.cli.samplers import DEFAULT_SAMPLER, SIZE_FLAGS, sampler_run
from plda.mechanisms import (
    ApproximateDP,
    DiscreteGaussian,
    DiscreteLaplace,
    ExponentialMechanism,
    Gaussian,
    Laplace,
    Mechanism,
    PermuteAndFlip,
    PoissonSampled,
    RandomizedResponse,
    ReportNoisyMax,
)

__all__ = ["MECHANISM_SPECS", "composition", "describe", "parse_mechanism"]

#: mechanism spec name -> (class, accepted keys)
MECHANISM_SPECS = {
    "gaussian": (Gaussian, ("sigma", "sensitivity")),
    "laplace": (Laplace, ("scale", "sensitivity")),
    "discrete_laplace": (DiscreteLaplace, ("parameter", "sensitivity")),
    "discrete_gaussian": (DiscreteGaussian, ("sigma", "sensitivity")),
    "approximate_dp": (ApproximateDP, ("epsilon", "delta")),
    "randomized_response": (RandomizedResponse, ("noise_parameter", "num_buckets")),
    "exponential": (ExponentialMechanism, ("epsilon",)),
    "permute_and_flip": (PermuteAndFlip, ("epsilon",)),
    "report_noisy_max": (ReportNoisyMax, ("epsilon", "noise")),
}
#: keys every spec takes: Poisson sampling of the mechanism, and a group of records
SAMPLING_KEYS = ("sample_rate", "group_size")
#: keys whose values are words, not numbers
TEXT_KEYS = ("noise",)


def parse_mechanism(spec: str) -> Mechanism:
    """The mechanism of a ``--mechanism`` spec.

    Parameters
    ----------
    spec : str
        ``"gaussian:sigma=2"``, ``"laplace:scale=3,sensitivity=2"``, ... (the names and keys of
        :data:`MECHANISM_SPECS`); a ``sample_rate=q`` key wraps the mechanism in
        :class:`~plda.PoissonSampled`, with ``group_size=K`` records each sampled.

    Returns
    -------
    Mechanism
        The mechanism.

    Raises
    ------
    UsageError
        Naming ``--mechanism``, for an unknown name or key, a value that is not a number, or
        one the mechanism refuses.
    """
    name, _, rest = spec.partition(":")
    name = name.strip().lower().replace("-", "_")
    if name not in MECHANISM_SPECS:
        raise UsageError(
            f"argument --mechanism: unknown mechanism {name!r} in {spec!r} (choose from "
            f"{', '.join(MECHANISM_SPECS)})"
        )
    cls, keys = MECHANISM_SPECS[name]
    kwargs = {}
    sample_rate, group_size = None, None
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or (key not in keys and key not in SAMPLING_KEYS):
            raise UsageError(
                f"argument --mechanism: bad parameter {item!r} in {spec!r} ({name} takes "
                f"{', '.join(keys)}, {', '.join(SAMPLING_KEYS)})"
            )
        if key in TEXT_KEYS:
            kwargs[key] = value.strip()
            continue
        try:
            number = float(value)
        except ValueError:
            raise UsageError(
                f"argument --mechanism: {key}={value!r} in {spec!r} is not a number"
            ) from None
        if key == "sample_rate":
            sample_rate = number
        elif key == "group_size":
            group_size = int(number) if number.is_integer() else number
        else:
            kwargs[key] = int(number) if number.is_integer() and key == "sensitivity" else number
    try:
        mechanism = cls(**kwargs)
        if group_size is not None and sample_rate is None:
            raise UsageError(f"argument --mechanism: {spec!r}: group_size needs sample_rate "
                             "(a group of records, each Poisson-sampled)")
        if sample_rate is not None:
            mechanism = PoissonSampled(mechanism, sample_rate=sample_rate,
                                       group_size=1 if group_size is None else group_size)
    except TypeError as exc:
        raise UsageError(f"argument --mechanism: {spec!r}: {exc}") from None
    except ValueError as exc:
        raise UsageError(f"argument --mechanism: {spec!r}: {exc}") from None
    return mechanism


def composition(args, missing: tuple[str, ...] = ()) -> tuple[tuple, dict]:
    """What the command line accounts: DP-SGD flags (with their ``--sampler``) or a mechanism list.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.
    missing : tuple of str, optional
        Other required flags that were not given (reported together with missing DP-SGD
        flags).

    Returns
    -------
    tuple
        ``(components, description)``: run-length ``((mechanism, count), ...)`` and a
        JSON-ready description of the run.

    Raises
    ------
    UsageError
        For DP-SGD flags mixed with ``--mechanism``, a bad count, spec or value, or missing
        flags (all named in one line).
    """
    mechanisms = getattr(args, "mechanisms", None)
    if mechanisms:
        dpsgd = ["--noise-multiplier", "--steps", "--sampler", *SIZE_FLAGS]
        used = [f for f in dpsgd if getattr(args, f[2:].replace("-", "_"), None) is not None]
        if used:
            raise UsageError(
                f"argument --mechanism: not allowed with {used[0]} (DP-SGD flags describe one "
                "run; for Poisson sampling in a --mechanism list add sample_rate=q to its spec)"
            )
        components = []
        for spec, count in mechanisms:
            if count is None or count < 1:
                raise UsageError(f"argument --count: must be an integer >= 1, got {count!r}")
            components.append((parse_mechanism(spec), int(count)))
        described = {"mechanisms": [{"mechanism": s, "count": int(k)} for s, k in mechanisms]}
        require(list(missing))
        return tuple(components), described
    # No silent defaults: the values given are checked first (so the error names a bad value),
    # then every missing one is reported in a single line.
    run = sampler_run(args, missing)
    sigma = args.noise_multiplier
    return ((run.step(sigma), run.count()),), run.described(sigma)


#: how the human-readable output names each sampler
SAMPLER_NAMES = {
    "without-replacement": "fixed-size batches of {batch_size} of {dataset_size} records",
    "truncated-poisson": "Poisson sample rate {sample_rate:.6g} truncated at {max_batch_size} "
    "of {dataset_size} records",
    "shuffled": "shuffled, {num_steps} steps per epoch, {epochs} epochs",
    "random-allocation": "random allocation, {num_selected} of {num_steps} steps per epoch, "
    "{epochs} epochs",
}


def describe(described: dict) -> str:
    """The run in words, for the human-readable output.

    Parameters
    ----------
    described : dict
        The description of :func:`composition`.

    Returns
    -------
    str
        ``"DP-SGD: noise multiplier 1.1, sample rate 0.00427, 14062 steps"`` and the like.
    """
    if "mechanisms" in described:
        return "; ".join(f"{m['count']} x {m['mechanism']}" for m in described["mechanisms"])
    if "strategy" in described:
        exact = "exact" if described["exact"] else "upper bound; lower from a realized run"
        if described.get("sampling") == "poisson":
            return (f"matrix mechanism {described['strategy']} ({exact}): every step "
                    f"Poisson-sampled at rate {described['sample_rate']:.6g}, noise multiplier "
                    f"{described['noise_multiplier']}, conditional composition (tail "
                    f"{described['tail_probability']:.3g} charged to delta)")
        if "sample_rate" in described:
            return (f"matrix mechanism {described['strategy']} ({exact}): cyclic Poisson "
                    f"BandMF, {described['bands']} bands, sample rate "
                    f"{described['sample_rate']:.6g}, noise multiplier "
                    f"{described['noise_multiplier']} = DP-SGD for {described['rounds']} steps")
        return (f"matrix mechanism {described['strategy']} ({exact}): "
                f"{described['participations']} participations at least "
                f"{described['min_separation']} apart, sensitivity "
                f"{described['sensitivity']:.6g}, noise multiplier "
                f"{described['noise_multiplier']}")
    sampler = described.get("sampler", DEFAULT_SAMPLER)
    draws = "".join(
        f", {described[key]} {words}"
        for key, words in (("group_size", "records per protected unit"),
                           ("accumulation_steps", "micro-batches per step"))
        if described.get(key, 1) != 1
    )
    if sampler == DEFAULT_SAMPLER:
        return (
            f"DP-SGD: noise multiplier {described['noise_multiplier']}, sample rate "
            f"{described['sample_rate']:.6g}{draws}, {described['steps']} steps"
        )
    how = SAMPLER_NAMES[sampler].format(**{"num_selected": 1, **described})
    return (
        f"DP-SGD ({how}): noise multiplier {described['noise_multiplier']}{draws}, "
        f"{described['steps']} steps"
    )
