#!/usr/bin/env python
"""Accountant benchmark: training-loop queries, schedules and calibration, plda vs peers.

Scenarios (DP-SGD, Poisson-sampled Gaussian, add/remove, delta = 1e-5):

- ``every-step``: 1,000 steps (q = 256/60000, sigma = 1.1), epsilon asked after every step;
- ``every-100``: the same 1,000 steps, epsilon asked every 100 steps (10 queries);
- ``schedule``: 10 phases of 100 steps (sigma from 1.5 down to 0.6, q alternating 0.004/0.008),
  epsilon after every phase (10 queries);
- ``calibrate``: the noise multiplier for epsilon = 1, delta = 1e-5, q = 0.01, 1,000 steps;
- per-step schedules (issue 13), 1,000 steps, epsilon asked after every 10th step (100 queries):
  ``s1`` (q = 0.01, sigma_t = 0.8 + 0.4 t / 1000: a new mechanism at every step),
  ``s1-constant`` (the same loop with sigma = 1.0: the reference S1 is measured against),
  ``s1-rate`` (sigma = 1.0, q_t = 0.005 + 0.01 t / 1000) and ``s1-laplace`` (S1 with every
  tenth step, t = 5 mod 10, a Laplace step of scale 50 instead).

Tools: plda (``PLDAccountant.epsilon``, ``calibrate_noise_multiplier``, default accuracy 1e-3);
plda-bounds (the same loop asking ``epsilon_bounds``, i.e. with the certified lower bound too);
dp_accounting (``PLDAccountant`` fed one step event per step, ``calibrate_dp_mechanism``);
prv_accountant (``PRVAccountant`` with ``max_self_compositions`` set to the run length,
``eps_error=0.01, delta_error=1e-8``, ``compute_epsilon`` per query; ``find_noise_multiplier``);
Opacus's ``RDPAccountant`` and ``PRVAccountant`` and ``get_noise_multiplier`` when Opacus is
installed. A peer run that exceeds ``--budget`` seconds is stopped at the next query and
reported with the steps it finished (no extrapolation).

Usage::

    python benchmarks/run_accountant.py   # -> benchmarks/RESULTS_accountant.md, and its
                                          #    section at the end of benchmarks/RESULTS.md
    python benchmarks/run_accountant.py --tools plda --scenarios every-step --no-write
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.metadata
import math
import os
import platform
import subprocess
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import sections  # this directory: the sections of RESULTS.md

HERE = Path(__file__).resolve().parent
DEFAULT_OUTPUT = HERE / "RESULTS_accountant.md"
DELTA = 1e-5
STEPS = 1000
RATE = 256 / 60000
SIGMA = 1.1
PHASES = [
    (1.5 - 0.1 * i, 0.004 if i % 2 == 0 else 0.008, 100) for i in range(10)
]  # (sigma, q, steps)
CAL = {"target_epsilon": 1.0, "target_delta": DELTA, "sample_rate": 0.01, "steps": 1000}
#: per-step schedules: steps, query spacing, Laplace scale of s1-laplace
S1_STEPS, S1_EVERY, S1_LAPLACE = 1000, 10, 50.0
S1_SCENARIOS = ("s1", "s1-constant", "s1-rate", "s1-laplace")


@dataclass
class Outcome:
    seconds: float
    queries: int
    epsilon: float  # the last answer (upper bound or estimate)
    note: str = ""
    cpu: float = math.nan  # CPU seconds of the loop (this process; robust on a shared machine)


class OverBudget(Exception):
    pass


def _import(name):
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


# ------------------------------------------------------------------------------ plan
def _s1_step(scenario: str, t: int) -> tuple:
    """Step ``t`` of a per-step schedule: ``("gauss", sigma, q)`` or ``("laplace", scale)``."""
    if scenario == "s1-laplace" and t % 10 == 5:
        return ("laplace", S1_LAPLACE)
    if scenario == "s1-constant":
        return ("gauss", 1.0, 0.01)
    if scenario == "s1-rate":
        return ("gauss", 1.0, 0.005 + 0.01 * t / S1_STEPS)
    return ("gauss", 0.8 + 0.4 * t / S1_STEPS, 0.01)


def _rounds(scenario: str) -> list[list[tuple]]:
    """Per query: the steps recorded since the previous one, each ``("gauss", sigma, q, k)`` or
    ``("laplace", scale, 1)``."""
    if scenario in S1_SCENARIOS:
        steps = [_s1_step(scenario, t) for t in range(S1_STEPS)]
        steps = [(*step, 1) for step in steps]
        return [steps[i : i + S1_EVERY] for i in range(0, S1_STEPS, S1_EVERY)]
    if scenario == "every-step":
        plan = [(SIGMA, RATE, 1)] * STEPS
    elif scenario == "every-100":
        plan = [(SIGMA, RATE, 100)] * (STEPS // 100)
    elif scenario == "schedule":
        plan = list(PHASES)
    else:
        raise ValueError(scenario)
    return [[("gauss", s, q, k)] for s, q, k in plan]


def _loop(step_fn, query_fn, scenario: str, budget: float, laplace_fn=None) -> Outcome:
    """Run the training loop: step_fn(sigma, q, k) records k steps, laplace_fn(scale) one
    Laplace step; query_fn() -> epsilon."""
    start, cpu = time.perf_counter(), time.process_time()
    epsilon = math.nan
    done = 0
    plan = _rounds(scenario)
    for steps in plan:
        for kind, *args in steps:
            if kind == "laplace":
                if laplace_fn is None:
                    return Outcome(math.nan, done, math.nan, "no Laplace steps")
                laplace_fn(args[0])
            else:
                step_fn(*args)
        epsilon = query_fn()
        done += 1
        if time.perf_counter() - start > budget and done < len(plan):
            return Outcome(
                time.perf_counter() - start,
                done,
                epsilon,
                f"stopped over budget after {done}/{len(plan)} queries",
                time.process_time() - cpu,
            )
    return Outcome(time.perf_counter() - start, done, epsilon, cpu=time.process_time() - cpu)


# ------------------------------------------------------------------------------ tools
def plda_loop(scenario, budget):
    import plda

    if hasattr(plda, "clear_caches"):
        plda.clear_caches()  # cold start, like the peers

    acct = plda.PLDAccountant()
    return _loop(
        lambda s, q, k: acct.step(noise_multiplier=s, sample_rate=q, count=k),
        lambda: acct.epsilon(DELTA),
        scenario,
        budget,
        lambda scale: acct.compose(plda.Laplace(scale=scale)),
    )


def plda_bounds_loop(scenario, budget):
    """plda asked for both bounds (``epsilon_bounds``): the optimistic versions are composed too."""
    import plda

    if hasattr(plda, "clear_caches"):
        plda.clear_caches()

    acct = plda.PLDAccountant()
    lowers = []

    def query():
        bounds = acct.epsilon_bounds(DELTA)
        lowers.append(bounds.lower)
        return bounds.upper

    out = _loop(
        lambda s, q, k: acct.step(noise_multiplier=s, sample_rate=q, count=k),
        query,
        scenario,
        budget,
        lambda scale: acct.compose(plda.Laplace(scale=scale)),
    )
    out.note = f"lower bound {lowers[-1]:.5f}" if lowers else out.note
    return out


def plda_calibrate(budget):
    import plda
    from plda.calibration import calibrate_noise_multiplier_detailed

    if hasattr(plda, "clear_caches"):
        plda.clear_caches()

    start = time.perf_counter()
    result = calibrate_noise_multiplier_detailed(**CAL)
    seconds = time.perf_counter() - start
    return Outcome(seconds, result.evaluations, result.epsilon_upper, f"sigma={result.value:.5f}")


def dp_accounting_loop(scenario, budget):
    dp = _import("dp_accounting")
    if dp is None:
        return None
    from dp_accounting.pld import pld_privacy_accountant

    acct = pld_privacy_accountant.PLDAccountant()

    def step(s, q, k):
        event = dp.PoissonSampledDpEvent(q, dp.GaussianDpEvent(s))
        acct.compose(event, k) if k > 1 else acct.compose(event)

    def laplace(scale):
        acct.compose(dp.LaplaceDpEvent(scale))  # noise multiplier = scale / sensitivity 1

    return _loop(step, lambda: acct.get_epsilon(DELTA), scenario, budget, laplace)


def dp_accounting_calibrate(budget):
    dp = _import("dp_accounting")
    if dp is None:
        return None
    from dp_accounting.pld import pld_privacy_accountant

    start = time.perf_counter()
    sigma = dp.calibrate_dp_mechanism(
        pld_privacy_accountant.PLDAccountant,
        lambda s: dp.SelfComposedDpEvent(
            dp.PoissonSampledDpEvent(CAL["sample_rate"], dp.GaussianDpEvent(s)), CAL["steps"]
        ),
        CAL["target_epsilon"],
        CAL["target_delta"],
        bracket_interval=dp.LowerEndpointAndGuess(0.1, 1.0),
        tol=1e-3,
    )
    seconds = time.perf_counter() - start
    eps = (
        pld_privacy_accountant.PLDAccountant()
        .compose(
            dp.SelfComposedDpEvent(
                dp.PoissonSampledDpEvent(CAL["sample_rate"], dp.GaussianDpEvent(sigma)),
                CAL["steps"],
            )
        )
        .get_epsilon(DELTA)
    )
    return Outcome(seconds, 0, eps, f"sigma={sigma:.5f}")


def prv_loop(scenario, budget):
    prv = _import("prv_accountant")
    if prv is None:
        return None
    from prv_accountant.privacy_random_variables import (
        LaplaceMechanism,
        PoissonSubsampledGaussianMechanism,
    )

    history: dict = {}  # (sigma, q) or ("laplace", scale) -> steps so far
    cache: dict = {}

    def step(s, q, k):
        history[(s, q)] = history.get((s, q), 0) + k

    def laplace(scale):
        history[("laplace", scale)] = history.get(("laplace", scale), 0) + 1

    def variable(key):
        if key[0] == "laplace":
            return LaplaceMechanism(mu=1.0 / key[1])  # pure-DP epsilon 1 / scale
        return PoissonSubsampledGaussianMechanism(
            noise_multiplier=key[0], sampling_probability=key[1]
        )

    def query():
        keys = list(history)
        # one accountant per set of mechanisms, sized for the whole run (its intended use)
        key = tuple(keys)
        if key not in cache:
            if scenario == "schedule":
                max_steps = [phase_steps for (_, _, phase_steps) in PHASES[: len(keys)]]
            elif scenario in S1_SCENARIOS:
                # a mechanism seen at one step only needs room for that step; the constant
                # loop's one mechanism and the Laplace steps repeat up to the whole run
                repeats = scenario == "s1-constant"
                max_steps = [
                    S1_STEPS if repeats or k[0] == "laplace" else S1_EVERY for k in keys
                ]
            else:
                max_steps = [STEPS]
            cache.clear()
            cache[key] = prv.PRVAccountant(
                prvs=[variable(k) for k in keys],
                max_self_compositions=max_steps,
                eps_error=0.01,
                delta_error=1e-8,
            )
        _, _, upper = cache[key].compute_epsilon(DELTA, [history[k] for k in keys])
        return upper

    return _loop(step, query, scenario, budget, laplace)


def prv_calibrate(budget):
    prv = _import("prv_accountant")
    if prv is None:
        return None
    from prv_accountant.dpsgd import find_noise_multiplier
    from prv_accountant.privacy_random_variables import PoissonSubsampledGaussianMechanism

    start = time.perf_counter()
    sigma = find_noise_multiplier(
        CAL["sample_rate"],
        CAL["steps"],
        CAL["target_epsilon"],
        CAL["target_delta"],
        eps_error=0.01,
    )
    seconds = time.perf_counter() - start
    acct = prv.PRVAccountant(
        prvs=[
            PoissonSubsampledGaussianMechanism(
                noise_multiplier=sigma, sampling_probability=CAL["sample_rate"]
            )
        ],
        max_self_compositions=[CAL["steps"]],
        eps_error=0.01,
        delta_error=1e-8,
    )
    return Outcome(seconds, 0, acct.compute_epsilon(DELTA, [CAL["steps"]])[2], f"sigma={sigma:.5f}")


def _opacus_loop(kind):
    def run(scenario, budget):
        accountants = _import("opacus.accountants")
        if accountants is None:
            return None
        acct = {"rdp": accountants.RDPAccountant, "prv": accountants.PRVAccountant}[kind]()

        def step(s, q, k):
            for _ in range(k):
                acct.step(noise_multiplier=s, sample_rate=q)

        return _loop(step, lambda: acct.get_epsilon(DELTA), scenario, budget)  # no Laplace

    return run


def _opacus_calibrate(kind):
    def run(budget):
        utils = _import("opacus.accountants.utils")
        if utils is None:
            return None
        start = time.perf_counter()
        sigma = utils.get_noise_multiplier(
            target_epsilon=CAL["target_epsilon"],
            target_delta=DELTA,
            sample_rate=CAL["sample_rate"],
            steps=CAL["steps"],
            accountant=kind,
            epsilon_tolerance=0.001,
        )
        seconds = time.perf_counter() - start
        return Outcome(seconds, 0, math.nan, f"sigma={sigma:.5f}")

    return run


TOOLS = {
    "plda": (plda_loop, plda_calibrate, "plda"),
    "plda-bounds": (plda_bounds_loop, lambda budget: None, "plda"),
    "dp_accounting": (dp_accounting_loop, dp_accounting_calibrate, "dp-accounting"),
    "prv": (prv_loop, prv_calibrate, "prv-accountant"),
    "opacus-rdp": (_opacus_loop("rdp"), _opacus_calibrate("rdp"), "opacus"),
    "opacus-prv": (_opacus_loop("prv"), _opacus_calibrate("prv"), "opacus"),
}
SCENARIOS = ["every-step", "every-100", "schedule", "calibrate", *S1_SCENARIOS]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument(
        "--budget",
        type=float,
        default=300.0,
        help="seconds after which a peer's loop is stopped (default 300)",
    )
    parser.add_argument("--output", default=str(DEFAULT_OUTPUT))
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    tools = [t for t in args.tools.split(",") if t]
    scenarios = [s for s in args.scenarios.split(",") if s]
    warnings.simplefilter("ignore")

    results: dict = {}
    for scenario in scenarios:
        for tool in tools:
            loop, calibrate, _ = TOOLS[tool]
            if scenario == "calibrate" and tool == "plda-bounds":
                continue  # calibration is on the upper bound only
            print(f"[{scenario}] {tool} ...", file=sys.stderr, flush=True)
            try:
                out = (
                    calibrate(args.budget)
                    if scenario == "calibrate"
                    else loop(scenario, args.budget)
                )
            except Exception as exc:  # a peer failing is a result, not a crash
                out = Outcome(math.nan, 0, math.nan, f"failed: {type(exc).__name__}: {exc}")
            results[(scenario, tool)] = out
            if out is not None:
                print(
                    f"    {out.seconds:.3f} s  eps={out.epsilon:.5g}  {out.note}",
                    file=sys.stderr,
                    flush=True,
                )

    lines = [
        "# Accountant benchmark",
        "",
        f"Run {datetime.datetime.now().isoformat(timespec='seconds')} on {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}; "
        + ", ".join(
            f"{d} {_version(d)}"
            for d in ("numpy", "scipy", "dp-accounting", "prv-accountant", "opacus")
        ),
        "",
        "DP-SGD steps (Poisson-sampled Gaussian), add/remove, delta = 1e-5. Wall time of the whole "
        "loop or calibration, one run each, machine possibly shared (see the script docstring "
        "for the settings). `ratio` = tool time / plda time (for a peer stopped over budget, "
        "a lower bound: it answered only the queries counted).",
        "",
        "| scenario | tool | seconds | cpu s | queries (evaluations) | last epsilon | ratio "
        "| note |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for scenario in scenarios:
        base = results.get((scenario, "plda"))
        for tool in tools:
            out = results.get((scenario, tool))
            if scenario == "calibrate" and tool == "plda-bounds":
                continue
            if out is None:
                lines.append(f"| {scenario} | {tool} | – | – | – | – | – | not installed |")
                continue
            ratio = (
                f"{out.seconds / base.seconds:.1f}"
                if base is not None
                and base.seconds > 0
                and tool != "plda"
                and math.isfinite(out.seconds)
                else ""
            )
            queries = out.queries or "–"
            cpu = f"{out.cpu:.3f}" if math.isfinite(out.cpu) else "–"
            lines.append(
                f"| {scenario} | {tool} | {out.seconds:.3f} | {cpu} | {queries} | "
                f"{out.epsilon:.5g} | {ratio} | {out.note} |"
            )
    s1, constant = results.get(("s1", "plda")), results.get(("s1-constant", "plda"))
    if s1 is not None and constant is not None and constant.seconds > 0:
        lines += [
            "",
            f"plda's S1 (a new noise multiplier at every step) takes "
            f"{s1.seconds / constant.seconds:.1f}x the wall time of the same loop with a constant "
            f"noise multiplier (s1-constant), {s1.cpu / constant.cpu:.1f}x its CPU time.",
        ]
    if "plda" in tools:
        peaks = {
            scenario: fresh_peak_rss(scenario) for scenario in scenarios if scenario in S1_SCENARIOS
        }
        measured = {k: v for k, v in peaks.items() if v is not None}
        if measured:
            lines += [
                "",
                "Peak resident set of plda's loop alone in a fresh process (imports included, "
                "`VmHWM`): " + ", ".join(f"{k} {v:.0f} MiB" for k, v in measured.items()) + ".",
            ]
    report = "\n".join(lines) + "\n"
    print(report)
    if not args.no_write:
        Path(args.output).write_text(report)
        _update_summary(report)
    return 0


def fresh_peak_rss(scenario: str) -> float | None:
    """Peak resident set (MiB, ``VmHWM``) of a fresh Python process that imports plda and runs
    plda's loop of ``scenario`` alone: the figure issue 13's memory target is about (in this
    process the peers' imports, e.g. torch, and earlier runs' memory would be counted too).
    None where ``/proc`` is not available."""
    code = (
        "import sys; sys.path.insert(0, sys.argv[1]); import run_accountant as r; "
        "r.plda_loop(sys.argv[2], 1e9); "
        "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code, str(HERE), scenario],
            capture_output=True, text=True, check=True, timeout=600,
        )
        return int(out.stdout.split()[-1]) / 1024
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return None


def _update_summary(report: str) -> None:
    """Put this report, as its section, into ``RESULTS.md`` (replacing the previous one)."""
    sections.write_section(
        "accountant", report.replace("# Accountant benchmark", "## Accountant benchmark", 1)
    )


if __name__ == "__main__":
    sys.exit(main())
