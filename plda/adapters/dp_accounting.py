"""dp_accounting ``DpEvent`` trees to a :class:`~plda.PrivacyLossDistribution`.

Duck-typed on class names and attributes: dp_accounting is never imported. The events
supported and the mechanisms they become: :func:`from_dp_event`. ``PLDPrivacyAccountant``, a
``dp_accounting.PrivacyAccountant`` built on this mapping, lives in
:mod:`plda.adapters.dp_privacy_accountant` (which imports this module, never the reverse).
Sensitivity conventions and the samplers beyond Poisson:
``docs/howto/opacus-and-dp-accounting.md``.
"""

from __future__ import annotations

import math
import numbers

from plda._internal import validation as check
from plda.bounds import check_relation
from plda.matrix import TreeAggregation
from plda.mechanisms import (
    ZCDP,
    ApproximateDP,
    DiscreteLaplace,
    Gaussian,
    GaussianMixture,
    Laplace,
    Mechanism,
    PoissonSampled,
    RandomizedResponse,
    RenyiDP,
    SampledWithoutReplacement,
    TruncatedPoisson,
)
from plda.mechanisms.laplace import MAX_EPSILON as LAPLACE_MAX_EPSILON
from plda.pld import DEFAULT_ACCURACY, PrivacyLossDistribution
from plda.selection import RepeatAndSelect

__all__ = ["from_dp_event", "mechanisms_from_dp_event"]

_MAX_DEPTH = 64
#: what an event without any guarantee composes as: every mechanism is (0, 1)-DP, so epsilon is
#: infinite at every delta < 1 (and a Poisson-sampled one at rate q gives delta = q at epsilon 0)
NON_PRIVATE = ApproximateDP(epsilon=0.0, delta=1.0)
#: the orders a ``(xi, rho)``-zCDP event (``xi > 0``) is read at: 1 + 10^-3 ... 1 + 10^4
XI_ORDERS = tuple(float(1 + 10 ** (k / 50)) for k in range(-150, 201))


def __getattr__(name: str):
    # this module translates events and imports no sibling: the accountant built on it lives
    # in plda.adapters.dp_privacy_accountant, which imports this one
    if name == "PLDPrivacyAccountant":
        raise AttributeError(
            "plda.adapters.dp_accounting.PLDPrivacyAccountant moved: import it "
            "from plda.adapters (from plda.adapters import PLDPrivacyAccountant)"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _attribute(event, name: str):
    try:
        return getattr(event, name)
    except AttributeError:
        raise ValueError(
            f"{type(event).__name__} has no attribute {name!r}: not a dp_accounting event this "
            f"adapter understands"
        ) from None


def _single(event, depth: int, relation: str, outer: str = "PoissonSampledDpEvent") -> Mechanism:
    """The one mechanism an event stands for (for the inside of a sampled event)."""
    parts = _walk(event, 1, depth, relation)
    if len(parts) != 1 or parts[0][1] != 1:
        raise ValueError(
            f"{outer} of {type(event).__name__} (a composition) is not supported: "
            f"plda samples one mechanism at a time"
        )
    return parts[0][0]


def _is_integer(value) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _build(cls, event_name: str, *args, **kwargs) -> Mechanism:
    """``cls(*args, **kwargs)``; its TypeError (an unsupported inner mechanism, a non-numeric
    field) becomes the ValueError this module documents, naming the event."""
    try:
        return cls(*args, **kwargs)
    except TypeError as error:
        raise ValueError(f"{event_name} is not supported here: {error}") from None


def _rate(name: str, rate) -> float:
    """``{name}.sampling_probability`` in ``[1e-12, 1]``, named as the event names it (plda's
    samplers call it ``sample_rate``, a name the event's author never wrote)."""
    field = f"{name}.sampling_probability"
    try:
        rate = check.probability(field, rate)
    except TypeError as error:
        raise ValueError(str(error)) from None  # a non-numeric field: this module's ValueError
    return check.in_range(field, rate, check.MIN_SAMPLE_RATE, 1.0,
                          "tighter rates give only loose bounds on the grid")


def _laplace(noise, relation: str) -> Laplace:
    """``LaplaceDpEvent``'s ``Laplace(scale=noise_multiplier)``, its range named by the event's
    field: the step's epsilon ``1 / noise_multiplier`` (``2 / ...`` under replace-one) in
    ``[1e-300, 700]``, Laplace's range."""
    try:
        laplace = Laplace(scale=noise)
        if relation == "replace_one":
            laplace.under_replace_one()
    except TypeError as error:
        raise ValueError(f"LaplaceDpEvent is not supported here: {error}") from None
    except ValueError:
        factor, where = (2, " under relation='replace_one'") if relation == "replace_one" else (
            1, "")
        raise ValueError(
            f"LaplaceDpEvent.noise_multiplier must be in [{factor / LAPLACE_MAX_EPSILON:g}, "
            f"1e+300]{where} ({factor} / noise_multiplier, the Laplace step's pure-DP epsilon, "
            f"in the range plda certifies, at most {LAPLACE_MAX_EPSILON:g}), got {noise!r}"
        ) from None
    return laplace


def _walk(event, count: int, depth: int, relation: str) -> list[tuple[Mechanism, int]]:
    if depth > _MAX_DEPTH:
        raise ValueError(f"dp_event nesting deeper than {_MAX_DEPTH}")
    name = type(event).__name__
    if name == "NoOpDpEvent":
        return []
    if name == "NonPrivateDpEvent":
        return [(NON_PRIVATE, count)]
    if name in ("GaussianDpEvent", "LaplaceDpEvent"):
        noise = _attribute(event, "noise_multiplier")
        if isinstance(noise, (int, float)) and noise == 0:
            return [(NON_PRIVATE, count)]  # no noise: no guarantee
        if name == "GaussianDpEvent":
            # (the relation sets noise_multiplier's range: its floor doubles under replace-one)
            return [(Gaussian.from_noise_multiplier(noise, relation), count)]
        return [(_laplace(noise, relation), count)]
    if name == "DiscreteLaplaceDpEvent":
        mechanism = DiscreteLaplace(
            parameter=_attribute(event, "noise_parameter"),
            sensitivity=_attribute(event, "sensitivity"),
        )
        return [(mechanism, count)]
    if name == "RandomizedResponseDpEvent":
        # the k-ary pair itself (its profile is below that of the pure-DP bound it satisfies,
        # whose lower bounds would exceed the event's exact epsilon), stated under replace-one
        return [(_build(RandomizedResponse, name, _attribute(event, "noise_parameter"),
                        _attribute(event, "num_buckets")), count)]
    if name == "ZCDpEvent":
        rho, xi = _attribute(event, "rho"), getattr(event, "xi", 0.0)
        if isinstance(xi, (int, float)) and not isinstance(xi, bool) and xi == 0:
            return [(_build(ZCDP, name, rho=rho), count)]
        zcdp = _build(ZCDP, name, rho=rho)  # checks rho
        if not (isinstance(xi, (int, float)) and xi > 0 and math.isfinite(xi)):
            raise ValueError(f"ZCDpEvent.xi must be a finite number >= 0, got {xi!r}")
        # (xi, rho)-zCDP: D_alpha <= xi + rho alpha at every order, read at XI_ORDERS
        return [(RenyiDP(orders=XI_ORDERS,
                         epsilons=tuple(xi + zcdp.rho * a for a in XI_ORDERS)), count)]
    if name == "MixtureOfGaussiansDpEvent":
        sigma = _attribute(event, "standard_deviation")
        sensitivities = _attribute(event, "sensitivities")
        probabilities = _attribute(event, "sampling_probs")
        if isinstance(sigma, (int, float)) and sigma == 0:  # no noise: no guarantee, unless
            shifts = [c for c, p in zip(sensitivities, probabilities, strict=False) if p > 0]
            return [] if shifts and max(shifts) == 0 else [(NON_PRIVATE, count)]  # no shift
        mixture = _build(GaussianMixture, name, sigma=sigma, sensitivities=sensitivities,
                         probabilities=probabilities)
        if max(mixture.components()[0]) == 0:
            return []  # every shift 0: nothing about anyone is released
        return [(mixture, count)]
    if name == "PoissonSampledDpEvent":
        inner = _single(_attribute(event, "event"), depth + 1, relation)
        rate = _attribute(event, "sampling_probability")
        if rate == 0:
            return []
        return [(PoissonSampled(inner, sample_rate=_rate(name, rate)), count)]
    if name == "SampledWithoutReplacementDpEvent":
        n = _attribute(event, "source_dataset_size")
        b = _attribute(event, "sample_size")
        inner = _single(_attribute(event, "event"), depth + 1, relation, name)
        if b == 0:
            return []  # an empty batch: nothing is released about anyone
        if inner == NON_PRIVATE:
            # the batch leaks whole; a record is in it with probability at most b / n
            rate = b / n if _is_integer(n) and _is_integer(b) and 0 < b <= n else None
            if rate is None:
                raise ValueError(
                    f"{name} needs integers 0 <= sample_size <= source_dataset_size, got "
                    f"{b!r}, {n!r}"
                )
            return [(PoissonSampled(NON_PRIVATE, sample_rate=rate), count)]
        return [(_build(SampledWithoutReplacement, name, inner, batch_size=b, dataset_size=n),
                 count)]
    if name == "TruncatedSubsampledGaussianDpEvent":
        n = _attribute(event, "dataset_size")
        rate = _attribute(event, "sampling_probability")
        cap = _attribute(event, "truncated_batch_size")
        noise = _attribute(event, "noise_multiplier")
        if rate == 0 or cap == 0 or n == 0:
            return []  # nobody is ever in the batch (as dp_accounting reads these)
        if isinstance(noise, (int, float)) and noise == 0:
            return [(NON_PRIVATE, count)]  # no noise: no guarantee
        rate = _rate(name, rate)
        # (built as DP-SGD's step, so that a noise out of range is named noise_multiplier)
        gaussian = _build(Gaussian.from_noise_multiplier, name, noise, relation)
        mechanism = _build(TruncatedPoisson, name, gaussian, sample_rate=rate,
                           max_batch_size=cap, dataset_size=n)
        return [(mechanism, count)]
    if name == "SingleEpochTreeAggregationDpEvent":
        noise = _attribute(event, "noise_multiplier")
        steps = _attribute(event, "step_counts")
        steps = list(steps) if isinstance(steps, (list, tuple)) else [steps]
        if not steps or any(not _is_integer(c) or c < 0 for c in steps):
            raise ValueError(
                f"{name}.step_counts must be an integer >= 0 or a non-empty list of them, got "
                f"{_attribute(event, 'step_counts')!r}"
            )
        if not any(steps):
            return []  # no tree has a step: nothing is released
        if isinstance(noise, (int, float)) and noise == 0:
            return [(NON_PRIVATE, count)]  # no noise: no guarantee
        tree = _build(TreeAggregation, name, [c for c in steps if c > 0], noise)
        return [(tree.mechanism, count)]
    if name == "RepeatAndSelectDpEvent":
        # the best of K runs of the inner event, K with the event's mean and shape (inf:
        # Poisson, 1: geometric, 0: logarithmic, else truncated negative binomial)
        shape = _attribute(event, "shape")
        law = ("poisson" if shape == math.inf else "geometric" if shape == 1
               else "logarithmic" if shape == 0 else "truncated_negative_binomial")
        inner = mechanisms_from_dp_event(_attribute(event, "event"))
        if not inner:
            return []
        base = PrivacyLossDistribution(inner, "add_remove")
        shape = 1.0 if law == "poisson" else shape
        return [(_build(RepeatAndSelect, name, base, _attribute(event, "mean"), law, shape),
                 count)]
    if name == "SelfComposedDpEvent":
        times = _attribute(event, "count")
        if isinstance(times, bool) or int(times) != times or times < 0:
            raise ValueError(f"SelfComposedDpEvent.count must be an integer >= 0, got {times!r}")
        if times == 0:
            return []
        return _walk(_attribute(event, "event"), count * int(times), depth + 1, relation)
    if name == "ComposedDpEvent":
        out = []
        for inner in _attribute(event, "events"):
            out += _walk(inner, count, depth + 1, relation)
        return out
    raise ValueError(
        f"dp_event type {name} is not supported by plda (supported: GaussianDpEvent, "
        f"LaplaceDpEvent, DiscreteLaplaceDpEvent, RandomizedResponseDpEvent, "
        f"MixtureOfGaussiansDpEvent, ZCDpEvent, "
        f"PoissonSampledDpEvent, SampledWithoutReplacementDpEvent, "
        f"TruncatedSubsampledGaussianDpEvent, SingleEpochTreeAggregationDpEvent, "
        f"RepeatAndSelectDpEvent, SelfComposedDpEvent, ComposedDpEvent, NoOpDpEvent, "
        f"NonPrivateDpEvent)"
    )


def mechanisms_from_dp_event(
    event, *, relation: str = "add_remove"
) -> tuple[tuple[Mechanism, int], ...]:
    """The plda mechanisms, with their counts, that a dp_accounting event stands for.

    Parameters
    ----------
    event : dp_accounting.DpEvent
        An event tree, mapped as :func:`from_dp_event` says.
    relation : str, optional
        The relation they will be accounted under (``"add_remove"`` or ``"replace_one"``):
        it sets the range a ``GaussianDpEvent``'s ``noise_multiplier`` is checked against.

    Returns
    -------
    tuple of (Mechanism, int)
        ``((mechanism, count), ...)`` in the order of the tree; empty for no-ops.

    Raises
    ------
    ValueError
        Naming the event type, for an event this adapter does not support, one with fields
        out of range, or nesting deeper than 64; or an unknown ``relation``.
    """
    check_relation(relation)
    return tuple(_walk(event, 1, 0, relation))


def from_dp_event(
    event, *, relation: str = "add_remove", accuracy: float = DEFAULT_ACCURACY
) -> PrivacyLossDistribution:
    """The PLD of a dp_accounting ``DpEvent``.

    Sensitivity 1 unless the event says otherwise; a ``noise_multiplier`` is read relative to
    the *add/remove* sensitivity (the clipping norm) under either relation, plda doubling it
    where replace-one requires (as dp_accounting's PLD accountant reads ``GaussianDpEvent``
    under ``REPLACE_ONE``). The events and the mechanisms they become:

    - ``GaussianDpEvent``: ``Gaussian(sigma=noise_multiplier)``;
    - ``LaplaceDpEvent``: ``Laplace(scale=noise_multiplier)``;
    - ``DiscreteLaplaceDpEvent``: ``DiscreteLaplace(noise_parameter, sensitivity)``;
    - ``RandomizedResponseDpEvent``: :class:`~plda.RandomizedResponse` ``(p, k)``, the k-ary
      pair itself, stated under replace-one (refused under add/remove, as dp_accounting does);
    - ``MixtureOfGaussiansDpEvent``: ``GaussianMixture(standard_deviation, sensitivities,
      sampling_probs)`` (add/remove only, as in dp_accounting);
    - ``ZCDpEvent``: ``ZCDP(rho)``; with ``xi > 0`` (``D_alpha <= xi + rho alpha``),
      ``RenyiDP`` at the orders ``XI_ORDERS``. A composition of zCDP and Gaussian events is
      never looser than its summed ``rho`` converted once (:class:`~plda.ZCDP`);
    - ``PoissonSampledDpEvent``: ``PoissonSampled(inner, sampling_probability)``;
    - ``SampledWithoutReplacementDpEvent``: ``SampledWithoutReplacement(inner, sample_size,
      source_dataset_size)`` (inner Gaussian or Laplace);
    - ``TruncatedSubsampledGaussianDpEvent``: ``TruncatedPoisson(Gaussian(noise_multiplier),
      sampling_probability, truncated_batch_size, dataset_size)``;
    - ``SingleEpochTreeAggregationDpEvent``: ``Gaussian(noise_multiplier, sqrt(depth))``,
      ``depth = ceil(log2(max(step_counts) + 1))`` the most tree nodes a record enters
      (:class:`plda.matrix.TreeAggregation`; each record in one tree, as the event requires).
      dp_accounting reads it under ``REPLACE_SPECIAL`` (a record replaced by a zero record),
      which is plda's ``"add_remove"``; ``"replace_one"`` doubles the sensitivity;
    - ``RepeatAndSelectDpEvent``: ``RepeatAndSelect(PLD of event, mean, law)``, the law from
      ``shape`` (``inf`` Poisson, 1 geometric, 0 logarithmic, else truncated negative
      binomial); under add/remove only (its base is composed under add/remove);
    - ``SelfComposedDpEvent``: ``count`` runs of ``event``; ``ComposedDpEvent``: all of
      ``events``; ``NoOpDpEvent``: nothing;
    - ``NonPrivateDpEvent``, or a Gaussian or Laplace event with ``noise_multiplier=0``:
      ``ApproximateDP(epsilon=0, delta=1)`` (no guarantee).

    Parameters
    ----------
    event : dp_accounting.DpEvent
        The event tree.
    relation : str, optional
        ``"add_remove"`` or ``"replace_one"``.
    accuracy : float, optional
        Target relative gap of the epsilon bounds, as for :class:`~plda.PrivacyLossDistribution`.

    Returns
    -------
    PrivacyLossDistribution
        The composition of the event's mechanisms; events with no privacy cost (no-ops, empty
        compositions) give the PLD of ``ApproximateDP(0)``, whose epsilon and delta are 0.
        With a ``TruncatedPoisson`` step (plda warns with ``NotTightWarning``) its upper
        bounds come from the step's dominating pair and its lower bounds (``epsilon_bounds``,
        ``delta_bounds``) from its realized pair (``lower_bound_mechanism()``), both
        certified, as ``PLDPrivacyAccountant.epsilon_bounds`` gives them; only the view
        ``.dominating()`` keeps the dominating pair's own lower bounds, which bracket that
        pair, not the sampler.

    Raises
    ------
    ValueError
        Naming the event type, for anything else, an
        event with fields out of range, or an unknown ``relation``.
    """
    components = mechanisms_from_dp_event(event, relation=relation)
    if not components:
        components = ((ApproximateDP(epsilon=0.0), 1),)
    return PrivacyLossDistribution(components, relation, accuracy)
