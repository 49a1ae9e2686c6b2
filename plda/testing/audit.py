"""Audit an accountant against plda's certified bounds over a suite of standard cases.

``audit(fn)`` calls ``fn(case)`` for every :class:`AuditCase` and grades the returned epsilon
against plda's certified bounds on ``epsilon(delta)`` (``docs/testing.md``, "Audit").
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from plda._internal import validation as check
from plda._internal.caches import cached
from plda.mechanisms import (
    ApproximateDP,
    DiscreteGaussian,
    Gaussian,
    Laplace,
    Mechanism,
    PoissonSampled,
)
from plda.pld import PrivacyLossDistribution


@dataclass(frozen=True)
class AuditCase:
    """One accounting question: epsilon at ``delta`` of ``count`` runs of ``mechanism``.

    Under the add/remove neighbouring relation.

    Attributes
    ----------
    name
        Short identifier shown in the report.
    mechanism
        A plda mechanism (``plda.Gaussian``, ``plda.PoissonSampled(plda.Gaussian(...), q)``, ...);
        read its fields (``sigma``, ``sensitivity``, ``sample_rate``, ``epsilon``, ...) to
        translate it into your accountant's terms.
    count
        Number of runs composed (``>= 1``).
    delta
        Target delta in ``(0, 1)``.

    Raises
    ------
    ValueError
        If ``name`` is empty, ``count`` is not an integer ``>= 1`` or ``delta`` is not in
        ``(0, 1)``.
    TypeError
        If ``mechanism`` is not a plda mechanism, or ``count`` is not a number.
    """

    name: str
    mechanism: Mechanism
    count: int
    delta: float

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        if not isinstance(self.mechanism, Mechanism):
            raise TypeError(
                f"mechanism must be a plda mechanism, got {type(self.mechanism).__name__}"
            )
        object.__setattr__(self, "count", check.count("count", self.count, minimum=1))
        delta = check.probability("delta", self.delta)
        if not 0 < delta < 1:
            raise ValueError(f"delta must be in (0, 1), got {self.delta!r}")
        object.__setattr__(self, "delta", delta)


def _dpsgd(sigma: float, sample_rate: float) -> PoissonSampled:
    return PoissonSampled(Gaussian(sigma), sample_rate)


#: The ``"standard"`` suite: one mechanism family per row group, DP-SGD settings, and extreme
#: deltas (documented in docs/testing.md).
STANDARD_CASES: tuple[AuditCase, ...] = (
    AuditCase("gaussian", Gaussian(1.0), 1, 1e-5),
    AuditCase("gaussian-composed", Gaussian(10.0), 50, 1e-5),
    AuditCase("laplace", Laplace(1.0), 1, 1e-6),
    AuditCase("laplace-composed", Laplace(20.0), 100, 1e-6),
    AuditCase("dpsgd-mnist", _dpsgd(1.1, 256 / 60000), 14062, 1e-5),
    AuditCase("dpsgd-high-rate", _dpsgd(1.0, 0.02), 2000, 1e-5),
    AuditCase("dpsgd-low-noise", _dpsgd(0.7, 0.005), 1000, 1e-5),
    AuditCase("approximate-dp", ApproximateDP(0.1, 1e-6), 100, 1e-3),
    AuditCase("pure-dp", ApproximateDP(0.5), 20, 1e-6),
    AuditCase("extreme-delta-gaussian", Gaussian(2.0), 10, 1e-15),
    AuditCase("extreme-delta-dpsgd", _dpsgd(1.0, 0.01), 1000, 1e-12),
    AuditCase("discrete-gaussian", DiscreteGaussian(3.0), 20, 1e-6),
)

SUITES: dict[str, tuple[AuditCase, ...]] = {"standard": STANDARD_CASES}


@cached(maxsize=64)
def plda_bounds(case: AuditCase) -> tuple[float, float]:
    """plda's certified ``(lower, upper)`` bounds on the case's ``epsilon(delta)`` (cached).

    Parameters
    ----------
    case : AuditCase
        The accounting question.

    Returns
    -------
    tuple of float
        ``(lower, upper)``.
    """
    pld = PrivacyLossDistribution.from_mechanism(case.mechanism, case.count)
    lower, upper = pld.epsilon_bounds(case.delta)
    return float(lower), float(upper)


@dataclass(frozen=True)
class AuditRow:
    """One line of an :class:`AuditReport`: a case, plda's bounds, the answer and its verdict.

    Attributes
    ----------
    case : str
        The case's name.
    mechanism : str
        The ``repr`` of its mechanism.
    count : int
        Runs composed.
    delta : float
        The target delta.
    lower, upper : float
        plda's certified bounds on ``epsilon(delta)`` (NaN when skipped).
    observed : float
        The accountant's epsilon (NaN when skipped or invalid).
    verdict : str
        ``"inside"`` (within ``rtol`` of the bounds), ``"under-reports by x%"`` (below the
        lower bound: the accountant claims more privacy than the mechanism has),
        ``"over-reports by x%"`` (above the upper bound: valid but loose), ``"skipped"`` (the
        accountant raised ``NotImplementedError``) or ``"invalid ..."`` (NaN, negative or not
        a number).
    deviation : float
        The signed relative miss: ``(observed - upper) / upper`` above,
        ``(observed - lower) / lower`` below, 0 inside.
    """

    case: str
    mechanism: str
    count: int
    delta: float
    lower: float
    upper: float
    observed: float
    verdict: str
    deviation: float


@dataclass(frozen=True)
class AuditReport:
    """The result of :func:`audit`; ``str(report)`` is an aligned table.

    Attributes
    ----------
    rows : tuple of AuditRow
        One per case, in suite order.
    rtol : float
        The relative slack the verdicts allowed.
    """

    rows: tuple[AuditRow, ...]
    rtol: float

    @property
    def under_reports(self) -> tuple[AuditRow, ...]:
        """Rows where the accountant claimed less privacy loss than certified possible."""
        return tuple(r for r in self.rows if r.verdict.startswith("under-reports"))

    @property
    def passed(self) -> bool:
        """No row under-reports and no row is invalid."""
        return not any(r.verdict.startswith(("under-reports", "invalid")) for r in self.rows)

    def to_records(self) -> list[dict]:
        """The rows as dicts, e.g. for ``pandas.DataFrame``.

        Returns
        -------
        list of dict
            One per row, keyed by the :class:`AuditRow` fields.
        """
        return [asdict(r) for r in self.rows]

    def __str__(self) -> str:
        header = ("case", "count", "delta", "plda lower", "plda upper", "observed", "verdict")
        body = [
            (r.case, str(r.count), f"{r.delta:.0e}", _number(r.lower), _number(r.upper),
             _number(r.observed), r.verdict)
            for r in self.rows
        ]
        widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
        right = {1, 2, 3, 4, 5}

        def line(cells):
            parts = [c.rjust(w) if i in right else c.ljust(w)
                     for i, (c, w) in enumerate(zip(cells, widths, strict=True))]
            return "  ".join(parts).rstrip()

        rule = "  ".join("-" * w for w in widths)
        return "\n".join([line(header), rule, *(line(b) for b in body)])


def _number(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.6g}"


def _verdict(observed: float, lower: float, upper: float, rtol: float) -> tuple[str, float]:
    if math.isnan(observed) or observed < 0:
        return "invalid (negative or NaN epsilon)", math.nan
    if observed < lower * (1 - rtol):
        miss = (observed - lower) / lower
        return f"under-reports by {100 * -miss:.3g}%", miss
    if observed > upper * (1 + rtol):
        miss = (observed - upper) / upper if upper > 0 else math.inf
        return f"over-reports by {100 * miss:.3g}%", miss
    return "inside", 0.0


def audit(
    accountant: Callable[[AuditCase], float],
    cases: str | Iterable[AuditCase] = "standard",
    *,
    rtol: float = 1e-3,
) -> AuditReport:
    """Run ``accountant(case) -> epsilon`` over a suite of cases and grade each answer.

    Each answer is compared with plda's certified bounds on the case's ``epsilon(delta)``.

    Parameters
    ----------
    accountant
        Callable taking an :class:`AuditCase` and returning epsilon at ``case.delta``; raise
        ``NotImplementedError`` for cases it does not support (reported as ``skipped``).
    cases
        ``"standard"`` (see :data:`STANDARD_CASES`) or an iterable of :class:`AuditCase`.
    rtol
        Relative slack around the bounds before a value counts as under/over-reporting.

    Returns
    -------
    AuditReport
        One row per case, with its verdict.

    Raises
    ------
    ValueError
        For an unknown suite name or an ``rtol`` outside ``[0, 1)``.
    TypeError
        If ``cases`` holds something other than :class:`AuditCase`.
    Exception
        What the accountant raises (other than ``NotImplementedError``), with a note naming
        the case.
    """
    if isinstance(cases, str):
        if cases not in SUITES:
            raise ValueError(f"cases must be one of {sorted(SUITES)} or a list of AuditCase, "
                             f"got {cases!r}")
        suite = SUITES[cases]
    else:
        suite = tuple(cases)
        for case in suite:
            if not isinstance(case, AuditCase):
                raise TypeError(f"cases must hold AuditCase objects, got {type(case).__name__}")
    if isinstance(rtol, bool) or not isinstance(rtol, numbers.Real) or not 0 <= rtol < 1:
        raise ValueError(f"rtol must be in [0, 1), got {rtol!r}")
    rows = []
    for case in suite:
        described = dict(case=case.name, mechanism=repr(case.mechanism), count=case.count,
                         delta=case.delta)
        try:
            value = accountant(case)
        except NotImplementedError as exc:
            reason = f" ({exc})" if str(exc) else ""
            rows.append(AuditRow(**described, lower=math.nan, upper=math.nan,
                                 observed=math.nan, verdict=f"skipped{reason}",
                                 deviation=math.nan))
            continue
        except Exception as exc:
            if hasattr(exc, "add_note"):
                exc.add_note(f"raised by the accountant on audit case {case.name!r}")
            raise
        lower, upper = plda_bounds(case)
        try:
            if isinstance(value, bool | str | bytes):
                raise TypeError
            observed = float(value)
        except (TypeError, ValueError):
            observed, miss = math.nan, math.nan
            verdict = f"invalid (returned {type(value).__name__})"
        else:
            verdict, miss = _verdict(observed, lower, upper, float(rtol))
        rows.append(AuditRow(**described, lower=lower, upper=upper, observed=observed,
                             verdict=verdict, deviation=miss))
    return AuditReport(tuple(rows), float(rtol))
