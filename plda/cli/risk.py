"""``plda risk``: certified membership-inference risk of a run (issue 15).

For the composition of the command line (DP-SGD flags with their ``--sampler``, or a
``--mechanism`` list) it reports

- the certified bounds on the best attack's true-positive rate at each ``--false-positive-rate``
  (:meth:`plda.PrivacyLossDistribution.true_positive_rate_bounds`: ``1 - f(alpha)``, both
  neighbouring directions), and
- the certified bounds on the attack advantage ``max(TPR - FPR)``
  (:meth:`plda.PrivacyLossDistribution.advantage_bounds`, the total variation ``delta(0)``).
"""

from __future__ import annotations

from plda.cli.checks import UsageError, check_accuracy
from plda.cli.commands import certified_bounds_many, strict_json
from plda.cli.specs import composition, describe

__all__ = ["add_risk_flags", "risk_command"]


def add_risk_flags(parser) -> None:
    parser.add_argument(
        "--false-positive-rate",
        type=float,
        nargs="+",
        metavar="ALPHA",
        help="report the certified true-positive-rate bounds at these false-positive rates "
        "(the advantage bounds are always reported)",
    )


def risk_command(args) -> str:
    """``plda risk``: true-positive-rate bounds at each false-positive rate, and the
    advantage bounds."""
    check_accuracy(args.accuracy)
    rates = list(args.false_positive_rate or ())
    for alpha in rates:
        if not (0 < alpha < 1):
            raise UsageError(f"argument --false-positive-rate: must be in (0, 1), got {alpha!r}")
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
