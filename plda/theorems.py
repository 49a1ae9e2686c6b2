"""Composition theorems side by side: basic, advanced, optimal, concurrent, group and parallel.

Every function answers "which (epsilon, delta) guarantee does this theorem give?" for a list of
black-box ``(epsilon_i, delta_i)``-DP steps, and :func:`compare` puts them next to the optimum that
the privacy-loss-distribution engine certifies. All returned epsilons and deltas are rounded
*outward* (never under-reported); a theorem that does not apply at the requested delta reports
``epsilon = inf``.

Status of each result (what is proven):

* :func:`basic`, :func:`advanced`, :func:`advanced_kov`, :func:`parallel`, :func:`group_privacy`:
  theorems (closed forms).
* :func:`kairouz_oh_viswanath`, :func:`optimal`: the optimal composition of black-box
  ``(epsilon_i, delta_i)``-DP steps (Kairouz, Oh & Viswanath 2015; Murtagh & Vadhan 2016) —
  theorems; homogeneous case exact to float precision, heterogeneous case as certified numerical
  bounds (the exact value is #P-hard to compute).
* :func:`concurrent`: Vadhan & Wang 2021, Theorem 1 (approximate DP) and Corollary 3 (pure DP):
  theorems. That the *optimal* composition also holds for concurrent composition of approximate-DP
  interactive mechanisms was a **conjecture** of theirs (Section 4); later work reports proofs
  (Lyu 2022; Vadhan & Zhang 2023). plda does not use it here: the numbers are conservative.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property

import numpy as np
from scipy.special import gammaln

__all__ = [
    "Comparison",
    "ComparisonRow",
    "Guarantee",
    "advanced",
    "advanced_kov",
    "basic",
    "compare",
    "concurrent",
    "group_privacy",
    "group_privacy_mechanism",
    "kairouz_oh_viswanath",
    "optimal",
    "parallel",
]

_U = 2.0**-53  # unit roundoff of float64


# ----------------------------------------------------------------------------- value objects
@dataclass(frozen=True)
class Guarantee:
    """An ``(epsilon, delta)``-DP guarantee produced by a composition theorem.

    Unpacks like the tuple ``(epsilon, delta)``. ``epsilon_lower`` is set only by the numerical
    optima (:func:`optimal`, :func:`kairouz_oh_viswanath`, :func:`group_privacy_mechanism`): the
    true optimal epsilon lies in ``[epsilon_lower, epsilon]``.
    """

    epsilon: float
    delta: float
    name: str
    epsilon_lower: float | None = None

    def __iter__(self):
        return iter((self.epsilon, self.delta))

    def __getitem__(self, index):
        return (self.epsilon, self.delta)[index]

    def __len__(self) -> int:
        return 2


@dataclass(frozen=True)
class ComparisonRow:
    """One line of :func:`compare`: what ``theorem`` guarantees at total ``delta``."""

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
    """Table of :func:`compare`; ``print()`` it, or use :meth:`to_records` / :meth:`to_dict`."""

    rows: tuple[ComparisonRow, ...]
    delta: float
    steps: tuple[tuple[tuple[float, float], int], ...] = field(default=())

    @property
    def optimum(self) -> ComparisonRow:
        """The optimum row with the smallest upper bound (the exact KOV row when all steps are
        equal, else the PLD row); ratios in the printed table are taken against it."""
        rows = [row for row in self.rows if row.status.startswith("optimal")]
        if not rows:  # pragma: no cover - compare() always adds one
            raise LookupError("no optimal row in this comparison")
        return min(rows, key=lambda row: row.epsilon)

    def to_records(self) -> list[dict]:
        """One dict per row (keys: the :class:`ComparisonRow` fields)."""
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
        """``{"delta": ..., "steps": [...], "rows": [...]}`` of plain Python values."""
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


# ----------------------------------------------------------------------------- validation
def _real(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    return float(value)


def _epsilon(name: str, value) -> float:
    v = _real(name, value)
    if not (v >= 0 and math.isfinite(v)):
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    return v


def _delta(name: str, value, *, allow_zero: bool = True) -> float:
    v = _real(name, value)
    ok = (0 <= v < 1) if allow_zero else (0 < v < 1)
    if not ok:
        interval = "[0, 1)" if allow_zero else "(0, 1)"
        raise ValueError(f"{name} must be in {interval}, got {value!r}")
    return v


def _count(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be an integer >= 1, got {type(value).__name__}")
    if isinstance(value, numbers.Integral):
        v = int(value)
    elif math.isfinite(float(value)) and float(value).is_integer():
        v = int(value)
    else:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    if v < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return v


def _steps(steps) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` -> arrays ``(epsilons, deltas)``; accepts ``(epsilon, delta)`` pairs or objects
    with ``epsilon`` and ``delta`` attributes (e.g. ``plda.ApproximateDP``)."""
    if isinstance(steps, str | bytes) or not isinstance(steps, Iterable):
        raise TypeError(
            "steps must be a sequence of (epsilon, delta) pairs, got " + type(steps).__name__
        )
    items = list(steps)
    if not items:
        raise ValueError("steps must contain at least one (epsilon, delta) pair, got none")
    fast = _steps_fast(items)
    if fast is not None:
        return fast
    epsilons = np.empty(len(items))
    deltas = np.empty(len(items))
    for i, item in enumerate(items):
        if hasattr(item, "epsilon") and hasattr(item, "delta"):
            e, d = item.epsilon, item.delta
        else:
            try:
                e, d = item
            except (TypeError, ValueError) as exc:
                raise TypeError(
                    f"steps[{i}] must be an (epsilon, delta) pair, got {item!r}"
                ) from exc
        epsilons[i] = _epsilon(f"epsilon of steps[{i}]", e)
        deltas[i] = _delta(f"delta of steps[{i}]", d)
    return epsilons, deltas


def _steps_fast(items: list) -> tuple[np.ndarray, np.ndarray] | None:
    """Vectorized path for long lists of numeric pairs (``None``: take the checked loop, which
    also names the first bad entry)."""
    if len(items) < 64 or not all(type(x) is tuple for x in items[:64]):
        return None
    try:
        array = np.asarray(items, dtype=float)
    except (TypeError, ValueError):
        return None
    if array.ndim != 2 or array.shape[1] != 2:
        return None
    epsilons, deltas = array[:, 0].copy(), array[:, 1].copy()
    good = np.isfinite(epsilons) & (epsilons >= 0) & (deltas >= 0) & (deltas < 1)
    if not good.all() or any(isinstance(v, bool) for pair in items[:64] for v in pair):
        return None
    return epsilons, deltas


def _groups(epsilons: np.ndarray, deltas: np.ndarray) -> list[tuple[tuple[float, float], int]]:
    """Identical steps grouped: ``[((epsilon, delta), count), ...]`` in first-seen order."""
    counts = Counter(zip(epsilons.tolist(), deltas.tolist(), strict=True))
    return list(counts.items())


# ----------------------------------------------------------------------------- outward rounding
def _up(x: float, ulps: float = 8.0) -> float:
    """``x`` nudged up by a relative ``ulps * u`` (covers the rounding of a short closed form)."""
    if x == 0 or not math.isfinite(x):
        return x
    return x + abs(x) * ulps * _U + 5e-324


def _sum_up(values) -> float:
    """The float just above-or-at the exact sum: ``fsum`` is correctly rounded, and the sign of
    the (also correctly rounded) residual says on which side the exact sum lies."""
    values = [float(v) for v in values]
    s = math.fsum(values)
    if math.isfinite(s) and math.fsum([*values, -s]) > 0:
        s = math.nextafter(s, math.inf)
    return s


def _one_minus_product_up(deltas: Iterable[float]) -> float:
    """Upper bound on ``1 - prod(1 - delta_i)`` (in log space, so tiny deltas keep precision).

    Each ``log1p`` is within 1 ulp and ``fsum`` is correctly rounded, so ``x = sum log(1 -
    delta_i)`` is off by ``<= 2u |x|``; ``-expm1`` turns that into a relative error ``<= 2u |x|
    e^x / (1 - e^x) <= 2u`` (plus its own ulp): 8 ulps cover it for any number of steps."""
    total = math.fsum([math.log1p(-d) for d in deltas])
    return min(1.0, _up(-math.expm1(total), 8))


def _covers_delta_mass(target: float, groups) -> bool:
    """Whether ``target >= 1 - prod_i (1 - delta_i)^{n_i}`` holds *exactly* (groups of
    ``((epsilon, delta), n)``), so that basic composition's ``sum epsilon_i`` is valid there.

    A float comparison with the mass rounded up refuses the equality case (``delta = 1e-3`` for
    one ``(0.5, 1e-3)`` step); within a few ulps of the edge it is decided in exact rational
    arithmetic (Python integers: a few hundred thousand bits at most), and beyond 4096 steps,
    where exact powers grow too long, the edge counts as not covered (conservative)."""
    deltas = [d for (_, d), _ in groups]
    counts = [n for _, n in groups]
    log_keep = math.fsum(n * math.log1p(-d) for d, n in zip(deltas, counts, strict=True))
    mass_up = min(1.0, _up(-math.expm1(log_keep), 8))
    if target >= mass_up:
        return True
    if target < mass_up * (1 - 64 * _U) or sum(counts) > 4096:
        return False
    keep = Fraction(1)
    for d, n in zip(deltas, counts, strict=True):
        keep *= (1 - Fraction(d)) ** n
    return Fraction(target) >= 1 - keep


# ----------------------------------------------------------------------------- basic / parallel
def basic(steps) -> Guarantee:
    """Basic composition: ``(sum epsilon_i, sum delta_i)``.

    Theorem (Dwork, McSherry, Nissim & Smith 2006 for pure DP; Dwork, Kenthapadi, McSherry,
    Mironov & Naor 2006 for approximate DP); holds under adaptive and — with the same epsilon and
    a larger delta — concurrent composition (see :func:`concurrent`).
    """
    epsilons, deltas = _steps(steps)
    return Guarantee(_sum_up(epsilons), min(1.0, _sum_up(deltas)), "basic composition")


def parallel(steps) -> Guarantee:
    """Parallel composition: ``(max epsilon_i, max delta_i)`` when each step reads a *disjoint*
    part of the data (each record can affect at most one step).

    Theorem (McSherry 2009, PINQ). Under the add/remove relation the parts may be defined by any
    fixed partition of the record domain; under replace-one a replaced record can move between two
    parts, and then the answer is the basic composition of the two largest steps instead.
    """
    epsilons, deltas = _steps(steps)
    return Guarantee(float(np.max(epsilons)), float(np.max(deltas)), "parallel composition")


# ----------------------------------------------------------------------------- advanced
def advanced(steps, delta_slack: float) -> Guarantee:
    r"""Advanced composition (Dwork, Rothblum & Vadhan 2010, Thm. III.3; Dwork & Roth 2014,
    Thm. 3.20): for ``k`` steps that are each ``(epsilon, delta)``-DP and any slack
    ``delta' > 0``, the composition is ``(epsilon', k delta + delta')``-DP with

    .. math:: \varepsilon' = \sqrt{2k\ln(1/\delta')}\,\varepsilon + k\varepsilon(e^\varepsilon - 1).

    The parameters (steps, their epsilons and deltas, the count) must be fixed before the
    interaction starts: for adaptively chosen parameters this theorem does not hold, and only
    the privacy filters and odometer of :mod:`plda.filters` give guarantees.

    For heterogeneous steps the same proof (Azuma-Hoeffding on the privacy loss, each term in
    ``[-epsilon_i, epsilon_i]`` with mean ``<= epsilon_i (e^epsilon_i - 1)``) gives
    ``epsilon' = sqrt(2 ln(1/delta') sum epsilon_i^2) + sum epsilon_i (e^epsilon_i - 1)`` and
    ``delta = sum delta_i + delta'``, which is the formula above when all steps are equal.
    A theorem; see :func:`advanced_kov` for the sharper Kairouz-Oh-Viswanath bound.
    """
    epsilons, deltas = _steps(steps)
    slack = _delta("delta_slack", delta_slack, allow_zero=False)
    sum_sq = math.fsum((epsilons**2).tolist())
    with np.errstate(over="ignore"):  # epsilon_i > 709: the bound is vacuous (inf)
        drift = math.fsum((epsilons * np.expm1(epsilons)).tolist())
    epsilon = _up(math.sqrt(2.0 * math.log(1.0 / slack) * sum_sq) + drift, 16)
    delta = min(1.0, _up(_sum_up(deltas.tolist() + [slack])))
    return Guarantee(epsilon, delta, "advanced composition (DRV10)")


def advanced_kov(steps, delta_slack: float) -> Guarantee:
    r"""The sharper advanced-composition bound of Kairouz, Oh & Viswanath (ICML 2015;
    arXiv:1311.0776 Thm. 3.4 homogeneous / Thm. 3.5 heterogeneous, "Composition Theorem I/II" of
    their slides): the composition is ``(epsilon~, 1 - (1 - delta~) prod(1 - delta_i))``-DP for

    .. math::
        \tilde\varepsilon = \min\Big\{\sum_i \varepsilon_i,\;
        \mu + \sqrt{2 S \log(e + \sqrt{S}/\tilde\delta)},\;
        \mu + \sqrt{2 S \log(1/\tilde\delta)}\Big\},\quad
        \mu = \sum_i \varepsilon_i \tanh(\varepsilon_i / 2),\; S = \sum_i \varepsilon_i^2,

    (``tanh(e/2) = (e^e - 1)/(e^e + 1)``; ``mu`` is the mean privacy loss of the dominating
    randomized responses). A theorem. The third term is Hoeffding's inequality on that loss, which
    is why it can replace ``epsilon (e^epsilon - 1)`` of :func:`advanced` by the smaller
    ``epsilon tanh(epsilon/2)``.

    The parameters (steps, their epsilons and deltas, the count) must be fixed before the
    interaction starts: for adaptively chosen parameters this theorem does not hold, and only
    the privacy filters and odometer of :mod:`plda.filters` give guarantees.
    """
    epsilons, deltas = _steps(steps)
    slack = _delta("delta_slack", delta_slack, allow_zero=False)
    sum_sq = math.fsum((epsilons**2).tolist())
    mean = math.fsum((epsilons * np.tanh(epsilons / 2)).tolist())
    second = mean + math.sqrt(2 * sum_sq * math.log(math.e + math.sqrt(sum_sq) / slack))
    third = mean + math.sqrt(2 * sum_sq * math.log(1.0 / slack))
    epsilon = min(_sum_up(epsilons.tolist()), _up(min(second, third), 16))
    delta = _one_minus_product_up([slack, *deltas.tolist()])
    return Guarantee(epsilon, delta, "advanced composition (KOV15)")


# ----------------------------------------------------------------------------- KOV exact
def _softplus(x: float) -> float:
    """``log(1 + e^x)`` without overflow."""
    return float(np.logaddexp(0.0, x))


def _stirling_error(n: np.ndarray) -> np.ndarray:
    """``log n! - [(n + 1/2) log n - n + log sqrt(2 pi)]`` for integers ``n >= 1``: direct for
    ``n <= 15`` (all terms are small there), the Stirling series beyond (truncation < 1e-17)."""
    n = np.asarray(n, dtype=float)
    out = np.empty_like(n)
    small = n <= 15
    ns = n[small]
    out[small] = gammaln(ns + 1) - (ns + 0.5) * np.log(ns) + ns - 0.5 * math.log(2 * math.pi)
    inv = 1.0 / n[~small]
    inv2 = inv * inv
    out[~small] = inv * (
        1 / 12 - inv2 * (1 / 360 - inv2 * (1 / 1260 - inv2 * (1 / 1680 - inv2 / 1188)))
    )
    return out


def _deviance(x: np.ndarray, m: np.ndarray, log_m: np.ndarray) -> np.ndarray:
    """``x log(x/m) + m - x`` (>= 0). Near ``x = m`` the two terms cancel, so there it is summed
    as ``(x - m) v + 2x (v^3/3 + v^5/5 + ...)`` with ``v = (x - m)/(x + m)``, ``|v| < 0.1``."""
    out = np.empty_like(x)
    near = np.abs(x - m) < 0.1 * (x + m)
    xn, mn = x[near], m[near]
    v = (xn - mn) / (xn + mn)
    v2 = v * v
    power = 2 * xn * v
    series = np.zeros_like(v)
    for j in range(1, 16):  # v^2 < 0.01: 15 terms reach 1e-30
        power = power * v2
        series += power / (2 * j + 1)
    out[near] = (xn - mn) * v + series
    far = ~near
    xf = x[far]
    with np.errstate(divide="ignore", invalid="ignore"):
        out[far] = np.where(xf > 0, xf * (np.log(xf) - log_m[far]), 0.0) + m[far] - xf
    return out


def _log_binomial_pmf(i: np.ndarray, k: int, log_p: float) -> tuple[np.ndarray, np.ndarray]:
    """``log[C(k, i) p^i (1-p)^(k-i)]`` and a bound on its absolute rounding error.

    Loader's (2000) saddle-point form: ``stirlerr(k) - stirlerr(i) - stirlerr(k-i) - D(i, kp) -
    D(k-i, kq) + log sqrt(k / (2 pi i (k-i)))``, ``D`` the deviance above. Unlike
    ``gammaln(k+1) - gammaln(i+1) - gammaln(k-i+1)`` (absolute error ~ u k log k, 1e-9 at k=1e6)
    every part is O(result), so the error stays at a few ulps of the result.
    """
    log_q = math.log1p(-math.exp(log_p)) if log_p < -0.7 else math.log(-math.expm1(log_p))
    value = np.empty_like(i)
    error = np.empty_like(i)
    first, last = i == 0, i == k
    value[first] = k * log_q
    value[last] = k * log_p
    middle = ~(first | last)
    im = i[middle]
    p, q = math.exp(log_p), math.exp(log_q)
    log_kp, log_kq = math.log(k) + log_p, math.log(k) + log_q
    dev_p = _deviance(im, np.full_like(im, k * p), np.full_like(im, log_kp))
    dev_q = _deviance(k - im, np.full_like(im, k * q), np.full_like(im, log_kq))
    value[middle] = (
        _stirling_error(np.array([float(k)]))[0]
        - _stirling_error(im)
        - _stirling_error(k - im)
        - dev_p
        - dev_q
        + 0.5 * np.log(k / (2 * math.pi * im * (k - im)))
    )
    # rounding: each part to a few ulps of itself; k p and k q carry a relative error
    # ~u (2 + |log p|), which moves D(x, m) by |x - m| times that
    sensitivity = (np.abs(im - k * p) + np.abs(k - im - k * q)) * (2 + abs(log_p) + abs(log_q))
    error[middle] = 16 * _U * (4 + np.abs(value[middle]) + dev_p + dev_q + sensitivity)
    error[first | last] = 16 * _U * (1 + np.abs(value[first | last]))
    return value, error


def _logsumexp_bounds(log_terms: np.ndarray) -> tuple[float, float]:
    """``(lower, upper)`` on ``log sum exp(log_terms)`` (``-inf`` for no terms)."""
    if len(log_terms) == 0:
        return -math.inf, -math.inf
    top = float(np.max(log_terms))
    if top == -math.inf:
        return -math.inf, -math.inf
    value = top + math.log(float(np.sum(np.exp(log_terms - top))))
    # shifting by the largest term costs u |max|; a term t off the max enters as exp(t - max),
    # whose rounding (~u |t - max| exp(t - max)) stays below u: summation adds u log2(n)
    err = 8 * _U * (abs(value) + abs(top) + math.log2(len(log_terms)) + 4)
    return value - err, value + err


@dataclass(frozen=True)
class _KOVLaw:
    """The k-fold composition of ``RR_(epsilon0, delta0)`` (Kairouz, Oh & Viswanath 2015).

    Under the first hypothesis the privacy loss is ``l_i = (k - 2i) epsilon0`` with probability
    ``(1 - delta0)^k a_i``, ``a_i = C(k, i) e^{(k-i) epsilon0} / (1 + e^epsilon0)^k`` (a binomial
    pmf with success probability ``1/(1 + e^epsilon0)``), and ``+inf`` with probability ``1 - (1 -
    delta0)^k``; under the second, ``l_i`` has probability ``(1 - delta0)^k b_i``, ``b_i = a_i
    e^{-l_i}``. Hence (KOV's Theorem 3.3, in privacy-loss form)

        delta(eps) = 1 - (1 - delta0)^k (1 - delta_RR(eps)),
        delta_RR(eps) = sum_{i: l_i > eps} (a_i - e^eps b_i).

    Only ``i <= k/2`` (``l_i >= 0``) matters for ``eps >= 0``.
    """

    epsilon0: float
    delta0: float
    k: int

    @cached_property
    def _terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``log a_i``, its error bound, and ``l_i`` for ``i = 0..k//2`` (log space)."""
        k, e0 = self.k, self.epsilon0
        i = np.arange(k // 2 + 1, dtype=float)
        log_a, error = _log_binomial_pmf(i, k, -_softplus(e0))
        return log_a, error, (k - 2.0 * i) * e0

    @cached_property
    def _loss_parts(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``l_i`` as an exact unevaluated sum ``n e_hi + n e_lo`` (``n = k - 2i``): Veltkamp's
        split leaves 26 bits in ``e_hi`` and ``e_lo``, so both products are exact for ``k <
        2^26``. Then ``eps - l_i`` is accurate to a few ulps of itself, even next to a loss."""
        if self.k >= 2**26:
            return None
        e0 = self.epsilon0
        scaled = (2.0**27 + 1) * e0
        e_hi = scaled - (scaled - e0)
        e_lo = e0 - e_hi
        n = self.k - 2.0 * np.arange(self.k // 2 + 1, dtype=float)
        return n * e_hi, n * e_lo

    def _gaps(self, eps: float) -> tuple[np.ndarray, np.ndarray]:
        """``eps - l_i`` and a bound on its absolute rounding error."""
        parts = self._loss_parts
        if parts is None:  # rounded products: error up to an ulp of l_i
            losses = self._terms[2]
            return eps - losses, 2 * _U * (np.abs(losses) + abs(eps)) + 5e-324
        hi, lo = parts
        partial = eps - hi  # exact when hi is within a factor 2 of eps (Sterbenz)
        partial_error = np.where((hi >= 0.5 * eps) & (hi <= 2 * eps), 0.0, _U * np.abs(partial))
        gap = partial - lo
        return gap, partial_error + 2 * _U * np.abs(gap) + 5e-324

    @property
    def max_loss(self) -> float:
        """An upper bound on the largest loss ``k epsilon0`` (the product is rounded)."""
        product = self.k * self.epsilon0
        return math.nextafter(product, math.inf) if product > 0 else 0.0

    @cached_property
    def _mode(self) -> int:
        return int(np.argmax(self._terms[0]))

    def delta_rr_bounds(self, eps: float) -> tuple[float, float]:
        """``(lower, upper)`` on ``delta_RR(eps)``, summed term by term with ``-expm1(eps - l_i)``
        (no cancellation).

        Interval evaluation: ``eps - l_i`` and each ``log a_i`` carry error bounds (see
        :meth:`_gaps`). Terms more than ``e^-80`` below the largest one are not summed; the upper
        bound adds their count times that size instead.
        """
        log_a, error, _ = self._terms
        gap, gap_error = self._gaps(eps)
        count = int(np.count_nonzero(gap - gap_error < 0))  # losses decrease: a prefix
        if count == 0:
            return 0.0, 0.0
        # log_a is unimodal, so the largest summed term sits at min(count - 1, mode)
        top = log_a[min(count - 1, self._mode)]
        start = int(np.argmax(log_a[:count] >= top - 80))
        log_a, error, gap, gap_error = (
            log_a[start:count],
            error[start:count],
            gap[start:count],
            gap_error[start:count],
        )
        x_lo, x_hi = gap + gap_error, gap - gap_error  # the lower bound takes the smaller factor
        lo_mask = x_lo < 0
        lower, _ = _logsumexp_bounds(
            log_a[lo_mask] - error[lo_mask] + np.log(-np.expm1(x_lo[lo_mask]))
        )
        upper_terms = log_a + error + np.log(-np.expm1(x_hi))
        if start > 0:
            upper_terms = np.append(upper_terms, math.log(start) + top - 80 + 1e-6)
        _, upper = _logsumexp_bounds(upper_terms)
        return math.exp(lower), min(1.0, math.exp(upper))

    def infinity_mass_bounds(self) -> tuple[float, float]:
        """Bounds on ``1 - (1 - delta0)^k``."""
        if self.delta0 == 0:
            return 0.0, 0.0
        x = self.k * math.log1p(-self.delta0)
        value = -math.expm1(x)
        err = 8 * _U * (abs(x) * math.exp(x) + value)
        return max(0.0, value - err), min(1.0, value + err)

    def delta(self, eps: float) -> tuple[float, float]:
        """``(lower, upper)`` on the optimal total delta at total epsilon ``eps``."""
        p_lo, p_hi = self.infinity_mass_bounds()
        r_lo, r_hi = self.delta_rr_bounds(eps)
        lower = (p_lo + (1 - p_hi) * r_lo) * (1 - 8 * _U)
        upper = (p_hi + (1 - p_lo) * r_hi) * (1 + 8 * _U)
        return max(0.0, lower), min(1.0, upper)

    def epsilon(self, delta_total: float) -> tuple[float, float]:
        """``(lower, upper)`` on the smallest ``eps >= 0`` with optimal ``delta(eps) <=
        delta_total`` (``inf`` if ``delta_total < 1 - (1 - delta0)^k``).

        Between consecutive losses the curve is ``A - e^eps B``, so the solution is found in
        closed form on its segment and then bracketed outward against the certified term-by-term
        evaluation of :meth:`delta_rr_bounds`.
        """
        # the budget left for delta_RR: 1 - (1 - delta_total) / (1 - delta0)^k
        log_keep_total = math.log1p(-delta_total)
        log_keep_steps = self.k * math.log1p(-self.delta0)
        x = log_keep_total - log_keep_steps
        budget = -math.expm1(x)
        err = 8 * _U * ((abs(log_keep_total) + abs(log_keep_steps)) * math.exp(x) + abs(budget))
        budget_lo, budget_hi = budget - err, budget + err
        if budget_hi < 0:
            return math.inf, math.inf
        if budget_lo < 0:  # within rounding of the mass at +inf: no certified finite epsilon
            return math.nextafter(self.k * self.epsilon0, 0.0), math.inf
        upper = self._bracket(self._closed_form(budget_lo), budget_lo, +1)
        lower = self._bracket(self._closed_form(budget_hi), budget_hi, -1)
        return min(lower, upper), upper

    def _closed_form(self, budget: float) -> float:
        """Solve ``delta_RR(eps) = budget`` on the segment of losses that holds the solution."""
        if budget <= 0 or self.epsilon0 == 0:
            return self.max_loss
        log_a, _, losses = self._terms
        log_b = log_a - losses
        log_cum_a = np.logaddexp.accumulate(log_a)  # log A_j, A_j = sum_{i<=j} a_i
        log_cum_b = np.logaddexp.accumulate(log_b)
        # delta_RR at the loss l_j (j >= 1) sums i < j: A_{j-1} (1 - e^{l_j} B_{j-1} / A_{j-1})
        ratio = np.minimum(losses[1:] + log_cum_b[:-1] - log_cum_a[:-1], 0.0)
        with np.errstate(divide="ignore"):
            log_at_losses = log_cum_a[:-1] + np.log(-np.expm1(ratio))
        log_budget = math.log(budget)
        above = np.nonzero(log_at_losses > log_budget)[0]
        # the solution lies in (l_{j+1}, l_j]; past the last loss >= 0 it lies in [0, l_last]
        j = int(above[0]) if len(above) else len(losses) - 1
        # there delta_RR = A_j - e^eps B_j, so e^eps = (A_j - budget) / B_j
        if log_budget >= log_cum_a[j]:
            return 0.0
        eps = log_cum_a[j] + math.log(-math.expm1(log_budget - log_cum_a[j])) - log_cum_b[j]
        low = losses[j + 1] if j + 1 < len(losses) else 0.0
        return float(min(max(eps, low, 0.0), losses[j]))

    def _bracket(self, estimate: float, budget: float, direction: int) -> float:
        """Move ``estimate`` outward until the certified evaluation confirms it, then bisect back
        toward the estimate: ``+1`` certifies ``delta_RR_upper(eps) <= budget`` (so eps is an
        upper bound on the solution), ``-1`` certifies ``delta_RR_lower(eps) > budget``."""

        def confirmed(eps: float) -> bool:
            if direction > 0 and eps >= self.max_loss:
                return True
            if direction < 0 and eps <= 0:
                return True
            lower, upper = self.delta_rr_bounds(eps)
            return upper <= budget if direction > 0 else lower > budget

        def clamp(eps: float) -> float:
            return min(eps, self.max_loss) if direction > 0 else max(eps, 0.0)

        failed, eps = None, clamp(estimate)
        step = abs(eps) * 4 * _U + 1e-300
        while not confirmed(eps):
            failed, eps = eps, clamp(eps + direction * step)
            step *= 2
        if failed is None:
            return eps
        for _ in range(60):  # bisection between a failed and a confirmed point
            middle = 0.5 * (failed + eps)
            if middle in (failed, eps):
                break
            if confirmed(middle):
                eps = middle
            else:
                failed = middle
        return eps


def kairouz_oh_viswanath(
    epsilon: float,
    delta: float,
    k: int,
    *,
    delta_total: float | None = None,
    epsilon_total: float | None = None,
) -> Guarantee:
    r"""Optimal (exact) k-fold composition of ``(epsilon, delta)``-DP steps.

    The parameters (steps, their epsilons and deltas, the count) must be fixed before the
    interaction starts: for adaptively chosen parameters this theorem does not hold, and only
    the privacy filters and odometer of :mod:`plda.filters` give guarantees.

    Theorem (Kairouz, Oh & Viswanath 2015, Thm. 3.3): the k-fold adaptive composition of
    ``(epsilon, delta)``-DP mechanisms is ``(eps_total, delta_total)``-DP if and only if (for the
    worst such mechanisms, ``RR_(epsilon, delta)``) ``delta_total >= 1 - (1-delta)^k (1 -
    delta_RR(eps_total))`` with

    .. math:: \delta_{RR}(\varepsilon') = \sum_{i:\,(k-2i)\varepsilon > \varepsilon'}
        \binom{k}{i}\frac{e^{(k-i)\varepsilon} - e^{\varepsilon' + i\varepsilon}}
        {(1+e^{\varepsilon})^k}.

    Computed in log space (``gammaln``/``logsumexp``), stable for ``k`` up to ``10^6`` and beyond.

    Give exactly one of ``delta_total`` (returns the smallest total epsilon, rounded up; the
    exact value lies in ``[epsilon_lower, epsilon]``, a relative width of about ``1e-12`` at
    ``k = 10^6``) or ``epsilon_total`` (returns an upper bound on the optimal total delta).
    """
    epsilon = _epsilon("epsilon", epsilon)
    delta = _delta("delta", delta)
    k = _count("k", k)
    if (delta_total is None) == (epsilon_total is None):
        raise ValueError("give exactly one of delta_total (in [0, 1)) or epsilon_total (>= 0)")
    law = _KOVLaw(epsilon, delta, k)
    name = "optimal composition (KOV15, exact)"
    if epsilon_total is not None:
        eps = _epsilon("epsilon_total", epsilon_total)
        _, upper = law.delta(eps)
        return Guarantee(eps, float(upper), name)
    target = _delta("delta_total", delta_total)
    lower, upper = law.epsilon(target)
    if _covers_delta_mass(target, [((epsilon, delta), k)]):
        # at eps_total = k epsilon only the +inf mass is left: exactly 1 - (1 - delta)^k, so
        # the equality case (which the float comparison inside the law refuses) holds there
        upper = min(float(upper), _sum_up([epsilon] * k) if k <= 4096 else _up(k * epsilon, 2))
    return Guarantee(float(upper), target, name, epsilon_lower=float(min(lower, upper)))


# ----------------------------------------------------------------------------- optimal (PLD)
def optimal(
    steps, delta: float, *, method: str = "auto", accuracy: float | None = None
) -> Guarantee:
    """Optimal composition of black-box ``(epsilon_i, delta_i)``-DP steps at total ``delta``.

    The parameters (steps, their epsilons and deltas, the count) must be fixed before the
    interaction starts: for adaptively chosen parameters this theorem does not hold, and only
    the privacy filters and odometer of :mod:`plda.filters` give guarantees.

    Theorem (Kairouz, Oh & Viswanath 2015; Murtagh & Vadhan 2016): the worst case is the
    composition of the randomized responses ``RR_(epsilon_i, delta_i)`` (``plda.ApproximateDP``);
    computing it exactly is #P-hard for heterogeneous steps (Murtagh & Vadhan), so plda composes
    their privacy-loss distributions (identical steps grouped with ``self_compose``) and returns
    certified bounds: the optimal epsilon lies in ``[epsilon_lower, epsilon]``.

    ``method``: ``"auto"`` (exact :func:`kairouz_oh_viswanath` when all steps are equal, else
    ``"pld"``), ``"pld"`` or ``"exact"`` (homogeneous steps only). ``accuracy`` is passed to the
    engine (target relative gap of the bounds).
    """
    epsilons, deltas = _steps(steps)
    target = _delta("delta", delta)
    if method not in ("auto", "pld", "exact"):
        raise ValueError(f"method must be one of 'auto', 'pld', 'exact', got {method!r}")
    groups = _groups(epsilons, deltas)
    if method == "exact" or (method == "auto" and len(groups) == 1):
        if len(groups) != 1:
            raise ValueError("method='exact' needs identical steps; use method='pld'")
        (e, d), n = groups[0]
        return kairouz_oh_viswanath(e, d, n, delta_total=target)
    pld = _approximate_dp_pld(groups, accuracy)
    lower, upper = (float(v) for v in pld.epsilon_bounds(target))
    # at eps = sum eps_i the optimum is exactly 1 - prod(1 - delta_i) (only the +inf mass is
    # left), so basic composition caps the grid's upper bound (it matters at delta -> 0)
    if _covers_delta_mass(target, groups):
        upper = min(upper, _sum_up(epsilons.tolist()))
    return Guarantee(upper, target, "optimal composition (PLD, certified)", min(lower, upper))


def _approximate_dp_pld(groups, accuracy: float | None = None):
    from plda.mechanisms import ApproximateDP
    from plda.pld import PrivacyLossDistribution

    options = {} if accuracy is None else {"accuracy": accuracy}
    pld = None
    for (e, d), n in groups:
        part = PrivacyLossDistribution.from_mechanism(ApproximateDP(e, d), n, **options)
        pld = part if pld is None else pld.compose(part)
    return pld


# ----------------------------------------------------------------------------- concurrent
def _concurrent_order(epsilons: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """Order minimising ``delta_g = sum_i e^{sum_{j<i} eps_j} delta_i``.

    Exchange argument: swapping adjacent steps ``a, b`` changes only their two terms, ``e^E
    (delta_a + e^{eps_a} delta_b)`` versus ``e^E (delta_b + e^{eps_b} delta_a)`` (``E`` = the sum of
    the epsilons before them; the terms after them see the same sum). ``a`` first is no worse iff
    ``delta_b (e^{eps_a} - 1) <= delta_a (e^{eps_b} - 1)``, i.e. iff ``delta_a / (e^{eps_a} - 1) >=
    delta_b / (e^{eps_b} - 1)``. This is a key comparison, so any order can be bubble-sorted into
    decreasing key without increasing delta_g: sorting by decreasing key is optimal (a step with
    ``eps = 0`` has key ``+inf``: it multiplies nothing after it).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        key = np.where(epsilons > 0, deltas / np.expm1(epsilons), np.inf)
    return np.argsort(-key, kind="stable")


def _concurrent_delta_up(epsilons: np.ndarray, deltas: np.ndarray) -> float:
    order = _concurrent_order(epsilons, deltas)
    e, d = epsilons[order], deltas[order]
    prefix = np.concatenate([[0.0], np.cumsum(e)[:-1]])
    with np.errstate(over="ignore", invalid="ignore"):
        terms = np.where(d > 0, np.exp(prefix) * d, 0.0)  # no inf * 0 for pure steps
    value = math.fsum(terms.tolist())
    # cumsum/exp errors: relative ~ (n + |prefix|) u per term
    return min(1.0, _up(value, 16 + 4 * len(e) + 4 * float(prefix[-1])))


def concurrent(steps, delta: float | None = None, *, accuracy: float | None = None) -> Guarantee:
    """Concurrent composition of interactive ``(epsilon_i, delta_i)``-DP mechanisms (an adversary
    may interleave its queries to them arbitrarily).

    * ``delta=None``: Vadhan & Wang 2021, **Theorem 1** (a theorem): ``(eps_g, delta_g)`` with
      ``eps_g = sum epsilon_i`` and ``delta_g = sum_i e^{sum_{j<i} epsilon_j} delta_i``, minimised
      over the order of the mechanisms (sort by decreasing ``delta_i / (e^{epsilon_i} - 1)``, see
      :func:`_concurrent_order`). Equal steps: ``(k eps, (e^{k eps} - 1)/(e^eps - 1) delta)``.
    * ``delta`` given: the smallest epsilon at that total delta. If all ``delta_i = 0``, Vadhan &
      Wang's **Corollary 3** (a theorem) says the optimal non-interactive composition holds, and
      :func:`optimal` is returned; otherwise Theorem 1 gives ``sum epsilon_i`` if ``delta >=
      delta_g`` and ``inf`` if not.

    That the optimal composition also holds for concurrent *approximate*-DP mechanisms was
    conjectured by Vadhan & Wang (2021, Section 4) and later proved (Lyu 2022; Vadhan & Zhang
    2023); it is deliberately not used here, so approximate-DP results are conservative.
    """
    epsilons, deltas = _steps(steps)
    delta_g = _concurrent_delta_up(epsilons, deltas)
    total = _sum_up(epsilons.tolist())
    if delta is None:
        return Guarantee(total, delta_g, "concurrent composition (VW21 Thm 1)")
    target = _delta("delta", delta)
    if not np.any(deltas > 0):
        result = optimal(list(zip(epsilons, deltas, strict=True)), target, accuracy=accuracy)
        return replace(result, name="concurrent composition, pure DP (VW21 Cor 3)")
    epsilon = total if target >= delta_g else math.inf
    return Guarantee(epsilon, target, "concurrent composition (VW21 Thm 1)")


# ----------------------------------------------------------------------------- group privacy
def group_privacy(epsilon: float, delta: float, group_size: int) -> Guarantee:
    """Group privacy of an ``(epsilon, delta)``-DP mechanism for datasets that differ in
    ``group_size = k`` records: ``(k epsilon, delta sum_{i<k} e^{i epsilon})``-DP.

    Theorem, by the hybrid argument over ``x_0 ~ x_1 ~ ... ~ x_k``:
    ``P[M(x_0) in T] <= e^eps P[M(x_1) in T] + delta <= ... <= e^{k eps} P[M(x_k) in T] +
    delta (1 + e^eps + ... + e^{(k-1) eps})`` (see Vadhan & Wang 2021, Section 2). The sum is
    ``(e^{k eps} - 1)/(e^eps - 1) delta``, never more than the textbook ``k e^{(k-1) eps}
    delta`` (each of the k terms is at most ``e^{(k-1) eps}``).
    """
    epsilon = _epsilon("epsilon", epsilon)
    delta = _delta("delta", delta)
    k = _count("group_size", group_size)
    if delta == 0:
        group_delta = 0.0
    elif epsilon == 0:
        group_delta = k * delta
    else:
        # (e^{k eps} - 1) / (e^eps - 1) with expm1: accurate for small eps too
        ratio = math.expm1(k * epsilon) / math.expm1(epsilon) if k * epsilon < 700 else math.inf
        group_delta = ratio * delta
    return Guarantee(_up(k * epsilon), min(1.0, _up(group_delta, 16)), "group privacy")


def group_privacy_mechanism(
    mechanism, group_size: int, delta: float, *, count: int = 1, accuracy: float | None = None
) -> Guarantee:
    """Group privacy of a *known* mechanism, from its PLD: datasets that differ in ``k`` records
    change an L1/L2 sensitivity-``s`` query by at most ``k s`` (triangle inequality), so the
    group guarantee is that of the same mechanism with ``sensitivity * k`` (composed ``count``
    times), returned as certified bounds on epsilon at ``delta``.

    Supports mechanisms with a ``sensitivity`` field (``Gaussian``, ``Laplace``,
    ``DiscreteLaplace``, ``DiscreteGaussian``). Subsampled mechanisms are refused: a group is
    not sampled as a block, so scaling the sensitivity would not be a valid bound.
    """
    from plda.mechanisms.base import Mechanism
    from plda.pld import PrivacyLossDistribution

    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a plda mechanism, got {type(mechanism).__name__}")
    if not hasattr(mechanism, "sensitivity"):
        raise TypeError(
            "mechanism must have a sensitivity (Gaussian, Laplace, DiscreteLaplace, "
            f"DiscreteGaussian), got {type(mechanism).__name__}; for an (epsilon, delta) "
            "guarantee use group_privacy"
        )
    k = _count("group_size", group_size)
    target = _delta("delta", delta)
    count = _count("count", count)
    group = replace(mechanism, sensitivity=mechanism.sensitivity * k)
    options = {} if accuracy is None else {"accuracy": accuracy}
    pld = PrivacyLossDistribution.from_mechanism(group, count, **options)
    lower, upper = pld.epsilon_bounds(target)
    return Guarantee(float(upper), target, "group privacy (PLD)", float(lower))


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
    """Every applicable composition theorem's epsilon at total ``delta``, next to the optimum.

    Rows: basic composition (needs ``delta >= sum delta_i``), advanced composition (DRV10, slack
    ``delta' = delta - sum delta_i``), the KOV bound (slack ``delta~ = 1 - (1 - delta) / prod(1 -
    delta_i)``, its own delta accounting), the exact KOV optimum when all steps are equal, the
    PLD optimum with its certified bounds, and Vadhan-Wang concurrent composition. A theorem that
    does not apply at ``delta`` has ``epsilon = inf`` and says why in its note.
    """
    epsilons, deltas = _steps(steps)
    target = _delta("delta", delta)
    groups = _groups(epsilons, deltas)
    pairs = list(zip(epsilons.tolist(), deltas.tolist(), strict=True))
    sum_delta = _sum_up(deltas.tolist())
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
    kov_slack = kov_slack * (1 - 64 * _U * (1 + abs(log_keep)))  # round the slack down
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
