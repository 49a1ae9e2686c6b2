#!/usr/bin/env python
"""Beyond epsilon(delta): speed of the tradeoff / Rényi conversions and RDP accounting compared.

1. Speed on B2 (Poisson-sampled Gaussian, q = 256/60000, sigma = 1.1, 14062 steps), after the
   composition is materialized: a 1,000-point tradeoff curve (certified bounds), the
   membership-inference reading, a 100-order Rényi curve, Gaussian DP and zCDP.
2. RDP accounting on the same compositions: plda's certified Rényi curve converted with the
   Canonne–Kamath–Steinke bound, next to dp_accounting's ``RdpAccountant`` and Opacus's
   ``RDPAccountant`` (same conversion), Opacus's GDP accountant (central-limit approximation,
   not a bound) and plda's PLD epsilon for reference.
3. Rényi values at integer orders: plda's (lower, upper) against the peers' values.

Peers are optional (reported as not installed). Usage::

    python benchmarks/run_conversions.py            # -> benchmarks/RESULTS_conversions.md
    python benchmarks/run_conversions.py --no-write --repeats 5
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.metadata
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import plda  # noqa: E402

DEFAULT_OUTPUT = HERE / "RESULTS_conversions.md"
#: (name, sample rate, noise multiplier, steps, delta)
CASES = [
    ("B1", 0.01, 1.0, 1000, 1e-5),
    ("B2", 256 / 60000, 1.1, 14062, 1e-5),
    ("B3", 0.001, 0.8, 100000, 1e-6),
]
#: orders of the peers' RDP accountants (dp_accounting's default grid)
PEER_ORDERS = np.concatenate([1 + np.arange(1, 101) / 10, np.arange(12, 64), [128, 256, 512]])


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _timed(function, repeats: int):
    """``(result, first_seconds, median_seconds_of_the_repeats)``."""
    start = time.perf_counter()
    result = function()
    first = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return result, first, statistics.median(times) if times else first


def _pld(q, sigma, steps):
    step = plda.PoissonSampled(plda.Gaussian(sigma=sigma), sample_rate=q)
    return plda.PrivacyLossDistribution.from_mechanism(step).self_compose(steps)


# ------------------------------------------------------------------ speed
def speed_section(repeats: int, log) -> list[str]:
    _, q, sigma, steps, delta = CASES[1]
    pld = _pld(q, sigma, steps)
    start = time.perf_counter()
    eps_lower, eps_upper = pld.epsilon_bounds(delta)
    compose = time.perf_counter() - start
    log(f"B2 composed in {compose:.2f} s")
    rng = np.random.default_rng(0)
    alphas = [np.sort(np.concatenate([np.logspace(-8, 0, 999), rng.uniform(0, 1, 1)]))
              for _ in range(repeats + 1)]
    calls = iter(alphas)
    (t_lower, t_upper), t_first, t_median = _timed(
        lambda: pld.tradeoff_bounds(next(calls)), repeats)
    calls = iter(alphas)
    _, m_first, m_median = _timed(
        lambda: pld.true_positive_rate_bounds(next(calls)), repeats)
    orders = np.geomspace(1.01, 256, 100)
    (r_lower, r_upper), r_first, r_median = _timed(lambda: pld.renyi_bounds(orders),
                                                   repeats)
    orders_b = np.linspace(1.5, 64, 100)
    _, rb_first, rb_median = _timed(lambda: pld.renyi_bounds(orders_b), repeats)
    mu_strict, g_first, _ = _timed(lambda: pld.gdp_mu(), 0)
    summary, s_first, _ = _timed(lambda: pld.gdp_summary(delta_floor=1e-9), 0)
    zcdp, z_first, _ = _timed(lambda: pld.zcdp_bounds(), 0)
    rdp_eps, c_first, _ = _timed(lambda: pld.renyi_epsilon(delta), 0)
    gap = np.max(t_upper - t_lower)
    rgap = np.max((r_upper - r_lower) / r_upper)
    ok = "yes" if max(t_first, r_first) < 0.05 else "no"

    def ms(x):
        return f"{1000 * x:.1f}"

    lines = [
        "## 1. Speed on B2 after composition",
        "",
        f"B2: Poisson-sampled Gaussian, q = 256/60000, σ = 1.1, 14062 steps. Composition and "
        f"ε(1e-5) ∈ [{eps_lower:.5f}, {eps_upper:.5f}] took {compose:.2f} s (engine, default "
        f"accuracy); every figure below is measured after it. \"first\" includes building the "
        f"envelopes (tradeoff) or the cell tables (Rényi); \"repeat\" is the median of "
        f"{repeats} further calls with new arguments.",
        "",
        "| query | first (ms) | repeat (ms) | note |",
        "|---|---:|---:|---|",
        f"| tradeoff_bounds, 1,000 α in [1e-8, 1] | {ms(t_first)} | {ms(t_median)} | "
        f"max upper − lower = {gap:.2e} |",
        f"| true_positive_rate_bounds, 1,000 FPRs | {ms(m_first)} | {ms(m_median)} | |",
        f"| renyi_bounds, 100 orders geomspace(1.01, 256) | {ms(r_first)} | {ms(r_median)} | "
        f"max relative gap {rgap:.1e} |",
        f"| renyi_bounds, 100 orders linspace(1.5, 64) | {ms(rb_first)} | {ms(rb_median)} | |",
        f"| gdp_mu (δ floor 1e-250) | {ms(g_first)} | | μ = {mu_strict:.4f} |",
        f"| gdp_summary (δ floor 1e-9) | {ms(s_first)} | | μ ∈ [{summary.mu_lower:.4f}, "
        f"{summary.mu:.4f}], best fit {summary.best_fit:.4f} |",
        f"| zcdp_bounds | {ms(z_first)} | | ρ ∈ [{zcdp.lower:.2f}, {zcdp.upper:.2f}] |",
        f"| renyi_epsilon(1e-5) (conversion, refined orders) | {ms(c_first)} | | "
        f"ε = {rdp_eps:.5f} |",
        "",
        f"Target (issue 4): a 1,000-point tradeoff curve and a 100-order Rényi curve each under "
        f"50 ms after composition, first call included: **{ok}**.",
        "",
        "The certified μ with the default floor is limited by the certified profile itself: below "
        "about 1e-9 the FFT's error bound (≈ 2e-10 on B2) dominates δ until the Chernoff tail "
        "takes over, and GDP has to cover that plateau. Certifying down to δ = 1e-9 gives the "
        "μ that matters in practice; the refuted μ (optimistic law) shows how tight it is.",
        "",
    ]
    return lines


# ------------------------------------------------------------------- peers
def _dp_accounting_epsilon(q, sigma, steps, delta):
    import dp_accounting
    from dp_accounting import rdp

    accountant = rdp.RdpAccountant(list(PEER_ORDERS))
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps)
    accountant.compose(event)
    return accountant.get_epsilon(delta)


def _dp_accounting_rdp(q, sigma, steps, orders):
    from dp_accounting.rdp import rdp_privacy_accountant as module

    # benchmark only: the per-order RDP of the sampled Gaussian (a private helper of the peer)
    return steps * np.asarray(module._compute_rdp_poisson_subsampled_gaussian(q, sigma, orders))


def _opacus_rdp_epsilon(q, sigma, steps, delta):
    from opacus.accountants.analysis import rdp as analysis

    rdp_values = analysis.compute_rdp(q=q, noise_multiplier=sigma, steps=steps,
                                      orders=list(PEER_ORDERS))
    eps, _ = analysis.get_privacy_spent(orders=list(PEER_ORDERS), rdp=rdp_values, delta=delta)
    return float(eps)


def _opacus_rdp(q, sigma, steps, orders):
    from opacus.accountants.analysis import rdp as analysis

    return np.asarray(analysis.compute_rdp(q=q, noise_multiplier=sigma, steps=steps,
                                           orders=list(orders)))


def _opacus_gdp_epsilon(q, sigma, steps, delta):
    from opacus.accountants.analysis import gdp as analysis

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(analysis.compute_eps_poisson(steps=steps, noise_multiplier=sigma,
                                                  sample_rate=q, delta=delta))


def _available(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def accounting_section(log) -> list[str]:
    have_dpa = _available("dp_accounting")
    have_opacus = _available("opacus")
    lines = [
        "## 2. RDP accounting against the PLD, same compositions",
        "",
        "ε(δ) of each accounting; RDP columns use the Canonne–Kamath–Steinke / Asoodeh et al. "
        "conversion (plda: certified Rényi upper bounds on a geometric order grid refined around "
        "its best order; the peers: dp_accounting's default orders). GDP-CLT is Opacus's "
        "central-limit approximation — not a bound, it can fall below the true ε (compare with "
        "the PLD lower bound). Times in ms.",
        "",
        "| case | δ | PLD ε [lower, upper] | plda RDP ε | dp_accounting RDP ε | Opacus RDP ε "
        "| Opacus GDP-CLT ε | RDP / PLD |",
        "|---|---|---|---|---|---|---|---|",
    ]
    timing = []
    for name, q, sigma, steps, delta in CASES:
        log(f"{name}: accountings")
        pld = _pld(q, sigma, steps)
        lo, up = pld.epsilon_bounds(delta)
        start = time.perf_counter()
        ours = pld.renyi_epsilon(delta)
        t_ours = time.perf_counter() - start
        cells = [f"{ours:.4f}"]
        t_row = [f"{1000 * t_ours:.0f}"]
        for have, fn in ((have_dpa, _dp_accounting_epsilon), (have_opacus, _opacus_rdp_epsilon),
                         (have_opacus, _opacus_gdp_epsilon)):
            if not have:
                cells.append("not installed")
                t_row.append("–")
                continue
            start = time.perf_counter()
            value = fn(q, sigma, steps, delta)
            t_row.append(f"{1000 * (time.perf_counter() - start):.0f}")
            flag = " ⚠ below PLD lower" if value < lo else ""
            cells.append(f"{value:.4f}{flag}")
        lines.append(f"| {name} | {delta:g} | [{lo:.4f}, {up:.4f}] | " + " | ".join(cells)
                     + f" | {ours / up:.3f} |")
        timing.append(f"| {name} | " + " | ".join(t_row) + " |")
    lines += [
        "",
        "Time per accounting (ms; plda's includes computing its Rényi curve, the PLD's "
        "composition is not included):",
        "",
        "| case | plda RDP | dp_accounting RDP | Opacus RDP | Opacus GDP |",
        "|---|---:|---:|---:|---:|",
        *timing,
        "",
    ]
    return lines


def renyi_section(log) -> list[str]:
    name, q, sigma, steps, _ = CASES[1]
    log("B2: Rényi values")
    orders = np.array([2.0, 3.0, 5.0, 8.0, 12.0, 16.0, 20.0, 32.0, 64.0, 256.0])
    pld = _pld(q, sigma, steps)
    lower, upper = pld.renyi_bounds(orders)
    columns = {}
    if _available("dp_accounting"):
        columns["dp_accounting"] = _dp_accounting_rdp(q, sigma, steps, orders)
    if _available("opacus"):
        columns["Opacus"] = _opacus_rdp(q, sigma, steps, orders)
    header = "| α | plda lower | plda upper | " + " | ".join(columns) + " |"
    lines = [
        f"## 3. Rényi DP of {name} at integer orders",
        "",
        "plda's certified bounds on ε_α of the 14062-step composition (per step: cells over the "
        "base Gaussian with the quadratic part in closed form, Gaussian tails in closed form; "
        "times the step count; worse of the two directions) next to the peers' values (exact "
        "binomial expansion at integer orders). ✓: the peer's value lies within plda's bounds.",
        "",
        header,
        "|" + "---|" * (3 + len(columns)),
    ]
    for i, a in enumerate(orders):
        row = [f"{a:g}", f"{lower[i]:.8g}", f"{upper[i]:.8g}"]
        for values in columns.values():
            v = float(values[i])
            inside = lower[i] * (1 - 1e-12) <= v <= upper[i] * (1 + 1e-12)
            row.append(f"{v:.8g} {'✓' if inside else '✗'}")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)

    def log(message):
        print(message, file=sys.stderr)

    versions = ", ".join(
        f"{n} {_version(n) or 'not installed'}"
        for n in ("numpy", "scipy", "dp-accounting", "opacus")
    )
    lines = [
        "# Tradeoff, Gaussian DP and Rényi conversions: speed and RDP accounting compared",
        "",
        f"Generated by `benchmarks/run_conversions.py` on "
        f"{datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; Python "
        f"{platform.python_version()}, {platform.machine()}, {versions}.",
        "",
        *speed_section(args.repeats, log),
        *accounting_section(log),
        *renyi_section(log),
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        args.output.write_text(text + "\n")
        log(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
