"""JSON form of mechanisms and PLD recipes: ``save_pld`` / ``load_pld``.

A mechanism is stored as its type name and its dataclass fields, nested mechanisms as nested
dicts: ``{"type": "PoissonSampled", "mechanism": {"type": "Gaussian", "sigma": 1.1,
"sensitivity": 1.0}, "sample_rate": 0.01}``. Floats round-trip exactly, so a reloaded recipe is
discretized on the same grid and has the original bounds.
"""

from __future__ import annotations

import dataclasses
import json
import numbers
import os

from plda._internal import validation as check
from plda.bounds import check_relation
from plda.epochs import RandomAllocation, Shuffled
from plda.epochs.shuffled import (
    ShuffledLowerBound,
    ShuffledOppositeLowerBound,
    ShuffledOppositeSumLowerBound,
)
from plda.mechanisms import (
    ZCDP,
    ApproximateDP,
    DiscreteGaussian,
    DiscreteLaplace,
    ExponentialMechanism,
    Gaussian,
    GaussianDoubleMixture,
    GaussianDP,
    GaussianMixture,
    Laplace,
    LaplaceMixture,
    Mechanism,
    PermuteAndFlip,
    PoissonSampled,
    PrivacyProfile,
    RandomizedResponse,
    RenyiDP,
    ReportNoisyMax,
    SampledWithoutReplacement,
    TradeoffCurve,
    TruncatedPoisson,
)
from plda.pld import PrivacyLossDistribution

__all__ = ["load_pld", "mechanism_from_dict", "mechanism_to_dict", "register_type", "save_pld"]

PLD_FORMAT = "plda.pld"
PLD_VERSION = 1

#: mechanisms that can be written and read, by type name
MECHANISM_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (ApproximateDP, DiscreteGaussian, DiscreteLaplace, Gaussian, GaussianMixture)
    + (Laplace, PoissonSampled, RandomAllocation, SampledWithoutReplacement, Shuffled)
    + (ShuffledLowerBound, ShuffledOppositeLowerBound, ShuffledOppositeSumLowerBound)
    + (TruncatedPoisson, GaussianDoubleMixture)
    + (PrivacyProfile, TradeoffCurve, GaussianDP, ZCDP, RenyiDP)  # imported guarantees
    + (ExponentialMechanism, PermuteAndFlip, ReportNoisyMax, LaplaceMixture, RandomizedResponse)
}


def register_type(cls: type) -> None:
    """Make a mechanism type of a layer beside this module's serializable, by its name.

    :class:`~plda.RepeatAndSelect` (``plda.selection``) cannot be imported here (the layers
    beside each other import none of each other); ``plda/__init__`` registers it.

    Parameters
    ----------
    cls : type
        A dataclass mechanism whose constructor fields are numbers, words, tuples of numbers,
        mechanisms or :class:`~plda.PrivacyLossDistribution` recipes.

    Raises
    ------
    TypeError
        If ``cls`` is not a :class:`~plda.Mechanism` dataclass.
    """
    if not (isinstance(cls, type) and issubclass(cls, Mechanism)
            and dataclasses.is_dataclass(cls)):
        raise TypeError(f"cls must be a plda Mechanism dataclass, got {cls!r}")
    MECHANISM_TYPES[cls.__name__] = cls


def _init_fields(cls) -> dict:
    """The fields of a dataclass its constructor takes (a derived ``init=False`` one, such as
    RepeatAndSelect's ``guarantee``, is rebuilt by the constructor)."""
    return {f.name: f for f in dataclasses.fields(cls) if f.init}


def mechanism_to_dict(mechanism: Mechanism) -> dict:
    """The JSON-safe dict of a plda mechanism: its type name and its fields.

    Parameters
    ----------
    mechanism : Mechanism
        A mechanism of one of the types in :data:`MECHANISM_TYPES`.

    Returns
    -------
    dict
        ``{"type": name, field: value, ...}``; a nested mechanism (the ``mechanism`` of
        :class:`~plda.PoissonSampled`) is a nested dict, a tuple field a list of floats.

    Raises
    ------
    TypeError
        If ``mechanism`` is not of a serializable type (e.g. a :class:`~plda.CustomMechanism`,
        or a :class:`~plda.RepeatAndSelect` of one).

    Examples
    --------
    >>> import plda
    >>> from plda.serialization import mechanism_to_dict
    >>> mechanism_to_dict(plda.Gaussian(sigma=1.1))
    {'type': 'Gaussian', 'sigma': 1.1, 'sensitivity': 1.0}
    """
    name = type(mechanism).__name__
    if MECHANISM_TYPES.get(name) is not type(mechanism):
        raise TypeError(
            f"mechanism must be one of {sorted(MECHANISM_TYPES)} to be serialized, got {name}"
        )
    out: dict = {"type": name}
    for f in _init_fields(mechanism).values():
        value = getattr(mechanism, f.name)
        if isinstance(value, Mechanism):
            out[f.name] = mechanism_to_dict(value)
        elif isinstance(value, PrivacyLossDistribution):  # RepeatAndSelect's base run
            out[f.name] = pld_to_dict(value)
        elif isinstance(value, tuple):  # GaussianMixture's sensitivities and probabilities
            out[f.name] = [float(v) for v in value]
        elif isinstance(value, (bool, str)):  # TradeoffCurve.symmetric, ReportNoisyMax.noise
            out[f.name] = value
        elif isinstance(value, numbers.Integral):
            out[f.name] = int(value)
        else:
            out[f.name] = float(value)
    return out


#: deepest nesting of mechanisms a dict may hold (a Poisson sample of a Poisson sample ...):
#: deeper input is refused instead of exhausting Python's recursion limit
MAX_NESTING = 32


def check_header(data, *, format: str, version: int, keys: set, what: str) -> None:
    """Check the top level of a saved state: its format, its version and its keys.

    Parameters
    ----------
    data
        The decoded JSON value.
    format : str
        The ``"format"`` the dict must carry.
    version : int
        The ``"version"`` it must carry: exactly this integer (not ``1.0``, not ``True``).
    keys : set
        The keys it must have besides ``"format"`` and ``"version"`` (and no others).
    what : str
        What the state is, for the error messages.

    Raises
    ------
    ValueError
        If ``data`` is not a dict of that format and version, or has unknown or missing keys.
    """
    if not isinstance(data, dict) or data.get("format") != format:
        raise ValueError(f"not a {what} (expected format {format!r})")
    found = data.get("version")
    if type(found) is not int or found != version:
        raise ValueError(
            f"unsupported {what} version {found!r} (this plda reads the integer {version})"
        )
    unknown = set(data) - keys - {"format", "version"}
    if unknown:
        raise ValueError(f"{what} has unknown keys {sorted(unknown)}")
    missing = keys - set(data)
    if missing:
        raise ValueError(f"{what} is missing {sorted(missing)}")


def mechanism_from_dict(data, *, depth: int = 0) -> Mechanism:
    """The mechanism of a dict written by :func:`mechanism_to_dict`.

    Parameters
    ----------
    data : dict
        ``{"type": name, field: value, ...}``; the mechanism's own checks validate the values.
    depth : int, optional
        How deep ``data`` is nested in the dict being read (callers leave it at 0).

    Returns
    -------
    Mechanism
        The mechanism, equal to the one that was written.

    Raises
    ------
    ValueError
        For an unknown type name, missing or extra fields, non-numeric values, values the
        mechanism refuses, or nesting deeper than :data:`MAX_NESTING`.
    """
    if depth > MAX_NESTING:
        raise ValueError(f"mechanisms may be nested at most {MAX_NESTING} deep")
    if not isinstance(data, dict):
        raise ValueError(f"a mechanism must be a dict with a 'type', got {type(data).__name__}")
    name = data.get("type")
    cls = MECHANISM_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"unknown mechanism type {name!r}; known: {sorted(MECHANISM_TYPES)}")
    fields = _init_fields(cls)
    required = {n for n, f in fields.items() if f.default is dataclasses.MISSING}
    given = set(data) - {"type"}
    if not required <= given or not given <= set(fields):
        raise ValueError(
            f"{name} needs fields {sorted(required)} (optional: "
            f"{sorted(set(fields) - required)}), got {sorted(given)}"
        )
    kwargs = {}
    for key in given:
        value = data[key]
        if isinstance(value, dict) and value.get("format") == PLD_FORMAT:
            kwargs[key] = pld_from_dict(value, depth=depth + 1)  # RepeatAndSelect's base run
        elif isinstance(value, dict):
            kwargs[key] = mechanism_from_dict(value, depth=depth + 1)
        elif isinstance(value, bool) and isinstance(fields[key].default, bool):
            kwargs[key] = value  # a flag (TradeoffCurve.symmetric)
        elif isinstance(value, str) and isinstance(fields[key].default, str):
            kwargs[key] = value  # a word (ReportNoisyMax.noise); the mechanism checks it
        elif isinstance(value, numbers.Real) and not isinstance(value, bool):
            kwargs[key] = value
        elif isinstance(value, list) and all(
            isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value
        ):
            kwargs[key] = tuple(value)  # the mechanism checks the length and the values
        else:
            raise ValueError(f"{name}.{key} must be a number, a list of numbers or the word "
                             f"its field takes, got {value!r}")
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ValueError(f"{name}: {exc}") from exc


def pld_to_dict(pld: PrivacyLossDistribution) -> dict:
    """The JSON-safe recipe of a PLD: components, relation, accuracy and fixed grid step.

    Parameters
    ----------
    pld : PrivacyLossDistribution
        The distribution to describe (its recipe, not its grid).

    Returns
    -------
    dict
        ``{"format", "version", "relation", "accuracy", "step", "components"}``.

    Raises
    ------
    TypeError
        If ``pld`` is not a :class:`~plda.PrivacyLossDistribution`, or one of its mechanisms
        cannot be serialized.
    """
    if not isinstance(pld, PrivacyLossDistribution):
        raise TypeError(f"pld must be a PrivacyLossDistribution, got {type(pld).__name__}")
    return {
        "format": PLD_FORMAT,
        "version": PLD_VERSION,
        "relation": pld.relation,
        "accuracy": pld.accuracy,
        "step": pld.step,
        "components": [
            {"mechanism": mechanism_to_dict(m), "count": int(k)} for m, k in pld.components
        ],
    }


def pld_from_dict(data, *, depth: int = 0) -> PrivacyLossDistribution:
    """The PLD of a recipe written by :func:`pld_to_dict`.

    Parameters
    ----------
    data : dict
        The recipe.
    depth : int, optional
        How deep ``data`` is nested in the dict being read (callers leave it at 0).

    Returns
    -------
    PrivacyLossDistribution
        A distribution with the recipe's components, relation, accuracy and grid step.

    Raises
    ------
    ValueError
        If ``data`` is corrupted or not a plda PLD recipe of this version.
    """
    check_header(
        data, format=PLD_FORMAT, version=PLD_VERSION,
        keys={"relation", "accuracy", "step", "components"}, what="plda PLD recipe",
    )
    check_relation(data["relation"])
    if not isinstance(data["components"], list):
        raise ValueError("PLD recipe components must be a list")
    components = []
    for i, entry in enumerate(data["components"]):
        if not isinstance(entry, dict) or set(entry) != {"mechanism", "count"}:
            raise ValueError(f"components[{i}] must be a dict with 'mechanism' and 'count'")
        count = entry["count"]
        if isinstance(count, bool) or not isinstance(count, numbers.Integral):
            raise ValueError(f"components[{i}].count must be an integer, got {count!r}")
        count = check.count(f"components[{i}].count", count, minimum=0)
        components.append((mechanism_from_dict(entry["mechanism"], depth=depth), count))
    try:
        return PrivacyLossDistribution(
            tuple(components), data["relation"], data["accuracy"], data["step"]
        )
    except TypeError as exc:
        raise ValueError(f"PLD recipe: {exc}") from exc


def save_pld(pld: PrivacyLossDistribution, path: str | os.PathLike) -> None:
    """Write the recipe of a PLD as JSON to a file.

    :func:`load_pld` gives back a PLD with the same bounds: the recipe (mechanisms, counts,
    relation, accuracy, grid step) is re-discretized on the same grid.

    Parameters
    ----------
    pld : PrivacyLossDistribution
        The distribution to save.
    path : str or os.PathLike
        The file to write (overwritten if it exists).

    Raises
    ------
    TypeError
        If ``pld`` is not a :class:`~plda.PrivacyLossDistribution`, or one of its mechanisms
        cannot be serialized (e.g. a :class:`~plda.CustomMechanism`).
    OSError
        If the file cannot be written.

    Examples
    --------
    >>> import plda
    >>> pld = plda.PrivacyLossDistribution.from_mechanism(plda.Gaussian(sigma=2.0), count=10)
    >>> plda.save_pld(pld, "run.json")
    >>> plda.load_pld("run.json").epsilon_bounds(1e-5) == pld.epsilon_bounds(1e-5)
    True
    """
    data = pld_to_dict(pld)
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
        handle.write("\n")


def load_pld(path: str | os.PathLike) -> PrivacyLossDistribution:
    """Read a PLD written by :func:`save_pld`.

    Parameters
    ----------
    path : str or os.PathLike
        The file to read.

    Returns
    -------
    PrivacyLossDistribution
        The saved recipe, with the bounds it had when it was saved.

    Raises
    ------
    ValueError
        If the file is not valid JSON or not a plda PLD recipe of this version.
    OSError
        If the file cannot be read.
    """
    with open(path, encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{os.fspath(path)} is not a plda PLD file: {exc}") from exc
    return pld_from_dict(data)
