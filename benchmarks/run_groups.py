#!/usr/bin/env python
"""Group (user-level) privacy under Poisson sampling and fixed-size batches: plda against
dp_accounting, side by side.

A protected unit of ``K`` records, each Poisson-sampled at rate ``q``, noise ``sigma`` added once
per step: the pair ``sum_k Bin(k; K, q) N(k, sigma^2)`` against ``N(0, sigma^2)``, composed over
``steps`` steps, ``epsilon(1e-5)`` asked once.

* plda: ``PoissonSampled(Gaussian(sigma), q, group_size=K)``, its certified ``epsilon_bounds``
  at the default accuracy (1e-3 relative gap);
* dp_accounting: ``from_mixture_gaussian_mechanism`` at its default
  ``value_discretization_interval=1e-4``, composed, ``get_epsilon_for_delta``: its pessimistic
  estimate (the time column), and its optimistic estimate, which together make its gap;
* for reference, the per-record epsilon (``group_size=1``, not a group guarantee) and the
  post-hoc group theorem on it (``k eps``, ``(e^{k eps} - 1)/(e^eps - 1) delta``, best of 25
  ``delta`` splits).

Each tool runs in a fresh Python process (cold: imports excluded from the time, plda's caches
empty), one run each; memory is that process's peak resident set size.

Usage::

    python benchmarks/run_groups.py            # -> benchmarks/RESULTS_groups.md and RESULTS.md
    python benchmarks/run_groups.py --no-write # print only
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import json
import math
import platform
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import sections  # noqa: E402

OUTPUT = HERE / "RESULTS_groups.md"
DELTA = 1e-5
#: (sigma, q, K, steps)
CASES = [
    (1.0, 0.01, 4, 1000),
    (1.0, 0.01, 2, 1000),
    (1.5, 0.005, 8, 2000),
    (2.0, 0.02, 16, 500),
]
#: (sigma, batch_size, dataset_size, K, steps) of fixed-size batches (a hypergeometric count)
WOR_CASES = [
    (2.0, 600, 60000, 4, 1000),
    (2.0, 256, 60000, 8, 2000),
]
#: (scale, q, K, steps) of a Laplace base (no peer has a Laplace mixture)
LAPLACE_CASES = [
    (1.0, 0.01, 4, 1000),
    (2.0, 0.05, 3, 200),
    (0.5, 0.001, 8, 10000),
]

_PLDA = """
import json, resource, time, warnings
import plda
sigma, q, k, steps, delta = {args}
start = time.perf_counter()
pld = plda.PrivacyLossDistribution.from_mechanism(
    plda.PoissonSampled(plda.Gaussian(sigma), q, group_size=k), steps)
bounds = pld.epsilon_bounds(delta)
elapsed = time.perf_counter() - start
print(json.dumps({{"lower": bounds.lower, "upper": bounds.upper, "seconds": elapsed,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

_DP = """
import json, math, resource, time
from dp_accounting.pld import privacy_loss_distribution as pld_module
sigma, q, k, steps, delta = {args}
weights = [math.comb(k, i) * q**i * (1 - q) ** (k - i) for i in range(k + 1)]
out = {{}}
for name, pessimistic in (("pessimistic", True), ("optimistic", False)):
    start = time.perf_counter()
    pld = pld_module.from_mixture_gaussian_mechanism(
        sigma, list(range(k + 1)), weights, pessimistic_estimate=pessimistic)
    out[name] = pld.self_compose(steps).get_epsilon_for_delta(delta)
    out[name + "_seconds"] = time.perf_counter() - start
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""

_REFERENCE = """
import json, warnings
import numpy as np
import plda
from plda import theorems
sigma, q, k, steps, delta = {args}
warnings.simplefilter("ignore")
one = plda.PrivacyLossDistribution.from_mechanism(
    plda.PoissonSampled(plda.Gaussian(sigma), q), steps)
best = float("inf")
for d in np.geomspace(delta * 1e-5, delta, 25):
    group = theorems.group_privacy(one.epsilon_bounds(float(d)).upper, float(d), k)
    if group.delta <= delta:
        best = min(best, group.epsilon)
print(json.dumps({{"per_record": one.epsilon_bounds(delta).upper, "post_hoc": best}}))
"""


_WOR_PLDA = """
import json, resource, time
import plda
sigma, b, n, k, steps, delta = {args}
start = time.perf_counter()
pld = plda.PrivacyLossDistribution.from_mechanism(
    plda.SampledWithoutReplacement(plda.Gaussian(sigma), b, n, group_size=k), steps)
bounds = pld.epsilon_bounds(delta)
elapsed = time.perf_counter() - start
print(json.dumps({{"lower": bounds.lower, "upper": bounds.upper, "seconds": elapsed,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

# dp_accounting has no fixed-size group event: its mixture PLD with the exact hypergeometric
# weights and the doubled shifts is the same pair
_WOR_DP = """
import json, math, resource, time
from dp_accounting.pld import privacy_loss_distribution as pld_module
sigma, b, n, k, steps, delta = {args}
weights = [math.comb(k, i) * math.comb(n - k, b - i) / math.comb(n, b) for i in range(k + 1)]
out = {{}}
for name, pessimistic in (("pessimistic", True), ("optimistic", False)):
    start = time.perf_counter()
    pld = pld_module.from_mixture_gaussian_mechanism(
        sigma, [2 * i for i in range(k + 1)], weights, pessimistic_estimate=pessimistic)
    out[name] = pld.self_compose(steps).get_epsilon_for_delta(delta)
    out[name + "_seconds"] = time.perf_counter() - start
out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""

_WOR_REFERENCE = """
import json, warnings
import numpy as np
import plda
from plda import theorems
sigma, b, n, k, steps, delta = {args}
warnings.simplefilter("ignore")
one = plda.PrivacyLossDistribution.from_mechanism(
    plda.SampledWithoutReplacement(plda.Gaussian(sigma), b, n), steps)
poisson = plda.PrivacyLossDistribution.from_mechanism(
    plda.PoissonSampled(plda.Gaussian(sigma, sensitivity=2.0), b / n, group_size=k), steps)
best = float("inf")
for d in np.geomspace(delta * 1e-5, delta, 25):
    group = theorems.group_privacy(one.epsilon_bounds(float(d)).upper, float(d), k)
    if group.delta <= delta:
        best = min(best, group.epsilon)
print(json.dumps({{"per_record": one.epsilon_bounds(delta).upper, "post_hoc": best,
                  "poisson": poisson.epsilon_bounds(delta).upper}}))
"""


def _ratio(exact: float, post_hoc: float) -> str:
    """``exact / post_hoc``, or a dash where the theorem gives no finite bound."""
    return f"{exact / post_hoc:.3f}" if math.isfinite(post_hoc) else "—"


def replace_one(script: str) -> str:
    """The same script under replace-one (the post-hoc theorem's delta grid widened: its factor
    ``(e^{K eps} - 1) / (e^eps - 1)`` is larger at the per-record replace-one epsilon)."""
    return (script.replace("group_size=k), steps)", "group_size=k), steps, "
                           "relation='replace_one')")
            .replace("plda.PoissonSampled(plda.Gaussian(sigma), q), steps)",
                     "plda.PoissonSampled(plda.Gaussian(sigma), q), steps, "
                     "relation='replace_one')")
            .replace("np.geomspace(delta * 1e-5, delta, 25)",
                     "np.geomspace(delta * 1e-12, delta, 49)"))


def laplace(script: str) -> str:
    """The same script with a Laplace base of scale ``sigma``."""
    return script.replace("plda.Gaussian(sigma)", "plda.Laplace(sigma)")


def run(script: str, case) -> dict:
    args = repr((*case, DELTA))
    done = subprocess.run([sys.executable, "-c", script.format(args=args)], check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _plda_only_rows(variant, cases) -> list[str]:
    """Table rows of cases no peer accounts: plda's bracket, its cost, the per-record figure and
    the post-hoc group theorem, with the scripts rewritten by ``variant``."""
    rows = []
    for case in cases:
        parameter, q, k, steps = case
        ours, ref = run(variant(_PLDA), case), run(variant(_REFERENCE), case)
        rows.append(
            f"| {parameter} | {q} | {k} | {steps} | [{ours['lower']:.4f}, {ours['upper']:.4f}] "
            f"| {ours['seconds']:.2f} | {ours['rss_mb']:.0f} | {ref['per_record']:.4f} | "
            f"{ref['post_hoc']:.4f} | {_ratio(ours['upper'], ref['post_hoc'])} |")
        print(rows[-1], flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()
    import plda

    lines = [
        "## Groups under Poisson sampling: plda vs dp_accounting's mixture PLD",
        "",
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on "
        f"{platform.machine()}, Python {platform.python_version()}, plda {plda.__version__}, "
        f"dp_accounting {importlib.metadata.version('dp-accounting')}; delta = {DELTA:g}, one "
        "cold run each in a fresh process (`benchmarks/run_groups.py`).",
        "",
        "| sigma | q | K | steps | plda [lower, upper] | s | MB | dp_accounting "
        "[optimistic, pessimistic] | s | MB | ratio | gap plda / dp_acc | per record | "
        "post-hoc group theorem |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case in CASES:
        sigma, q, k, steps = case
        ours, theirs, ref = run(_PLDA, case), run(_DP, case), run(_REFERENCE, case)
        gap_ours = ours["upper"] - ours["lower"]
        gap_theirs = theirs["pessimistic"] - theirs["optimistic"]
        lines.append(
            f"| {sigma} | {q} | {k} | {steps} | [{ours['lower']:.4f}, {ours['upper']:.4f}] | "
            f"{ours['seconds']:.2f} | {ours['rss_mb']:.0f} | "
            f"[{theirs['optimistic']:.4f}, {theirs['pessimistic']:.4f}] | "
            f"{theirs['pessimistic_seconds']:.2f} | {theirs['rss_mb']:.0f} | "
            f"{theirs['pessimistic_seconds'] / ours['seconds']:.1f}x | "
            f"{gap_ours / gap_theirs:.2g} | {ref['per_record']:.4f} | {ref['post_hoc']:.4f} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "### Fixed-size batches (a hypergeometric count)",
        "",
        "`SampledWithoutReplacement(Gaussian(sigma), b, n, group_size=K)` against dp_accounting's "
        "mixture PLD given the same pair (exact hypergeometric weights, shifts `2k`): "
        "dp_accounting has no fixed-size group event.",
        "",
        "| sigma | b | n | K | steps | plda [lower, upper] | s | MB | dp_accounting "
        "[optimistic, pessimistic] | s | ratio | gap plda / dp_acc | per record | post-hoc "
        "group theorem | Poisson group at b/n |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for case in WOR_CASES:
        sigma, b, n, k, steps = case
        ours, theirs, ref = run(_WOR_PLDA, case), run(_WOR_DP, case), run(_WOR_REFERENCE, case)
        gap_theirs = theirs["pessimistic"] - theirs["optimistic"]
        lines.append(
            f"| {sigma} | {b} | {n} | {k} | {steps} | [{ours['lower']:.4f}, "
            f"{ours['upper']:.4f}] | {ours['seconds']:.2f} | {ours['rss_mb']:.0f} | "
            f"[{theirs['optimistic']:.4f}, {theirs['pessimistic']:.4f}] | "
            f"{theirs['pessimistic_seconds']:.2f} | "
            f"{theirs['pessimistic_seconds'] / ours['seconds']:.1f}x | "
            f"{(ours['upper'] - ours['lower']) / gap_theirs:.2g} | {ref['per_record']:.4f} | "
            f"{ref['post_hoc']:.4f} | {ref['poisson']:.4f} |")
        print(lines[-1], flush=True)
    lines += [
        "",
        "### A Laplace base",
        "",
        "| scale | q | K | steps | plda [lower, upper] | s | MB | per record | post-hoc group "
        "theorem | exact / post-hoc |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += _plda_only_rows(laplace, LAPLACE_CASES)
    lines += [
        "",
        "### Replace-one: the double mixture",
        "",
        "`PoissonSampled(Gaussian(sigma), q, group_size=K)` under `relation='replace_one'`: "
        "`sum_k Bin(k) N(k)` against `sum_j Bin(j) N(-j)` (Schuchardt et al. 2024). No peer "
        "accounts it (dp_accounting refuses its mixture event under replace-one).",
        "",
        "| sigma | q | K | steps | plda [lower, upper] | s | MB | per record | post-hoc group "
        "theorem | exact / post-hoc |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += _plda_only_rows(replace_one, CASES)
    lines += [
        "",
        "*ratio*: dp_accounting's time for its pessimistic estimate over plda's time for both "
        "certified bounds (above 1: plda faster). *gap*: plda's certified gap over the gap "
        "between dp_accounting's two estimates (below 1: plda narrower); dp_accounting's "
        "estimates are not certified (its pessimistic one is an upper bound up to its tail and "
        "floating-point handling, its optimistic one no bound at all). *MB*: peak resident "
        "memory of the process, imports included. *per record*: `group_size=1`, a guarantee "
        "for one record only, below the group's; *post-hoc*: the group theorem applied to it, "
        "a valid but loose group bound (inf: no split of delta on the grid meets the target, "
        "the theorem's delta factor (e^{K eps} - 1)/(e^eps - 1) being too large).",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        OUTPUT.write_text("# Group privacy benchmarks\n\n" + text + "\n", encoding="utf-8")
        body = ("\n" + text).replace("\n### ", "\n#### ").replace("\n## ", "\n### ")
        sections.write_section("groups", "## Group privacy benchmarks\n" + body)
        print(f"wrote {OUTPUT} and its section of RESULTS.md")


if __name__ == "__main__":
    main()
