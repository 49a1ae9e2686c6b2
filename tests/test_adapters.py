"""Adapters: dp_accounting events -> PLD (duck-typed), the Opacus-style accountant."""

import dataclasses
import json
import math
import subprocess
import sys
import warnings
from dataclasses import dataclass

import pytest

import plda
from plda.accounting.accountant import PLDAccountant
from plda.adapters.dp_accounting import NON_PRIVATE, from_dp_event, mechanisms_from_dp_event
from plda.adapters.opacus import PLDOpacusAccountant

DELTA = 1e-5
COARSE = 1e-2


# stand-ins with dp_accounting's class names and fields (the adapter only reads those)
@dataclass
class GaussianDpEvent:
    noise_multiplier: float


@dataclass
class LaplaceDpEvent:
    noise_multiplier: float


@dataclass
class DiscreteLaplaceDpEvent:
    noise_parameter: float
    sensitivity: int


@dataclass
class PoissonSampledDpEvent:
    sampling_probability: float
    event: object


@dataclass
class SelfComposedDpEvent:
    event: object
    count: int


@dataclass
class ComposedDpEvent:
    events: list


@dataclass
class NoOpDpEvent:
    pass


@dataclass
class NonPrivateDpEvent:
    pass


@dataclass
class RandomizedResponseDpEvent:
    noise_parameter: float
    num_buckets: int


@dataclass
class ZCDpEvent:
    rho: float
    xi: float = 0.0


@dataclass
class UnsupportedDpEvent:
    pass


@dataclass
class SampledWithoutReplacementDpEvent:
    source_dataset_size: int
    sample_size: int
    event: object


@dataclass
class TruncatedSubsampledGaussianDpEvent:
    dataset_size: int
    sampling_probability: float
    truncated_batch_size: int
    noise_multiplier: float


def _same_mechanism(a, b) -> bool:
    """Same family and parameters, floats within a few ulps: the adapter may compute a parameter
    with ``math`` where the reference uses numpy, and the two differ by an ulp on some CPUs."""
    if type(a) is not type(b):
        return False
    for f in dataclasses.fields(a):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, plda.Mechanism):
            if not _same_mechanism(x, y):
                return False
        elif isinstance(x, float):
            if not math.isclose(x, y, rel_tol=1e-14, abs_tol=0.0):
                return False
        elif x != y:
            return False
    return True


def test_event_tree_maps_to_mechanisms():
    step = PoissonSampledDpEvent(0.01, GaussianDpEvent(1.1))
    event = ComposedDpEvent(
        [
            SelfComposedDpEvent(step, 100),
            SelfComposedDpEvent(ComposedDpEvent([LaplaceDpEvent(3.0), NoOpDpEvent()]), 2),
            DiscreteLaplaceDpEvent(0.5, 2),
            RandomizedResponseDpEvent(0.5, 2),
        ]
    )
    expected = (
        (plda.PoissonSampled(plda.Gaussian(1.1), 0.01), 100),
        (plda.Laplace(scale=3.0), 2),
        (plda.DiscreteLaplace(parameter=0.5, sensitivity=2), 1),
        (plda.RandomizedResponse(0.5, 2), 1),  # the pair itself (keeps truth w.p. 3/4)
    )
    got = mechanisms_from_dp_event(event)
    assert [count for _, count in got] == [count for _, count in expected]
    for (mechanism, _), (reference, _) in zip(got, expected, strict=True):
        assert _same_mechanism(mechanism, reference)
    assert got[-1][0].epsilon == pytest.approx(math.log(3.0), rel=1e-15)
    pld = from_dp_event(event, relation="replace_one", accuracy=COARSE)
    assert pld.count == 104
    # randomized response is a replace-one pair, refused under add/remove as dp_accounting does
    with pytest.raises(ValueError, match="replace_one"):
        from_dp_event(event, accuracy=COARSE)


def test_fixed_size_and_truncated_events_map_to_their_samplers():
    g = plda.Gaussian(sigma=1.1)
    fixed = SampledWithoutReplacementDpEvent(1000, 10, GaussianDpEvent(1.1))
    event = ComposedDpEvent(
        [
            SelfComposedDpEvent(fixed, 5),
            SampledWithoutReplacementDpEvent(1000, 10, LaplaceDpEvent(2.0)),
            SelfComposedDpEvent(TruncatedSubsampledGaussianDpEvent(1000, 0.01, 15, 1.1), 3),
            # empty batches release nothing (as dp_accounting reads them)
            SampledWithoutReplacementDpEvent(1000, 0, GaussianDpEvent(1.1)),
            TruncatedSubsampledGaussianDpEvent(1000, 0.0, 15, 1.1),
            TruncatedSubsampledGaussianDpEvent(1000, 0.01, 0, 1.1),
        ]
    )
    assert mechanisms_from_dp_event(event) == (
        (plda.SampledWithoutReplacement(g, batch_size=10, dataset_size=1000), 5),
        (plda.SampledWithoutReplacement(plda.Laplace(scale=2.0), 10, 1000), 1),
        (plda.TruncatedPoisson(g, sample_rate=0.01, max_batch_size=15, dataset_size=1000), 3),
    )
    # no noise: a fixed-size batch leaks whole with probability b / n; truncated: no guarantee
    leaky = SampledWithoutReplacementDpEvent(1000, 10, GaussianDpEvent(0.0))
    assert mechanisms_from_dp_event(leaky) == ((plda.PoissonSampled(NON_PRIVATE, 0.01), 1),)
    assert from_dp_event(leaky, accuracy=COARSE).delta(0.0) == pytest.approx(0.01, rel=1e-9)
    naked = TruncatedSubsampledGaussianDpEvent(1000, 0.01, 15, 0.0)
    assert mechanisms_from_dp_event(naked) == ((NON_PRIVATE, 1),)


def test_a_truncated_poisson_events_lower_bounds_are_its_realized_pairs_as_documented():
    # from_dp_event's docstring said these lower bounds bracket the dominating pair; they are
    # the realized pair's (only the .dominating() view keeps the dominating pair's own)
    event = SelfComposedDpEvent(TruncatedSubsampledGaussianDpEvent(1000, 0.01, 15, 1.1), 3)
    step = plda.TruncatedPoisson(plda.Gaussian(sigma=1.1), sample_rate=0.01, max_batch_size=15,
                                 dataset_size=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        pld = from_dp_event(event, accuracy=COARSE)
        realized = plda.PrivacyLossDistribution(((step.lower_bound_mechanism(), 3),),
                                                "add_remove", COARSE)
        bounds, own = pld.epsilon_bounds(DELTA), pld.dominating().epsilon_bounds(DELTA)
        assert bounds.lower == realized.epsilon_bounds(DELTA).lower
        assert pld.delta_bounds(1.0).lower == realized.delta_bounds(1.0).lower
    assert bounds.upper == own.upper and bounds.lower < 0.5 * own.lower
    doc = " ".join(from_dp_event.__doc__.split())
    assert "its lower bounds (``epsilon_bounds``, ``delta_bounds``) from its realized pair" in doc
    assert "lower bounds bracket the dominating pair" not in doc


@pytest.mark.parametrize(
    "event, match",
    [
        (SampledWithoutReplacementDpEvent(10, 11, GaussianDpEvent(1.0)),
         "batch_size must be an integer in \\[1, dataset_size=10\\]"),
        (SampledWithoutReplacementDpEvent(10, 2.5, GaussianDpEvent(1.0)), "batch_size"),
        (SampledWithoutReplacementDpEvent(10, 2, DiscreteLaplaceDpEvent(0.5, 1)),
         "SampledWithoutReplacementDpEvent is not supported here: mechanism must be "
         "plda.Gaussian or plda.Laplace"),
        (SampledWithoutReplacementDpEvent(10, 2, ComposedDpEvent([GaussianDpEvent(1.0)] * 2)),
         "SampledWithoutReplacementDpEvent of ComposedDpEvent"),
        (SampledWithoutReplacementDpEvent(10, 11, GaussianDpEvent(0.0)), "sample_size"),
        # named as the event's fields (once as TruncatedPoisson's sample_rate and the
        # Gaussian's sigma, names the event's author never wrote)
        (TruncatedSubsampledGaussianDpEvent(10, 1.5, 3, 1.0),
         r"TruncatedSubsampledGaussianDpEvent\.sampling_probability must be in"),
        (TruncatedSubsampledGaussianDpEvent(10, 0.5, 3, -1.0), "noise_multiplier"),
        (TruncatedSubsampledGaussianDpEvent(10, 0.5, 3, "1"), "noise_multiplier"),
    ],
)
def test_bad_sampler_events_raise_value_errors(event, match):
    with pytest.raises(ValueError, match=match):
        from_dp_event(event)


@dataclass
class SingleEpochTreeAggregationDpEvent:
    noise_multiplier: float
    step_counts: object


def test_tree_aggregation_event_is_a_gaussian_at_the_tree_sensitivity():
    # one record enters floor(log2 n) + 1 = ceil(log2(n + 1)) nodes of its tree: 100 -> 7
    (mechanism, count), = mechanisms_from_dp_event(SingleEpochTreeAggregationDpEvent(2.0, 100))
    assert count == 1 and mechanism == plda.Gaussian(sigma=2.0, sensitivity=math.sqrt(7))
    # several trees, each record in one of them: the deepest tree counts (8 -> 4, 5 -> 3)
    (mechanism, _), = mechanisms_from_dp_event(SingleEpochTreeAggregationDpEvent(1.5, [8, 5, 0]))
    assert mechanism == plda.Gaussian(sigma=1.5, sensitivity=2.0)
    # composed by SelfComposedDpEvent (one record per tree, several epochs)
    got = mechanisms_from_dp_event(
        SelfComposedDpEvent(SingleEpochTreeAggregationDpEvent(2.0, 1), 3)
    )
    assert got == ((plda.Gaussian(sigma=2.0, sensitivity=1.0), 3),)
    assert mechanisms_from_dp_event(SingleEpochTreeAggregationDpEvent(2.0, [0, 0])) == ()
    assert mechanisms_from_dp_event(SingleEpochTreeAggregationDpEvent(0, 4)) == (
        (NON_PRIVATE, 1),
    )
    for steps in ([], [-1], 2.5, [3, 1.0]):
        with pytest.raises(ValueError, match="step_counts"):
            mechanisms_from_dp_event(SingleEpochTreeAggregationDpEvent(1.0, steps))
    with pytest.raises(ValueError, match="noise_multiplier"):
        mechanisms_from_dp_event(SingleEpochTreeAggregationDpEvent(-1.0, 4))


def test_tree_aggregation_event_against_dp_accounting_rdp():
    dpa = pytest.importorskip("dp_accounting")
    event = dpa.SingleEpochTreeAggregationDpEvent(noise_multiplier=3.0, step_counts=[1000, 37])
    ours = from_dp_event(event).epsilon_bounds(DELTA)
    rdp = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_SPECIAL)
    theirs = rdp.compose(event).get_epsilon(DELTA)
    # the same Gaussian (RDP alpha * 10 / (2 sigma^2)): RDP's conversion is looser than the PLD
    assert ours.upper < theirs < 1.3 * ours.upper
    plain = dpa.rdp.RdpAccountant().compose(dpa.GaussianDpEvent(3.0 / math.sqrt(10)))
    assert plain.get_epsilon(DELTA) == pytest.approx(theirs, rel=1e-12)


def test_noop_is_free_and_unsupported_events_are_named():
    assert from_dp_event(NoOpDpEvent()).epsilon(DELTA) == 0.0
    with pytest.raises(ValueError, match="UnsupportedDpEvent"):
        from_dp_event(ComposedDpEvent([GaussianDpEvent(1.0), UnsupportedDpEvent()]))
    with pytest.raises(ValueError, match="not supported"):
        from_dp_event(PoissonSampledDpEvent(0.1, SelfComposedDpEvent(GaussianDpEvent(1.0), 2)))
    # named as the event's field, noise_multiplier (once as the Gaussian's sigma)
    with pytest.raises(ValueError, match="noise_multiplier must be a finite number"):
        from_dp_event(GaussianDpEvent(-1.0))


def test_against_dp_accounting_when_installed():
    dp_event = pytest.importorskip("dp_accounting").dp_event
    pld_module = pytest.importorskip("dp_accounting.pld.pld_privacy_accountant")
    event = dp_event.ComposedDpEvent(
        [
            dp_event.SelfComposedDpEvent(
                dp_event.PoissonSampledDpEvent(0.02, dp_event.GaussianDpEvent(1.0)), 50
            ),
            dp_event.SelfComposedDpEvent(dp_event.LaplaceDpEvent(20.0), 3),
        ]
    )
    ours = from_dp_event(event).epsilon_bounds(DELTA)  # a 1e-3 certified interval
    theirs = pld_module.PLDAccountant().compose(event).get_epsilon(DELTA)
    # dp_accounting's default answer is pessimistic for its own discretization, so it is at
    # least the true epsilon, which is at least our certified lower bound; it overshoots the
    # truth by its 1e-4 loss grid per composition at most (a few 1e-4 here)
    assert ours.lower <= theirs <= ours.upper + 1e-3


def test_non_private_events_have_no_finite_epsilon():
    assert from_dp_event(NonPrivateDpEvent()).epsilon(DELTA) == math.inf
    assert from_dp_event(GaussianDpEvent(0.0)).delta(1.0) == 1.0
    # Poisson-sampled at rate q: the whole record leaks with probability q, so delta(0) = q
    sampled = from_dp_event(PoissonSampledDpEvent(0.01, NonPrivateDpEvent()), accuracy=COARSE)
    assert sampled.epsilon(DELTA) == math.inf and sampled.epsilon(0.011) == 0.0
    assert sampled.delta(0.0) == pytest.approx(0.01, rel=1e-9)


# ------------------------------------------------------------- dp_accounting's accountant
def _sgd_event(dp_event, sigma, rate=0.01, steps=1000):
    sampled = dp_event.PoissonSampledDpEvent(rate, dp_event.GaussianDpEvent(sigma))
    return dp_event.SelfComposedDpEvent(sampled, steps)


def test_dp_accounting_subclass_matches_dp_accounting_pld():
    dpa = pytest.importorskip("dp_accounting")
    from plda.adapters import PLDPrivacyAccountant

    acct = PLDPrivacyAccountant()
    assert isinstance(acct, dpa.PrivacyAccountant)
    assert acct.neighboring_relation is dpa.NeighboringRelation.ADD_OR_REMOVE_ONE
    assert acct.get_epsilon(DELTA) == 0.0 and acct.supports(_sgd_event(dpa, 1.0))
    event = _sgd_event(dpa, 1.0)
    assert acct.compose(event, 2) is acct and len(acct.accountant) == 2000
    bounds = acct.epsilon_bounds(DELTA)
    assert isinstance(bounds, plda.Bounds) and bounds.upper == acct.get_epsilon(DELTA)
    theirs = dpa.pld.PLDAccountant().compose(event, 2)
    assert acct.ledger == theirs.ledger
    assert acct.get_epsilon(DELTA) == pytest.approx(theirs.get_epsilon(DELTA), rel=2e-3)
    assert bounds.lower <= theirs.get_epsilon(DELTA) * (1 + 1e-3)
    delta = acct.delta_bounds(1.0)
    assert delta.lower <= acct.get_delta(1.0) == delta.upper
    assert acct.get_delta(1.0) == pytest.approx(theirs.get_delta(1.0), rel=1e-2)
    assert "steps=2000" in repr(acct)
    replace = PLDPrivacyAccountant(dpa.NeighboringRelation.REPLACE_ONE, accuracy=COARSE)
    assert replace.compose(event).get_epsilon(DELTA) > acct.get_epsilon(DELTA) / 2
    with pytest.raises(ValueError, match="neighboring_relation"):
        PLDPrivacyAccountant(dpa.NeighboringRelation.REPLACE_SPECIAL)


def test_dp_accounting_subclass_refuses_unsupported_events_and_records_nothing():
    dpa = pytest.importorskip("dp_accounting")
    from plda.adapters import PLDPrivacyAccountant

    acct = PLDPrivacyAccountant(accuracy=COARSE).compose(dpa.GaussianDpEvent(2.0))
    bad = [
        dpa.ComposedDpEvent([dpa.GaussianDpEvent(1.0), dpa.UnsupportedDpEvent()]),
        dpa.SampledWithoutReplacementDpEvent(100, 10, dpa.dp_event.DiscreteLaplaceDpEvent(0.5, 1)),
        # (MixtureOfGaussiansDpEvent is supported now: gradient accumulation, issue 24;
        # SingleEpochTreeAggregationDpEvent too: tree aggregation, issue 28; ZCDpEvent too,
        # issue 29)
        dpa.PoissonSampledDpEvent(0.1, dpa.SelfComposedDpEvent(dpa.GaussianDpEvent(1.0), 2)),
    ]
    for event in bad:
        assert not acct.supports(event)
        with pytest.raises(dpa.UnsupportedEventError, match="not supported"):
            acct.compose(event)
        assert len(acct.accountant) == 1 and acct.ledger == dpa.GaussianDpEvent(2.0)
    with pytest.raises(dpa.UnsupportedEventError,
                       match="UnsupportedDpEvent.*caused by subevent UnsupportedDp"):
        acct.compose(bad[0])
    with pytest.raises(dpa.UnsupportedEventError, match="count"):
        acct.compose(dpa.GaussianDpEvent(1.0), -1)
    assert acct.compose(dpa.NonPrivateDpEvent()).get_epsilon(DELTA) == math.inf


def test_fixed_size_batches_against_dp_accounting():
    dpa = pytest.importorskip("dp_accounting")
    from plda.adapters import PLDPrivacyAccountant

    replace = dpa.NeighboringRelation.REPLACE_ONE
    # the whole dataset as the batch: one Gaussian under replace-one, where dp_accounting's PLD
    # is tight (to its 1e-4 loss grid) and reads the noise multiplier as plda does
    whole = dpa.SampledWithoutReplacementDpEvent(100, 100, dpa.GaussianDpEvent(1.0))
    ours = PLDPrivacyAccountant(replace).compose(whole).epsilon_bounds(DELTA)
    theirs = dpa.pld.PLDAccountant(replace).compose(dpa.GaussianDpEvent(1.0)).get_epsilon(DELTA)
    assert ours.lower <= theirs <= ours.upper + 1e-3
    assert ours.upper >= theirs - 1e-3
    # subsampled: dp_accounting has only RDP (replace-one), reading the noise multiplier against
    # the replace-one distance, i.e. half plda's sensitivity: give it sigma / 2 to compare. Its
    # RDP number is an upper bound on the truth, so it is above our certified lower bound; the
    # PLD is also below it (RDP's conversion to (eps, delta) is loose)
    for n, b, sigma, steps in ((1000, 10, 1.0, 100), (500, 50, 2.0, 50)):
        ours_event = dpa.SampledWithoutReplacementDpEvent(n, b, dpa.GaussianDpEvent(sigma))
        rdp_event = dpa.SampledWithoutReplacementDpEvent(n, b, dpa.GaussianDpEvent(sigma / 2))
        rdp = dpa.rdp.RdpAccountant(neighboring_relation=replace).compose(rdp_event, steps)
        for relation in (replace, dpa.NeighboringRelation.ADD_OR_REMOVE_ONE):
            acct = PLDPrivacyAccountant(relation).compose(ours_event, steps)
            bounds = acct.epsilon_bounds(DELTA)
            assert bounds.lower <= bounds.upper < rdp.get_epsilon(DELTA)
            # fixed-size batches are not Poisson sampling: far above the Poisson number
            poisson = plda.PLDAccountant(accuracy=COARSE)
            poisson.step(sigma, b / n, count=steps)
            assert bounds.lower > 2 * poisson.epsilon(DELTA)


@pytest.mark.parametrize("relation", ["ADD_OR_REMOVE_ONE", "REPLACE_ONE"])
def test_truncated_poisson_against_dp_accounting_pld(relation):
    dpa = pytest.importorskip("dp_accounting")
    from plda.adapters import PLDPrivacyAccountant

    relation = dpa.NeighboringRelation[relation]
    # truncation is frequent here (the cap 8 is below the mean batch 10): the hardest case
    n, q, cap, sigma, steps = 200, 0.05, 8, 1.0, 20
    event = dpa.TruncatedSubsampledGaussianDpEvent(n, q, cap, sigma)
    acct = PLDPrivacyAccountant(relation, accuracy=COARSE)
    assert acct.supports(event)
    acct.compose(event, steps)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the certified bracket needs no NotTightWarning
        bounds = acct.epsilon_bounds(DELTA)  # lower bound from the realized pair
    # dp_accounting's PLD is pessimistic for its grid (1e-3 in loss, to keep this fast)
    theirs = dpa.pld.PLDAccountant(relation, value_discretization_interval=1e-3)
    theirs = theirs.compose(event, steps).get_epsilon(DELTA)
    # plda's dominating pair reveals the number of other records drawn, theirs only whether
    # truncation happened: ours is the looser upper bound (9.03 vs 8.23 add/remove)
    assert theirs - 1e-3 <= bounds.upper <= 1.15 * theirs
    # the certified lower bound is below any valid upper bound, and it is the accountant's
    # own lower bound: both compose the realized pairs (the dominating pair's would be ~9)
    assert bounds.lower <= theirs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)  # (emitted once per law)
        own = acct.accountant.epsilon_bounds(DELTA).lower
    assert bounds.lower == pytest.approx(own, rel=COARSE)
    assert bounds.lower < 0.5 * bounds.upper


def test_dp_accounting_calibrate_dp_mechanism_agrees_with_plda_calibration():
    dpa = pytest.importorskip("dp_accounting")
    from plda.adapters import PLDPrivacyAccountant

    sigma = dpa.calibrate_dp_mechanism(
        PLDPrivacyAccountant, lambda s: _sgd_event(dpa, s), target_epsilon=1.0, target_delta=DELTA
    )
    ours = plda.calibrate_noise_multiplier(1.0, DELTA, 0.01, 1000)
    assert sigma == pytest.approx(ours, rel=1e-3)
    # the certified epsilon at the calibrated sigma meets the target (to brentq's tolerance)
    assert PLDPrivacyAccountant().compose(_sgd_event(dpa, sigma + 1e-5)).get_epsilon(DELTA) <= 1.0


_IMPORTS = "import sys, plda, plda.adapters.dp_accounting; "


def test_the_event_translation_imports_no_sibling_and_names_the_accountants_home():
    # plda.adapters.dp_privacy_accountant imports plda.adapters.dp_accounting, never the
    # reverse: the accountant is served by plda.adapters, and its former path says where it is
    from plda.adapters import dp_accounting

    with pytest.raises(AttributeError, match="from plda.adapters import PLDPrivacyAccountant"):
        dp_accounting.PLDPrivacyAccountant  # noqa: B018


def test_import_plda_loads_no_optional_library():
    code = _IMPORTS + "print(sorted({'torch', 'opacus', 'dp_accounting'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_missing_dp_accounting_is_a_clear_import_error():
    code = (
        "import sys; sys.modules['dp_accounting'] = None; "
        + _IMPORTS
        + "import plda.adapters.dp_privacy_accountant; "  # the module itself imports
        + "from plda.adapters import PLDPrivacyAccountant"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 1 and "ImportError" in out.stderr
    assert 'pip install "plda[dp-accounting]"' in out.stderr


def test_opacus_adapter_works_without_opacus():
    code = (
        "import sys; sys.modules['opacus'] = None; "
        + _IMPORTS
        + "from plda.adapters.opacus import PLDOpacusAccountant as A; a = A(); "
        "a.step(noise_multiplier=1.0, sample_rate=0.01); print(len(a))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


# ------------------------------------------------------------------------------- opacus
class FakeOptimizer:
    noise_multiplier = 1.1
    accumulated_iterations = 1


def test_opacus_style_accountant_interface():
    acct = PLDOpacusAccountant(accuracy=COARSE)
    assert acct.mechanism() == PLDOpacusAccountant.mechanism() == "plda"
    assert len(acct) == 0 and acct.get_epsilon(DELTA) == 0.0
    hook = acct.get_optimizer_hook_fn(sample_rate=0.01)
    for _ in range(20):
        hook(FakeOptimizer())
    acct.step(noise_multiplier=1.1, sample_rate=0.01)
    assert len(acct) == 21
    assert acct.history == [(1.1, 0.01, 21)]
    reference = plda.PLDAccountant(accuracy=COARSE)
    reference.step(1.1, 0.01, count=21)
    assert acct.get_epsilon(DELTA) == reference.epsilon(DELTA)
    lower, upper = acct.epsilon_bounds(DELTA)
    assert lower <= upper == acct.get_epsilon(DELTA)


def test_opacus_style_state_dict_round_trip_and_refusal():
    acct = PLDOpacusAccountant(accuracy=COARSE)
    acct.step(noise_multiplier=1.0, sample_rate=0.02)
    state = json.loads(json.dumps(acct.state_dict()))
    other = PLDOpacusAccountant()
    other.load_state_dict(state)
    assert len(other) == 1 and other.get_epsilon(DELTA) == acct.get_epsilon(DELTA)
    for bad in ({}, {"mechanism": "rdp", "history": []}, {"mechanism": "plda"}):
        with pytest.raises(ValueError):
            other.load_state_dict(bad)
    assert len(other) == 1
    with pytest.raises(ValueError, match="sample_rate"):
        other.step(noise_multiplier=1.0, sample_rate=2.0)
    assert len(other) == 1


def test_inside_a_real_opacus_privacy_engine():
    torch = pytest.importorskip("torch")
    opacus = pytest.importorskip("opacus")
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 4), torch.randint(0, 2, (64,)))
    loader = torch.utils.data.DataLoader(data, batch_size=16)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    engine = opacus.PrivacyEngine()
    engine.accountant = PLDOpacusAccountant(accuracy=COARSE)
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    assert len(engine.accountant) == 4
    reference = plda.PLDAccountant(accuracy=COARSE)
    reference.step(1.0, 16 / 64, count=4)
    assert engine.get_epsilon(DELTA) == reference.epsilon(DELTA)


# ---------------------------------------------- one-pass epochs and loaders (no torch needed)
def test_one_pass_epochs_refuse_steps_across_epochs_and_bad_states():
    from plda.adapters.epochs import OnePassEpochs

    acct = PLDOpacusAccountant()
    with pytest.raises(ValueError, match="relation='replace_one'"):
        acct.account_one_pass(4)
    assert acct.sampler == "poisson"
    acct = PLDOpacusAccountant(relation="replace_one", accuracy=COARSE)
    acct.account_one_pass(4)
    acct.step(noise_multiplier=2.0, sample_rate=0.5)  # two batches (gradient accumulation)
    with pytest.raises(ValueError, match="runs past the end of the epoch"):
        acct.step(noise_multiplier=2.0, sample_rate=0.75)
    with pytest.raises(ValueError, match="whole number of batches"):
        acct.step(noise_multiplier=2.0, sample_rate=0.3)
    with pytest.raises(ValueError, match="already holds 1 steps"):
        acct.account_one_pass(4)
    assert len(acct) == 1 and acct.epochs.batches == 2
    acct.step(noise_multiplier=1.0, sample_rate=0.5)  # the epoch ends: the smaller sigma counts
    assert acct.accountant.history == ((plda.Shuffled(plda.Gaussian(sigma=1.0), 2), 1),)
    assert acct.epochs.lower.history == (
        (plda.Shuffled(plda.Gaussian(sigma=2.0), 2).lower_bound_mechanism(), 1),
    )
    state = json.loads(json.dumps(acct.state_dict()))
    fresh = PLDOpacusAccountant()
    fresh.load_state_dict(state)
    assert fresh.sampler == "shuffled" and fresh.accountant.history == acct.accountant.history
    for bad in ({}, {**state["one_pass"], "batches": 4}, {**state["one_pass"], "pending": [1.0]}):
        with pytest.raises(ValueError):
            OnePassEpochs.from_state_dict(bad)
    with pytest.raises(ValueError, match="replace_one"):
        OnePassEpochs.from_state_dict({**state["one_pass"], "upper": PLDAccountant().state_dict()})
    acct.history = [(1.0, 0.1, 3)]  # assigning a history records Poisson steps
    assert acct.sampler == "poisson" and len(acct) == 3


@dataclass
class BatchSampler:
    sampler: object
    batch_size: int
    drop_last: bool = False


@dataclass
class RandomSampler:
    data: list
    replacement: bool = False

    def __len__(self):
        return len(self.data)


@dataclass
class DataLoader:
    dataset: list
    batch_sampler: object

    def __len__(self):
        b = self.batch_sampler
        full, rest = divmod(len(self.dataset), b.batch_size)
        return full + (rest > 0 and not b.drop_last)


def test_describe_loader_is_duck_typed():
    from plda.adapters.loaders import describe_loader

    data = list(range(10))
    found = describe_loader(DataLoader(data, BatchSampler(RandomSampler(data), 3)))
    assert (found.kind, found.num_batches, found.every_record_once) == ("shuffled", 4, True)
    found = describe_loader(DataLoader(data, BatchSampler(RandomSampler(data), 3, True)))
    assert not found.every_record_once and "drop_last" in found.description
    found = describe_loader(DataLoader(data, BatchSampler(RandomSampler(data), 5, True)))
    assert found.every_record_once  # nothing dropped
    found = describe_loader(DataLoader(data, BatchSampler(RandomSampler(data[:5]), 5)))
    assert not found.every_record_once and "drawing 5 of 10" in found.description
    found = describe_loader(DataLoader(data, BatchSampler(RandomSampler(data, True), 5)))
    assert found.kind == "with_replacement" and not found.every_record_once
    assert describe_loader(object()).kind == "unknown"


def test_mixture_of_gaussians_event_against_dp_accounting_pld():
    dpa = pytest.importorskip("dp_accounting")
    event_type = getattr(dpa.dp_event, "MixtureOfGaussiansDpEvent", None)
    if event_type is None:
        pytest.skip("this dp_accounting has no MixtureOfGaussiansDpEvent")
    # gradient accumulation over 4 micro-batches at q = 0.05 (issue 24), composed 20 times
    mixture = plda.PoissonSampled(plda.Gaussian(0.8), 0.05, group_size=4).group_mixture()
    event = dpa.SelfComposedDpEvent(
        event_type(0.8, list(mixture.sensitivities), list(mixture.probabilities)), 20)
    assert mechanisms_from_dp_event(event) == ((mixture, 20),)
    ours = from_dp_event(event).epsilon_bounds(DELTA)
    # dp_accounting's pessimistic PLD on a 1e-2 loss grid (its default 1e-4 takes a minute): an
    # upper bound on the truth, so above our lower bound, and above our upper one by at most
    # its grid's overshoot
    theirs = dpa.pld.PLDAccountant(value_discretization_interval=1e-2).compose(event)
    theirs = theirs.get_epsilon(DELTA)
    assert ours.lower <= theirs <= ours.upper + 0.02
    assert ours.upper <= theirs * (1 + 2e-3)  # our interval is 1e-3 wide, relative
    # no noise: no guarantee; nothing shifted: nothing released; replace-one: refused, as
    # dp_accounting refuses it
    assert math.isinf(from_dp_event(event_type(0.0, [0.0, 1.0], [0.5, 0.5])).epsilon(DELTA))
    assert from_dp_event(event_type(0.0, [0.0], [1.0])).epsilon(DELTA) == 0.0
    assert from_dp_event(event_type(1.0, [0.0, 0.0], [0.5, 0.5])).epsilon(DELTA) == 0.0
    with pytest.raises(ValueError, match="replace-one"):
        from_dp_event(event, relation="replace_one").epsilon(DELTA)
    with pytest.raises(ValueError, match="sum to 1"):
        from_dp_event(event_type(1.0, [0.0, 1.0], [0.5, 0.6]))


# --------------------------------------------- one spelling, one len() (issue 25, item 6)
def test_len_counts_training_steps_on_the_accountant_and_every_adapter():
    from plda.adapters.epochs import OnePassEpochs

    accountant = PLDAccountant(relation="replace_one")
    accountant.step(1.0, count=8, sampler="shuffled", num_steps=4)
    accountant.step(1.0, 0.01, count=3)
    assert len(accountant) == 11 and accountant.pld.count == 5  # two epochs of 4, then 3
    opacus_like = PLDOpacusAccountant(relation="replace_one")
    opacus_like.account_one_pass(num_batches=4)
    epochs = OnePassEpochs(num_batches=4, accuracy=1e-3)
    for _ in range(9):  # two epochs and one step of the third
        opacus_like.step(noise_multiplier=1.0, sample_rate=0.25)
        epochs.step(1.0)
    assert len(opacus_like) == len(epochs) == 9
    poisson = PLDOpacusAccountant()
    poisson.step(noise_multiplier=1.0, sample_rate=0.01)
    assert len(poisson) == len(poisson.accountant) == 1
    dp_accounting = pytest.importorskip("dp_accounting")
    from plda.adapters import PLDPrivacyAccountant

    adapter = PLDPrivacyAccountant()
    assert len(adapter) == 0
    step = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0))
    adapter.compose(step, 7)
    assert len(adapter) == len(adapter.accountant) == 7


def test_the_adapters_answer_plda_queries_under_plda_names_and_warn_on_the_old_ones():
    opacus_like = PLDOpacusAccountant()
    for _ in range(5):
        opacus_like.step(noise_multiplier=1.0, sample_rate=0.01)
    bounds = opacus_like.epsilon_bounds(DELTA)
    assert bounds.upper == opacus_like.get_epsilon(DELTA)
    with pytest.warns(DeprecationWarning, match="0.2.0.*epsilon_bounds"):
        assert opacus_like.get_epsilon_bounds(DELTA) == bounds
    dp_accounting = pytest.importorskip("dp_accounting")
    from plda.adapters import PLDPrivacyAccountant

    adapter = PLDPrivacyAccountant()
    step = dp_accounting.PoissonSampledDpEvent(0.01, dp_accounting.GaussianDpEvent(1.0))
    adapter.compose(step, 5)
    epsilon_bounds, delta_bounds = adapter.epsilon_bounds(DELTA), adapter.delta_bounds(1.0)
    assert epsilon_bounds == bounds  # the same steps, the same certified answer
    assert delta_bounds.upper == adapter.get_delta(1.0)
    with pytest.warns(DeprecationWarning, match="0.2.0.*epsilon_bounds"):
        assert adapter.get_epsilon_bounds(DELTA) == epsilon_bounds
    with pytest.warns(DeprecationWarning, match="0.2.0.*delta_bounds"):
        assert adapter.get_delta_bounds(1.0) == delta_bounds
    for name in ("epsilon_bounds", "delta_bounds"):  # the accountant's names
        assert callable(getattr(PLDAccountant, name)) and callable(getattr(adapter, name))
