"""What the command line accounts: ``--mechanism`` specs, or DP-SGD flags."""

from __future__ import annotations

from plda.cli.checks import (
    UsageError,
    check_positive,
    check_rate,
    check_steps,
    require,
)
from plda.mechanisms import (
    ApproximateDP,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    Mechanism,
    PoissonSampled,
)

__all__ = ["MECHANISM_SPECS", "composition", "describe", "parse_mechanism"]

#: mechanism spec name -> (class, accepted keys)
MECHANISM_SPECS = {
    "gaussian": (Gaussian, ("sigma", "sensitivity")),
    "laplace": (Laplace, ("scale", "sensitivity")),
    "discrete_laplace": (DiscreteLaplace, ("parameter", "sensitivity")),
    "discrete_gaussian": (DiscreteGaussian, ("sigma", "sensitivity")),
    "approximate_dp": (ApproximateDP, ("epsilon", "delta")),
}


def parse_mechanism(spec: str) -> Mechanism:
    """``"gaussian:sigma=2"``, ``"laplace:scale=3,sensitivity=2"``, ... ; a ``sample_rate=q``
    key wraps the mechanism in :class:`~plda.PoissonSampled`."""
    name, _, rest = spec.partition(":")
    name = name.strip().lower().replace("-", "_")
    if name not in MECHANISM_SPECS:
        raise UsageError(
            f"argument --mechanism: unknown mechanism {name!r} in {spec!r} (choose from "
            f"{', '.join(MECHANISM_SPECS)})"
        )
    cls, keys = MECHANISM_SPECS[name]
    kwargs = {}
    sample_rate = None
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or (key not in keys and key != "sample_rate"):
            raise UsageError(
                f"argument --mechanism: bad parameter {item!r} in {spec!r} ({name} takes "
                f"{', '.join(keys)}, sample_rate)"
            )
        try:
            number = float(value)
        except ValueError:
            raise UsageError(
                f"argument --mechanism: {key}={value!r} in {spec!r} is not a number"
            ) from None
        if key == "sample_rate":
            sample_rate = number
        else:
            kwargs[key] = int(number) if number.is_integer() and key == "sensitivity" else number
    try:
        mechanism = cls(**kwargs)
        if sample_rate is not None:
            mechanism = PoissonSampled(mechanism, sample_rate=sample_rate)
    except TypeError as exc:
        raise UsageError(f"argument --mechanism: {spec!r}: {exc}") from None
    except ValueError as exc:
        raise UsageError(f"argument --mechanism: {spec!r}: {exc}") from None
    return mechanism


def composition(args, missing: tuple[str, ...] = ()) -> tuple[tuple, dict]:
    """``(components, description)`` from DP-SGD flags or a --mechanism list; ``missing`` names
    other required flags that were not given (reported together with missing DP-SGD flags)."""
    mechanisms = getattr(args, "mechanisms", None)
    dpsgd = [args.noise_multiplier, args.sample_rate, args.steps]
    if mechanisms:
        if any(v is not None for v in dpsgd):
            raise UsageError(
                "argument --mechanism: not allowed with --noise-multiplier/--sample-rate/--steps"
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
    given = {
        "--noise-multiplier": (check_positive, args.noise_multiplier),
        "--sample-rate": (check_rate, args.sample_rate),
        "--steps": (check_steps, args.steps),
    }
    values = {flag: check(flag, v) for flag, (check, v) in given.items() if v is not None}
    require([f for f in given if f not in values] + list(missing))
    sigma, rate, steps = values["--noise-multiplier"], values["--sample-rate"], values["--steps"]
    step = PoissonSampled(Gaussian(sigma=sigma), sample_rate=rate)
    return ((step, steps),), {"noise_multiplier": sigma, "sample_rate": rate, "steps": steps}


def describe(described: dict) -> str:
    if "mechanisms" in described:
        return "; ".join(f"{m['count']} x {m['mechanism']}" for m in described["mechanisms"])
    return (
        f"DP-SGD: noise multiplier {described['noise_multiplier']}, sample rate "
        f"{described['sample_rate']:.6g}, {described['steps']} steps"
    )
