"""The Opacus adapter inside a real ``PrivacyEngine`` (CPU torch; skipped without torch/opacus).

Run with: ``pip install torch==2.13.0 opacus`` (CPU wheels) then
``python -m pytest -q tests/test_opacus.py``.
"""

import math
import re
import warnings
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")

from opacus.accountants import IAccountant, create_accountant  # noqa: E402
from opacus.accountants.utils import get_noise_multiplier  # noqa: E402

import plda  # noqa: E402
from plda.adapters.opacus import PLDOpacusAccountant, check_sampler  # noqa: E402

DELTA = 1e-5
N, BATCH = 64, 16


def _setup(shuffle=False):
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(N, 4), torch.randint(0, 2, (N,)))
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, shuffle=shuffle)
    model = torch.nn.Linear(4, 2)
    return model, torch.optim.SGD(model.parameters(), lr=0.1), loader


def _train(model, optimizer, loader):
    for x, y in loader:
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


def _reference(noise_multiplier, sample_rate, steps):
    reference = plda.PLDAccountant()
    reference.step(noise_multiplier, sample_rate, count=steps)
    return reference


def test_registered_under_plda():
    acct = create_accountant("plda")
    assert type(acct) is PLDOpacusAccountant and isinstance(acct, IAccountant)
    assert acct.mechanism() == "plda" and len(acct) == 0
    assert repr(acct) == "PLDOpacusAccountant(relation='add_remove', accuracy=0.001, steps=0)"


def test_privacy_engine_trains_and_reports_certified_bounds():
    model, optimizer, loader = _setup()
    engine = opacus.PrivacyEngine(accountant="plda")
    with warnings.catch_warnings():
        warnings.simplefilter("error", plda.SamplerMismatchWarning)  # Poisson: no warning
        model, optimizer, loader = engine.make_private(
            module=model,
            optimizer=optimizer,
            data_loader=loader,
            noise_multiplier=1.0,
            max_grad_norm=1.0,
        )
    _train(model, optimizer, loader)
    _train(model, optimizer, loader)
    assert len(engine.accountant) == 2 * N // BATCH
    assert engine.accountant.history == [(1.0, BATCH / N, 2 * N // BATCH)]
    reference = _reference(1.0, BATCH / N, 2 * N // BATCH)
    assert engine.get_epsilon(DELTA) == pytest.approx(reference.epsilon(DELTA), rel=1e-12)
    bounds = engine.accountant.epsilon_bounds(DELTA)
    assert isinstance(bounds, plda.Bounds)
    assert 0 < bounds.lower <= bounds.upper == engine.get_epsilon(DELTA)
    assert "steps=8" in repr(engine.accountant)


def _delivered(relation, poisson, strict=True, target=2.0, epochs=2):
    """A real make_private_with_epsilon run: (sigma, engine) after ``epochs`` epochs."""
    model, optimizer, loader = _setup(shuffle=not poisson)
    engine = opacus.PrivacyEngine(accountant="plda")
    engine.accountant = PLDOpacusAccountant(relation=relation, strict=strict)
    model, optimizer, loader = engine.make_private_with_epsilon(
        module=model, optimizer=optimizer, data_loader=loader, target_epsilon=target,
        target_delta=DELTA, epochs=epochs, max_grad_norm=1.0, poisson_sampling=poisson,
    )
    for _ in range(epochs):
        _train(model, optimizer, loader)
    return optimizer.noise_multiplier, engine


@pytest.mark.parametrize(
    "relation, poisson",
    [("add_remove", True), ("replace_one", True), ("replace_one", False)],
)
def test_make_private_with_epsilon_meets_the_target(relation, poisson):
    # issue 24 item 3: under replace-one the run delivered 5.57 for a target of 2.0's setting
    # (4.955 for 4.0 on the issue's); a shuffled loader under replace-one delivered 12.2 for 4.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", plda.PLDAWarning)  # a sound accounting: no warning
        sigma, engine = _delivered(relation, poisson)
    eps = engine.get_epsilon(DELTA)
    assert len(engine.accountant) == 2 * N // BATCH
    assert engine.accountant.sampler == ("poisson" if poisson else "shuffled")
    # Opacus bisects to within its epsilon_tolerance (0.01) below the target; plda's own
    # calibration (used where Opacus's misses) to within its rtol 1e-3
    assert 2.0 - 0.011 <= eps <= 2.0
    # the delivered number is the independent composition of what ran
    reference = plda.PLDAccountant(relation=relation)
    if poisson:
        reference.step(sigma, BATCH / N, count=2 * N // BATCH)
    else:
        reference.compose(plda.Shuffled(plda.Gaussian(sigma=sigma), num_steps=N // BATCH), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        assert eps == pytest.approx(reference.epsilon(DELTA), rel=1e-9)
    if poisson:
        calibrated = plda.calibrate_noise_multiplier(
            2.0, DELTA, BATCH / N, 2 * N // BATCH, relation=relation)
        assert sigma == pytest.approx(calibrated, rel=2e-2)


def test_make_private_with_epsilon_refuses_a_shuffled_loader_under_add_remove_before_training():
    # issue 24 item 4: it warned (a UserWarning) and reported the Poisson number
    with pytest.raises(ValueError, match="relation='replace_one'.*poisson_sampling=True"):
        _delivered("add_remove", poisson=False)


def test_make_private_with_epsilon_not_strict_accounts_as_poisson_and_says_it_is_not_certified():
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", UserWarning)  # what training scripts do: plda's stay
        sigma, engine = _delivered("add_remove", poisson=False, strict=False)
    mismatches = [w for w in got if w.category is plda.SamplerMismatchWarning]
    assert len(mismatches) == 1 and mismatches[0].filename == __file__
    assert "NOT certified" in str(mismatches[0].message)
    assert engine.accountant.sampler == "poisson"
    assert engine.get_epsilon(DELTA) <= 2.0


def test_mechanism_names_the_registry_entry_of_the_relation():
    assert PLDOpacusAccountant.mechanism() == "plda"  # Opacus declares a class method
    assert PLDOpacusAccountant().mechanism() == "plda"
    replace = PLDOpacusAccountant(relation="replace_one")
    assert replace.mechanism() == "plda-replace_one"
    created = create_accountant(replace.mechanism())
    assert isinstance(created, PLDOpacusAccountant)
    assert created.accountant.relation == "replace_one"
    kwargs = dict(target_epsilon=1.0, target_delta=DELTA, sample_rate=0.05, steps=40)
    sigma = get_noise_multiplier(**kwargs, accountant=replace.mechanism(), epsilon_tolerance=1e-3)
    ours = plda.calibrate_noise_multiplier(1.0, DELTA, 0.05, 40, relation="replace_one")
    assert sigma == pytest.approx(ours, rel=2e-3)
    with pytest.raises(TypeError, match="strict"):
        PLDOpacusAccountant(strict="yes")


def test_get_noise_multiplier_with_plda_matches_plda_calibration_and_beats_rdp():
    kwargs = dict(target_epsilon=1.0, target_delta=DELTA, sample_rate=0.01, steps=500)
    sigma = get_noise_multiplier(**kwargs, accountant="plda", epsilon_tolerance=1e-3)
    ours = plda.calibrate_noise_multiplier(1.0, DELTA, 0.01, 500)
    assert sigma == pytest.approx(ours, rel=2e-3)
    assert _reference(sigma, 0.01, 500).epsilon(DELTA) <= 1.0
    # the PLD needs less noise than RDP's conversion for the same certified target
    assert sigma < get_noise_multiplier(**kwargs, accountant="rdp", epsilon_tolerance=1e-3)


def test_history_assignment_replaces_state_and_refuses_bad_entries():
    acct = PLDOpacusAccountant()
    acct.history = [(1.0, 0.02, 10), (2.0, 0.01, 5)]
    assert len(acct) == 15 and acct.history == [(1.0, 0.02, 10), (2.0, 0.01, 5)]
    for bad in ([(1.0, 2.0, 3)], [(1.0, 0.1)], [(0.0, 0.1, 3)]):
        with pytest.raises(ValueError):
            acct.history = bad
        assert len(acct) == 15


def test_checkpoint_save_and_load(tmp_path):
    model, optimizer, loader = _setup()
    engine = opacus.PrivacyEngine(accountant="plda")
    model, optimizer, loader = engine.make_private(
        module=model,
        optimizer=optimizer,
        data_loader=loader,
        noise_multiplier=1.2,
        max_grad_norm=1.0,
    )
    _train(model, optimizer, loader)
    path = tmp_path / "checkpoint.pt"
    engine.save_checkpoint(path=path, module=model, optimizer=optimizer)
    model2, optimizer2, loader2 = _setup()
    restored = opacus.PrivacyEngine(accountant="plda")
    model2, optimizer2, loader2 = restored.make_private(
        module=model2,
        optimizer=optimizer2,
        data_loader=loader2,
        noise_multiplier=1.2,
        max_grad_norm=1.0,
    )
    restored.load_checkpoint(path=path, module=model2, optimizer=optimizer2)
    assert len(restored.accountant) == len(engine.accountant) == N // BATCH
    assert restored.get_epsilon(DELTA) == engine.get_epsilon(DELTA)
    _train(model2, optimizer2, loader2)  # training continues on the restored budget
    assert restored.get_epsilon(DELTA) > engine.get_epsilon(DELTA)


@pytest.mark.parametrize("shuffle, kind", [(True, "shuffled"), (False, "sequential")])
def test_fixed_size_batches_under_add_remove_are_refused_in_make_private(shuffle, kind):
    model, optimizer, loader = _setup(shuffle=shuffle)
    engine = opacus.PrivacyEngine(accountant="plda")
    with pytest.raises(ValueError, match=f"{kind}.*relation='replace_one'.*poisson_sampling=True"):
        engine.make_private(
            module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=1.0,
            max_grad_norm=1.0, poisson_sampling=False,
        )
    assert len(engine.accountant) == 0 and engine.accountant.sampler == "poisson"
    # the refusal took make_private's hooks off the model: it can be made private again
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    _train(model, optimizer, loader)
    assert len(engine.accountant) == N // BATCH
    with pytest.warns(plda.SamplerMismatchWarning) as got:
        assert check_sampler(_setup(shuffle=shuffle)[2]) == kind
    assert got[0].filename == __file__


@pytest.mark.parametrize("shuffle, kind", [(True, "shuffled"), (False, "sequential")])
def test_fixed_size_batches_not_strict_warn_once_at_the_users_line(shuffle, kind):
    model, optimizer, loader = _setup(shuffle=shuffle)
    engine = opacus.PrivacyEngine(accountant="plda")
    engine.accountant = PLDOpacusAccountant(strict=False)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=1.0,
            max_grad_norm=1.0, poisson_sampling=False,
        )
        _train(model, optimizer, loader)
    mismatches = [w for w in got if issubclass(w.category, plda.PLDAWarning)]
    assert len(mismatches) == 1 and mismatches[0].filename == __file__  # the user's call
    assert mismatches[0].category is plda.SamplerMismatchWarning
    assert re.search(f"{kind}.*NOT certified", str(mismatches[0].message))
    assert engine.accountant.sampler == "poisson" and len(engine.accountant) == N // BATCH


def test_check_sampler_names_poisson_and_other_samplers():
    _, _, loader = _setup()
    dp_loader = opacus.data_loader.DPDataLoader.from_data_loader(loader)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert check_sampler(dp_loader) == "poisson"
    data = loader.dataset
    weighted = torch.utils.data.DataLoader(
        data, batch_size=4, sampler=torch.utils.data.WeightedRandomSampler([1.0] * N, N)
    )
    replaced = torch.utils.data.DataLoader(
        data, batch_size=4, sampler=torch.utils.data.RandomSampler(data, replacement=True)
    )
    for loader, kind in ((weighted, "weighted"), (replaced, "with_replacement")):
        with pytest.warns(plda.SamplerMismatchWarning):
            assert check_sampler(loader) == kind
    assert math.isfinite(_reference(1.0, 0.25, 4).epsilon(DELTA))


def test_howto_page_examples_run(tmp_path, monkeypatch):
    # the page's blocks are skipped by tests/test_docs.py (they need torch, opacus and
    # dp_accounting): run them here, where those are installed
    pytest.importorskip("dp_accounting")
    monkeypatch.chdir(tmp_path)
    page = Path(__file__).resolve().parents[1] / "docs" / "howto" / "opacus-and-dp-accounting.md"
    blocks = re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"), re.S | re.M)
    assert len(blocks) == 5
    namespace: dict = {"__name__": "__docs__"}
    for block in blocks:
        exec(compile(block, str(page), "exec"), namespace)  # noqa: S102 - the docs are the test
    assert namespace["engine"].get_epsilon(1e-5) <= 2.0
    accumulation = plda.PoissonSampled(plda.Gaussian(0.8), 1 / 8, group_size=2)
    assert namespace["accumulating"].accountant.accountant.history == ((accumulation, 4),)
    assert namespace["sigma"] == pytest.approx(
        plda.calibrate_noise_multiplier(1.0, 1e-5, 0.01, 1000), rel=1e-3
    )


# ------------------------------------------------------- loaders that use every record once
def _replace_one_engine():
    engine = opacus.PrivacyEngine(accountant="plda")
    engine.accountant = PLDOpacusAccountant(relation="replace_one")
    return engine


def _steps(model, optimizer, loader, count):
    for step, (x, y) in enumerate(loader):
        if step == count:
            return
        optimizer.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()


@pytest.mark.parametrize("shuffle", [True, False])
def test_one_pass_loader_is_accounted_as_shuffled_epochs_under_replace_one(shuffle, tmp_path):
    model, optimizer, loader = _setup(shuffle=shuffle)
    engine = _replace_one_engine()
    with warnings.catch_warnings():
        warnings.simplefilter("error", plda.SamplerMismatchWarning)  # accounted: no warning
        model, optimizer, loader = engine.make_private(
            module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=1.0,
            max_grad_norm=1.0, poisson_sampling=False,
        )
    acct = engine.accountant
    assert acct.sampler == "shuffled" and acct.epochs.num_batches == N // BATCH
    _train(model, optimizer, loader)
    _train(model, optimizer, loader)
    _steps(model, optimizer, loader, 2)  # half of a third epoch
    assert len(acct) == 2 * N // BATCH + 2
    epoch = plda.Shuffled(plda.Gaussian(sigma=1.0), num_steps=N // BATCH)
    assert acct.accountant.history == ((epoch, 2),)  # the accountant records the sampler
    assert acct.history == [(1.0, BATCH / N, 8), (1.0, 1 / (N // BATCH), 1),
                            (1.0, 1 / (N // BATCH), 1)]
    # upper: the unfinished epoch counts as a whole one; lower: the finished epochs' realized
    # pairs (the unfinished one left out)
    upper = plda.PLDAccountant(relation="replace_one")
    upper.compose(epoch, 3)
    lower = plda.PLDAccountant(relation="replace_one")
    lower.compose(epoch.lower_bound_mechanism(), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        expected = upper.epsilon(DELTA)
    bounds = acct.epsilon_bounds(DELTA)
    # (the same recipe, composed along another path: equal to rounding)
    assert engine.get_epsilon(DELTA) == bounds.upper == pytest.approx(expected, rel=1e-9)
    assert bounds.lower == pytest.approx(lower.epsilon_bounds(DELTA).lower, rel=1e-9)
    # the Poisson number for the same steps is below the certified lower bound: reporting it
    # would under-report (12.7 <= epsilon <= 20.1 against Poisson's 6.0 add/remove, 8.0 replace)
    for relation in ("add_remove", "replace_one"):
        poisson = plda.PLDAccountant(relation=relation)
        poisson.step(1.0, BATCH / N, count=len(acct))
        assert poisson.epsilon(DELTA) < bounds.lower
    # checkpoints keep the unfinished epoch
    path = tmp_path / "checkpoint.pt"
    engine.save_checkpoint(path=path, module=model, optimizer=optimizer)
    model2, optimizer2, loader2 = _setup(shuffle=shuffle)
    restored = _replace_one_engine()
    model2, optimizer2, loader2 = restored.make_private(
        module=model2, optimizer=optimizer2, data_loader=loader2, noise_multiplier=1.0,
        max_grad_norm=1.0, poisson_sampling=False,
    )
    restored.load_checkpoint(path=path, module=model2, optimizer=optimizer2)
    assert restored.accountant.epsilon_bounds(DELTA) == bounds
    _steps(model2, optimizer2, loader2, 2)  # finishes the third epoch
    assert restored.accountant.accountant.history == ((epoch, 3),)
    assert restored.accountant.epsilon_bounds(DELTA).upper == pytest.approx(bounds.upper,
                                                                                rel=1e-9)
    assert restored.accountant.epsilon_bounds(DELTA).lower > bounds.lower


def _loader(**kwargs):
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(N, 4), torch.randint(0, 2, (N,)))
    return torch.utils.data.DataLoader(data, **kwargs)


@pytest.mark.parametrize("strict", [True, False])
@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(batch_size=12, shuffle=True, drop_last=True), "drop_last=False"),
        (dict(batch_size=BATCH, sampler="weighted"), "WeightedRandomSampler draws with replace"),
        (dict(batch_size=BATCH, sampler="replacement"), "no sound analysis of sampling with"),
    ],
)
def test_loaders_without_a_sound_analysis_are_refused_or_flagged(kwargs, match, strict):
    if kwargs.get("sampler") == "weighted":
        kwargs["sampler"] = torch.utils.data.WeightedRandomSampler([1.0] * N, N)
    elif kwargs.get("sampler") == "replacement":
        kwargs["sampler"] = torch.utils.data.RandomSampler(range(N), replacement=True)
    model = torch.nn.Linear(4, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    engine = opacus.PrivacyEngine(accountant="plda")
    engine.accountant = PLDOpacusAccountant(relation="replace_one", strict=strict)
    call = dict(module=model, optimizer=optimizer, data_loader=_loader(**kwargs),
                noise_multiplier=1.0, max_grad_norm=1.0, poisson_sampling=False)
    if strict:
        with pytest.raises(ValueError, match=match):
            engine.make_private(**call)
        return
    with pytest.warns(plda.SamplerMismatchWarning, match=match) as got:
        engine.make_private(**call)
    assert engine.accountant.sampler == "poisson"
    assert [w.filename for w in got if w.category is plda.SamplerMismatchWarning] == [__file__]


def test_poisson_loader_after_one_pass_steps_is_refused():
    acct = PLDOpacusAccountant(relation="replace_one")
    acct.account_one_pass(4)
    acct.step(noise_multiplier=1.0, sample_rate=0.25)
    model, optimizer, loader = _setup()
    engine = opacus.PrivacyEngine(accountant="plda")
    engine.accountant = acct
    with pytest.raises(ValueError, match="already holds 1 steps.*new PrivacyEngine"):
        engine.make_private(
            module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=1.0,
            max_grad_norm=1.0,
        )
    assert acct.sampler == "shuffled" and len(acct) == 1


def _train_accumulating(model, optimizer, loader, micro_batches):
    """Gradient accumulation: ``optimizer.step()`` every ``micro_batches`` batches."""
    for i, (x, y) in enumerate(loader):
        torch.nn.functional.cross_entropy(model(x), y).backward()
        if (i + 1) % micro_batches == 0:
            optimizer.step()
            optimizer.zero_grad()


def test_gradient_accumulation_is_accounted_as_the_mixture_not_one_step_at_m_times_the_rate():
    # issue 24: each of the m Poisson batches is sampled anew, so a record can be in several;
    # Opacus's own accountants (and plda before) record one step at rate m q
    model, optimizer, loader = _setup()
    engine = opacus.PrivacyEngine(accountant="plda")
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=0.8,
        max_grad_norm=1.0,
    )
    model.allow_grad_accumulation()  # Opacus refuses accumulating Poisson batches without it
    rate = 1 / len(loader)  # Opacus passes the rate of one batch to the hook
    assert rate == BATCH / N
    for _ in range(2):
        _train_accumulating(model, optimizer, loader, 2)  # 4 batches: 2 optimizer steps
    mixture = plda.PoissonSampled(plda.Gaussian(0.8), rate, group_size=2)
    assert engine.accountant.accountant.history == ((mixture, 4),)
    assert len(engine.accountant) == 4
    assert engine.accountant.history == []  # no (sigma, q, steps) triple describes them
    reference = plda.PLDAccountant()
    reference.compose(mixture, 4)
    assert engine.get_epsilon(DELTA) == reference.epsilon(DELTA)
    bounds = engine.accountant.epsilon_bounds(DELTA)
    assert bounds.lower <= bounds.upper == engine.get_epsilon(DELTA)
    old = _reference(0.8, 2 * rate, 4)  # what the one step at rate m q reported
    assert old.epsilon(DELTA) < bounds.lower
    # the checkpoint keeps the mixture
    restored = PLDOpacusAccountant()
    restored.load_state_dict(engine.accountant.state_dict())
    assert restored.accountant.history == ((mixture, 4),)


def test_batch_memory_manager_records_one_poisson_step_per_logical_batch():
    # BatchMemoryManager splits one Poisson batch into physical batches: a record is in at most
    # one of them, and the optimizer step sees accumulated_iterations = 1
    from opacus.utils.batch_memory_manager import BatchMemoryManager

    model, optimizer, loader = _setup()
    engine = opacus.PrivacyEngine(accountant="plda")
    model, optimizer, loader = engine.make_private(
        module=model, optimizer=optimizer, data_loader=loader, noise_multiplier=1.0,
        max_grad_norm=1.0,
    )
    with BatchMemoryManager(data_loader=loader, max_physical_batch_size=4,
                            optimizer=optimizer) as physical:
        _train(model, optimizer, physical)
    steps = len(engine.accountant)
    assert steps == N // BATCH
    assert engine.accountant.history == [(1.0, BATCH / N, steps)]
