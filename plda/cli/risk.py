"""``plda risk``: certified membership-inference risk of a run (issue 15).

For the composition of the command line, the certified bounds on the best attack's true-positive
rate at each ``--false-positive-rate``
(:meth:`plda.PrivacyLossDistribution.true_positive_rate_bounds`) and on the attack advantage
``max(TPR - FPR) = delta(0)`` (:meth:`plda.PrivacyLossDistribution.advantage_bounds`).
"""

from __future__ import annotations

from plda.cli.checks import UsageError, check_accuracy
from plda.cli.commands import certified_bounds_many, strict_json
from plda.cli.specs import composition, describe

__all__ = ["add_risk_flags", "risk_command"]


def add_risk_flags(parser) -> None:
    """Add ``--false-positive-rate ALPHA [ALPHA ...]`` to a subcommand's parser.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The ``risk`` subcommand's parser.
    """
    parser.add_argument(
        "--false-positive-rate",
        type=float,
        nargs="+",
        metavar="ALPHA",
        help="report the certified true-positive-rate bounds at these false-positive rates "
        "(the advantage bounds are always reported)",
    )


def risk_command(args) -> str:
    """``plda risk``: true-positive-rate bounds at each false-positive rate, and the advantage's.

    ``TPR*(alpha) = 1 - f(alpha)`` over both neighbouring directions, and
    ``max(TPR - FPR) = delta(0)``, the total variation.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line.

    Returns
    -------
    str
        The bounds, as text or strict JSON (``--json``).

    Raises
    ------
    UsageError
        For a false-positive rate outside ``[0, 1]`` or another flag out of range or missing.
    """
    check_accuracy(args.accuracy)
    rates = list(args.false_positive_rate or ())
    for alpha in rates:
        if not (0 <= alpha <= 1):  # the range true_positive_rate_bounds takes (NaN refused)
            raise UsageError(f"argument --false-positive-rate: must be in [0, 1], got {alpha!r}")
    components, described = composition(args)
    queries = [lambda pld, a=alpha: pld.true_positive_rate_bounds(a) for alpha in rates]
    queries.append(lambda pld: pld.advantage_bounds())
    *tpr, advantage = certified_bounds_many(components, args, queries)
    if args.json:
        return strict_json(
            {
                **described,
                "relation": args.relation,
                "accuracy": args.accuracy,
                "false_positive_rate": rates,
                "true_positive_rate_lower": [float(b.lower) for b in tpr],
                "true_positive_rate_upper": [float(b.upper) for b in tpr],
                "advantage_lower": float(advantage.lower),
                "advantage_upper": float(advantage.upper),
            }
        )
    lines = [f"{describe(described)}: membership-inference risk (certified bounds)"]
    for alpha, bounds in zip(rates, tpr, strict=True):
        lines.append(
            f"true-positive rate at false-positive rate {alpha:g}: "
            f"{float(bounds.lower):.6g} <= TPR <= {float(bounds.upper):.6g}"
        )
    lines.append(
        f"advantage (TPR - FPR):  {float(advantage.lower):.6g} <= advantage <= "
        f"{float(advantage.upper):.6g}"
    )
    return "\n".join(lines)
