"""Names kept one release after issue 25 (one door per query): each warns with a
DeprecationWarning that names its new home and the removal version (0.2.0), and returns what the
new door returns. Delete this file, with the names, in 0.2.0."""

from __future__ import annotations

import dataclasses
import importlib
import warnings

import numpy as np
import pytest

import plda
from plda.conversions import envelope, gdp, profile, renyi


def fresh_pld() -> plda.PrivacyLossDistribution:
    """A new PLD for each side of a comparison (an answer may depend on what was asked before:
    a first query refines the grid that the next one reads)."""
    return plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(1.0), sample_rate=0.05), 50, accuracy=1e-2
    )


ALPHA = np.array([1e-4, 0.01, 0.3])
ORDERS = np.array([1.5, 4.0])

#: (module, old name, arguments after the PLD, the new door on the PLD)
FUNCTIONS = [
    ("plda.tradeoff", "tradeoff", (ALPHA,), lambda p: p.tradeoff(ALPHA)),
    ("plda.tradeoff", "tradeoff_bounds", (ALPHA,), lambda p: p.tradeoff_bounds(ALPHA)),
    (
        "plda.tradeoff",
        "true_positive_rate_bounds",
        (ALPHA,),
        lambda p: p.true_positive_rate_bounds(ALPHA),
    ),
    (
        "plda.tradeoff",
        "max_true_positive_rate",
        (ALPHA,),
        lambda p: p.true_positive_rate_bounds(ALPHA).upper,
    ),
    ("plda.tradeoff", "max_advantage", (), lambda p: p.advantage_bounds()),
    ("plda.tradeoff", "symmetric_profile", ("lower",), lambda p: p.symmetric_profile("lower")),
    ("plda.tradeoff", "gdp_mu", (), lambda p: p.gdp_mu(delta_floor=1e-9)),
    ("plda.tradeoff", "gaussian_dp", (), lambda p: p.gdp_summary(delta_floor=1e-9)),
    (
        "plda.tradeoff",
        "gdp_comparison",
        (ALPHA, 0.5),
        lambda p: gdp.gdp_comparison(p.composed_laws(), ALPHA, 0.5),
    ),
    ("plda.renyi", "renyi", (ORDERS,), lambda p: p.renyi(ORDERS)),
    ("plda.renyi", "renyi_bounds", (ORDERS,), lambda p: p.renyi_bounds(ORDERS)),
    ("plda.renyi", "renyi_epsilon", (1e-5,), lambda p: p.renyi_epsilon(1e-5)),
    ("plda.renyi", "renyi_delta", (1.0,), lambda p: p.renyi_delta(1.0)),
    ("plda.renyi", "zcdp", (), lambda p: p.zcdp()),
    ("plda.renyi", "zcdp_bounds", (), lambda p: p.zcdp_bounds()),
    (
        "plda.risk",
        "true_positive_rate_bounds",
        (ALPHA,),
        lambda p: p.true_positive_rate_bounds(ALPHA),
    ),
    ("plda.risk", "advantage_bounds", (), lambda p: p.advantage_bounds()),
    ("plda", "true_positive_rate_bounds", (ALPHA,), lambda p: p.true_positive_rate_bounds(ALPHA)),
    ("plda", "advantage_bounds", (), lambda p: p.advantage_bounds()),
]

#: (module, old name, the object at its new home)
MOVED = [
    ("plda.tradeoff", "DELTA_FLOOR", profile.DELTA_FLOOR),
    ("plda.tradeoff", "ProfileSamples", profile.ProfileSamples),
    ("plda.tradeoff", "LowerEnvelope", envelope.LowerEnvelope),
    ("plda.tradeoff", "GaussianComparison", gdp.GaussianComparison),
    ("plda.tradeoff", "GaussianDPSummary", gdp.GaussianDPSummary),
    ("plda.tradeoff", "GaussianDPWarning", plda.GaussianDPWarning),
    ("plda.tradeoff", "gaussian_delta", gdp.gaussian_delta),
    ("plda.tradeoff", "gaussian_tradeoff", gdp.gaussian_tradeoff),
    ("plda.tradeoff", "log_gaussian_delta", gdp.log_gaussian_delta),
    ("plda.renyi", "DEFAULT_ORDERS", renyi.DEFAULT_ORDERS),
    ("plda.renyi", "epsilon_from_renyi", renyi.epsilon_from_renyi),
    ("plda.renyi", "delta_from_renyi", renyi.delta_from_renyi),
    ("plda.accountant", "PLDAccountant", plda.PLDAccountant),
]


def _read(module: str, name: str):
    """``module.name``, asserting that reading it warns once, at this line's caller, naming the
    removal version."""
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        value = getattr(importlib.import_module(module), name)
    deprecations = [w for w in record if issubclass(w.category, DeprecationWarning)]
    assert len(deprecations) == 1, [str(w.message) for w in record]
    message = str(deprecations[0].message)
    assert f"{module}.{name} is deprecated" in message and "plda 0.2.0" in message
    assert deprecations[0].filename == __file__  # at the user's line, not inside plda
    return value, message


def _same(old, new):
    if dataclasses.is_dataclass(new) and not isinstance(new, type):
        old, new = dataclasses.astuple(old), dataclasses.astuple(new)
    if isinstance(new, tuple):
        assert len(old) == len(new)
        for a, b in zip(old, new, strict=True):
            _same(a, b)
    else:
        np.testing.assert_array_equal(old, new)


@pytest.mark.parametrize(
    "module, name, args, door", FUNCTIONS, ids=[f"{m}.{n}" for m, n, _, _ in FUNCTIONS]
)
def test_each_old_function_warns_and_answers_as_the_new_door(module, name, args, door):
    function, message = _read(module, name)
    if name in ("gdp_mu", "gaussian_dp"):
        old = function(fresh_pld(), *args, delta_floor=1e-9)
    else:
        old = function(fresh_pld(), *args)
    assert "pld." in message or "plda.conversions" in message  # names the new door
    _same(old, door(fresh_pld()))
    with pytest.raises(TypeError, match="pld"):  # as the facades did, for anything but a PLD
        function("not a pld", *args)


@pytest.mark.parametrize("module, name, new", MOVED, ids=[f"{m}.{n}" for m, n, _ in MOVED])
def test_each_moved_name_warns_and_is_the_object_at_its_new_home(module, name, new):
    old, message = _read(module, name)
    assert old is new
    assert getattr(new, "__name__", name) in message or name in message


def test_the_import_statement_warns_too():
    with pytest.warns(DeprecationWarning, match=r"plda\.tradeoff\.gdp_mu .*pld\.gdp_mu\(\)"):
        from plda.tradeoff import gdp_mu  # noqa: F401
    with pytest.warns(DeprecationWarning, match=r"plda\.accountant\.PLDAccountant .*0\.2\.0"):
        from plda.accountant import PLDAccountant  # noqa: F401


def test_the_top_level_names_are_the_risk_module_functions():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert plda.true_positive_rate_bounds is plda.risk.true_positive_rate_bounds
        assert plda.advantage_bounds is plda.risk.advantage_bounds


def test_deprecated_names_are_not_advertised():
    assert not {"true_positive_rate_bounds", "advantage_bounds"} & set(plda.__all__)
    assert not {"true_positive_rate_bounds", "advantage_bounds"} & set(dir(plda))
    for module in ("plda.tradeoff", "plda.renyi", "plda.risk", "plda.accountant"):
        assert importlib.import_module(module).__all__ == []
    # dir() of a deprecated module lists its old names (what a reader of old code looks for)
    assert {"gdp_mu", "GaussianDPSummary"} <= set(dir(plda.tradeoff))
    with pytest.raises(AttributeError, match="no attribute 'nonsense'"):
        plda.tradeoff.nonsense  # noqa: B018

