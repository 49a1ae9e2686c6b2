"""Command line: certified epsilon bounds for DP-SGD settings.

``plda`` with no arguments prints the bounds of the reference DP-SGD run (MNIST-sized: sample
rate 256/60000, noise multiplier 1.1, 14062 steps, delta 1e-5).
"""

from __future__ import annotations

import argparse
import json
import sys

from plda.mechanisms import Gaussian, PoissonSampled
from plda.pld import PrivacyLossDistribution


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="plda", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command")
    eps = sub.add_parser("epsilon", help="certified epsilon bounds of a DP-SGD run")
    eps.add_argument("--noise-multiplier", type=float, default=1.1)
    eps.add_argument("--sample-rate", type=float, default=256 / 60000)
    eps.add_argument("--steps", type=int, default=14062)
    eps.add_argument("--delta", type=float, default=1e-5)
    eps.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def epsilon_command(noise_multiplier, sample_rate, steps, delta, as_json=False) -> str:
    step = PoissonSampled(Gaussian(sigma=noise_multiplier), sample_rate=sample_rate)
    pld = PrivacyLossDistribution.from_mechanism(step).self_compose(steps)
    lower, upper = pld.epsilon_bounds(delta)
    if as_json:
        return json.dumps(
            {
                "noise_multiplier": noise_multiplier,
                "sample_rate": sample_rate,
                "steps": steps,
                "delta": delta,
                "epsilon": upper,
                "epsilon_lower": lower,
                "epsilon_upper": upper,
            }
        )
    return (
        f"DP-SGD: noise multiplier {noise_multiplier}, sample rate {sample_rate:.6g}, "
        f"{steps} steps, delta {delta:g}\n"
        f"epsilon <= {upper:.6f}   (certified upper bound)\n"
        f"epsilon >= {lower:.6f}   (certified lower bound; the true epsilon lies between)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        if args.command in (None, "epsilon"):
            defaults = _parser().parse_args(["epsilon"]) if args.command is None else args
            print(
                epsilon_command(
                    defaults.noise_multiplier,
                    defaults.sample_rate,
                    defaults.steps,
                    defaults.delta,
                    getattr(defaults, "json", False),
                )
            )
            return 0
    except (ValueError, TypeError) as exc:
        print(f"plda: error: {exc}", file=sys.stderr)
        return 2
    parser.print_help()
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
