"""Adapters: dp_accounting events -> PLD (duck-typed), the Opacus-style accountant."""

import dataclasses
import json
import math
from dataclasses import dataclass

import pytest

import plda
from plda.adapters.dp_accounting import from_dp_event, mechanisms_from_dp_event
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
class RandomizedResponseDpEvent:
    noise_parameter: float
    num_buckets: int


@dataclass
class ZCDpEvent:
    rho: float


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
        (plda.ApproximateDP(epsilon=math.log(3.0)), 1),  # keeps truth w.p. 3/4: eps = log 3
    )
    got = mechanisms_from_dp_event(event)
    assert [count for _, count in got] == [count for _, count in expected]
    for (mechanism, _), (reference, _) in zip(got, expected, strict=True):
        assert _same_mechanism(mechanism, reference)
    pld = from_dp_event(event, accuracy=COARSE)
    assert pld.count == 104


def test_noop_is_free_and_unsupported_events_are_named():
    assert from_dp_event(NoOpDpEvent()).epsilon(DELTA) == 0.0
    with pytest.raises(ValueError, match="ZCDpEvent"):
        from_dp_event(ComposedDpEvent([GaussianDpEvent(1.0), ZCDpEvent(0.1)]))
    with pytest.raises(ValueError, match="not supported"):
        from_dp_event(PoissonSampledDpEvent(0.1, SelfComposedDpEvent(GaussianDpEvent(1.0), 2)))
    with pytest.raises(ValueError, match="sigma"):
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


# ------------------------------------------------------------------------------- opacus
class FakeOptimizer:
    noise_multiplier = 1.1
    accumulated_iterations = 1


def test_opacus_style_accountant_interface():
    acct = PLDOpacusAccountant(accuracy=COARSE)
    assert acct.mechanism() == PLDOpacusAccountant.mechanism() == "plda-pld"
    assert len(acct) == 0 and acct.get_epsilon(DELTA) == 0.0
    hook = acct.get_optimizer_hook_fn(sample_rate=0.01)
    for _ in range(20):
        hook(FakeOptimizer())
    acct.step(noise_multiplier=1.1, sample_rate=0.01)
    assert len(acct) == 21
    assert acct.history == [(1.1, 0.01, 21)]
    reference = plda.accountant.PLDAccountant(accuracy=COARSE)
    reference.step(1.1, 0.01, count=21)
    assert acct.get_epsilon(DELTA) == reference.epsilon(DELTA)
    lower, upper = acct.get_epsilon_bounds(DELTA)
    assert lower <= upper == acct.get_epsilon(DELTA)


def test_opacus_style_state_dict_round_trip_and_refusal():
    acct = PLDOpacusAccountant(accuracy=COARSE)
    acct.step(noise_multiplier=1.0, sample_rate=0.02)
    state = json.loads(json.dumps(acct.state_dict()))
    other = PLDOpacusAccountant()
    other.load_state_dict(state)
    assert len(other) == 1 and other.get_epsilon(DELTA) == acct.get_epsilon(DELTA)
    for bad in ({}, {"mechanism": "rdp", "history": []}, {"mechanism": "plda-pld"}):
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
    reference = plda.accountant.PLDAccountant(accuracy=COARSE)
    reference.step(1.0, 16 / 64, count=4)
    assert engine.get_epsilon(DELTA) == reference.epsilon(DELTA)
