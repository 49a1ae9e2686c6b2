"""All the composition theorems side by side, next to the optimum (:func:`compare`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from plda._internal.floats import UNIT_ROUNDOFF
from plda.theorems.classical import advanced, advanced_kov, basic
from plda.theorems.common import delta_value, group_steps, parse_steps, sum_up
from plda.theorems.concurrency import concurrent
from plda.theorems.kov import kairouz_oh_viswanath
from plda.theorems.optimum import optimal


@dataclass(frozen=True)
class ComparisonRow:
    """One line of :func:`compare`: what a theorem guarantees at the total delta.

    Attributes
    ----------
    theorem : str
        The theorem's name, e.g. ``"advanced (DRV10)"``.
    epsilon : float
        Its epsilon at ``delta`` (``inf`` where it does not apply).
    delta : float
        The total delta.
    status : str
        ``"theorem"``, ``"optimal (exact)"`` or ``"optimal (certified)"``.
    reference : str
        Where it is proven, e.g. ``"DRV10 Thm III.3"``.
    note : str
        How the delta was split, or why the theorem does not apply.
    epsilon_lower : float or None
        For the optima: the true optimal epsilon lies in ``[epsilon_lower, epsilon]``.
    applicable : bool
        Whether the theorem applies at ``delta``.
    """

    theorem: str
    epsilon: float
    delta: float
    status: str
    reference: str
    note: str = ""
    epsilon_lower: float | None = None
    applicable: bool = True


@dataclass(frozen=True)
class Comparison:
    """Table of :func:`compare`; ``print()`` it, or use :meth:`to_records` / :meth:`to_dict`.

    Attributes
    ----------
    rows : tuple of ComparisonRow
        One row per theorem.
    delta : float
        The total delta.
    steps : tuple
        The steps, grouped: ``(((epsilon, delta), count), ...)``.
    """

    rows: tuple[ComparisonRow, ...]
    delta: float
    steps: tuple[tuple[tuple[float, float], int], ...] = field(default=())

    @property
    def optimum(self) -> ComparisonRow:
        """The optimum row with the smallest upper bound; the printed ratios are taken against it.

        The exact KOV row when all steps are equal, else the PLD row.

        Raises
        ------
        LookupError
            If the table has no optimum row (:func:`compare` always adds one).
        """
        rows = [row for row in self.rows if row.status.startswith("optimal")]
        if not rows:  # pragma: no cover - compare() always adds one
            raise LookupError("no optimal row in this comparison")
        return min(rows, key=lambda row: row.epsilon)

    def to_records(self) -> list[dict]:
        """The rows as plain dicts, e.g. for a data frame.

        Returns
        -------
        list of dict
            One dict per row; keys: the :class:`ComparisonRow` fields.
        """
        return [
            {
                "theorem": r.theorem,
                "epsilon": r.epsilon,
                "epsilon_lower": r.epsilon_lower,
                "delta": r.delta,
                "applicable": r.applicable,
                "status": r.status,
                "reference": r.reference,
                "note": r.note,
            }
            for r in self.rows
        ]

    def to_dict(self) -> dict:
        """The table as plain Python values, e.g. for JSON.

        Returns
        -------
        dict
            ``{"delta": ..., "steps": [{"epsilon", "delta", "count"}, ...], "rows": [...]}``.
        """
        return {
            "delta": self.delta,
            "steps": [{"epsilon": e, "delta": d, "count": n} for (e, d), n in self.steps],
            "rows": self.to_records(),
        }

    def __str__(self) -> str:
        best = self.optimum.epsilon
        header = ("theorem", "epsilon", "x optimum", "status", "reference")
        lines = []
        for r in self.rows:
            eps = f"{r.epsilon:.6g}" if math.isfinite(r.epsilon) else "inf"
            if r.epsilon_lower is not None and f"{r.epsilon_lower:.6g}" != eps:
                eps = f"{eps} (>= {r.epsilon_lower:.6g})"  # certified bracket, when it shows
            ratio = r.epsilon / best if best > 0 and math.isfinite(r.epsilon) else math.inf
            ratio_text = f"{ratio:.3f}" if math.isfinite(ratio) else "-"
            lines.append((r.theorem, eps, ratio_text, r.status, r.reference))
        widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]

        def fmt(cells):
            return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

        steps_text = ", ".join(f"{n} x ({e:g}, {d:g})" for (e, d), n in self.steps)
        out = [f"composition of {steps_text} at total delta = {self.delta:g}", fmt(header)]
        out.append("  ".join("-" * w for w in widths))
        out.extend(fmt(line) for line in lines)
        notes = [f"  {r.theorem}: {r.note}" for r in self.rows if r.note]
        if notes:
            out.append("notes:")
            out.extend(notes)
        return "\n".join(out)


# ----------------------------------------------------------------------------- compare
_REFERENCES = {
    "basic": "DMNS06, DKMMN06",
    "advanced": "DRV10 Thm III.3",
    "advanced_kov": "KOV15 Thm 3.4/3.5",
    "exact": "KOV15 Thm 3.3",
    "pld": "KOV15, MV16 + PLD",
    "concurrent": "VW21 Thm 1",
    "concurrent_pure": "VW21 Cor 3",
}


def compare(steps, delta: float, *, accuracy: float | None = None) -> Comparison:
    """Every composition theorem's epsilon at total ``delta``, next to the optimum.

    Rows: basic composition (needs ``delta >= sum delta_i``), advanced composition (DRV10, slack
    ``delta' = delta - sum delta_i``), the KOV bound (slack ``delta~ = 1 - (1 - delta) / prod(1 -
    delta_i)``), the exact KOV optimum when all steps are equal, the PLD optimum with its
    certified bounds, and Vadhan-Wang concurrent composition. A theorem that does not apply at
    ``delta`` has ``epsilon = inf`` and says why in its note.

    Parameters
    ----------
    steps : sequence
        The steps: ``(epsilon_i, delta_i)`` pairs, or objects with ``epsilon`` and ``delta``
        attributes (e.g. :class:`~plda.ApproximateDP`); ``epsilon_i >= 0`` finite,
        ``delta_i`` in [0, 1).
    delta : float
        The total delta, in [0, 1).
    accuracy : float, optional
        Target relative gap of the engine's bounds (its default: 1e-3).

    Returns
    -------
    Comparison
        The table; ``print()`` shows each epsilon and its ratio to the optimum.

    Raises
    ------
    TypeError
        If ``steps`` is not a sequence of pairs, or a value is not a real number.
    ValueError
        If ``steps`` is empty or a value is out of range.

    Examples
    --------
    >>> from plda import theorems
    >>> table = theorems.compare([(0.1, 0.001)] * 30, delta=0.031)
    >>> table.optimum.theorem
    'optimal, exact (KOV)'
    """
    epsilons, deltas = parse_steps(steps)
    target = delta_value("delta", delta)
    groups = group_steps(epsilons, deltas)
    pairs = list(zip(epsilons.tolist(), deltas.tolist(), strict=True))
    sum_delta = sum_up(deltas.tolist())
    pure = not np.any(deltas > 0)
    rows: list[ComparisonRow] = []

    # basic
    if target >= sum_delta:
        rows.append(
            ComparisonRow("basic", basic(pairs).epsilon, target, "theorem", _REFERENCES["basic"])
        )
    else:
        rows.append(
            ComparisonRow(
                "basic",
                math.inf,
                target,
                "theorem",
                _REFERENCES["basic"],
                f"not applicable: delta < sum delta_i = {sum_delta:.6g}",
                applicable=False,
            )
        )

    # advanced (DRV10): delta_total = sum delta_i + delta'
    slack = target - sum_delta
    if slack > 0:
        slack = math.nextafter(slack, 0.0) if slack > 0 else slack  # keep the split conservative
        row_eps = advanced(pairs, slack).epsilon
        rows.append(
            ComparisonRow(
                "advanced (DRV10)",
                row_eps,
                target,
                "theorem",
                _REFERENCES["advanced"],
                f"delta' = delta - sum delta_i = {slack:.6g}",
            )
        )
    else:
        rows.append(
            ComparisonRow(
                "advanced (DRV10)",
                math.inf,
                target,
                "theorem",
                _REFERENCES["advanced"],
                f"not applicable: delta <= sum delta_i = {sum_delta:.6g}",
                applicable=False,
            )
        )

    # advanced (KOV): delta_total = 1 - (1 - delta~) prod(1 - delta_i)
    log_keep = math.fsum([math.log1p(-d) for d in deltas.tolist()])
    kov_slack = -math.expm1(math.log1p(-target) - log_keep)
    kov_slack = kov_slack * (1 - 64 * UNIT_ROUNDOFF * (1 + abs(log_keep)))  # round the slack down
    if kov_slack > 0:
        row_eps = advanced_kov(pairs, kov_slack).epsilon
        rows.append(
            ComparisonRow(
                "advanced (KOV)",
                row_eps,
                target,
                "theorem",
                _REFERENCES["advanced_kov"],
                f"delta~ = 1 - (1 - delta)/prod(1 - delta_i) = {kov_slack:.6g}",
            )
        )
    else:
        rows.append(
            ComparisonRow(
                "advanced (KOV)",
                math.inf,
                target,
                "theorem",
                _REFERENCES["advanced_kov"],
                "not applicable: delta <= 1 - prod(1 - delta_i)",
                applicable=False,
            )
        )

    # exact optimum (homogeneous) and PLD optimum
    if len(groups) == 1:
        (e, d), n = groups[0]
        exact = kairouz_oh_viswanath(e, d, n, delta_total=target)
        rows.append(
            ComparisonRow(
                "optimal, exact (KOV)",
                exact.epsilon,
                target,
                "optimal (exact)",
                _REFERENCES["exact"],
                epsilon_lower=exact.epsilon_lower,
            )
        )
    pld = optimal(pairs, target, method="pld", accuracy=accuracy)
    rows.append(
        ComparisonRow(
            "optimal, PLD",
            pld.epsilon,
            target,
            "optimal (certified)",
            _REFERENCES["pld"],
            epsilon_lower=pld.epsilon_lower,
        )
    )

    # concurrent (Vadhan-Wang), placed before the optimum rows
    best = min((r for r in rows if r.status.startswith("optimal")), key=lambda r: r.epsilon)
    conc = concurrent(pairs)
    if pure:
        row = ComparisonRow(
            "concurrent (VW21)",
            best.epsilon,
            target,
            "theorem",
            _REFERENCES["concurrent_pure"],
            "pure-DP steps: concurrent = optimal composition (Cor 3)",
            epsilon_lower=best.epsilon_lower,
        )
    elif target >= conc.delta:
        row = ComparisonRow(
            "concurrent (VW21)",
            conc.epsilon,
            target,
            "theorem",
            _REFERENCES["concurrent"],
            f"delta_g = {conc.delta:.6g} (best order)",
        )
    else:
        row = ComparisonRow(
            "concurrent (VW21)",
            math.inf,
            target,
            "theorem",
            _REFERENCES["concurrent"],
            f"not applicable: delta < delta_g = {conc.delta:.6g}",
            applicable=False,
        )
    first_optimal = next(i for i, r in enumerate(rows) if r.status.startswith("optimal"))
    rows.insert(first_optimal, row)
    return Comparison(tuple(rows), target, tuple(groups))
