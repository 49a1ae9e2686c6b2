"""Range-edge inputs (``docs/howto/accuracy.md``, "Supported ranges") at 3 and 10 steps through
every entry point that can express them: the PLD, the accountant (``compose`` one step at a
time, ``step(...)``), the Opacus and dp_accounting adapters, the CLI and the sweep.

Each bracket is ordered (no NaN, no negative epsilon), its upper end covers the truth (mpmath,
exact where the worst case has a closed form, else a lower bound of it: a mechanism the
guarantee admits, one step of many, a statistic of the output) and its lower end stays under
it, and the entry points' brackets overlap. Inputs just outside the ranges are refused at
every entry point with a ValueError naming the argument the caller wrote, and an accountant
that refuses one is left as it was.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass

import mpmath as mp
import numpy as np
import pytest

import plda
from plda.adapters.opacus import PLDOpacusAccountant
from plda.cli import main

try:  # the dp_accounting entry points need the peer; every other entry point runs without it
    import dp_accounting as dpa

    from plda.adapters import PLDPrivacyAccountant
except ImportError:
    dpa = PLDPrivacyAccountant = None

STEPS = (3, 10)
DELTAS = (1e-300, 1e-5, 0.5)  # epsilon_bounds of the PLD and the accountant
EPSILONS = (0.0, 1.0, 1e4)  # delta_bounds of the PLD and the accountant
DELTA, EPSILON = DELTAS[1], EPSILONS[1]  # what the one-number entry points are asked
#: relative slack of the comparisons with the truth (mpmath's rounding, not plda's)
REL = 1e-15
TINY = 1e-320  # a truth below the doubles is 0 in floats
RELATIONS = {"add_remove": dpa.NeighboringRelation.ADD_OR_REMOVE_ONE,
             "replace_one": dpa.NeighboringRelation.REPLACE_ONE} if dpa else {}


# ------------------------------------------------------------------------ truths (mpmath)
def _pair_delta(p, q, steps, eps):
    """delta(eps) of ``steps`` runs of the finite pair (p, q): sum over the multisets of
    outcomes; an outcome with no Q-mass has loss +inf."""
    total = mp.mpf(0)
    for combo in itertools.combinations_with_replacement(range(len(p)), steps):
        counts = [combo.count(i) for i in range(len(p))]
        if any(c and p[i] == 0 for i, c in enumerate(counts)):
            continue
        mass = mp.factorial(steps) * mp.fprod(p[i] ** c / mp.factorial(c)
                                              for i, c in enumerate(counts))
        if any(c and q[i] == 0 for i, c in enumerate(counts)):
            total += mass
            continue
        loss = mp.fsum(c * (mp.log(p[i]) - mp.log(q[i])) for i, c in enumerate(counts) if c)
        if loss > eps:
            total += mass * -mp.expm1(eps - loss)
    return total


def _rr(epsilon, delta=0.0, rate=1.0):
    """The remove and add pairs of ApproximateDP(epsilon, delta), Poisson-sampled at ``rate``:
    outcomes (revealed, +eps, -eps, revealed the other way)."""
    e, d, r = mp.mpf(epsilon), mp.mpf(delta), mp.mpf(rate)
    high, low = 1 / (1 + mp.exp(-e)), mp.exp(-e) / (1 + mp.exp(-e))  # low without cancelling
    p = [d, (1 - d) * high, (1 - d) * low, mp.mpf(0)]
    q = p[::-1]
    mix = [r * a + (1 - r) * b for a, b in zip(p, q, strict=True)]
    return (mix, q), (q, mix)


def approximate_dp(epsilon, delta=0.0, rate=1.0):
    """Exact delta(eps) of k runs (both directions) of the ApproximateDP(epsilon, delta) pair."""
    pairs = _rr(epsilon, delta, rate)
    return lambda k, eps: 2 * [max(_pair_delta(*pair, k, eps) for pair in pairs)]


def _gauss(mu, eps):
    mu = mp.mpf(mu)
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


def gaussian(mu):
    """Exact: k runs of a mu-GDP Gaussian are sqrt(k) mu-GDP."""
    return lambda k, eps: 2 * [_gauss(mu * mp.sqrt(k), eps)]


def _sampled_gauss(mu, rate, eps):
    """delta(eps) of one Poisson-sampled Gaussian step (remove): its loss is increasing in x."""
    mu, r = mp.mpf(mu), mp.mpf(rate)
    x = (mp.log1p(mp.expm1(eps) / r) + mu * mu / 2) / mu  # where the loss crosses eps
    return r * mp.ncdf(mu - x) + (1 - r) * mp.ncdf(-x) - mp.exp(eps) * mp.ncdf(-x)


def sampled_gaussian(mu, rate):
    """Between one sampled step (k runs lose no privacy to their first) and k unsampled runs."""
    return lambda k, eps: [_sampled_gauss(mu, rate, eps), _gauss(mu * mp.sqrt(k), eps)]


def laplace(ratio):
    """Near the top, exact: r - L of one step is 0 w.p. 1/2, else Exp(1/2) capped at 2r (the
    cap is an atom of mass e^-r / 2); uncapped, k steps' sum is Gamma(N, 1/2), N ~ Bin(k, 1/2),
    which moves no mass below s = k r - eps <= 2r (else it gives a lower bound)."""
    def delta(k, eps):
        s = k * mp.mpf(ratio) - eps
        total = mp.mpf(0)
        for j in range(k + 1):
            if j == 0:
                part = -mp.expm1(-s) if s > 0 else 0
            else:  # P(G < s) - e^-s E[e^G; G < s]
                part = mp.gammainc(j, 0, s / 2, regularized=True) - mp.quad(
                    lambda g, j=j: g ** (j - 1) * mp.exp(-g / 2 + g - s), [0, s]
                ) / (2 ** j * mp.gamma(j)) if s > 0 else 0
            total += mp.binomial(k, j) * part / 2 ** k
        return [total, total if s <= 2 * ratio else 1]
    return delta


# ------------------------------------------------------------------------- the edge inputs
@dataclass(frozen=True)
class Edge:
    """One range-edge input and the entry points that can express it."""

    id: str
    mechanism: object  # () -> plda mechanism (one step, or one epoch)
    truth: object = None  # (k, eps) -> [lower, upper] bounds on the worst case's delta(eps)
    relations: tuple = ("add_remove",)
    truth_relations: tuple = ("add_remove",)
    spec: str | None = None  # the CLI's --mechanism
    event: object = None  # () -> one step's dp_accounting event
    dpsgd: dict | None = None  # step(...) keywords (noise_multiplier, sample_rate / sampler)
    dps: int = 30
    per_epoch: int = 1


SQRT_MU = math.sqrt(1e-13 * 2)  # RandomAllocation's smallest Gaussian mu at 2 steps
EDGES = [
    Edge("adp-1e20", lambda: plda.ApproximateDP(1e20, 0.0), approximate_dp(1e20),
         ("add_remove", "replace_one"), ("add_remove", "replace_one"),
         spec="approximate_dp:epsilon=1e20,delta=0"),
    Edge("adp-1e150", lambda: plda.ApproximateDP(1e150), approximate_dp(1e150),
         ("add_remove", "replace_one"), ("add_remove", "replace_one"),
         spec="approximate_dp:epsilon=1e150"),
    Edge("adp-709", lambda: plda.ApproximateDP(709.0, 0.0), approximate_dp(709),
         ("add_remove", "replace_one"), ("add_remove", "replace_one"),
         spec="approximate_dp:epsilon=709,delta=0"),
    Edge("adp-709-floor", lambda: plda.ApproximateDP(709.0, 1e-300), approximate_dp(709, 1e-300),
         spec="approximate_dp:epsilon=709,delta=1e-300"),
    # the worst mechanism with one point of profile is ApproximateDP's pair: exact
    Edge("profile-709", lambda: plda.PrivacyProfile((709.0,), (1e-300,)),
         approximate_dp(709, 1e-300), ("add_remove", "replace_one"),
         ("add_remove", "replace_one")),
    # ApproximateDP(eps) satisfies RenyiDP at every order with the same eps: a lower bound
    Edge("renyi-1e150", lambda: plda.RenyiDP((2.0,), (1e150,)),
         lambda k, e: [approximate_dp(1e150)(k, e)[0], 1], ("add_remove", "replace_one")),
    Edge("sampled-renyi", lambda: plda.PoissonSampled(plda.RenyiDP((1e6,), (1e3,)), 0.1),
         lambda k, e: [approximate_dp(1e3, rate=0.1)(k, e)[0], 1]),
    Edge("sampled-gdp-1e-15", lambda: plda.PoissonSampled(plda.GaussianDP(1e-15), 0.1),
         sampled_gaussian(1e-15, 0.1), dps=60),
    Edge("zcdp-1e6", lambda: plda.ZCDP(1e6), lambda k, e: [gaussian(math.sqrt(2e6))(k, e)[0], 1],
         ("add_remove", "replace_one"), ("add_remove", "replace_one"),
         event=lambda: dpa.ZCDpEvent(1e6)),
    Edge("noise-1e-15", lambda: plda.Gaussian.from_noise_multiplier(1e-15), gaussian(1e15),
         spec="gaussian:sigma=1e-15", event=lambda: dpa.GaussianDpEvent(1e-15),
         dpsgd={"noise_multiplier": 1e-15, "sample_rate": 1.0}),
    Edge("noise-1e150", lambda: plda.Gaussian.from_noise_multiplier(1e150), gaussian(1e-150),
         ("add_remove", "replace_one"), spec="gaussian:sigma=1e150",
         event=lambda: dpa.GaussianDpEvent(1e150),
         dpsgd={"noise_multiplier": 1e150, "sample_rate": 1.0}, dps=400),
    Edge("noise-1e150-sampled", lambda: plda.PoissonSampled(plda.Gaussian(1e150), 0.1),
         sampled_gaussian(1e-150, 0.1), ("add_remove", "replace_one"),
         spec="gaussian:sigma=1e150,sample_rate=0.1",
         event=lambda: dpa.PoissonSampledDpEvent(0.1, dpa.GaussianDpEvent(1e150)),
         dpsgd={"noise_multiplier": 1e150, "sample_rate": 0.1}, dps=400),
    Edge("rate-1e-12", lambda: plda.PoissonSampled(plda.Gaussian(1.0), 1e-12),
         sampled_gaussian(1.0, 1e-12), ("add_remove", "replace_one"),
         spec="gaussian:sigma=1,sample_rate=1e-12",
         event=lambda: dpa.PoissonSampledDpEvent(1e-12, dpa.GaussianDpEvent(1.0)),
         dpsgd={"noise_multiplier": 1.0, "sample_rate": 1e-12}, dps=40),
    Edge("laplace-700", lambda: plda.Laplace(1.0, 700.0), laplace(700),
         spec="laplace:scale=1,sensitivity=700", event=lambda: dpa.LaplaceDpEvent(1 / 700)),
    # the epoch's sum of outputs is GDP(mu / sqrt(t)); the epoch is at most one Gaussian use
    Edge("allocation-min-mu", lambda: plda.RandomAllocation(plda.Gaussian(1.0, SQRT_MU), 2),
         lambda k, e: [gaussian(SQRT_MU / math.sqrt(2))(k, e)[0], gaussian(SQRT_MU)(k, e)[1]],
         dpsgd={"noise_multiplier": 1 / SQRT_MU, "sampler": "random-allocation",
                "num_steps": 2}, per_epoch=2),
]
CASES = [pytest.param(edge, k, relation, id=f"{edge.id}-{k}-{relation}")
         for edge in EDGES for k in STEPS for relation in edge.relations]


# ------------------------------------------------------------------------- the entry points
def _bounds(lower, upper) -> plda.Bounds:
    return plda.Bounds(np.atleast_1d(np.asarray(lower, float)),
                       np.atleast_1d(np.asarray(upper, float)))


def _queries(answerer, many: bool):
    """(epsilon bracket at DELTAS or DELTA, delta bracket at EPSILONS or EPSILON)."""
    if many:
        return answerer.epsilon_bounds(np.array(DELTAS)), answerer.delta_bounds(np.array(EPSILONS))
    eps, delta = answerer.epsilon_bounds(DELTA), answerer.delta_bounds(EPSILON)
    return _bounds(eps.lower, eps.upper), _bounds(delta.lower, delta.upper)


def _cli(capsys, run: list[str]) -> tuple:
    answers = []
    for query, flag, value in (("epsilon", "--delta", DELTA), ("delta", "--epsilon", EPSILON)):
        assert main([query, *run, flag, repr(value), "--json"]) == 0
        record = json.loads(capsys.readouterr().out)
        answers.append(_bounds(*(math.inf if record[f"{query}_{end}"] is None
                                 else record[f"{query}_{end}"] for end in ("lower", "upper"))))
    return tuple(answers)


def entry_points(edge: Edge, k: int, relation: str, capsys) -> dict:
    """name -> (epsilon bracket, delta bracket); the first two at DELTAS / EPSILONS."""
    mechanism = edge.mechanism()
    out = {"pld": _queries(plda.PrivacyLossDistribution.from_mechanism(
        mechanism, k, relation=relation), True)}
    accountant = plda.PLDAccountant(relation=relation)
    for _ in range(k):  # one record per step, as a training loop does
        accountant.compose(mechanism)
    out["compose"] = _queries(accountant, True)
    if edge.dpsgd is not None:
        accountant = plda.PLDAccountant(relation=relation)
        accountant.step(**edge.dpsgd, count=k * edge.per_epoch)
        out["step"] = _queries(accountant, False)
        flags = [f"--{key.replace('_', '-')}={value!r}" if not isinstance(value, str)
                 else f"--{key}={value}" for key, value in edge.dpsgd.items()]
        out["cli-flags"] = _cli(capsys, [*flags, "--steps", str(k * edge.per_epoch),
                                         "--relation", relation])
        record = plda.sweep([{**edge.dpsgd, "steps": k * edge.per_epoch, "delta": DELTA,
                              "relation": relation}])[0]
        out["sweep"] = (_bounds(record["epsilon_lower"], record["epsilon_upper"]), None)
        if "sample_rate" in edge.dpsgd:
            opacus = PLDOpacusAccountant(relation=relation)
            for _ in range(k):  # the optimizer hook's one step at a time
                opacus.step(**edge.dpsgd)
            eps = opacus.epsilon_bounds(DELTA)
            out["opacus"] = (_bounds(eps.lower, eps.upper), None)
            opacus.history = [(*edge.dpsgd.values(), k)]  # as get_noise_multiplier sets it
            eps = opacus.epsilon_bounds(DELTA)
            out["opacus-history"] = (_bounds(eps.lower, eps.upper), None)
    if edge.spec is not None:
        out["cli-mechanism"] = _cli(capsys, ["--mechanism", edge.spec, "--count", str(k),
                                             "--relation", relation])
    if edge.event is not None and dpa is not None:
        dp = PLDPrivacyAccountant(RELATIONS[relation])
        dp.compose(edge.event(), k)
        out["PLDPrivacyAccountant"] = _queries(dp, False)
        out["from_dp_event"] = _queries(plda.from_dp_event(
            dpa.SelfComposedDpEvent(edge.event(), k), relation=relation), False)
    return out


def _ordered(name: str, bracket: plda.Bounds) -> None:
    lower, upper = np.asarray(bracket.lower), np.asarray(bracket.upper)
    assert not np.isnan(lower).any() and not np.isnan(upper).any(), (name, bracket)
    assert np.all(lower >= 0) and np.all(lower <= upper), (name, bracket)


def _covers(name: str, truth, k: int, bracket: plda.Bounds, quantity: str, points) -> None:
    """The bracket holds the truth: at each epsilon, lower <= delta <= upper; at each delta,
    delta(upper) <= delta (the upper end is at or past the truth) and delta(lower) >= delta."""
    for point, lower, upper in zip(points, bracket.lower, bracket.upper, strict=True):
        if quantity == "delta":
            low, high = truth(k, mp.mpf(point))
            assert upper >= low * (1 - REL) - TINY, (name, "delta", point, upper, low)
            assert lower <= high * (1 + REL) + TINY, (name, "delta", point, lower, high)
            continue
        if math.isfinite(upper):
            low = truth(k, mp.mpf(upper) * (1 + REL))[0]
            assert low <= point * (1 + REL) + TINY, (name, "epsilon", point, upper, low)
        if lower > 0:
            high = truth(k, mp.mpf(lower) * (1 - REL))[1]
            assert high >= point * (1 - REL), (name, "epsilon", point, lower, high)


def _overlap(answers: dict, index: int) -> list[str]:
    bad = []
    for (a, ba), (b, bb) in itertools.permutations(answers.items(), 2):
        if ba[index] is None or bb[index] is None:
            continue
        # the entry points with one number answer at DELTA / EPSILON, the middle point
        la = ba[index].lower[1 if len(ba[index].lower) == 3 else 0]
        ub = bb[index].upper[1 if len(bb[index].upper) == 3 else 0]
        if la > ub * (1 + REL) + TINY:
            bad.append(f"{a} lower {la!r} > {b} upper {ub!r}")
    return bad


@pytest.mark.filterwarnings("ignore::plda.PLDAWarning")  # accuracy misses are not at issue
@pytest.mark.parametrize("edge, k, relation", CASES)
def test_edge_inputs_are_bracketed_alike_at_every_entry_point(edge, k, relation, capsys):
    answers = entry_points(edge, k, relation, capsys)
    truth = edge.truth if relation in edge.truth_relations else None
    with mp.workdps(edge.dps):
        for name, (eps, delta) in answers.items():
            for quantity, bracket in (("epsilon", eps), ("delta", delta)):
                if bracket is None:
                    continue
                _ordered(name, bracket)
                if truth is not None:
                    many = len(np.asarray(bracket.lower)) == 3
                    points = {"epsilon": DELTAS if many else (DELTA,),
                              "delta": EPSILONS if many else (EPSILON,)}[quantity]
                    _covers(name, truth, k, bracket, quantity, points)
    assert not _overlap(answers, 0) and not _overlap(answers, 1), (
        _overlap(answers, 0) + _overlap(answers, 1))


# ------------------------------------------------------------------------------- refusals
def _just_below(x):
    return float(np.nextafter(x, 0))


def _just_above(x):
    return float(np.nextafter(x, np.inf))


def _gaussian_event(noise, rate=1.0):
    if dpa is None:
        return None
    event = dpa.GaussianDpEvent(noise)
    return event if rate == 1 else dpa.PoissonSampledDpEvent(rate, event)


#: DP-SGD steps out of range: (relation, step(...) keywords, the argument named, the
#: dp_accounting event of the step and the field it names; None where it has none)
REFUSED_STEPS = [
    ("add_remove", {"noise_multiplier": _just_below(1e-15), "sample_rate": 1.0},
     "noise_multiplier", (_gaussian_event(_just_below(1e-15)), "noise_multiplier")),
    ("add_remove", {"noise_multiplier": _just_above(1e150), "sample_rate": 0.1},
     "noise_multiplier", (_gaussian_event(_just_above(1e150), 0.1), "noise_multiplier")),
    # the dp_accounting event names it sampling_probability (once: sample_rate)
    ("add_remove", {"noise_multiplier": 1.0, "sample_rate": _just_below(1e-12)}, "sample_rate",
     (_gaussian_event(1.0, _just_below(1e-12)), r"PoissonSampledDpEvent\.sampling_probability")),
    # the floor doubles under replace-one: once refused as 'sensitivity / sigma' (the
    # accountant: 'no sound replace-one analysis', the sweep: configs[0]['sampler'])
    ("replace_one", {"noise_multiplier": 1e-15, "sample_rate": 1.0}, "noise_multiplier",
     (_gaussian_event(1e-15), "noise_multiplier")),
    # RandomAllocation's smallest mu: once named as 'sensitivity / sigma' only, and printed to
    # 3 digits, 'must be at least ... = 4.47e-07 ..., got 4.47214e-07'
    ("add_remove", {"noise_multiplier": 1 / (SQRT_MU * (1 - 1e-12)),
                    "sampler": "random-allocation", "num_steps": 2}, "noise_multiplier", None),
]


def _recorded(relation):
    """An accountant, an Opacus accountant and a dp_accounting one, each holding a step."""
    accountant = plda.PLDAccountant(relation=relation)
    accountant.step(1.0, 0.5)
    opacus = PLDOpacusAccountant(relation=relation)
    opacus.step(noise_multiplier=1.0, sample_rate=0.5)
    dp = None
    if dpa is not None:
        dp = PLDPrivacyAccountant(RELATIONS[relation])
        dp.compose(_gaussian_event(1.0, 0.5))
    return accountant, opacus, dp


def _state(accountant, opacus, dp):
    return (accountant.state_dict(), len(accountant), accountant.epsilon(DELTA),
            opacus.state_dict(), len(opacus), opacus.get_epsilon(DELTA),
            None if dp is None else (repr(dp.ledger), len(dp), dp.get_epsilon(DELTA)))


@pytest.mark.parametrize("relation, step, name, event", REFUSED_STEPS,
                         ids=[f"{r}-{n}-{list(s.values())}" for r, s, n, _ in REFUSED_STEPS])
def test_steps_out_of_range_are_refused_by_name_and_change_nothing(relation, step, name, event,
                                                                   capsys):
    accountant, opacus, dp = _recorded(relation)
    before = _state(accountant, opacus, dp)
    with pytest.raises(ValueError, match=name):
        accountant.step(**step, count=6)  # (whole epochs of the epoch samplers)
    if "sample_rate" in step:
        with pytest.raises(ValueError, match=name):
            opacus.step(**step)
        with pytest.raises(ValueError, match=name):
            opacus.history = [(1.0, 0.5, 1), (*step.values(), 3)]
    if event is not None and dpa is not None:
        event, field_name = event
        with pytest.raises(dpa.UnsupportedEventError, match=field_name):
            dp.compose(event, 3)
        with pytest.raises(ValueError, match=field_name):
            plda.from_dp_event(event, relation=relation)
    assert _state(accountant, opacus, dp) == before
    with pytest.raises(ValueError, match=rf"configs\[0\]\['{name}'\]"):
        plda.sweep([{**step, "steps": 6, "delta": DELTA, "relation": relation}])
    flags = [f"--{key.replace('_', '-')}={value!r}" if not isinstance(value, str)
             else f"--{key}={value}" for key, value in step.items()]
    assert main(["epsilon", *flags, "--steps", "6", "--delta", "1e-5",
                 "--relation", relation]) == 2
    err = capsys.readouterr().err
    # the flag written (once 'argument --sampler poisson', a flag the caller may not write)
    flag = f"--{name.replace('_', '-')}"
    assert err.count("\n") == 1 and err.startswith(f"plda: error: argument {flag}: "), err


#: mechanisms out of range: (constructor, its argument named, the CLI spec, the dp_accounting
#: event and the field it names)
REFUSED_MECHANISMS = [
    (lambda: plda.ApproximateDP(_just_above(1e150)), "epsilon",
     f"approximate_dp:epsilon={_just_above(1e150)!r}", None),
    # LaplaceDpEvent's field is noise_multiplier (once named 'sensitivity / scale')
    (lambda: plda.Laplace(1.0, _just_above(700.0)), r"sensitivity / scale",
     f"laplace:scale=1,sensitivity={_just_above(700.0)!r}",
     (dpa.LaplaceDpEvent(1 / _just_above(700.0)), r"LaplaceDpEvent\.noise_multiplier")
     if dpa else None),
    (lambda: plda.Gaussian(1.0, _just_above(1e15)), r"sensitivity / sigma",
     f"gaussian:sigma=1,sensitivity={_just_above(1e15)!r}", None),
    (lambda: plda.PoissonSampled(plda.Gaussian(1.0), _just_below(1e-12)), "sample_rate",
     f"gaussian:sigma=1,sample_rate={_just_below(1e-12)!r}", None),
    (lambda: plda.GaussianDP(_just_above(1e15)), "mu", None, None),
    (lambda: plda.RenyiDP((2.0,), (_just_above(1e150),)), "epsilons", None, None),
    # (PrivacyProfile past 1e154: the engine squared its losses to inf, "math domain error")
    (lambda: plda.PrivacyProfile((_just_above(1e150),), (0.0,)), "epsilons", None, None),
    (lambda: plda.ZCDP(_just_above(1e6)), "rho", None,
     (dpa.ZCDpEvent(_just_above(1e6)), "rho") if dpa else None),
    (lambda: plda.RandomAllocation(plda.Gaussian(1.0, SQRT_MU * (1 - 1e-12)), 2),
     r"sensitivity / sigma", None, None),
]


@pytest.mark.parametrize("make, name, spec, event", REFUSED_MECHANISMS,
                         ids=[f"{n}-{i}" for i, (_, n, _, _) in enumerate(REFUSED_MECHANISMS)])
def test_mechanisms_out_of_range_are_refused_by_name(make, name, spec, event, capsys):
    with pytest.raises(ValueError, match=name):
        make()
    if spec is not None:
        assert main(["epsilon", "--mechanism", spec, "--count", "3", "--delta", "1e-5"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "--mechanism" in err and name.replace("\\", "") in err
    if event is not None and dpa is not None:
        accountant, opacus, dp = _recorded("add_remove")
        before = _state(accountant, opacus, dp)
        event, field_name = event
        with pytest.raises(dpa.UnsupportedEventError, match=field_name):
            dp.compose(dpa.SelfComposedDpEvent(event, 3))
        assert _state(accountant, opacus, dp) == before


def test_the_allocation_floor_is_told_apart_from_the_value_refused():
    """An input an ulp past RandomAllocation's floor printed as the floor itself."""
    mu = SQRT_MU * (1 - 1e-12)
    with pytest.raises(plda.UncoveredParametersError) as refused:
        plda.RandomAllocation(plda.Gaussian(1.0, mu), 2)
    assert f"= {SQRT_MU!r}" in str(refused.value) and f"got {mu!r}" in str(refused.value)


@pytest.mark.parametrize("mechanism, name", [
    (lambda: plda.Laplace(1.0, 700.0), "sensitivity / scale"),
    (lambda: plda.Gaussian.from_noise_multiplier(1e-15), "sensitivity / sigma"),
    (lambda: plda.PoissonSampled(plda.RenyiDP((1e6,), (1e3,)), 0.1), "replace_one"),
])
def test_compose_under_replace_one_refuses_and_changes_nothing(mechanism, name):
    """Inside the add/remove range, past the replace-one one (doubled sensitivity) or without
    a replace-one analysis: refused when recorded, the history as it was."""
    accountant, opacus, dp = _recorded("replace_one")
    before = _state(accountant, opacus, dp)
    with pytest.raises(ValueError, match=name):
        accountant.compose(mechanism(), 3)
    if dp is not None:  # the dp_accounting adapter's Laplace at 1 / 700 under replace-one
        with pytest.raises(dpa.UnsupportedEventError, match=r"LaplaceDpEvent\.noise_multiplier"):
            dp.compose(dpa.LaplaceDpEvent(1 / 700), 3)
    assert _state(accountant, opacus, dp) == before
