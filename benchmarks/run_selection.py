#!/usr/bin/env python
"""Private selection (issue 29): plda against dp_accounting where it has the event.

- Tuning by random stopping: ``plda.RepeatAndSelect`` on a DP-SGD run against dp_accounting's
  RDP accountant fed ``RepeatAndSelectDpEvent`` (same run, same mean and shape), epsilon at
  delta = 1e-6, cold timings (plda's caches cleared), median of 3; and plda's step's Rényi
  curve alone (the bound before the profile bound).
- The exponential mechanism: plda's bounded-range bracket against the epsilon-DP reading
  (randomized response, what an accountant without a bounded-range analysis must use), by
  plda's exact optimal composition of randomized response (``plda.testing``).

Writes ``benchmarks/RESULTS_selection.md``; dp_accounting is optional (reported as missing).
"""

from __future__ import annotations

import math
import statistics
import sys
import time
import warnings
from pathlib import Path

import plda
from plda import testing

HERE = Path(__file__).resolve().parent
DELTA = 1e-6
RUNS = [(1.0, 0.01, 1000), (0.8, 0.02, 500), (2.0, 0.05, 200)]
LAWS = [("geometric", 1.0), ("truncated_negative_binomial", 0.5), ("logarithmic", 0.0),
        ("poisson", math.inf)]


def timed(fn, *args, repeats=3):
    times, value = [], None
    for _ in range(repeats):
        plda.clear_caches()
        start = time.perf_counter()
        value = fn(*args)
        times.append(time.perf_counter() - start)
    return value, statistics.median(times)


def plda_selection(sigma, q, steps, mean, law, shape):
    base = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(sigma), q), steps)
    shape = 1.0 if law == "poisson" else shape
    rs = plda.RepeatAndSelect(base, mean, law, shape)
    return plda.PrivacyLossDistribution.from_mechanism(rs).epsilon_bounds(DELTA)


def plda_renyi_only(sigma, q, steps, mean, law, shape):
    """The bound before the profile bound: the step's Rényi curve alone, converted."""
    base = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(sigma), q), steps)
    shape = 1.0 if law == "poisson" else shape
    rs = plda.RepeatAndSelect(base, mean, law, shape)
    return plda.PrivacyLossDistribution.from_mechanism(rs.renyi_guarantee).epsilon(DELTA)


def dp_accounting_selection(sigma, q, steps, mean, shape):
    import dp_accounting as dpa
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    event = dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)),
                                    steps)
    accountant = rdp.RdpAccountant()
    accountant.compose(dp_event.RepeatAndSelectDpEvent(event, mean, shape))
    return accountant.get_epsilon(DELTA)


def main() -> int:
    try:
        import dp_accounting  # noqa: F401
        have_dp = True
    except ImportError:
        have_dp = False
    lines = [
        "# Private selection",
        "",
        f"Run {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, Python "
        f"{sys.version.split()[0]}, plda {plda.__version__} (`benchmarks/run_selection.py`).",
        "",
        "## Tuning by random stopping, epsilon at delta = 1e-6 (mean 10 runs)",
        "",
        "| DP-SGD run (sigma, q, steps) | law of K | plda [lower, upper] | s | plda Rényi only "
        "| dp_accounting RDP | s | plda / dp_accounting |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for sigma, q, steps in RUNS:
        for law, shape in LAWS:
            ours, t_ours = timed(plda_selection, sigma, q, steps, 10.0, law, shape)
            renyi = plda_renyi_only(sigma, q, steps, 10.0, law, shape)
            if have_dp:
                theirs, t_theirs = timed(dp_accounting_selection, sigma, q, steps, 10.0, shape)
                peer = f"{theirs:.4f} | {t_theirs:.3f} | {ours.upper / theirs:.4f}"
            else:
                peer = "not installed | - | -"
            lines.append(f"| ({sigma}, {q}, {steps}) | {law} | [{ours.lower:.4f}, "
                         f"{ours.upper:.4f}] | {t_ours:.3f} | {renyi:.4f} | {peer} |")
    lines += [
        "",
        "plda's upper bound is the smaller, at each epsilon, of two certified bounds on the "
        "step's profile: Papernot & Steinke's theorems on its certified Rényi curve of the run "
        "(and, under Poisson stopping, the run's certified delta from its PLD; alone, the "
        "\"plda Rényi only\" column), and the bound from the run's certified privacy profile "
        "(`plda.selection.profile_bound`, after Koskela, Redberg & Wang 2024). dp_accounting "
        "applies Papernot & Steinke's theorems on its own Rényi curve. Times: the step built "
        "and queried cold (the run's PLD included). plda's lower bound is the run itself (a "
        "score preferring the first run releases it); none under Poisson stopping, where K can "
        "be 0.",
        "",
        "## The exponential mechanism, epsilon at delta = 1e-6",
        "",
        "| epsilon per step | steps | plda [lower, upper] | s | epsilon-DP reading (exact "
        "optimal composition of randomized response) | upper / RR |",
        "|---|---|---|---|---|---|",
    ]
    for eps, k in ((0.1, 100), (0.1, 1000), (0.5, 100), (1.0, 10)):
        def em(eps=eps, k=k):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", plda.NotTightWarning)
                return plda.PrivacyLossDistribution.from_mechanism(
                    plda.ExponentialMechanism(eps), k).epsilon_bounds(DELTA)
        ours, t_ours = timed(em)
        rr = testing.approximate_dp_composition_epsilon(DELTA, step_epsilon=eps, step_delta=0.0,
                                                        count=k)
        lines.append(f"| {eps} | {k} | [{ours.lower:.4f}, {ours.upper:.4f}] | {t_ours:.3f} | "
                     f"{rr:.4f} | {ours.upper / rr:.3f} |")
    lines += [
        "",
        "## Permute-and-flip and report-noisy-max with Laplace noise, epsilon at delta = 1e-6",
        "",
        "| epsilon per step | steps | permute-and-flip [lower, upper] | s | report-noisy-max "
        "(Laplace) [lower, upper] | s | epsilon-DP reading (randomized response) |",
        "|---|---|---|---|---|---|---|",
    ]
    for eps, k in ((0.1, 100), (0.1, 1000), (0.5, 100), (1.0, 10)):
        row = [f"| {eps} | {k} |"]
        for mechanism in (plda.PermuteAndFlip(eps), plda.ReportNoisyMax(eps, noise="laplace")):
            def run(mechanism=mechanism, k=k):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", plda.NotTightWarning)
                    return plda.PrivacyLossDistribution.from_mechanism(
                        mechanism, k).epsilon_bounds(DELTA)
            ours, t_ours = timed(run)
            row.append(f" [{ours.lower:.4f}, {ours.upper:.4f}] | {t_ours:.3f} |")
        rr = testing.approximate_dp_composition_epsilon(DELTA, step_epsilon=eps, step_delta=0.0,
                                                        count=k)
        lines.append("".join(row) + f" {rr:.4f} |")
    lines += [
        "",
        "Both are epsilon-DP selections with no smaller proved dominating pair: the upper bound "
        "is the randomized response of their guarantee (dp_accounting's reading of any "
        "epsilon-DP step), the lower bound the realized two-candidate pairs.",
        "",
        "dp_accounting 0.6.0 has no exponential-mechanism, permute-and-flip or "
        "report-noisy-max event.",
    ]
    text = "\n".join(lines) + "\n"
    (HERE / "RESULTS_selection.md").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
