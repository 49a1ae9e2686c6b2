"""The one sampler registry: how each batch sampler of DP-SGD becomes a plda mechanism.

:data:`SAMPLERS` (read by the accountant, the adapters, the command line, the sweep and the
calibration) maps each name to its :class:`SamplerSpec`; :func:`sampled_mechanism` builds it.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from plda._internal import validation as check
from plda.bounds import RELATIONS, check_relation
from plda.epochs.allocation import RandomAllocation
from plda.epochs.shuffled import Shuffled
from plda.mechanisms.base import Mechanism
from plda.mechanisms.gaussian import Gaussian
from plda.mechanisms.gaussian_mixture import MAX_GROUP_SIZE
from plda.mechanisms.laplace import Laplace
from plda.mechanisms.subsampled import PoissonSampled
from plda.mechanisms.truncated_poisson import TruncatedPoisson
from plda.mechanisms.without_replacement import SampledWithoutReplacement

__all__ = [
    "EPOCH_SAMPLERS",
    "SAMPLERS",
    "SIZES",
    "STEP_SAMPLERS",
    "Sampler",
    "SamplerSpec",
    "SamplerStep",
    "fixed_batch_size",
    "flag",
    "sampled_mechanism",
    "sampler_name",
    "sampler_spec",
    "training_steps",
]

#: ``sampler(sigma, q) -> Mechanism``: one DP-SGD step, for the calibration and the sweep
Sampler = Callable[[float, float], Mechanism]

#: every size a sampler may take, in the order the command line lists them, with its help text
SIZES: Mapping[str, str] = MappingProxyType({
    "sample_rate": "chance that a record is in a step's batch (Poisson sampling)",
    "batch_size": "records per fixed-size batch",
    "dataset_size": "records in the dataset",
    "max_batch_size": "cap of a truncated Poisson batch",
    "num_steps": "steps per epoch (shuffled, random-allocation)",
    "num_selected": "steps each record takes part in per epoch (random-allocation; default 1)",
})
#: relative slack of ``sample_rate * dataset_size`` from an integer batch (``(b / n) n``: ulps)
BATCH_RTOL = 1e-9


def flag(size: str) -> str:
    """The command-line flag of a size.

    Parameters
    ----------
    size
        A size of :data:`SIZES` (``"batch_size"``).

    Returns
    -------
    str
        Its flag (``"--batch-size"``).
    """
    return "--" + size.replace("_", "-")


def _integer(name: str, value) -> int:  # a size: no cap of its own (the sampler checks it)
    return check.count(name, value, minimum=1, maximum=None)


def fixed_batch_size(sample_rate=None, batch_size=None, dataset_size=None) -> int:
    """The size ``b`` of a fixed-size batch, from ``batch_size`` or ``sample_rate * dataset_size``.

    Parameters
    ----------
    sample_rate, batch_size, dataset_size
        ``b / n`` (its product with ``n`` an integer up to :data:`BATCH_RTOL`), ``b``, ``n``.

    Returns
    -------
    int
        ``b``.

    Raises
    ------
    ValueError, TypeError
        A size that is not an integer ``>= 1``, a rate outside ``(0, 1]`` or whose product with
        ``dataset_size`` is not an integer, or two sizes that disagree.
    """
    n = _integer("dataset_size", dataset_size)
    if sample_rate is None:
        return _integer("batch_size", batch_size)
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, numbers.Real):
        raise TypeError(f"sample_rate must be a real number, got {type(sample_rate).__name__}")
    if not 0 < sample_rate <= 1:
        raise ValueError(f"sample_rate must be in (0, 1], got {sample_rate!r}")
    implied = float(sample_rate) * n
    b = round(implied)
    if b < 1 or abs(implied - b) > BATCH_RTOL * implied:
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


def _poisson(base: Mechanism, *, sample_rate) -> Mechanism:
    return PoissonSampled(base, sample_rate=sample_rate)


def _without_replacement(base: Mechanism, *, dataset_size, sample_rate=None, batch_size=None):
    b = fixed_batch_size(sample_rate, batch_size, dataset_size)
    return SampledWithoutReplacement(base, batch_size=b, dataset_size=dataset_size)


def _truncated_poisson(base: Mechanism, *, sample_rate, max_batch_size, dataset_size) -> Mechanism:
    return TruncatedPoisson(base, sample_rate=sample_rate, max_batch_size=max_batch_size,
                            dataset_size=dataset_size)


def _shuffled(base: Mechanism, *, num_steps) -> Mechanism:
    return Shuffled(base, num_steps=num_steps)


def _random_allocation(base: Mechanism, *, num_steps, num_selected=1) -> Mechanism:
    return RandomAllocation(base, num_steps=num_steps, num_selected=num_selected)


#: a substitution is two add/remove links (a removal and an insertion) per record of a group
_GAUSSIAN_ONLY = ("plda.theorems.group_privacy(epsilon, delta, 2 * group_size) applied to the "
                  "relation='add_remove' guarantee bounds it; or use a plda.Gaussian base")


@dataclass(frozen=True)
class SamplerSpec:
    """One batch sampler: what describes it and what it builds (build by keyword).

    Attributes
    ----------
    name, mechanism
        Its name (``sampler=...``, ``--sampler``) and the mechanism class it builds.
    build
        ``build(base, **sizes) -> Mechanism`` (the sizes checked against ``needs``).
    needs, optional
        The sizes it needs (each a group of which any one is enough), and those it may take.
    epoch
        True when its one mechanism is a whole epoch of ``num_steps`` steps, False per step.
    relations
        The relations it has an analysis under with a Gaussian base (other bases: ``advice``).
    accumulation, groups
        Whether a step may sum ``accumulation_steps`` micro-batches before the noise is added;
        whether it may protect a ``group_size`` of records.
    advice, summary
        What to do instead where plda has no replace-one analysis; ``--sampler``'s help line.
    """

    name: str
    mechanism: type
    build: Callable[..., Mechanism] = field(repr=False)
    needs: tuple[tuple[str, ...], ...]
    optional: tuple[str, ...] = ()
    epoch: bool = False
    relations: tuple[str, ...] = RELATIONS
    accumulation: bool = False
    groups: bool = False
    advice: str = _GAUSSIAN_ONLY
    summary: str = ""

    @property
    def takes(self) -> tuple[str, ...]:
        """Every size it takes, in the order of :data:`SIZES`."""
        named = {size for group in self.needs for size in group} | set(self.optional)
        return tuple(size for size in SIZES if size in named)

    @property
    def flags(self) -> tuple[str, ...]:
        """Required size flags: the first size of each needed group (``--batch-size``, no rate)."""
        return tuple(flag(group[0]) for group in self.needs)

    @property
    def optional_flags(self) -> tuple[str, ...]:
        """The command line's optional size flags."""
        return tuple(flag(size) for size in self.optional)

    def nominal_rate(self, sizes: Mapping) -> float:
        """The chance that a record is in a given step's batch (a starting guess only).

        Parameters
        ----------
        sizes : Mapping
            The sampler's sizes, by name.

        Returns
        -------
        float
            ``num_selected / num_steps`` for an epoch, else ``sample_rate`` or ``b / n``.
        """
        if self.epoch:
            return sizes.get("num_selected", 1) / sizes["num_steps"]
        if sizes.get("sample_rate") is not None:
            return sizes["sample_rate"]
        return sizes["batch_size"] / sizes["dataset_size"]



#: every sampler plda has an analysis of, by name
SAMPLERS: Mapping[str, SamplerSpec] = MappingProxyType({
    spec.name: spec for spec in (
        SamplerSpec(
            name="poisson", mechanism=PoissonSampled, build=_poisson,
            needs=(("sample_rate",),), accumulation=True, groups=True, summary="poisson",
        ),
        SamplerSpec(
            name="without-replacement", mechanism=SampledWithoutReplacement,
            build=_without_replacement, needs=(("batch_size", "sample_rate"), ("dataset_size",)),
            groups=True, summary="without-replacement (fixed-size batches)",
        ),
        SamplerSpec(
            name="truncated-poisson", mechanism=TruncatedPoisson, build=_truncated_poisson,
            needs=(("sample_rate",), ("max_batch_size",), ("dataset_size",)),
            summary="truncated-poisson",
        ),
        SamplerSpec(
            name="shuffled", mechanism=Shuffled, build=_shuffled, needs=(("num_steps",),),
            epoch=True, summary="shuffled (one pass per epoch, a certified bracket)",
        ),
        SamplerSpec(
            name="random-allocation", mechanism=RandomAllocation, build=_random_allocation,
            needs=(("num_steps",),), optional=("num_selected",), epoch=True,
            relations=("add_remove",),
            advice="random allocation is analysed under add/remove only; a substitution is "
            "one record's removal and another's insertion, so plda.theorems.group_privacy("
            "epsilon, delta, 2) applied to the relation='add_remove' guarantee bounds it; or (a "
            "certified upper bound without amplification: each record takes part in one step "
            "per epoch) compose the base mechanism once per epoch with relation='replace_one'",
            summary="random-allocation (balls-in-bins)",
        ),
    )
})
#: samplers whose one mechanism is a whole epoch of ``num_steps`` steps (composed once each)
EPOCH_SAMPLERS = tuple(name for name, spec in SAMPLERS.items() if spec.epoch)
#: samplers with one mechanism per step drawn at a rate (those of :class:`SamplerStep`)
STEP_SAMPLERS = tuple(name for name, spec in SAMPLERS.items() if "sample_rate" in spec.takes)


def sampler_spec(sampler: str) -> SamplerSpec:
    """The registry's entry of a sampler.

    Parameters
    ----------
    sampler
        One of :data:`SAMPLERS`.

    Returns
    -------
    SamplerSpec
        Its entry.

    Raises
    ------
    ValueError
        An unknown name (the message lists the known ones).
    """
    spec = SAMPLERS.get(sampler) if isinstance(sampler, str) else None
    if spec is None:
        raise ValueError(f"sampler must be one of {tuple(SAMPLERS)}, got {sampler!r}")
    return spec


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
    accumulation_steps: int = 1,
    group_size: int = 1,
    relation: str = "add_remove",
) -> Mechanism:
    r"""The plda mechanism of ``mechanism`` run on batches drawn by ``sampler``.

    The sizes each sampler needs and the mechanism it builds are in :data:`SAMPLERS`; the
    samplers of :data:`EPOCH_SAMPLERS` give one mechanism per *epoch* of ``num_steps`` steps.

    Parameters
    ----------
    mechanism
        The base mechanism with its add/remove sensitivity (DP-SGD: ``plda.Gaussian(sigma)``).
    sampler
        One of :data:`SAMPLERS`.
    sample_rate, batch_size, dataset_size, max_batch_size, num_steps, num_selected
        The sampler's sizes: ``"poisson"`` ``sample_rate``; ``"without-replacement"``
        ``dataset_size`` and ``batch_size`` (or ``sample_rate``, an integer batch);
        ``"truncated-poisson"`` ``sample_rate``, ``max_batch_size``, ``dataset_size``; the
        epoch samplers ``num_steps`` (and ``num_selected``). An unused one is an error.
    accumulation_steps, group_size
        ``m`` micro-batches summed per step, noise added once (``"poisson"``); a protected unit
        of ``K`` records (``"poisson"``: ``K m`` draws; ``"without-replacement"``: a
        hypergeometric mixture), with a Gaussian or Laplace base.
    relation
        ``"add_remove"`` or ``"replace_one"``, that of the accounting: combinations without a
        sound analysis in plda are refused here.

    Returns
    -------
    Mechanism
        The sampled mechanism (validated by its own constructor).

    Raises
    ------
    ValueError
        An unknown sampler or relation, a missing or extra argument, a value out of its range,
        or a sampler/relation pair without a sound analysis (each message says what to do).
    TypeError
        ``mechanism`` is not a plda mechanism, or an argument is not a number.

    Examples
    --------
    >>> import plda
    >>> g = plda.Gaussian(sigma=1.0)
    >>> wor = plda.sampled_mechanism(g, "without-replacement", batch_size=256, dataset_size=60000)
    >>> type(wor).__name__, wor.batch_size, plda.samplers.sampler_name(wor)
    ('SampledWithoutReplacement', 256, 'without-replacement')
    >>> plda.sampled_mechanism(g, "poisson", batch_size=256)
    Traceback (most recent call last):
    ...
    ValueError: batch_size does not apply to sampler='poisson' (it takes sample_rate)
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"mechanism must be a plda mechanism, got {type(mechanism).__name__}")
    spec = sampler_spec(sampler)
    check_relation(relation)
    draws = 1
    for name, value, attribute in (("accumulation_steps", accumulation_steps, "accumulation"),
                                   ("group_size", group_size, "groups")):
        value = check.count(name, value, minimum=1, maximum=MAX_GROUP_SIZE)
        if value > 1 and not getattr(spec, attribute):
            where = " or ".join(repr(n) for n, o in SAMPLERS.items() if getattr(o, attribute))
            advice = ("; a valid, looser bound: apply plda.theorems.group_privacy(epsilon, "
                      "delta, group_size) to one record's" if name == "group_size" else "")
            raise ValueError(f"{name}={value} applies to sampler={where} only, got sampler="
                             f"{sampler!r}; plda has no analysis of it for {sampler}{advice}")
        draws *= value
    if draws > MAX_GROUP_SIZE:
        raise ValueError(f"accumulation_steps * group_size must be at most {MAX_GROUP_SIZE}, "
                         f"got {draws}")
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
        if name not in spec.takes:
            raise ValueError(
                f"{name} does not apply to sampler={sampler!r} (it takes "
                f"{', '.join(sorted(spec.takes))})"
            )
    for group in spec.needs:
        if not any(option in given for option in group):
            raise ValueError(f"sampler={sampler!r} needs {' or '.join(group)}")
    out = spec.build(mechanism, **given)
    if draws > 1:
        if type(mechanism) not in (Gaussian, Laplace):
            raise ValueError("accumulation_steps and group_size apply to a plda.Gaussian or "
                             f"plda.Laplace base, got {type(mechanism).__name__}")
        out = replace(out, group_size=draws)  # K m draws (Poisson); K records (fixed-size)
    reason = None
    if relation not in spec.relations:
        reason = f"{spec.mechanism.__name__} is analysed under {' and '.join(spec.relations)} only"
    elif relation == "replace_one":
        try:
            out.under_replace_one()
        except ValueError as error:
            reason = str(error)
    if reason is not None:
        raise ValueError(f"sampler={sampler!r} with base {type(mechanism).__name__} has no "
                         f"sound replace-one analysis in plda ({reason}): {spec.advice}")
    return out


def sampler_name(mechanism: Mechanism) -> str | None:
    """The sampler a mechanism stands for: what an accountant's history says about each step.

    Parameters
    ----------
    mechanism
        Any plda mechanism.

    Returns
    -------
    str or None
        Its :data:`SAMPLERS` name (``"poisson"`` for a ``PoissonSampled``, ...); None if none.
    """
    for name, spec in SAMPLERS.items():
        if isinstance(mechanism, spec.mechanism):
            return name
    return None


def training_steps(mechanism: Mechanism) -> int:
    """The training steps one run of a mechanism stands for, as ``len()`` of an accountant counts.

    Parameters
    ----------
    mechanism
        Any plda mechanism.

    Returns
    -------
    int
        ``num_steps`` for an epoch sampler's mechanism (:data:`EPOCH_SAMPLERS`), else 1.
    """
    name = sampler_name(mechanism)
    return mechanism.num_steps if name is not None and SAMPLERS[name].epoch else 1


@dataclass(frozen=True)
class SamplerStep:
    """One DP-SGD step on batches of a named sampler: a picklable :data:`Sampler`.

    ``step(sigma, q)`` is ``sampled_mechanism(Gaussian(sigma), sampler, sample_rate=q,
    **sizes)``; process pools and Dask workers can ship it.

    Parameters
    ----------
    sampler
        One of :data:`STEP_SAMPLERS` (a sampler drawn at a sample rate).
    sizes
        Its other sizes (``{"dataset_size": n}``, ...): those it needs besides the rate.

    Raises
    ------
    ValueError
        Another sampler, or a size it does not take, or a missing one.
    """

    sampler: str
    sizes: Mapping = field(default_factory=dict)

    def __post_init__(self):
        spec = sampler_spec(self.sampler)
        if self.sampler not in STEP_SAMPLERS:
            raise ValueError(
                f"sampler must be one of {STEP_SAMPLERS} (drawn at a sample rate), got "
                f"{self.sampler!r}"
            )
        object.__setattr__(self, "sizes", dict(self.sizes))
        for size in self.sizes:
            if size in ("sample_rate", "batch_size") or size not in spec.takes:
                raise ValueError(f"{size} does not apply to SamplerStep({self.sampler!r})")
        for size in self.needed(self.sampler):
            if self.sizes.get(size) is None:
                raise ValueError(f"sampler {self.sampler!r} needs {size}")

    @staticmethod
    def needed(sampler: str) -> tuple[str, ...]:
        """The sizes a step of ``sampler`` needs besides its sample rate.

        Parameters
        ----------
        sampler : str
            One of :data:`STEP_SAMPLERS`.

        Returns
        -------
        tuple of str
            The first size of each needed group without a rate (``("dataset_size",)``, ...).
        """
        return tuple(g[0] for g in sampler_spec(sampler).needs if "sample_rate" not in g)

    def __call__(self, noise_multiplier: float, sample_rate: float) -> Mechanism:
        return sampled_mechanism(
            Gaussian.from_noise_multiplier(noise_multiplier), self.sampler,
            sample_rate=sample_rate, **self.sizes)
