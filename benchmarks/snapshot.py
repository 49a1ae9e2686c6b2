#!/usr/bin/env python
"""Reference answers of plda, printed bit for bit (``repr`` of every float), to check that a
refactoring changes no number: run it before and after and ``diff`` the two outputs.

Covers the engine cases B1-B6 of ``run_engine.py``, the samplers (fixed-size batches, truncated
Poisson, shuffled epochs, random allocation) under both relations, Laplace, gradient
accumulation, the conversions (tradeoff, Renyi, zCDP, Gaussian-DP mu, membership-inference
risk) and the accountant's per-step schedule S1 of ``run_accountant.py`` (its final epsilon).

Usage::

    python benchmarks/snapshot.py > before.txt   # ... refactor ...
    python benchmarks/snapshot.py > after.txt && diff before.txt after.txt
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's plda

import plda  # noqa: E402

PLD = plda.PrivacyLossDistribution


def show(name, value) -> None:
    if isinstance(value, tuple):
        value = tuple(np.asarray(v).tolist() for v in value)
    else:
        value = np.asarray(value).tolist()
    print(f"{name}: {value!r}", flush=True)


def cases():
    g, lap = plda.Gaussian, plda.Laplace
    yield "B1", PLD.from_mechanism(plda.PoissonSampled(g(1.0), 0.01), 1000), 1e-5
    yield "B2", PLD.from_mechanism(plda.PoissonSampled(g(1.1), 256 / 60000), 14062), 1e-5
    yield "B3", PLD.from_mechanism(plda.PoissonSampled(g(0.8), 0.001), 100000), 1e-6
    yield "B4", PLD.from_mechanism(g(10.0), 1000), 1e-5
    yield "B5", PLD.from_mechanism(lap(10.0), 100), 1e-5
    b6 = PLD(tuple((g(float(s)), 1) for s in np.linspace(1, 5, 50))
             + tuple((lap(1 / float(e)), 1) for e in np.linspace(0.01, 0.1, 50)))
    yield "B6", b6, 1e-6
    for relation in ("add_remove", "replace_one"):
        wor = plda.SampledWithoutReplacement(g(1.0), 64, 6400)
        yield f"WOR-{relation}", PLD.from_mechanism(wor, 300, relation=relation), 1e-5
        trunc = plda.TruncatedPoisson(g(1.0), 0.01, 80, 6400)
        yield f"Truncated-{relation}", PLD.from_mechanism(trunc, 300, relation=relation), 1e-5
        shuffled = plda.Shuffled(g(1.0), 20)
        yield f"Shuffled-{relation}", PLD.from_mechanism(shuffled, 3, relation=relation), 1e-5
    yield "Allocation", PLD.from_mechanism(plda.RandomAllocation(g(1.0), 20), 3), 1e-5
    yield "Laplace-Poisson", PLD.from_mechanism(plda.PoissonSampled(lap(2.0), 0.05), 200), 1e-5
    accumulation = plda.PoissonSampled(plda.Gaussian(1.0), 0.005, group_size=4)
    yield "Accumulation", PLD.from_mechanism(accumulation, 500), 1e-5


def main() -> None:
    warnings.simplefilter("ignore")
    for name, pld, delta in cases():
        plda.clear_caches()
        show(f"{name} epsilon_bounds({delta:g})", tuple(pld.epsilon_bounds(delta)))
        show(f"{name} delta_bounds([0, 1, 2])", tuple(pld.delta_bounds(np.array([0.0, 1, 2]))))
    b1 = PLD.from_mechanism(plda.PoissonSampled(plda.Gaussian(1.0), 0.01), 1000)
    alpha = np.array([1e-4, 1e-2, 0.1, 0.5])
    show("B1 tradeoff_bounds", tuple(b1.tradeoff_bounds(alpha)))
    show("B1 renyi_bounds", tuple(b1.renyi_bounds(np.array([1.5, 2.0, 8.0, 32.0]))))
    show("B1 zcdp", b1.zcdp())
    show("B1 gdp_mu", b1.gdp_mu())
    show("B1 true_positive_rate_bounds", tuple(b1.true_positive_rate_bounds(1e-3)))
    show("B1 advantage_bounds", tuple(b1.advantage_bounds()))
    # the accountant: S1 of run_accountant.py (a new sigma at every step), its last query
    plda.clear_caches()
    accountant = plda.PLDAccountant()
    for t in range(1000):
        accountant.step(noise_multiplier=0.8 + 0.4 * t / 1000, sample_rate=0.01)
        if (t + 1) % 100 == 0:
            show(f"S1 epsilon_bounds after {t + 1}", tuple(accountant.epsilon_bounds(1e-5)))
    calibrated = plda.calibrate_noise_multiplier(1.0, 1e-5, sample_rate=0.01, steps=1000)
    show("calibrate_noise_multiplier", calibrated)


if __name__ == "__main__":
    main()
