"""Build the subsampled mechanism from a description of the sampler that ran.

:func:`sampled_mechanism` is the one place that turns "which batches did the data loader draw"
(a sampler name and the sizes it was run with) into a plda mechanism, checking that the
description is complete, that no argument is given that the sampler does not use, and that the
neighbouring relation has a sound analysis for it. The accountant's ``step(..., sampler=...)``
and the adapters call it, so they all refuse the same combinations with the same advice.
"""

from __future__ import annotations

import math
import numbers

from plda.epochs.allocation import RandomAllocation
from plda.epochs.shuffled import Shuffled
from plda.mechanisms.base import Mechanism
from plda.mechanisms.subsampled import PoissonSampled
from plda.mechanisms.truncated_poisson import TruncatedPoisson
from plda.mechanisms.without_replacement import SampledWithoutReplacement

__all__ = ["EPOCH_SAMPLERS", "SAMPLERS", "sampled_mechanism", "sampler_name"]

#: the sampler names :func:`sampled_mechanism` understands
SAMPLERS = ("poisson", "without-replacement", "truncated-poisson", "shuffled", "random-allocation")
#: samplers whose one mechanism is a whole epoch of ``num_steps`` steps (compose it once per
#: epoch); the others give one mechanism per step
EPOCH_SAMPLERS = ("shuffled", "random-allocation")
#: neighbouring relations (as in :data:`plda.pld.RELATIONS`)
RELATIONS = ("add_remove", "replace_one")

#: arguments each sampler needs (tuples: any one of them is enough) and may take
_NEEDS = {
    "poisson": ("sample_rate",),
    "without-replacement": ("dataset_size", ("batch_size", "sample_rate")),
    "truncated-poisson": ("sample_rate", "max_batch_size", "dataset_size"),
    "shuffled": ("num_steps",),
    "random-allocation": ("num_steps",),
}
_TAKES = {
    "poisson": {"sample_rate"},
    "without-replacement": {"sample_rate", "batch_size", "dataset_size"},
    "truncated-poisson": {"sample_rate", "max_batch_size", "dataset_size"},
    "shuffled": {"num_steps"},
    "random-allocation": {"num_steps", "num_selected"},
}
#: relative slack allowed between ``sample_rate * dataset_size`` and an integer batch size (the
#: product of a rate computed as ``b / n`` and ``n`` is within a few ulps of ``b``)
_BATCH_RTOL = 1e-9

#: what to do instead, for sampler/relation combinations plda has no sound analysis of
_REPLACE_ONE_ADVICE = {
    "poisson": (
        "plda's replace-one analysis of Poisson subsampling is for Gaussian bases; use "
        "relation='add_remove', or a plda.Gaussian base"
    ),
    "truncated-poisson": (
        "plda's replace-one analysis of truncated Poisson sampling is for Gaussian bases; use "
        "relation='add_remove', or a plda.Gaussian base"
    ),
    "random-allocation": (
        "random allocation is analysed under add/remove only; use relation='add_remove', or "
        "(a certified upper bound without amplification: each record takes part in one step "
        "per epoch) compose the base mechanism once per epoch with relation='replace_one'"
    ),
}


def _integer(name: str, value) -> int:
    """``value`` as an integer ``>= 1`` (integral floats accepted), else ValueError/TypeError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be an integer >= 1, got {type(value).__name__}")
    if not math.isfinite(value) or not float(value).is_integer() or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")
    return int(value)


def _batch_size(sample_rate, batch_size, dataset_size) -> int:
    """The fixed batch size, from ``batch_size`` or from ``sample_rate * dataset_size`` (which
    must then be an integer, up to rounding); both given: they must agree."""
    n = _integer("dataset_size", dataset_size)
    if sample_rate is None:
        return _integer("batch_size", batch_size)
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, numbers.Real):
        raise TypeError(f"sample_rate must be a real number, got {type(sample_rate).__name__}")
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
    implied = float(sample_rate) * n
    b = round(implied)
    if b < 1 or abs(implied - b) > _BATCH_RTOL * implied:
        raise ValueError(
            f"sample_rate * dataset_size must be an integer batch size for sampler="
            f"'without-replacement' (fixed-size batches), got {sample_rate!r} * {n} = "
            f"{implied!r}; pass batch_size=... instead"
        )
    if batch_size is not None and _integer("batch_size", batch_size) != b:
        raise ValueError(
            f"batch_size={batch_size!r} disagrees with sample_rate * dataset_size = {implied!r}; "
            "pass one of them"
        )
    return b


def sampled_mechanism(
    mechanism: Mechanism,
    sampler: str = "poisson",
    *,
    sample_rate: float | None = None,
    batch_size: int | None = None,
    dataset_size: int | None = None,
    max_batch_size: int | None = None,
    num_steps: int | None = None,
    num_selected: int | None = None,
    relation: str = "add_remove",
) -> Mechanism:
    r"""The plda mechanism of ``mechanism`` run on batches drawn by ``sampler``.

    =========================  =============================================  ================
    ``sampler``                needs                                          one mechanism per
    =========================  =============================================  ================
    ``"poisson"``              ``sample_rate`` q                              step
    ``"without-replacement"``  ``dataset_size`` n and ``batch_size`` b (or    step
                               ``sample_rate`` with ``q n`` an integer)
    ``"truncated-poisson"``    ``sample_rate``, ``max_batch_size``,           step
                               ``dataset_size``
    ``"shuffled"``             ``num_steps`` T                                epoch
    ``"random-allocation"``    ``num_steps`` T (``num_selected``, default 1)  epoch
    =========================  =============================================  ================

    giving :class:`~plda.PoissonSampled`, :class:`~plda.SampledWithoutReplacement`,
    :class:`~plda.TruncatedPoisson`, :class:`~plda.Shuffled` and :class:`~plda.RandomAllocation`.

    The samplers in :data:`EPOCH_SAMPLERS` give one mechanism per *epoch* of ``num_steps``
    steps: compose it once per epoch, not once per step.

    Parameters
    ----------
    mechanism
        The base mechanism with its add/remove sensitivity (for DP-SGD:
        ``plda.Gaussian(sigma=noise_multiplier)``, clipping norm 1).
    sampler
        One of :data:`SAMPLERS`.
    sample_rate, batch_size, dataset_size, max_batch_size, num_steps, num_selected
        The sampler's parameters (table above); an argument the sampler does not use is an
        error, so a fixed-size description is never silently read as Poisson sampling.
    relation
        ``"add_remove"`` or ``"replace_one"``: the relation the mechanism will be accounted
        under. Combinations without a sound analysis in plda are refused here.

    Returns
    -------
    Mechanism
        The sampled mechanism (validated by its own constructor).

    Raises
    ------
    ValueError
        An unknown sampler or relation, a missing or extra argument, a value outside its range
        (the message names the argument and its range), or a sampler/relation combination
        without a sound analysis (the message says what to do instead).
    TypeError
        ``mechanism`` is not a plda mechanism, or an argument is not a number.

    Examples
    --------
    >>> import plda
    >>> from plda.mechanisms.sampler_spec import sampled_mechanism, sampler_name
    >>> g = plda.Gaussian(sigma=1.0)
    >>> wor = sampled_mechanism(g, "without-replacement", batch_size=256, dataset_size=60000)
    >>> type(wor).__name__, wor.batch_size, sampler_name(wor)
    ('SampledWithoutReplacement', 256, 'without-replacement')
    >>> sampled_mechanism(g, "poisson", batch_size=256)
    Traceback (most recent call last):
    ...
    ValueError: batch_size does not apply to sampler='poisson' (it takes sample_rate)
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a plda mechanism, got {type(mechanism).__name__}")
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    if relation not in RELATIONS:
        raise ValueError(f"relation must be one of {RELATIONS}, got {relation!r}")
    given = {
        name: value
        for name, value in (
            ("sample_rate", sample_rate), ("batch_size", batch_size),
            ("dataset_size", dataset_size), ("max_batch_size", max_batch_size),
            ("num_steps", num_steps), ("num_selected", num_selected),
        )
        if value is not None
    }
    for name in given:
        if name not in _TAKES[sampler]:
            raise ValueError(
                f"{name} does not apply to sampler={sampler!r} (it takes "
                f"{', '.join(sorted(_TAKES[sampler]))})"
            )
    for need in _NEEDS[sampler]:
        options = need if isinstance(need, tuple) else (need,)
        if not any(option in given for option in options):
            raise ValueError(f"sampler={sampler!r} needs {' or '.join(options)}")

    if sampler == "poisson":
        out: Mechanism = PoissonSampled(mechanism, sample_rate=sample_rate)
    elif sampler == "without-replacement":
        b = _batch_size(sample_rate, batch_size, dataset_size)
        out = SampledWithoutReplacement(mechanism, batch_size=b, dataset_size=dataset_size)
    elif sampler == "truncated-poisson":
        out = TruncatedPoisson(mechanism, sample_rate=sample_rate, max_batch_size=max_batch_size,
                               dataset_size=dataset_size)
    elif sampler == "shuffled":
        out = Shuffled(mechanism, num_steps=num_steps)
    else:
        out = RandomAllocation(mechanism, num_steps=num_steps,
                               num_selected=1 if num_selected is None else num_selected)
    if relation == "replace_one":
        try:
            out.under_replace_one()
        except ValueError as error:
            advice = _REPLACE_ONE_ADVICE.get(sampler, "use relation='add_remove'")
            raise ValueError(
                f"sampler={sampler!r} with base {type(mechanism).__name__} has no sound "
                f"replace-one analysis in plda ({error}): {advice}"
            ) from None
    return out


#: sampler name of each sampled mechanism type (the inverse of :func:`sampled_mechanism`)
_NAMES = {
    PoissonSampled: "poisson",
    SampledWithoutReplacement: "without-replacement",
    TruncatedPoisson: "truncated-poisson",
    Shuffled: "shuffled",
    RandomAllocation: "random-allocation",
}


def sampler_name(mechanism: Mechanism) -> str | None:
    """The :data:`SAMPLERS` name of a sampled mechanism (``"poisson"`` for a
    :class:`~plda.PoissonSampled`, ...), ``None`` for a mechanism that samples nothing: what an
    accountant's history says about the sampler each step used."""
    for cls, name in _NAMES.items():
        if isinstance(mechanism, cls):
            return name
    return None
