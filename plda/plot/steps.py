"""Epsilon against training steps: the certified PLD band, alone or beside RDP and the GDP limit.

The first argument is either *one step* (a mechanism, repeated ``k`` times) or a *record of
steps* (an accountant or an adapter holding one, or a PLD of one mechanism), read at its first
``k`` steps (:func:`step_source`). Steps are training steps, as ``len(accountant)`` counts
them: an epoch of an epoch sampler is its ``num_steps`` steps.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from plda._internal import validation as check
from plda._internal.floats import dot
from plda.conversions.gdp import log_gaussian_delta
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.subsampled import PoissonSampled
from plda.pld import PrivacyLossDistribution
from plda.plot.common import (
    compact_legend,
    curve_color,
    describe_band,
    draw_band,
    new_axes,
    record_of,
    style_of,
)
from plda.samplers import training_steps

__all__ = ["StepSource", "accounting_comparison", "epsilon_vs_steps", "step_source"]

#: accuracy of the engine for the per-steps curves (a moderate one keeps them fast)
STEPS_ACCURACY = 1e-2

_RDP_COLOR = "#d62728"
_GDP_COLOR = "#2ca02c"

_SOURCES = (
    "a plda mechanism (one step, repeated), a PLDAccountant, an adapter holding one "
    "(plda.adapters.opacus.PLDOpacusAccountant, plda.adapters.dp_accounting."
    "PLDPrivacyAccountant) or a PrivacyLossDistribution of one mechanism (the first k of its "
    "recorded steps)"
)


@dataclass(frozen=True)
class StepSource:
    """What a steps plot reads: the composition of the first ``k`` steps.

    Attributes
    ----------
    history : tuple of (Mechanism, int)
        Run-length ``((mechanism, count), ...)`` in the order recorded; for one step repeated,
        ``((mechanism, 1),)``.
    relation : str
        Neighbouring relation of the record.
    repeated : bool
        True when ``history`` is one step to repeat (any ``k``), False when it is a record whose
        first ``k`` steps are read (``k`` at most :attr:`recorded`).

    Steps are training steps: a run of an epoch sampler's mechanism is its ``num_steps`` steps
    (:func:`plda.samplers.training_steps`), and ``k`` must end on a whole epoch there.
    """

    history: tuple
    relation: str = "add_remove"
    repeated: bool = False

    @property
    def recorded(self) -> int:
        """Number of recorded training steps (as ``len(accountant)`` counts them)."""
        return sum(count * training_steps(mechanism) for mechanism, count in self.history)

    def first(self, steps: int) -> tuple:
        """Run-length components of the first ``steps`` training steps.

        Parameters
        ----------
        steps : int
            Training steps.

        Returns
        -------
        tuple of (Mechanism, int)
            The first ``steps`` steps of the record (the one step repeated when
            :attr:`repeated`).

        Raises
        ------
        ValueError
            If ``steps`` is beyond the record or ends inside an epoch.
        """
        if self.repeated:
            ((mechanism, _),) = self.history
            return ((mechanism, _runs(mechanism, steps, steps)),)
        if steps > self.recorded:
            raise ValueError(
                f"steps: {steps} is beyond the {self.recorded} steps recorded; plot at most "
                f"{self.recorded} (to extrapolate, pass one step's mechanism instead)"
            )
        out, left = [], steps
        for mechanism, count in self.history:
            if left <= 0:
                break
            length = count * training_steps(mechanism)
            out.append((mechanism, count if left >= length else _runs(mechanism, left, steps)))
            left -= length
        return tuple(out)

    def pld(self, steps: int, accuracy: float) -> PrivacyLossDistribution:
        """The PLD of the first ``steps`` steps at ``accuracy``.

        Parameters
        ----------
        steps : int
            Training steps.
        accuracy : float
            Target relative gap of its epsilon bounds.

        Returns
        -------
        PrivacyLossDistribution
            Its lower bound comes from the realized pairs, as the accountant's does.

        Raises
        ------
        ValueError
            As :meth:`first`.
        """
        return PrivacyLossDistribution(self.first(steps), self.relation, accuracy)


def _runs(mechanism: Mechanism, steps: int, asked: int) -> int:
    """Runs of ``mechanism`` in ``steps`` training steps; ``ValueError`` (naming the ``asked``
    count) when they end inside an epoch."""
    per = training_steps(mechanism)
    if steps % per:
        raise ValueError(
            f"steps: {asked} ends inside an epoch of {per} steps ({type(mechanism).__name__}, "
            f"analysed per whole epoch); plot at whole epochs"
        )
    return steps // per


def step_source(value) -> StepSource:
    """The :class:`StepSource` of a steps plot's first argument.

    A mechanism is one step, repeated. A :class:`~plda.PLDAccountant` is a record of steps, and
    so is an adapter that keeps one as its ``accountant`` (the Opacus and dp_accounting
    adapters), and a PLD of a single mechanism (``count`` runs of it). A PLD of several
    mechanisms has no order among its runs and is refused, as is an Opacus adapter that
    accounts one-pass epochs (its guarantee is per epoch, not per step).

    Parameters
    ----------
    value : Mechanism or PLDAccountant or adapter or PrivacyLossDistribution
        The plot's first argument.

    Returns
    -------
    StepSource
        What the plot reads.

    Raises
    ------
    TypeError
        For anything else.
    ValueError
        For an empty record, a PLD of several mechanisms, or one-pass epochs.
    """
    if isinstance(value, Mechanism):
        return StepSource(history=((value, 1),), repeated=True)
    if isinstance(value, PrivacyLossDistribution):
        history = tuple((m, k) for m, k in value.components if k > 0)
        if not history:
            raise ValueError("the PrivacyLossDistribution holds no steps")
        if len({m for m, _ in history}) != 1:
            raise ValueError(
                "a PrivacyLossDistribution of several mechanisms has no order among its steps: "
                "pass a PLDAccountant (steps in the order recorded) or one step's mechanism"
            )
        ((mechanism, _),) = history[:1]
        return StepSource(
            history=((mechanism, sum(k for _, k in history)),), relation=value.relation
        )
    accountant = record_of(value)
    if accountant is None:
        raise TypeError(f"accountant_or_mechanism must be {_SOURCES}, got {type(value).__name__}")
    history = accountant.history
    if not history:
        raise ValueError("the accountant has no recorded steps")
    return StepSource(history=history, relation=accountant.relation)


def _steps(steps, source: StepSource) -> np.ndarray:
    values = np.atleast_1d(np.asarray(steps))
    if values.ndim != 1 or len(values) == 0:
        raise ValueError("steps must be a non-empty sequence of positive integers")
    k = np.array(sorted({check.count("steps", v, minimum=1) for v in values.tolist()}))
    for count in (k[::-1] if not source.repeated else k):
        source.first(int(count))  # raises beyond the record (saying how many) or in an epoch
    return k


def _check_delta(delta) -> float:
    # one range, (0, 1), in every message (a 0-d array reads as its number)
    if isinstance(delta, np.ndarray) and delta.ndim == 0:
        delta = delta.item()
    return check.fraction("delta", delta)


def epsilon_vs_steps(
    accountant_or_mechanism,
    steps: Sequence[int] | np.ndarray,
    delta: float = 1e-5,
    ax=None,
    *,
    accuracy: float = STEPS_ACCURACY,
    label: str = "PLD",
    color: str | None = None,
    linestyle: str = "-",
):
    """Plot the certified ``epsilon(delta)`` against the number of training steps.

    The upper bound as a line with markers, the lower bound as a thin line and the band
    between them (legend ``"certified bounds [lower, upper]"``, with its relative width when it
    is thinner than the line). One engine call per ``steps`` value (``accuracy`` defaults to a
    moderate 1e-2: the band shows what it costs). Calls on one axes overlay (several runs in
    one figure: each its ``color``, ``linestyle`` and ``label``, one compact legend).

    Parameters
    ----------
    accountant_or_mechanism
        Either one step, repeated ``k`` times at each ``k`` of ``steps``: a mechanism (e.g.
        ``plda.PoissonSampled(plda.Gaussian(1.1), 256/60000)``). Or a record of steps, read at
        its *prefixes* (the point at ``k`` is the privacy of the first ``k`` steps recorded,
        under the record's relation): a :class:`~plda.PLDAccountant`, an Opacus or
        dp_accounting adapter (:class:`plda.adapters.opacus.PLDOpacusAccountant`,
        :class:`plda.adapters.PLDPrivacyAccountant`), or a PLD of one mechanism.
        Steps are training steps, counted as ``len(accountant)`` counts them (an epoch of an
        epoch sampler is its ``num_steps`` steps).
    steps
        Step counts ``k >= 1`` (at most the number recorded for a record of steps; whole
        epochs for an epoch sampler).
    delta
        The ``delta`` in ``(0, 1)`` at which epsilon is bounded.
    ax
        Axes to draw on (default: a new figure).
    accuracy
        Target relative gap of each point's epsilon bounds.
    label
        Names the curve in the legend (``"label: certified upper bound on ε (δ = ...)"``).
    color
        Colour of the curve and its band (default: the next colour of the axes' cycle,
        ``"C0"`` on fresh axes).
    linestyle
        Line style of the curve and its band's edge.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    ValueError
        A step count beyond the recorded ones or inside an epoch, a ``delta`` outside (0, 1),
        a record without an order (see :func:`step_source`).
    TypeError
        For an ``accountant_or_mechanism`` of another type, or a ``delta`` or step count that
        is not a real number.
    """
    source = step_source(accountant_or_mechanism)
    k = _steps(steps, source)
    d = _check_delta(delta)
    ax = new_axes(ax)
    line, band, lower, upper = _epsilon_band(
        ax, source, k, d, accuracy, f"{label}: certified upper bound on ε (δ = {d:g})",
        curve_color(ax, color), linestyle,
    )
    describe_band(ax, band, k, lower, upper, linewidth=line.get_linewidth())
    compact_legend(ax)
    return ax


def _epsilon_band(ax, source: StepSource, k: np.ndarray, d: float, accuracy: float, label: str,
                  color: str, linestyle: str):
    """Draw the certified epsilon(d) band of the first ``k`` steps of ``source``."""
    lower = np.empty(len(k))
    upper = np.empty(len(k))
    for i, count in enumerate(k):
        bounds = source.pld(int(count), accuracy).epsilon_bounds(d)
        lower[i], upper[i] = bounds.lower, bounds.upper
    line, band = draw_band(ax, k, lower, upper, primary="upper", color=color, marker="o",
                           label=label, linestyle=linestyle)
    ax.set_xlabel("training steps")
    ax.set_ylabel("ε")
    ax.set_title("Privacy loss over training")
    if k[-1] / k[0] >= 100:
        ax.set_xscale("log")
    return line, band, lower, upper


def _clt_mu_squared(mechanism: Mechanism) -> float | None:
    """``mu^2`` per step of the GDP central limit: ``q^2 (e^{mu0^2} - 1)`` for a
    Poisson-sampled Gaussian (Bu, Dong, Long & Su 2020), ``mu0^2`` for a Gaussian; ``None``
    for other mechanisms. An approximation, not a bound."""
    if type(mechanism) is PoissonSampled and type(mechanism.mechanism) is Gaussian:
        mu0 = mechanism.mechanism.mu
        if mechanism.group_size > 1:  # chi^2 of sum_k w_k N(k mu0) against N(0): see below
            return _mixture_chi2(mechanism.group_mixture())
        return mechanism.sample_rate**2 * math.expm1(mu0 * mu0)
    if type(mechanism) is Gaussian:
        return mechanism.mu**2
    return None


def _mixture_chi2(mixture) -> float | None:
    """``chi^2(P || Q) = sum_jk w_j w_k e^{mu_j mu_k} - 1`` of ``P = sum_k w_k N(mu_k)``
    against ``Q = N(0)``: the central limit's ``mu^2`` per step of a group (for one record,
    ``q^2 (e^{mu0^2} - 1)``)."""
    shifts, weights = (np.asarray(v) for v in mixture.components())
    with np.errstate(over="ignore"):
        total = dot(weights, dot(np.exp(np.multiply.outer(shifts, shifts)), weights))
    return max(0.0, total - 1.0) if math.isfinite(total) else None


def _clt_mu(components) -> float | None:
    """Central-limit ``mu`` of a composition: ``mu^2`` adds up over its steps (GDP composes
    in quadrature); ``None`` when a step has no central-limit reading."""
    total = 0.0
    for mechanism, count in components:
        per_step = _clt_mu_squared(mechanism)
        if per_step is None:
            return None
        total += count * per_step
    return math.sqrt(total)


def _gdp_epsilon(mu: float, delta: float) -> float:
    """``epsilon`` with ``delta_mu(epsilon) = delta`` (bisection on the GDP profile)."""
    from scipy.optimize import brentq

    def gap(e):
        return float(np.exp(log_gaussian_delta(e, mu))) - delta

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
    label: str | None = None,
    color=None,
    linestyle=None,
):
    """Plot ``epsilon(delta)`` against training steps by several accountings of the same steps.

    The PLD (certified band, round markers), RDP accounting (certified Rényi curve converted
    with the Canonne–Kamath–Steinke bound,
    :meth:`~plda.PrivacyLossDistribution.renyi_epsilon`; square markers, dashed) and, for
    (Poisson-sampled) Gaussian steps under add/remove, the Gaussian-DP central-limit
    approximation ``mu^2 = k q^2 (e^{mu0^2} - 1)`` (Bu, Dong, Long & Su 2020; not a bound: it
    can under-report; triangles, dotted). Calls on one axes overlay (several runs in one
    figure).

    Parameters
    ----------
    accountant_or_mechanism : Mechanism or PLDAccountant or adapter or PrivacyLossDistribution
        One step repeated, or a record of steps read at its prefixes, as for
        :func:`epsilon_vs_steps`.
    steps : sequence of int
        Step counts ``k >= 1``, as for :func:`epsilon_vs_steps`.
    delta : float, optional
        The ``delta`` in ``(0, 1)`` at which epsilon is bounded.
    ax : matplotlib.axes.Axes, optional
        Axes to draw on (default: a new figure).
    accuracy : float, optional
        Target relative gap of each point's PLD epsilon bounds.
    label : str, optional
        Names this run in the legend: each entry reads ``"label: ..."`` (default: no name).
    color, linestyle
        One value for the three curves of this run (the markers still tell them apart), or a
        mapping from ``"pld"``, ``"rdp"``, ``"gdp"`` to a value; ``None``: each its own (PLD
        the next colour of the axes' cycle, RDP red and dashed, GDP green and dotted).

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.

    Raises
    ------
    ValueError
        As :func:`epsilon_vs_steps`: a step count beyond the record or inside an epoch, a
        ``delta`` outside (0, 1), a record without an order.
    TypeError
        For an ``accountant_or_mechanism`` of another type, or a ``delta`` or step count that
        is not a real number.
    """
    source = step_source(accountant_or_mechanism)
    k = _steps(steps, source)
    d = _check_delta(delta)
    ax = new_axes(ax)
    name = "" if label is None else f"{label}: "
    line, band, lower, upper = _epsilon_band(
        ax, source, k, d, accuracy, f"{name}PLD: certified upper bound on ε",
        style_of(color, "pld", curve_color(ax)), style_of(linestyle, "pld", "-"),
    )
    rdp = np.array([
        source.pld(int(c), accuracy).renyi_epsilon(d)
        for c in k
    ])
    ax.plot(k, rdp, marker="s", linestyle=style_of(linestyle, "rdp", "--"),
            color=style_of(color, "rdp", _RDP_COLOR), markersize=3,
            label=f"{name}RDP accounting (certified)")
    if source.relation == "add_remove":  # the central limit is stated for add/remove pairs
        mus = [_clt_mu(source.first(int(c))) for c in k]
        if all(m is not None for m in mus):
            gdp = np.array([_gdp_epsilon(m, d) for m in mus])
            ax.plot(k, gdp, marker="^", linestyle=style_of(linestyle, "gdp", ":"),
                    color=style_of(color, "gdp", _GDP_COLOR), markersize=3,
                    label=f"{name}GDP central limit (approximation, not a bound)")
    ax.set_title(f"Accountings compared (δ = {d:g})")
    describe_band(ax, band, k, lower, upper, linewidth=line.get_linewidth())
    compact_legend(ax)
    return ax
