"""``plda epsilon`` and ``plda delta``: certified bounds, human-readable or strict JSON."""

from __future__ import annotations

import argparse
import json
import math
import warnings

from plda.cli.checks import UsageError, check_accuracy, check_delta
from plda.cli.matrix import matrix_reduction
from plda.cli.specs import composition, describe
from plda.mechanisms import NotTightWarning
from plda.pld import DEFAULT_ACCURACY, Bounds, PrivacyLossDistribution

__all__ = [
    "build_pld",
    "certified_bounds",
    "certified_bounds_many",
    "delta_command",
    "epsilon_command",
    "epsilon_text",
    "strict_json",
]


def build_pld(components, args) -> PrivacyLossDistribution:
    """The PLD of ``components`` under the command line's relation and accuracy.

    Parameters
    ----------
    components : tuple of (Mechanism, int)
        What is accounted.
    args : argparse.Namespace
        Gives ``relation`` and ``accuracy``.

    Returns
    -------
    PrivacyLossDistribution
        The composition.

    Raises
    ------
    UsageError
        If a mechanism has no replace-one analysis under ``--relation replace_one``, or
        ``--accuracy`` is out of range.
    """
    if args.relation == "replace_one":
        for mechanism, _ in components:
            try:
                mechanism.under_replace_one()
            except ValueError as exc:
                raise UsageError(f"argument --relation: {exc}") from None
    return PrivacyLossDistribution(components, args.relation, check_accuracy(args.accuracy))


def certified_bounds(components, args, query) -> Bounds:
    """A query of the composition's PLD, certified on both sides.

    For samplers whose dominating pair is not realized by datasets (``tight`` False) the PLD
    takes its lower bound from realized pairs itself (no ``NotTightWarning`` is shown).

    Parameters
    ----------
    components : tuple of (Mechanism, int)
        What is accounted.
    args : argparse.Namespace
        Gives ``relation`` and ``accuracy``.
    query : callable
        ``query(pld) -> Bounds``.

    Returns
    -------
    Bounds
        ``query(pld)``.
    """
    return certified_bounds_many(components, args, [query])[0]


def certified_bounds_many(components, args, queries) -> list[Bounds]:
    """:func:`certified_bounds` of several queries on the same PLD (built once).

    Parameters
    ----------
    components : tuple of (Mechanism, int)
        What is accounted.
    args : argparse.Namespace
        Gives ``relation`` and ``accuracy``.
    queries : list of callable
        ``query(pld) -> Bounds`` each.

    Returns
    -------
    list of Bounds
        One per query.
    """
    with warnings.catch_warnings():
        # the PLD takes the lower bound from the realized pairs: the warning's advice is followed
        warnings.simplefilter("ignore", NotTightWarning)
        pld = build_pld(components, args)
        return [Bounds(lower=b.lower, upper=b.upper) for b in (query(pld) for query in queries)]


def strict_json(record: dict) -> str:
    """``record`` as strict JSON (RFC 8259 has no Infinity or NaN).

    Parameters
    ----------
    record : dict
        The answer.

    Returns
    -------
    str
        One line of JSON; a non-finite number is written as ``null``, which means "no finite
        bound" (an infinite epsilon, e.g. delta below the mass at infinite loss).
    """
    clean = {
        key: (None if isinstance(value, float) and not math.isfinite(value) else value)
        for key, value in record.items()
    }
    return json.dumps(clean, allow_nan=False)


def epsilon_command(noise_multiplier, sample_rate, steps, delta, as_json=False) -> str:
    """Certified epsilon bounds of a Poisson-sampled DP-SGD run, formatted.

    Parameters
    ----------
    noise_multiplier : float
        ``sigma``.
    sample_rate : float
        The Poisson rate ``q``.
    steps : int
        The number of steps.
    delta : float
        The delta at which epsilon is bounded.
    as_json : bool, optional
        Strict JSON instead of text.

    Returns
    -------
    str
        What ``plda epsilon`` prints.

    Raises
    ------
    UsageError
        Naming the argument out of range.
    """
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
    return epsilon_text(args)


def epsilon_text(args) -> str:
    """``plda epsilon``: certified epsilon bounds at ``--delta``.

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
        Naming a flag out of range, or every missing one.
    """
    check_accuracy(args.accuracy)  # given values are checked before missing ones are reported
    if args.delta is not None:
        check_delta("--delta", args.delta)
    delta = args.delta
    if getattr(args, "strategy", None) is not None:  # a matrix mechanism
        if delta is None:
            raise UsageError("argument --delta: required")
        reduction, described = matrix_reduction(args)
        bounds = reduction.epsilon_bounds(delta, accuracy=args.accuracy)
    else:
        components, described = composition(args, () if delta is not None else ("--delta",))
        bounds = certified_bounds(components, args, lambda pld: pld.epsilon_bounds(delta))
    lower, upper = bounds.lower, bounds.upper
    if args.json:
        return strict_json(
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
        f"{describe(described)}, delta {delta:g}\n"
        f"epsilon <= {upper:.6f}   (certified upper bound)\n"
        f"epsilon >= {lower:.6f}   (certified lower bound; the true epsilon lies between)"
    )


def delta_command(args) -> str:
    """``plda delta``: certified delta bounds at ``--epsilon``.

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
        Naming a flag out of range, or every missing one.
    """
    epsilon = args.epsilon
    if epsilon is None or not (epsilon >= 0) or math.isnan(epsilon):
        raise UsageError(f"argument --epsilon: must be a number >= 0, got {epsilon!r}")
    if getattr(args, "strategy", None) is not None:  # a matrix mechanism
        reduction, described = matrix_reduction(args)
        bounds = reduction.delta_bounds(epsilon, accuracy=args.accuracy)
    else:
        components, described = composition(args)
        bounds = certified_bounds(components, args, lambda pld: pld.delta_bounds(epsilon))
    lower, upper = bounds.lower, bounds.upper
    if args.json:
        return strict_json(
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
        f"{describe(described)}, epsilon {epsilon:g}\n"
        f"delta <= {upper:.6e}   (certified upper bound)\n"
        f"delta >= {lower:.6e}   (certified lower bound; the true delta lies between)"
    )
