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
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import warnings

from plda import __version__
from plda._internal.errors import AccuracyWarning
from plda.mechanisms import (
    ApproximateDP,
    DiscreteGaussian,
    DiscreteLaplace,
    Gaussian,
    Laplace,
    Mechanism,
    PoissonSampled,
)
from plda.pld import DEFAULT_ACCURACY, RELATIONS, PrivacyLossDistribution

#: mechanism spec name -> (class, accepted keys)
MECHANISM_SPECS = {
    "gaussian": (Gaussian, ("sigma", "sensitivity")),
    "laplace": (Laplace, ("scale", "sensitivity")),
    "discrete_laplace": (DiscreteLaplace, ("parameter", "sensitivity")),
    "discrete_gaussian": (DiscreteGaussian, ("sigma", "sensitivity")),
    "approximate_dp": (ApproximateDP, ("epsilon", "delta")),
}

_REFERENCE = {"noise_multiplier": 1.1, "sample_rate": 256 / 60000, "steps": 14062, "delta": 1e-5}


class UsageError(Exception):
    """A bad command line; the message names the argument."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2 (handled in main)
        raise UsageError(message)


def _integer(text: str) -> int:
    """``--steps 1e6`` is accepted (an integer value); ``1.5`` is refused with a clear message."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
    if not math.isfinite(value) or value != math.floor(value):
        raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}")
    return int(value)


class _MechanismAction(argparse.Action):
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


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="plda", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"plda {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    def common(p, quantity: str):
        p.add_argument("--noise-multiplier", type=float, help="DP-SGD noise multiplier sigma")
        p.add_argument("--sample-rate", type=float, help="DP-SGD Poisson sample rate q")
        p.add_argument("--steps", type=_integer, help="number of DP-SGD steps (e.g. 14062 or 1e6)")
        p.add_argument(
            "--mechanism",
            action=_MechanismAction,
            metavar="SPEC",
            help="a mechanism, e.g. gaussian:sigma=2, laplace:scale=3, "
            "discrete_laplace:parameter=1, approximate_dp:epsilon=1,delta=1e-6; add "
            "sample_rate=q for Poisson sampling (repeatable)",
        )
        p.add_argument(
            "--count",
            action=_MechanismAction,
            type=_integer,
            metavar="K",
            help="runs of the preceding --mechanism (default 1)",
        )
        if quantity == "--delta":
            # no default: a missing --delta is an error (checked after the given values)
            p.add_argument("--delta", type=float, help="delta (required)")
        else:
            p.add_argument(quantity, type=float, required=True, help="epsilon")
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

    common(sub.add_parser("epsilon", help="certified epsilon bounds at a delta"), "--delta")
    common(sub.add_parser("delta", help="certified delta bounds at an epsilon"), "--epsilon")
    cal = sub.add_parser(
        "calibrate",
        help="the missing DP-SGD parameter (noise multiplier, sample rate or steps) for a "
        "target (epsilon, delta)",
    )
    cal.add_argument("--epsilon", type=float, required=True, help="target epsilon")
    cal.add_argument("--delta", type=float, required=True, help="target delta")
    cal.add_argument("--noise-multiplier", type=float)
    cal.add_argument("--sample-rate", type=float)
    cal.add_argument("--steps", type=_integer)
    cal.add_argument("--relation", default="add_remove", choices=RELATIONS)
    cal.add_argument("--accuracy", type=float, default=DEFAULT_ACCURACY)
    cal.add_argument(
        "--json", action="store_true", help="strict JSON output (null: no finite bound)"
    )
    try:  # `plda plot ...` (PNG/PDF/SVG figures; matplotlib is imported only when a plot is drawn)
        from plda.plot.cli import add_plot_parser
    except ImportError:  # pragma: no cover - plotting module absent
        pass
    else:
        add_plot_parser(sub)
    return parser


# ------------------------------------------------------------------ progress
class StderrProgress:
    """A ``progress(fraction, message)`` callback that redraws one line on stderr.

    Meant for the calibration functions' ``progress=`` argument; :func:`progress_printer`
    returns one only when stderr is a terminal, so pipes and logs stay clean.
    """

    def __init__(self, stream=None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.width = 0

    def __call__(self, fraction: float, message: str) -> None:
        percent = 100.0 * min(max(float(fraction), 0.0), 1.0) if math.isfinite(fraction) else 0.0
        line = f"plda: {percent:5.1f}% {' '.join(str(message).split())}"
        # pad with blanks so a shorter line fully covers the previous one
        self.stream.write("\r" + line.ljust(self.width))
        self.stream.flush()
        self.width = len(line)

    def close(self) -> None:
        """End the progress line (call once the work is done)."""
        if self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


def progress_printer(stream=None) -> StderrProgress | None:
    """A :class:`StderrProgress` when ``stream`` (default stderr) is a terminal, else ``None``."""
    stream = stream if stream is not None else sys.stderr
    isatty = getattr(stream, "isatty", None)
    return StderrProgress(stream) if isatty is not None and isatty() else None


# ------------------------------------------------------------------ argument checks
def _positive(flag: str, value) -> float:
    if value is None or not (value > 0) or not math.isfinite(value):
        raise UsageError(f"argument {flag}: must be a finite number > 0, got {value!r}")
    return value


def _rate(flag: str, value) -> float:
    if value is None or not (0 < value <= 1):
        raise UsageError(f"argument {flag}: must be in (0, 1], got {value!r}")
    return value


def _steps(flag: str, value) -> int:
    if value is None or value < 1:
        raise UsageError(f"argument {flag}: must be an integer >= 1, got {value!r}")
    return value


def _delta(flag: str, value) -> float:
    if value is None or not (0 <= value <= 1):
        raise UsageError(f"argument {flag}: must be in [0, 1], got {value!r}")
    return value


def _require(missing: list[str]) -> None:
    if missing:
        raise UsageError(f"the following arguments are required: {', '.join(missing)}")


def _accuracy(value) -> float:
    if not (0 < value < 1):
        raise UsageError(f"argument --accuracy: must be in (0, 1), got {value!r}")
    return value


def _composition(args, missing: tuple[str, ...] = ()) -> tuple[tuple, dict]:
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
        _require(list(missing))
        return tuple(components), described
    # No silent defaults: the values given are checked first (so the error names a bad value),
    # then every missing one is reported in a single line.
    given = {
        "--noise-multiplier": (_positive, args.noise_multiplier),
        "--sample-rate": (_rate, args.sample_rate),
        "--steps": (_steps, args.steps),
    }
    values = {flag: check(flag, v) for flag, (check, v) in given.items() if v is not None}
    _require([f for f in given if f not in values] + list(missing))
    sigma, rate, steps = values["--noise-multiplier"], values["--sample-rate"], values["--steps"]
    step = PoissonSampled(Gaussian(sigma=sigma), sample_rate=rate)
    return ((step, steps),), {"noise_multiplier": sigma, "sample_rate": rate, "steps": steps}


def _describe(described: dict) -> str:
    if "mechanisms" in described:
        return "; ".join(f"{m['count']} x {m['mechanism']}" for m in described["mechanisms"])
    return (
        f"DP-SGD: noise multiplier {described['noise_multiplier']}, sample rate "
        f"{described['sample_rate']:.6g}, {described['steps']} steps"
    )


# ------------------------------------------------------------------------ commands
def epsilon_command(noise_multiplier, sample_rate, steps, delta, as_json=False) -> str:
    """Certified epsilon bounds of a DP-SGD run, formatted (human or JSON)."""
    args = argparse.Namespace(
        noise_multiplier=noise_multiplier,
        sample_rate=sample_rate,
        steps=steps,
        delta=delta,
        relation="add_remove",
        accuracy=DEFAULT_ACCURACY,
        json=as_json,
        mechanisms=None,
    )
    return _epsilon(args)


def _pld(components, args) -> PrivacyLossDistribution:
    if args.relation == "replace_one":
        for mechanism, _ in components:
            try:
                mechanism.under_replace_one()
            except ValueError as exc:
                raise UsageError(f"argument --relation: {exc}") from None
    return PrivacyLossDistribution(components, args.relation, _accuracy(args.accuracy))


def _json(record: dict) -> str:
    """Strict JSON (RFC 8259 has no Infinity or NaN): a non-finite number is written as
    ``null``, which means "no finite bound" (an infinite epsilon, e.g. delta below the mass at
    infinite loss)."""
    clean = {
        key: (None if isinstance(value, float) and not math.isfinite(value) else value)
        for key, value in record.items()
    }
    return json.dumps(clean, allow_nan=False)


def _epsilon(args) -> str:
    _accuracy(args.accuracy)  # given values are checked before missing ones are reported
    if args.delta is not None:
        _delta("--delta", args.delta)
    components, described = _composition(args, () if args.delta is not None else ("--delta",))
    delta = args.delta
    lower, upper = _pld(components, args).epsilon_bounds(delta)
    if args.json:
        return _json(
            {
                **described,
                "delta": delta,
                "relation": args.relation,
                "accuracy": args.accuracy,
                "epsilon": upper,
                "epsilon_lower": lower,
                "epsilon_upper": upper,
            }
        )
    return (
        f"{_describe(described)}, delta {delta:g}\n"
        f"epsilon <= {upper:.6f}   (certified upper bound)\n"
        f"epsilon >= {lower:.6f}   (certified lower bound; the true epsilon lies between)"
    )


def _delta_command(args) -> str:
    epsilon = args.epsilon
    if epsilon is None or not (epsilon >= 0) or math.isnan(epsilon):
        raise UsageError(f"argument --epsilon: must be a number >= 0, got {epsilon!r}")
    components, described = _composition(args)
    lower, upper = _pld(components, args).delta_bounds(epsilon)
    if args.json:
        return _json(
            {
                **described,
                "epsilon": epsilon,
                "relation": args.relation,
                "accuracy": args.accuracy,
                "delta": upper,
                "delta_lower": lower,
                "delta_upper": upper,
            }
        )
    return (
        f"{_describe(described)}, epsilon {epsilon:g}\n"
        f"delta <= {upper:.6e}   (certified upper bound)\n"
        f"delta >= {lower:.6e}   (certified lower bound; the true delta lies between)"
    )


def _calibrate(args) -> str:
    from plda import calibration

    target = _positive("--epsilon", args.epsilon)
    delta = args.delta
    if delta is None or not (0 < delta < 1):
        raise UsageError(f"argument --delta: must be in (0, 1), got {delta!r}")
    accuracy = _accuracy(args.accuracy)
    given = {
        "noise_multiplier": args.noise_multiplier,
        "sample_rate": args.sample_rate,
        "steps": args.steps,
    }
    missing = [k for k, v in given.items() if v is None]
    if len(missing) != 1:
        raise UsageError(
            "argument --noise-multiplier/--sample-rate/--steps: give exactly two of the three "
            f"(the missing one is calibrated); missing: {', '.join(missing) or 'none'}"
        )
    # progress on stderr only when it is a terminal (None otherwise: nothing printed)
    options = {"relation": args.relation, "accuracy": accuracy, "progress": progress_printer()}
    if missing == ["noise_multiplier"]:
        rate, steps = _rate("--sample-rate", args.sample_rate), _steps("--steps", args.steps)
        result = calibration.calibrate_noise_multiplier_detailed(
            target, delta, rate, steps, **options
        )
    elif missing == ["sample_rate"]:
        sigma = _positive("--noise-multiplier", args.noise_multiplier)
        steps = _steps("--steps", args.steps)
        result = calibration.calibrate_sample_rate_detailed(target, delta, sigma, steps, **options)
    else:
        sigma = _positive("--noise-multiplier", args.noise_multiplier)
        rate = _rate("--sample-rate", args.sample_rate)
        result = calibration.calibrate_steps_detailed(target, delta, sigma, rate, **options)
    parameter = missing[0]
    value = int(result.value) if parameter == "steps" else result.value
    given[parameter] = value
    if args.json:
        return _json(
            {
                **given,
                "calibrated": parameter,
                "target_epsilon": target,
                "delta": delta,
                "epsilon_lower": result.epsilon_lower,
                "epsilon_upper": result.epsilon_upper,
                "within_tolerance": result.within_tolerance,
            }
        )
    shown = f"{value}" if parameter == "steps" else f"{value:.6g}"
    return (
        f"{parameter.replace('_', ' ')} = {shown}   (for epsilon {target:g}, delta {delta:g})\n"
        f"achieved: {result.epsilon_lower:.6f} <= epsilon <= {result.epsilon_upper:.6f}   "
        f"(certified bounds)"
    )


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (0, or 2 on a usage error or an input the
    library refuses); an :class:`plda.AccuracyWarning` is one line on stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", AccuracyWarning)
        code = _run(argv)
    for warning in caught:
        if issubclass(warning.category, AccuracyWarning):
            print(f"plda: warning: {' '.join(str(warning.message).split())}", file=sys.stderr)
        else:
            warnings.warn_explicit(
                warning.message, warning.category, warning.filename, warning.lineno
            )
    return code


def _run(argv: list[str] | None) -> int:
    try:
        args = _parser().parse_args(argv)
        if args.command is None:
            print(
                epsilon_command(
                    **{
                        k: _REFERENCE[k]
                        for k in ("noise_multiplier", "sample_rate", "steps", "delta")
                    }
                )
            )
            return 0
        if args.command == "plot":
            from plda.plot.cli import plot_command

            print(plot_command(args))
            return 0
        command = {"epsilon": _epsilon, "delta": _delta_command, "calibrate": _calibrate}
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
