#!/usr/bin/env python
"""plda inside the tools people already run: Opacus and dp_accounting, side by side in one process.

Each case runs the *same call* of the host library with its own accountants and with plda's
adapter, cold caches, and reports time, the answer, the ratio of times, and plda's certified
epsilon bounds at every tool's answer (so a noise multiplier that is too small is visible):

- **O1** ``opacus.accountants.utils.get_noise_multiplier`` (target epsilon 1, delta 1e-5,
  q = 0.01, 1,000 steps) with ``accountant="rdp"``, ``"prv"`` and ``"plda"``.
- **O2** an Opacus accountant stepped 1,000 times (sigma 1, q = 0.01), epsilon(1e-5) read every
  100 steps, for ``rdp``, ``prv`` and ``plda``.
- **D1** ``dp_accounting.calibrate_dp_mechanism`` of a Poisson-sampled Gaussian (q = 0.01, 1,000
  steps, target epsilon 1, delta 1e-5) with dp_accounting's own PLD and RDP accountants and with
  ``plda.adapters.PLDPrivacyAccountant``.

Usage::

    python benchmarks/run_adapters.py                 # -> benchmarks/RESULTS_adapters.md
    python benchmarks/run_adapters.py --no-write
"""

from __future__ import annotations

import argparse
import datetime
import importlib.metadata
import platform
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import plda  # noqa: E402

DEFAULT_OUTPUT = HERE / "RESULTS_adapters.md"
SAMPLE_RATE, STEPS, DELTA, TARGET_EPSILON = 0.01, 1000, 1e-5, 1.0


def certified(sigma: float) -> plda.Bounds:
    """plda's certified epsilon bounds for the DP-SGD run at noise multiplier ``sigma``."""
    accountant = plda.PLDAccountant()
    accountant.step(noise_multiplier=sigma, sample_rate=SAMPLE_RATE, count=STEPS)
    return accountant.epsilon_bounds(DELTA)


def timed(fn):
    plda.clear_caches()
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def opacus_cases() -> list[dict]:
    from opacus.accountants import create_accountant
    from opacus.accountants.utils import get_noise_multiplier

    import plda.adapters.opacus  # noqa: F401  (registers "plda")

    rows = []
    for name in ("rdp", "prv", "plda"):
        seconds, sigma = timed(
            lambda name=name: get_noise_multiplier(
                target_epsilon=TARGET_EPSILON,
                target_delta=DELTA,
                sample_rate=SAMPLE_RATE,
                steps=STEPS,
                accountant=name,
            )
        )
        rows.append(
            dict(
                case="O1",
                tool=f"opacus {name}",
                seconds=seconds,
                answer=f"sigma={sigma:.5f}",
                bounds=certified(sigma),
            )
        )

    def loop(name):
        accountant = create_accountant(mechanism=name)
        last = None
        for step in range(1, STEPS + 1):
            accountant.step(noise_multiplier=1.0, sample_rate=SAMPLE_RATE)
            if step % 100 == 0:
                last = accountant.get_epsilon(delta=DELTA)
        return last

    for name in ("rdp", "prv", "plda"):
        seconds, epsilon = timed(lambda name=name: loop(name))
        rows.append(
            dict(
                case="O2",
                tool=f"opacus {name}",
                seconds=seconds,
                answer=f"epsilon={epsilon:.5f}",
                bounds=certified(1.0),
            )
        )
    return rows


def dp_accounting_cases() -> list[dict]:
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant
    from dp_accounting.rdp import rdp_privacy_accountant

    from plda.adapters import PLDPrivacyAccountant

    def event(sigma):
        return dp_accounting.SelfComposedDpEvent(
            dp_accounting.PoissonSampledDpEvent(SAMPLE_RATE, dp_accounting.GaussianDpEvent(sigma)),
            STEPS,
        )

    makers = {
        "dp_accounting PLD": pld_privacy_accountant.PLDAccountant,
        "dp_accounting RDP": rdp_privacy_accountant.RdpAccountant,
        "plda adapter": PLDPrivacyAccountant,
    }
    rows = []
    for name, make in makers.items():
        bracket = dp_accounting.LowerEndpointAndGuess(0.1, 1.0)
        seconds, sigma = timed(
            lambda make=make, bracket=bracket: dp_accounting.calibrate_dp_mechanism(
                make, event, TARGET_EPSILON, DELTA, bracket, tol=1e-4
            )
        )
        rows.append(
            dict(
                case="D1",
                tool=name,
                seconds=seconds,
                answer=f"sigma={sigma:.5f}",
                bounds=certified(sigma),
            )
        )
    return rows


def table(rows: list[dict]) -> list[str]:
    lines = [
        "| case | tool | seconds | answer | plda certified epsilon at that answer | time / plda |",
        "|---|---|---:|---|---|---:|",
    ]
    plda_time = {r["case"]: r["seconds"] for r in rows if "plda" in r["tool"]}
    for r in rows:
        b = r["bounds"]
        flag = " (above target)" if b.lower > TARGET_EPSILON and r["case"] != "O2" else ""
        lines.append(
            f"| {r['case']} | {r['tool']} | {r['seconds']:.3f} | {r['answer']} | "
            f"[{b.lower:.5f}, {b.upper:.5f}]{flag} | {r['seconds'] / plda_time[r['case']]:.1f} |"
        )
    return lines


def version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", type=Path, default=DEFAULT_OUTPUT)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")  # peers' deprecation chatter; answers are checked below
    rows = []
    for name, cases in (("opacus", opacus_cases), ("dp_accounting", dp_accounting_cases)):
        try:
            rows += cases()
        except ImportError as error:
            print(f"skipping {name}: {error}", file=sys.stderr)
    lines = [
        "# plda in Opacus and dp_accounting: the host library's own call, side by side",
        "",
        f"Generated by `benchmarks/run_adapters.py` on {datetime.date.today()}, Python "
        f"{platform.python_version()}, plda {version('plda')}, opacus {version('opacus')}, "
        f"torch {version('torch')}, dp-accounting {version('dp-accounting')}, "
        f"prv-accountant {version('prv-accountant')}; one cold run each on a shared 2-core "
        "machine (absolute times vary with load, ratios less so).",
        "",
        f"Setting: Poisson-sampled Gaussian, q = {SAMPLE_RATE}, {STEPS} steps, delta = {DELTA}; "
        f"calibration target epsilon = {TARGET_EPSILON}.",
        "",
        *table(rows),
        "",
        "The last-but-one column is plda's certified [lower, upper] epsilon at each tool's answer: "
        '"above target" means the certified *lower* bound already exceeds the target, so that '
        "noise multiplier is provably too small. plda's adapters answer with certified upper "
        "bounds.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
