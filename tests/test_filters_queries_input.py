"""plda.filters.PrivateQueries refuses bad input before it charges anything.

Every method, with every kind of bad argument, against every kind of budget: the call raises
(TypeError or ValueError), and the budget's history and usage, the noise generator's state and
the data are untouched (the query never runs). Audit s48b REPRO_3 found the budget charged for a
non-callable query.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from plda.filters import (
    BasicFilter,
    BudgetExceededError,
    GaussianFilter,
    Odometer,
    PrivateQueries,
    RenyiFilter,
)

BUDGETS = {
    "basic": lambda: BasicFilter(10.0, 1e-5),
    "renyi": lambda: RenyiFilter(10.0, 1e-5),
    "gaussian": lambda: GaussianFilter(10.0, 1e-5),
    "odometer": lambda: Odometer(1e-6),
}

NAN, INF = float("nan"), float("inf")
#: (method, positional arguments after the query, keyword arguments, error); "Q" is the query
BAD_CALLS = [
    # a query that is not callable (REPRO_3)
    ("laplace", ("not a callable", 1.0, 0.1), {}, TypeError),
    ("gaussian", ("not a callable", 1.0), dict(rho=0.01), TypeError),
    ("gaussian", (None, 1.0), dict(mu=0.1), TypeError),
    ("gaussian", (3, 1.0), dict(epsilon=0.5, delta=1e-6), TypeError),
    ("discrete_laplace", ("not a callable", 1, 0.1), {}, TypeError),
    ("discrete_gaussian", ("not a callable", 1), dict(rho=0.01), TypeError),
    ("discrete_gaussian", (np.zeros(3), 1), dict(sigma=2.0), TypeError),
    ("count", ("not a callable", 0.1), {}, TypeError),
    ("clipped_sum", ("not a callable", 0.0, 1.0, 0.1), {}, TypeError),
    # a label that is not a str
    ("laplace", ("Q", 1.0, 0.1), dict(label=3), TypeError),
    ("gaussian", ("Q", 1.0), dict(mu=0.1, label=b"x"), TypeError),
    ("discrete_laplace", ("Q", 1, 0.1), dict(label=None), TypeError),
    ("discrete_gaussian", ("Q", 1), dict(rho=0.01, label=1.5), TypeError),
    ("count", ("Q", 0.1), dict(label=["x"]), TypeError),
    ("clipped_sum", ("Q", 0.0, 1.0, 0.1), dict(label=0), TypeError),
    # sensitivities
    ("laplace", ("Q", 0.0, 0.1), {}, ValueError),
    ("laplace", ("Q", -1.0, 0.1), {}, ValueError),
    ("laplace", ("Q", NAN, 0.1), {}, ValueError),
    ("laplace", ("Q", INF, 0.1), {}, ValueError),
    ("laplace", ("Q", "1", 0.1), {}, TypeError),
    ("laplace", ("Q", True, 0.1), {}, TypeError),
    ("gaussian", ("Q", 0.0), dict(mu=0.1), ValueError),
    ("gaussian", ("Q", None), dict(mu=0.1), TypeError),
    ("discrete_laplace", ("Q", 0, 0.1), {}, ValueError),
    ("discrete_laplace", ("Q", 1.5, 0.1), {}, ValueError),
    ("discrete_laplace", ("Q", "1", 0.1), {}, TypeError),
    ("discrete_gaussian", ("Q", -2), dict(rho=0.01), ValueError),
    ("discrete_gaussian", ("Q", 2.5), dict(sigma=1.0), ValueError),
    # epsilons
    ("laplace", ("Q", 1.0, 0.0), {}, ValueError),
    ("laplace", ("Q", 1.0, -0.1), {}, ValueError),
    ("laplace", ("Q", 1.0, NAN), {}, ValueError),
    ("laplace", ("Q", 1.0, INF), {}, ValueError),
    ("laplace", ("Q", 1.0, "0.1"), {}, TypeError),
    ("discrete_laplace", ("Q", 1, 0.0), {}, ValueError),
    ("discrete_laplace", ("Q", 1, None), {}, TypeError),
    ("count", ("Q", -1.0), {}, ValueError),
    ("count", ("Q", NAN), {}, ValueError),
    ("clipped_sum", ("Q", 0.0, 1.0, 0.0), {}, ValueError),
    ("clipped_sum", ("Q", 0.0, 1.0, "a"), {}, TypeError),
    # clipping ranges
    ("clipped_sum", ("Q", 1.0, 0.0, 0.1), {}, ValueError),
    ("clipped_sum", ("Q", 0.0, INF, 0.1), {}, ValueError),
    ("clipped_sum", ("Q", "0", 1.0, 0.1), {}, TypeError),
    # Gaussian calibrations: none, two, or out of range
    ("gaussian", ("Q", 1.0), {}, ValueError),
    ("gaussian", ("Q", 1.0), dict(rho=0.01, mu=0.1), ValueError),
    ("gaussian", ("Q", 1.0), dict(epsilon=0.5), ValueError),
    ("gaussian", ("Q", 1.0), dict(delta=1e-6), TypeError),
    ("gaussian", ("Q", 1.0), dict(epsilon=0.5, delta=0.0), ValueError),
    ("gaussian", ("Q", 1.0), dict(epsilon=0.5, delta=1.0), ValueError),
    ("gaussian", ("Q", 1.0), dict(epsilon=-0.5, delta=1e-6), ValueError),
    ("gaussian", ("Q", 1.0), dict(rho=0.0), ValueError),
    ("gaussian", ("Q", 1.0), dict(rho=NAN), ValueError),
    ("gaussian", ("Q", 1.0), dict(mu=INF), ValueError),
    ("gaussian", ("Q", 1.0), dict(mu="0.1"), TypeError),
    ("discrete_gaussian", ("Q", 1), {}, ValueError),
    ("discrete_gaussian", ("Q", 1), dict(rho=0.01, sigma=1.0), ValueError),
    ("discrete_gaussian", ("Q", 1), dict(rho=-1.0), ValueError),
    ("discrete_gaussian", ("Q", 1), dict(sigma=0.0), ValueError),
    ("discrete_gaussian", ("Q", 1), dict(sigma=INF), ValueError),
    # noise scales no float holds: the answer would be inf or nan, yet charged (or a crash)
    ("laplace", ("Q", 1e308, 1e-10), {}, ValueError),
    ("gaussian", ("Q", 1e300), dict(mu=1e-300), ValueError),
    ("gaussian", ("Q", 1e-300), dict(mu=1e308), ValueError),
    ("gaussian", ("Q", 1e-10), dict(mu=1e-310), ValueError),  # mu would be charged subnormal
    ("discrete_gaussian", ("Q", 1), dict(sigma=1e-200), ValueError),
]


class Spy:
    """A query that records whether it ran."""

    def __init__(self):
        self.calls = 0

    def __call__(self, data):
        self.calls += 1
        return 1


def snapshot(guarded: PrivateQueries):
    budget = guarded.budget
    usage = budget.epsilon() if isinstance(budget, Odometer) else budget.spent
    return (budget.history, usage, guarded._rng.bit_generator.state)


@pytest.mark.parametrize("kind", sorted(BUDGETS))
@pytest.mark.parametrize("method,args,kwargs,error", BAD_CALLS)
def test_bad_input_raises_and_changes_nothing(kind, method, args, kwargs, error):
    guarded = PrivateQueries(list(range(10)), BUDGETS[kind](), rng=1)
    guarded.laplace(sum, 1.0, 0.01)  # a recorded step: the state is not the initial one
    spy = Spy()
    args = tuple(spy if isinstance(a, str) and a == "Q" else a for a in args)
    before = snapshot(guarded)
    with pytest.raises(error):
        getattr(guarded, method)(*args, **kwargs)
    assert snapshot(guarded) == before
    assert spy.calls == 0
    # and the object still answers, from the same noise stream as an untouched twin
    twin = PrivateQueries(list(range(10)), BUDGETS[kind](), rng=1)
    twin.laplace(sum, 1.0, 0.01)
    assert guarded.laplace(sum, 1.0, 0.02) == twin.laplace(sum, 1.0, 0.02)


def test_repro_3_non_callable_query_spends_nothing():
    for method, kwargs in [
        ("laplace", dict(sensitivity=1.0, epsilon=0.1)),
        ("gaussian", dict(sensitivity=1.0, rho=0.01)),
        ("discrete_laplace", dict(sensitivity=1, epsilon=0.1)),
        ("discrete_gaussian", dict(sensitivity=1, rho=0.01)),
    ]:
        budget = RenyiFilter(epsilon=1.0, delta=1e-6)
        guarded = PrivateQueries(np.arange(10), budget, rng=0)
        with pytest.raises(TypeError, match="query must be a callable"):
            getattr(guarded, method)("not a callable", **kwargs)
        assert budget.history == () and budget.spent.statistic == 0.0


def test_a_failing_query_keeps_its_charge():
    # the query ran on the data: its failure is an outcome, so the charge stands (documented)
    budget = BasicFilter(1.0)
    guarded = PrivateQueries([1.0], budget, rng=0)
    with pytest.raises(ValueError, match="non-finite"):
        guarded.laplace(lambda d: math.inf, 1.0, 0.1)
    assert len(budget.history) == 1


def test_huge_integer_sensitivity_is_read_exactly():
    # a sensitivity beyond the float range was an OverflowError (float() of the int)
    budget = Odometer(1e-6)
    guarded = PrivateQueries(0, budget, rng=0)
    noisy = guarded.discrete_laplace(lambda d: 0, 10**400, 1e-3)
    assert isinstance(noisy, int) and budget.history[-1].epsilon == 1e-3


def test_gaussian_charges_cover_the_true_mu_and_rho():
    """The charged mu and rho are at least Δ/σ and (Δ/σ)²/2 of the σ actually used, even
    where rho is tiny (below the normal floats) or beyond the float range."""
    mp.mp.dps = 60
    for sensitivity, calibration in [
        (1.0, dict(mu=0.3)),
        (1e-200, dict(mu=1e-200)),  # rho = 5e-401: no float; charged the smallest one
        (3e-160, dict(rho=1e-319)),  # a subnormal rho
        (1.0, dict(rho=1e300)),
    ]:
        budget = Odometer(1e-6)
        guarded = PrivateQueries(0.0, budget, rng=0)
        with np.errstate(all="ignore"):
            guarded.gaussian(lambda d: 0.0, sensitivity, **calibration)
        charge = budget.history[-1]
        mu = charge.mu
        sigma = sensitivity / mu  # what gaussian used, up to the SAFETY margin (never less)
        assert mp.mpf(mu) >= mp.mpf(sensitivity) / mp.mpf(sigma) * (1 - mp.mpf(2) ** -50)
        if charge.rho is not None:
            assert Fraction(charge.rho) >= Fraction(repr(mu)) ** 2 / 2 * Fraction(1 - 2**-50)
            assert charge.rho > 0


def test_a_rho_whose_double_overflows_is_a_refused_step_not_a_crash():
    # sqrt(2 rho) overflowed: sigma 0, then ZeroDivisionError
    guarded = PrivateQueries(0.0, RenyiFilter(1.0, 1e-6), rng=0)
    with pytest.raises(BudgetExceededError) as refusal:
        guarded.gaussian(lambda d: 0.0, 1.0, rho=1e308)
    asked = refusal.value.requested
    assert asked.mu == pytest.approx(math.sqrt(2) * 1e154, rel=1e-11)
    assert Fraction(asked.rho) >= Fraction(repr(asked.mu)) ** 2 / 2  # mu²/2, rounded up
    assert asked.rho == pytest.approx(1e308, rel=1e-11) and guarded.budget.history == ()
    odometer = PrivateQueries(0.0, Odometer(1e-6), rng=0)
    with pytest.raises(ValueError, match="overflow"):
        odometer.gaussian(lambda d: 0.0, 1.0, rho=1e308)
    assert odometer.budget.history == ()
