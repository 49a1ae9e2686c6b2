"""The selection's profile bound from the base's profile (``plda.selection.profile_bound``,
Koskela, Redberg & Wang 2024): against the exact profile of random stopping over small discrete
base pairs, enumerated in mpmath, and its limits."""

from __future__ import annotations

import itertools
import math
import warnings

import mpmath
import numpy as np
import pytest

import plda
from plda.mechanisms.custom import CustomMechanism
from plda.mechanisms.law import AtomLaw
from plda.selection.profile_bound import BANDS, RunCountLaw, profile_delta_bound
from plda.selection.repeat import (
    truncated_negative_binomial_gamma,
    truncated_negative_binomial_mean,
)

PLD = plda.PrivacyLossDistribution
#: the base's profile grid and the selection's epsilons checked
BASE_EPS = np.linspace(0.0, 10.0, 401)
EPS = np.linspace(0.0, 6.0, 25)
#: (law, mean, eta): geometric, eta = 1/2, logarithmic, eta in (-1, 0), Poisson
LAWS = [("truncated_negative_binomial", 3.0, 1.0), ("truncated_negative_binomial", 10.0, 0.5),
        ("truncated_negative_binomial", 10.0, 0.0), ("truncated_negative_binomial", 5.0, -0.5),
        ("poisson", 10.0, None), ("poisson", 2.0, None)]


def _law(kind, mean, eta):
    if kind == "poisson":
        return RunCountLaw("poisson", mean), (mean, None)
    gamma = truncated_negative_binomial_gamma(mean, eta)
    return RunCountLaw(kind, truncated_negative_binomial_mean(gamma, eta), eta, gamma), (eta, gamma)


def _pgf(kind, params):
    """``x -> E[x^K]`` in mpmath."""
    if kind == "poisson":
        mu = mpmath.mpf(params[0])
        return lambda x: mpmath.exp(mu * (x - 1))
    eta, gamma = mpmath.mpf(params[0]), mpmath.mpf(params[1])
    if eta == 0:
        return lambda x: mpmath.log(1 - (1 - gamma) * x) / mpmath.log(gamma)
    return lambda x: ((1 - (1 - gamma) * x) ** (-eta) - 1) / (gamma ** (-eta) - 1)


def _hockey(p, q, eps):
    e = mpmath.exp(eps)
    return sum((max(mpmath.mpf(0), a - e * b) for a, b in zip(p, q, strict=True)),
               mpmath.mpf(0))


def _selection(p, order, pgf):
    """The best-of-K output law: ``A(y) = f(F_<=(y)) - f(F_<(y))`` in score order (K = 0,
    Poisson's "no run", has the same mass ``f(0)`` on both sides and adds nothing)."""
    out, below = [None] * len(p), mpmath.mpf(0)
    for y in order:
        out[y] = pgf(below + p[y]) - pgf(below)
        below += p[y]
    return out


def _base_profile(p, q):
    """The pair's exact profile (larger direction) on ``BASE_EPS``, rounded up to floats."""
    d = [max(_hockey(p, q, e), _hockey(q, p, e)) for e in BASE_EPS]
    return np.minimum(np.array([float(x) * (1 + 1e-12) for x in d]), 1.0)


def _pairs():
    """Randomized response at three epsilons and fixed-seed random pairs on 3-4 outputs."""
    out = []
    for e0 in (0.3, 1.0, 2.5):
        hi = mpmath.exp(e0) / (1 + mpmath.exp(e0))
        out.append((f"rr{e0}", [hi, 1 - hi], [1 - hi, hi]))
    rng = np.random.default_rng(20240207)
    for n in (3, 3, 4, 4):
        p, q = rng.dirichlet(np.full(n, 0.7)), rng.dirichlet(np.full(n, 0.7))
        p = [mpmath.mpf(x) for x in p]
        q = [mpmath.mpf(x) for x in q]
        out.append((f"random{n}", [x / sum(p) for x in p], [x / sum(q) for x in q]))
    return out


PAIRS = _pairs()


@pytest.mark.parametrize(("name", "p", "q"), PAIRS, ids=[name for name, _, _ in PAIRS])
def test_the_bound_covers_the_exact_selection_of_every_score_order(name, p, q):
    """For every law, every order of the outputs by score and both directions, the exact
    ``delta_A(eps)`` (30 digits) is at most the bound from the base's exact profile."""
    base = _base_profile(p, q)
    with mpmath.workdps(30):
        for kind, mean, eta in LAWS:
            law, params = _law(kind, mean, eta)
            bound = profile_delta_bound(BASE_EPS, base, EPS, law)
            pgf = _pgf(kind, params)
            for order in itertools.permutations(range(len(p))):
                a, b = _selection(p, order, pgf), _selection(q, order, pgf)
                for e, got in zip(EPS, bound, strict=True):
                    exact = max(_hockey(a, b, e), _hockey(b, a, e))
                    assert exact <= got, (kind, mean, eta, order, e, float(exact), got)


def test_any_band_edges_give_a_valid_bound():
    """The theorem holds for every cut of [0, 1]: a coarse one is valid too (only looser)."""
    _, p, q = PAIRS[4]
    base = _base_profile(p, q)
    law, params = _law("truncated_negative_binomial", 10.0, 1.0)
    coarse = np.array([0.0, 1e-6, 1e-3, 0.05, 0.3, 1.0])
    bound = profile_delta_bound(BASE_EPS, base, EPS, law, edges=coarse)
    fine = profile_delta_bound(BASE_EPS, base, EPS, law)
    pgf = _pgf("truncated_negative_binomial", params)
    with mpmath.workdps(30):
        for order in itertools.permutations(range(len(p))):
            a, b = _selection(p, order, pgf), _selection(q, order, pgf)
            for e, got in zip(EPS, bound, strict=True):
                assert max(_hockey(a, b, e), _hockey(b, a, e)) <= got
    assert np.all(fine[EPS < 3] <= bound[EPS < 3])  # here the fine cut is the tighter


def test_through_repeat_and_select_on_a_discrete_base():
    """The whole path: the pair as a custom mechanism, its certified PLD, RepeatAndSelect's
    merged profile and the selection's PLD: its certified delta covers the exact one."""
    _, p, q = PAIRS[3]
    pf, qf = np.array([float(x) for x in p]), np.array([float(x) for x in q])
    mech = CustomMechanism(remove=AtomLaw(atom_losses=np.log(pf / qf), atom_probs=pf),
                           add=AtomLaw(atom_losses=np.log(qf / pf), atom_probs=qf))
    eps = np.array([0.0, 0.5, 1.0, 2.0, 3.0])
    for distribution, mean in (("geometric", 10.0), ("poisson", 3.0)):
        rs = plda.RepeatAndSelect(mech, mean, distribution)
        got = PLD.from_mechanism(rs).delta(eps)
        params = (1.0, truncated_negative_binomial_gamma(mean, 1.0)) if (
            distribution == "geometric") else (mean, None)
        pgf = _pgf("poisson" if distribution == "poisson" else "tnb", params)
        with mpmath.workdps(30):
            for order in itertools.permutations(range(len(p))):
                a, b = _selection(p, order, pgf), _selection(q, order, pgf)
                for e, g in zip(eps, got, strict=True):
                    assert max(_hockey(a, b, e), _hockey(b, a, e)) <= g


def test_one_run_in_the_limit_is_the_base():
    """Mean -> 1 (gamma -> 1): ``K = 1`` almost surely and the bound tends to the base's own
    profile, from above."""
    _, p, q = PAIRS[1]
    base = _base_profile(p, q)
    law, _ = _law("truncated_negative_binomial", 1.0 + 1e-9, 1.0)
    got = profile_delta_bound(BASE_EPS, base, BASE_EPS, law)
    assert np.all(got >= base * (1 - 1e-12))
    # within a hair of the base one grid step lower (C_k is about 1e-8 here)
    assert np.all(got[1:] <= base[:-1] * (1 + 1e-6) + 1e-15)


def test_pure_base_under_geometric_stopping_is_within_three_epsilon():
    """Liu & Talwar 2019: an eps0-DP base under geometric stopping is 3 eps0-DP; the bound is
    exactly 0 from there on (already below it: the shift is at most 2 eps0)."""
    e0 = 1.0
    hi = math.exp(e0) / (1 + math.exp(e0))
    base = _base_profile([mpmath.mpf(hi), mpmath.mpf(1 - hi)], [mpmath.mpf(1 - hi),
                                                                  mpmath.mpf(hi)])
    assert base[BASE_EPS > e0 + 1e-9].max() == 0.0  # (at e0 itself: float residue)
    for mean in (2.0, 10.0, 100.0):
        law, _ = _law("truncated_negative_binomial", mean, 1.0)
        got = profile_delta_bound(BASE_EPS, base, np.array([2.0 * e0 + 0.05, 3.0 * e0]), law)
        assert got[-1] == 0.0


def test_strictly_below_the_renyi_only_bound_on_dp_sgd():
    """A small DP-SGD run tuned with geometric stopping (mean 10): the merged profile's
    epsilon is well below the Rényi profile's alone, and never above it for any law."""
    base = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(1.0), 0.05), 100)
    for distribution, shape in (("geometric", 1.0), ("truncated_negative_binomial", 0.5),
                                ("poisson", 1.0)):
        rs = plda.RepeatAndSelect(base, 10.0, distribution, shape)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", plda.AccuracyWarning)
            merged = PLD.from_mechanism(rs).epsilon(1e-6)
            renyi = PLD.from_mechanism(rs.renyi_guarantee).epsilon(1e-6)
        assert merged <= renyi * (1 + 1e-3)
        if distribution != "poisson":
            assert merged < 0.9 * renyi


def test_the_weights_sum_to_the_mean_and_the_shift_is_monotone():
    """``sum_k (rho(a_{k-1}) - rho(a_k))`` telescopes to ``rho(0) = 1`` (rounded up, never
    below), and ``log(rho(a) / rho(a + gap))`` is 0 at ``gap = 0`` and grows with ``gap``."""
    for kind, mean, eta in LAWS:
        law, _ = _law(kind, mean, eta)
        total = float(np.sum(law.weight_steps(BANDS)))
        assert 1.0 <= total <= 1.0 + 1e-9
        assert float(law.log_ratio(0.3, 0.0)) == 0.0
        assert np.all(np.diff(law.log_ratio(0.1, np.linspace(0.0, 1.0, 50))) >= 0)


@pytest.mark.parametrize(("args", "words"), [
    ((np.array([0.1, 1.0]), np.array([0.5, 0.1]), EPS), "start at 0"),
    ((np.array([0.0, 1.0]), np.array([0.5, 1.5]), EPS), "delta"),
    ((np.array([0.0, 1.0]), np.array([0.5, 0.1]), np.array([-1.0])), "epsilons"),
])
def test_bad_input(args, words):
    law, _ = _law("poisson", 3.0, None)
    with pytest.raises(ValueError, match=words):
        profile_delta_bound(*args, law)
    with pytest.raises(ValueError, match="edges"):
        profile_delta_bound(np.array([0.0, 1.0]), np.array([0.5, 0.1]), EPS, law,
                            edges=np.array([0.0, 0.5]))
    with pytest.raises(ValueError, match="law"):
        RunCountLaw("binomial", 3.0)
    with pytest.raises(ValueError, match="gamma"):
        RunCountLaw("truncated_negative_binomial", 3.0, 1.0, 1.5)
