"""Plots of a composition's privacy: tradeoff curve, privacy profile, epsilon against training
steps, and several accountings side by side.

matplotlib is optional: it is imported inside each function. Every function draws on ``ax`` (a
new figure when ``None``) and returns the axes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.special import ndtr, ndtri

from plda import renyi as renyi_module
from plda import tradeoff as tradeoff_module
from plda._internal import validation as check
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.subsampled import PoissonSampled
from plda.pld import PrivacyLossDistribution

__all__ = ["accounting_comparison", "epsilon_vs_steps", "privacy_profile", "tradeoff"]

#: accuracy of the engine for the per-steps curves (a moderate one keeps them fast)
STEPS_ACCURACY = 1e-2

_PLD_COLOR = "#1f77b4"
_RDP_COLOR = "#d62728"
_GDP_COLOR = "#2ca02c"


def _axes(ax, figsize=(6, 4.5)):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt  # optional dependency: imported only when plotting

    _, ax = plt.subplots(figsize=figsize)
    return ax


def _pld(pld) -> PrivacyLossDistribution:
    # an accountant (anything with a ``.pld`` PrivacyLossDistribution) is plotted as its history;
    # duck-typed so the plots need no accountant internals
    recorded = getattr(pld, "pld", None) if not isinstance(pld, PrivacyLossDistribution) else pld
    if not isinstance(recorded, PrivacyLossDistribution):
        raise TypeError(
            "pld must be a PrivacyLossDistribution or a PLDAccountant, got "
            f"{type(pld).__name__}"
        )
    return recorded


def tradeoff(
    pld: PrivacyLossDistribution,
    ax=None,
    *,
    reference_mu: float | None = None,
    alpha=None,
    log_scale: bool = False,
    label: str = "composition",
):
    """Tradeoff curve ``beta = f(alpha)`` of the composition (Dong, Roth & Su 2019): the
    certified lower bound as a line, the band up to the optimistic upper bound shaded, the ideal
    ``beta = 1 - alpha`` (perfect privacy) dotted and, with ``reference_mu``, the ``mu``-GDP
    curve ``G_mu(alpha) = Phi(Phi^-1(1 - alpha) - mu)`` dashed.

    Parameters
    ----------
    pld
        The composition.
    ax
        Axes to draw on (default: a new figure).
    reference_mu
        ``mu`` of a reference Gaussian-DP curve (e.g. ``plda.tradeoff.gdp_mu(pld)``).
    alpha
        Type-I errors to evaluate (default: 601 points on [0, 1]; 600 log-spaced points from
        ``1e-10`` with ``log_scale``).
    log_scale
        Membership-inference view: true-positive rate ``1 - beta`` against false-positive rate
        ``alpha`` on log-log axes (the low-FPR regime).
    label
        Legend label of the curve.
    """
    pld = _pld(pld)
    if reference_mu is not None:
        reference_mu = check.nonnegative_float("reference_mu", reference_mu, upper=math.inf)
    if alpha is None:
        alpha = np.geomspace(1e-10, 1, 600) if log_scale else np.linspace(0, 1, 601)
    a = np.sort(np.atleast_1d(check.array_in("alpha", alpha, 0.0, 1.0)))
    ax = _axes(ax)
    lower, upper = tradeoff_module.tradeoff_bounds(pld, a)
    if log_scale:
        tpr_lower, tpr_upper = tradeoff_module.true_positive_rate_bounds(pld, a)
        keep = a > 0
        ax.plot(a[keep], tpr_upper[keep], color=_PLD_COLOR, label=f"{label}: max TPR (certified)")
        ax.fill_between(a[keep], tpr_lower[keep], tpr_upper[keep], color=_PLD_COLOR, alpha=0.25,
                        linewidth=0, label="certified band")
        ax.plot(a[keep], a[keep], ":", color="black", label="random guessing (TPR = FPR)")
        if reference_mu is not None:
            with np.errstate(divide="ignore"):
                tpr = ndtr(ndtri(a) + reference_mu)  # 1 - G_mu(alpha) without cancellation
            ax.plot(a[keep], tpr[keep], "--", color=_GDP_COLOR,
                    label=f"{reference_mu:.3g}-GDP")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("false-positive rate α")
        ax.set_ylabel("true-positive rate 1 − β")
        ax.set_title("Membership inference: best attack")
    else:
        ax.plot(a, lower, color=_PLD_COLOR, label=f"{label} (certified lower bound)")
        ax.fill_between(a, lower, upper, color=_PLD_COLOR, alpha=0.25, linewidth=0,
                        label="certified band")
        ax.plot(a, 1 - a, ":", color="black", label="perfect privacy (β = 1 − α)")
        if reference_mu is not None:
            ax.plot(a, tradeoff_module.gaussian_tradeoff(a, reference_mu), "--",
                    color=_GDP_COLOR, label=f"{reference_mu:.3g}-GDP")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_aspect("equal")
        ax.set_xlabel("type-I error α")
        ax.set_ylabel("type-II error β")
        ax.set_title("Tradeoff function (f-DP)")
    ax.legend(fontsize="small")
    return ax


def privacy_profile(
    pld: PrivacyLossDistribution, ax=None, *, epsilon=None, label: str = "composition"
):
    """Privacy profile ``delta(epsilon)`` on a logarithmic ``delta`` axis: the certified upper
    bound as a line and the band down to the lower bound shaded, both from the composition's
    current grid (the one :meth:`~plda.PrivacyLossDistribution.discrete` returns).

    ``epsilon`` defaults to 400 points from 0 to a little past where the certified ``delta``
    reaches ``1e-12``.
    """
    pld = _pld(pld)
    if epsilon is None:
        # the range where the certified profile is above 1e-12, from the current grid (asking
        # for epsilon(1e-12) would refine the grid for that delta)
        samples = tradeoff_module.symmetric_profile(pld, "upper")
        below = samples.epsilon[(samples.epsilon >= 0) & (samples.delta <= 1e-12)]
        top = float(below[0]) if len(below) else float(samples.epsilon[-1])
        epsilon = np.linspace(0, 1.1 * max(top, 1e-3), 400)
    e = np.sort(np.atleast_1d(check.array_in("epsilon", epsilon, 0.0, np.inf)))
    ax = _axes(ax)
    # on the current grid (pld.delta_bounds would refine it for every delta on the curve)
    upper = np.max([law.delta(e) for law in pld.discrete("upper").values()], axis=0)
    lower = np.max([law.delta(e) for law in pld.discrete("lower").values()], axis=0)
    lower = np.minimum(lower, upper)
    floor = 1e-300
    ax.plot(e, np.maximum(upper, floor), color=_PLD_COLOR, label=f"{label}: δ(ε) upper bound")
    ax.fill_between(e, np.maximum(lower, floor), np.maximum(upper, floor), color=_PLD_COLOR,
                    alpha=0.25, linewidth=0, label="certified band")
    ax.set_yscale("log")
    positive = upper[upper > 0]
    if len(positive):
        ax.set_ylim(max(positive.min() / 3, 1e-300), min(1.0, positive.max() * 3))
    ax.set_xlabel("ε")
    ax.set_ylabel("δ(ε)")
    ax.set_title("Privacy profile")
    ax.legend(fontsize="small")
    return ax


def _one_step(accountant_or_mechanism, accuracy: float) -> PrivacyLossDistribution:
    if isinstance(accountant_or_mechanism, PrivacyLossDistribution):
        return accountant_or_mechanism.with_accuracy(accuracy)
    if isinstance(accountant_or_mechanism, Mechanism):
        return PrivacyLossDistribution.from_mechanism(accountant_or_mechanism, accuracy=accuracy)
    raise TypeError(
        "accountant_or_mechanism must be a plda mechanism or a PrivacyLossDistribution (one "
        f"training step), got {type(accountant_or_mechanism).__name__}"
    )


def _steps(steps) -> np.ndarray:
    values = np.atleast_1d(np.asarray(steps))
    if values.ndim != 1 or len(values) == 0:
        raise ValueError("steps must be a non-empty sequence of positive integers")
    return np.array(sorted({check.count("steps", v, minimum=1) for v in values.tolist()}))


def _check_delta(delta) -> float:
    d = float(check.array_in("delta", delta, 0.0, 1.0))
    if not 0 < d < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return d


def epsilon_vs_steps(
    accountant_or_mechanism,
    steps: Sequence[int] | np.ndarray,
    delta: float = 1e-5,
    ax=None,
    *,
    accuracy: float = STEPS_ACCURACY,
    label: str | None = None,
):
    """Certified ``epsilon(delta)`` against the number of training steps: one engine call per
    ``steps`` value (``accuracy`` defaults to a moderate 1e-2: the band between the bounds shows
    what it costs). ``accountant_or_mechanism`` is one step: a mechanism (e.g.
    ``plda.PoissonSampled(plda.Gaussian(1.1), 256/60000)``) or a PLD."""
    one = _one_step(accountant_or_mechanism, accuracy)
    k = _steps(steps)
    d = _check_delta(delta)
    lower = np.empty(len(k))
    upper = np.empty(len(k))
    for i, count in enumerate(k):
        lower[i], upper[i] = one.self_compose(int(count)).epsilon_bounds(d)
    ax = _axes(ax)
    ax.plot(k, upper, "o-", color=_PLD_COLOR, markersize=3,
            label=label or f"PLD, certified ε (δ = {d:g})")
    ax.fill_between(k, lower, upper, color=_PLD_COLOR, alpha=0.25, linewidth=0,
                    label="certified band")
    ax.set_xlabel("training steps")
    ax.set_ylabel("ε")
    ax.set_title("Privacy loss over training")
    if k[-1] / k[0] >= 100:
        ax.set_xscale("log")
    ax.legend(fontsize="small")
    return ax


def _clt_mu(mechanism: Mechanism, count: int) -> float | None:
    """GDP central-limit ``mu = q sqrt(k (e^{mu0^2} - 1))`` of ``k`` Poisson-sampled Gaussian
    steps (Bu, Dong, Long & Su 2020) — an approximation, not a bound."""
    if type(mechanism) is PoissonSampled and type(mechanism.mechanism) is Gaussian:
        mu0 = mechanism.mechanism.mu
        return mechanism.sample_rate * math.sqrt(count * math.expm1(mu0 * mu0))
    if type(mechanism) is Gaussian:
        return mechanism.mu * math.sqrt(count)
    return None


def _gdp_epsilon(mu: float, delta: float) -> float:
    """``epsilon`` with ``delta_mu(epsilon) = delta`` (bisection on the GDP profile)."""
    from scipy.optimize import brentq

    def gap(e):
        return float(np.exp(tradeoff_module.log_gaussian_delta(e, mu))) - delta

    if gap(0.0) <= 0:
        return 0.0
    hi = 1.0
    while gap(hi) > 0:
        hi *= 2
    return brentq(gap, 0.0, hi, xtol=1e-10)


def accounting_comparison(
    accountant_or_mechanism,
    steps: Sequence[int] | np.ndarray,
    delta: float = 1e-5,
    ax=None,
    *,
    accuracy: float = STEPS_ACCURACY,
):
    """``epsilon(delta)`` against training steps by several accountings of the same mechanism:
    the PLD (certified band), RDP accounting (certified Rényi curve converted with the
    Canonne–Kamath–Steinke bound, :func:`plda.renyi.renyi_epsilon`) and, for (Poisson-sampled)
    Gaussian steps, the Gaussian-DP central-limit approximation (not a bound: it can
    under-report)."""
    one = _one_step(accountant_or_mechanism, accuracy)
    k = _steps(steps)
    d = _check_delta(delta)
    ax = epsilon_vs_steps(one, k, d, ax, accuracy=accuracy, label="PLD (certified)")
    rdp = np.array([renyi_module.renyi_epsilon(one.self_compose(int(c)), d) for c in k])
    ax.plot(k, rdp, "s--", color=_RDP_COLOR, markersize=3, label="RDP accounting (certified)")
    mechanisms = [m for m, _ in one.components]
    if len(mechanisms) == 1 and one.components[0][1] == 1:
        mus = [_clt_mu(mechanisms[0], int(c)) for c in k]
        if all(m is not None for m in mus):
            gdp = np.array([_gdp_epsilon(m, d) for m in mus])
            ax.plot(k, gdp, "^:", color=_GDP_COLOR, markersize=3,
                    label="GDP central limit (approximation)")
    ax.set_title(f"Accountings compared (δ = {d:g})")
    ax.legend(fontsize="small")
    return ax
