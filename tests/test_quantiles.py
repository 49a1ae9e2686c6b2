"""Quantiles of privacy-loss laws (:mod:`plda.mechanisms.quantiles`): ``ppf`` and ``isf`` are
the generalized inverses of ``cdf`` and ``sf``, exact at atoms, infinite where a mass at an
infinite loss or an unbounded support reaches, with scipy.stats' ends; a probability outside
``[0, 1]`` is refused (it returned the search's bracket, 1048576.0)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import plda

LAWS = {
    "gaussian": plda.Gaussian(1.0).privacy_loss("remove"),
    "laplace": plda.Laplace(1.0).privacy_loss("remove"),
    "approximate": plda.ApproximateDP(1.0, 0.1).privacy_loss("remove"),
    "sampled-add": plda.PoissonSampled(plda.Gaussian(1.0), 0.01).privacy_loss("add"),
    "discrete-laplace": plda.DiscreteLaplace(1.0).privacy_loss("remove"),
}


@pytest.mark.parametrize("name", LAWS)
@pytest.mark.parametrize("hypothesis", ["P", "Q"])
def test_ppf_and_isf_are_the_generalized_inverses(name, hypothesis):
    law = LAWS[name]
    for q in (1e-6, 0.1, 0.37, 0.5, 0.9, 1 - 1e-6):
        x = float(law.ppf(q, hypothesis))
        # the smallest loss with cdf >= q: reached at x, not just below it
        if math.isfinite(x):
            assert law.cdf(x, hypothesis) >= q * (1 - 1e-9)
            below = x - 1e-9 * max(1.0, abs(x))
            assert law.cdf(below, hypothesis) <= q * (1 + 1e-9)
        elif x == -math.inf:  # the mass at -inf (under Q) holds q
            assert law.cdf(-1e300, hypothesis) >= q
        else:  # +inf: the finite losses hold less than q
            assert x == math.inf and law.cdf(1e300, hypothesis) < q
        y = float(law.isf(q, hypothesis))
        if math.isfinite(y):
            assert law.sf(y, hypothesis) <= q * (1 + 1e-9)
            below = y - 1e-9 * max(1.0, abs(y))
            assert law.sf(below, hypothesis) >= q * (1 - 1e-9)
        elif y == -math.inf:
            assert law.sf(-1e300, hypothesis) <= q
        else:
            assert y == math.inf and law.sf(1e300, hypothesis) > q


def test_the_gaussian_quantiles_match_the_normal_law():
    # L ~ N(mu^2/2, mu^2) under P
    law, mu = plda.Gaussian(0.5).privacy_loss("remove"), 2.0
    with mpmath.workdps(30):
        for q in (1e-10, 0.25, 0.5, 0.8):
            exact = float(mu**2 / 2 + mu * mpmath.sqrt(2) * mpmath.erfinv(2 * mpmath.mpf(q) - 1))
            assert float(law.ppf(q)) == pytest.approx(exact, rel=1e-9, abs=1e-9)
            assert float(law.isf(q)) == pytest.approx(mu**2 - exact, rel=1e-9, abs=1e-9)


def test_the_ends_follow_scipy_and_the_infinite_masses():
    gaussian, laplace = LAWS["gaussian"], LAWS["laplace"]
    assert list(gaussian.ppf([0.0, 1.0])) == [-math.inf, math.inf]
    assert list(gaussian.isf([1.0, 0.0])) == [-math.inf, math.inf]
    assert list(laplace.ppf([0.0, 1.0])) == [-1.0, 1.0]  # the loss lies in [-1, 1]
    approximate = LAWS["approximate"]  # P(L = +inf) = 0.1, Q(L = -inf) = 0.1
    assert float(approximate.ppf(0.95)) == math.inf and float(approximate.isf(0.05)) == math.inf
    assert float(approximate.ppf(1.0)) == math.inf
    assert float(approximate.ppf(0.0, "Q")) == -math.inf
    assert float(approximate.ppf(0.0)) == -1.0  # no mass at -inf under P


def test_an_atom_is_found_exactly():
    law = LAWS["discrete-laplace"]
    atoms = set(np.asarray(law.atom_losses).tolist())
    for q in np.linspace(0.01, 0.99, 15):
        assert float(law.ppf(q)) in atoms and float(law.isf(q)) in atoms


@pytest.mark.parametrize("bad", [1.5, -0.1, math.nan, math.inf])
@pytest.mark.parametrize("method", ["ppf", "isf"])
def test_a_probability_outside_the_unit_interval_is_refused(method, bad):
    with pytest.raises(ValueError, match=r"quantile must be in \[0, 1\]"):
        getattr(LAWS["gaussian"], method)(bad)


@pytest.mark.parametrize("bad", ["0.5", None, True, [0.5, None]])
def test_a_probability_that_is_not_a_number_is_refused(bad):
    with pytest.raises(TypeError, match="quantile must be a number"):
        LAWS["gaussian"].ppf(bad)


def test_shapes_are_kept():
    law = LAWS["gaussian"]
    assert np.shape(law.ppf(0.5)) == () and law.ppf(np.full((2, 3), 0.5)).shape == (2, 3)
