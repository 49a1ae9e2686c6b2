#!/usr/bin/env python
"""Sampler benchmark: fixed-size batches (sampling without replacement) and truncated Poisson,
plda against dp_accounting, side by side.

Fixed-size batches: plda's ``SampledWithoutReplacement`` (tight bracket under add/remove; under
replace-one the symmetrized pair above and realized compositions below, issue 24) against
dp_accounting's ``RdpAccountant`` with ``SampledWithoutReplacementDpEvent`` (REPLACE_ONE only;
Wang, Balle & Kasiviswanathan 2019, Thm. 27), converted to (eps, delta) by
dp_accounting. dp_accounting reads the Gaussian's ``noise_multiplier`` relative to the
*replace-one* sensitivity, which is twice the clipping norm for a sum of clipped gradients; the
table shows it both at ``sigma / (2 C)`` (the correct reading) and at ``sigma / C`` (the common
mistake, which under-reports), and Poisson sampling (add/remove) for reference.

Truncated Poisson: plda's ``TruncatedPoisson`` bracket (upper from the mechanism, lower from its
realized pairs, both from ``epsilon_bounds``) against dp_accounting 0.6's
``from_truncated_subsampled_gaussian_mechanism`` (PLD, ``value_discretization_interval=1e-4``).

Random allocation: plda's ``RandomAllocation`` against PLD_accounting 2.0 (the table of
``benchmarks/run_allocation.py``, run here too so that all samplers are measured side by side
in one run; it is also written to ``RESULTS_allocation.md``). ``--no-allocation`` skips it
(PLD_accounting takes minutes).

Times are cold (``plda.clear_caches()`` before each plda run), one run each, wall clock.

Usage::

    python benchmarks/run_samplers.py            # -> benchmarks/RESULTS_samplers.md
    python benchmarks/run_samplers.py --no-write # print only
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
sys.path.insert(0, str(HERE.parent))  # this checkout's plda, not an installed one
sys.path.insert(0, str(HERE))

import run_allocation  # noqa: E402  (this directory: the allocation table)
import sections  # noqa: E402  (this directory: the sections of RESULTS.md)

import plda  # noqa: E402
from plda import PrivacyLossDistribution as PLD  # noqa: E402

OUTPUT = HERE / "RESULTS_samplers.md"
DELTA = 1e-5
#: (sigma, batch size, dataset size, steps): MNIST/CIFAR-sized DP-SGD runs
WOR_CASES = [
    (0.9, 256, 60000, 1000),
    (1.1, 256, 60000, 14062),
    (2.0, 512, 50000, 2000),
    (4.0, 1024, 50000, 10000),
]
#: gradient accumulation (sigma, per-micro-batch rate q, micro-batches m, optimizer steps)
ACCUMULATION_CASES = [
    (1.0, 0.005, 4, 500),
    (1.0, 0.001, 16, 1000),
]
#: (sigma, expected batch, max batch, dataset size, steps)
TRUNCATED_CASES = [
    (1.0, 256, 300, 60000, 2000),
    (1.0, 256, 512, 60000, 2000),
]


def timed(function):
    start = time.perf_counter()
    value = function()
    return value, time.perf_counter() - start


def plda_wor(sigma, batch, n, steps, relation="add_remove"):
    plda.clear_caches()
    mech = plda.SampledWithoutReplacement(plda.Gaussian(sigma), batch, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", plda.NotTightWarning)
        return timed(lambda: PLD.from_mechanism(mech, steps, relation=relation)
                     .epsilon_bounds(DELTA))


def plda_poisson(sigma, batch, n, steps):
    plda.clear_caches()
    mech = plda.PoissonSampled(plda.Gaussian(sigma), batch / n)
    return timed(lambda: PLD.from_mechanism(mech, steps).epsilon(DELTA))


def rdp_wor(noise_multiplier, batch, n, steps):
    import dp_accounting
    from dp_accounting import rdp

    def run():
        accountant = rdp.RdpAccountant(
            neighboring_relation=dp_accounting.NeighboringRelation.REPLACE_ONE
        )
        event = dp_accounting.SampledWithoutReplacementDpEvent(
            n, batch, dp_accounting.GaussianDpEvent(noise_multiplier)
        )
        accountant.compose(event, steps)
        return accountant.get_epsilon(DELTA)

    return timed(run)


def plda_truncated(sigma, rate, cap, n, steps):
    plda.clear_caches()
    mech = plda.TruncatedPoisson(plda.Gaussian(sigma), rate, cap, n)

    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", plda.NotTightWarning)
            return tuple(PLD.from_mechanism(mech, steps).epsilon_bounds(DELTA))

    return timed(run)


def plda_accumulation(sigma, rate, micro, steps):
    plda.clear_caches()
    mech = plda.PoissonSampled(plda.Gaussian(sigma), rate, group_size=micro)
    return timed(lambda: PLD.from_mechanism(mech, steps).epsilon_bounds(DELTA))


def binomial_weights(rate, micro):
    from math import comb

    return [comb(micro, k) * rate**k * (1 - rate) ** (micro - k) for k in range(micro + 1)]


def dp_accumulation(sigma, rate, micro, steps):
    """dp_accounting's own mixture-of-Gaussians PLD (its pessimistic estimate, 1e-4 grid)."""
    from dp_accounting.pld import privacy_loss_distribution as pld_module

    def run():
        pld = pld_module.from_mixture_gaussian_mechanism(
            sigma, list(range(micro + 1)), binomial_weights(rate, micro))
        return pld.self_compose(steps).get_epsilon_for_delta(DELTA)

    return timed(run)


def plda_one_step_at_m_rate(sigma, rate, micro, steps):
    """What a single Poisson step at rate m q (the old Opacus recording) reports."""
    mech = plda.PoissonSampled(plda.Gaussian(sigma), micro * rate)
    return PLD.from_mechanism(mech, steps).epsilon(DELTA)


def dp_truncated(sigma, rate, cap, n, steps):
    from dp_accounting.pld import privacy_loss_distribution as pld_module

    def run():
        pld = pld_module.from_truncated_subsampled_gaussian_mechanism(n, rate, cap, sigma)
        return pld.self_compose(steps).get_epsilon_for_delta(DELTA)

    return timed(run)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--no-allocation", action="store_true",
                        help="skip random allocation vs PLD_accounting (minutes)")
    args = parser.parse_args()
    lines = [
        "## Samplers: fixed-size batches and truncated Poisson, plda vs dp_accounting",
        "",
        f"Run {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on "
        f"{platform.machine()}, Python {platform.python_version()}, plda {plda.__version__}, "
        f"dp_accounting {importlib.metadata.version('dp-accounting')}; delta = {DELTA:g}, "
        "clipping norm C = 1, one cold run each.",
        "",
        "### Fixed-size batches (sampling without replacement)",
        "",
        "| sigma | batch / n | steps | plda add/remove | s | plda replace-one | s | "
        "dp_acc RDP (replace-one), nm = sigma/(2C) | s | ratio | "
        "dp_acc RDP, nm = sigma/C (wrong) | Poisson (add/remove) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for sigma, batch, n, steps in WOR_CASES:
        bounds, t_plda = plda_wor(sigma, batch, n, steps)
        flips, t_flips = plda_wor(sigma, batch, n, steps, "replace_one")
        rdp_eps, t_rdp = rdp_wor(sigma / 2, batch, n, steps)
        wrong_eps, _ = rdp_wor(sigma, batch, n, steps)
        poisson_eps, _ = plda_poisson(sigma, batch, n, steps)
        lines.append(
            f"| {sigma} | {batch}/{n} | {steps} | [{bounds.lower:.4f}, {bounds.upper:.4f}] | "
            f"{t_plda:.2f} | [{flips.lower:.4f}, {flips.upper:.4f}] | {t_flips:.2f} | "
            f"{rdp_eps:.4f} | {t_rdp:.2f} | {t_rdp / t_flips:.1f}x | "
            f"{wrong_eps:.4f} | {poisson_eps:.4f} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "*ratio*: dp_accounting's time over plda's replace-one time (above 1: plda faster), "
        "both answering under replace-one. The RDP column at nm = sigma/(2C) is a valid "
        "replace-one upper bound and lies above plda's certified replace-one upper bound; the "
        "column at nm = sigma/C reads the clipping norm as the replace-one sensitivity and falls "
        "below plda's certified *lower* bound where it under-reports. Under replace-one the "
        "substitution can point either way at each step, so plda composes the symmetrized pair "
        "(upper) and the largest realized composition (lower): the bracket holds that analysis "
        "gap, which add/remove (one orientation for the whole run) does not have.",
        "",
        "### Truncated Poisson",
        "",
        "| sigma | E[batch] / max / n | steps | plda [lower, upper] | plda s | "
        "dp_accounting PLD | s |",
        "|---|---|---|---|---|---|---|",
    ]
    for sigma, expected, cap, n, steps in TRUNCATED_CASES:
        (lower, upper), t_plda = plda_truncated(sigma, expected / n, cap, n, steps)
        theirs, t_dp = dp_truncated(sigma, expected / n, cap, n, steps)
        lines.append(
            f"| {sigma} | {expected}/{cap}/{n} | {steps} | [{lower:.4f}, {upper:.4f}] | "
            f"{t_plda:.2f} | {theirs:.4f} | {t_dp:.2f} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "plda's lower bound is realized by a dataset pair (others contribute 0); its upper bound "
        "reveals the number of other records drawn. dp_accounting's number is a pessimistic "
        "estimate of its own analysis.",
        "",
        "### Gradient accumulation (m Poisson micro-batches, noise added once)",
        "",
        "| sigma | q | m | steps | plda [lower, upper] | plda s | dp_accounting mixture PLD | "
        "s | ratio | one step at rate m q (wrong) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for sigma, rate, micro, steps in ACCUMULATION_CASES:
        (lower, upper), t_plda = plda_accumulation(sigma, rate, micro, steps)
        theirs, t_dp = dp_accumulation(sigma, rate, micro, steps)
        wrong = plda_one_step_at_m_rate(sigma, rate, micro, steps)
        lines.append(
            f"| {sigma} | {rate} | {micro} | {steps} | [{lower:.4f}, {upper:.4f}] | "
            f"{t_plda:.2f} | {theirs:.4f} | {t_dp:.2f} | {t_dp / t_plda:.1f}x | {wrong:.4f} |"
        )
        print(lines[-1], flush=True)
    lines += [
        "",
        "A record can be in several of the m independently sampled micro-batches, so the pair is "
        "the mixture sum_k Bin(k; m, q) N(k, sigma^2) against N(0, sigma^2) "
        "(`plda.PoissonSampled(plda.Gaussian(sigma), q, group_size=m)`); the last column is "
        "what recording one Poisson step at rate m q (Opacus's accounting of "
        "`accumulated_iterations`) reports, "
        "below plda's certified lower bound. dp_accounting computes the same mixture "
        "(`from_mixture_gaussian_mechanism`, add/remove, pessimistic estimate only).",
        "",
    ]
    if not args.no_allocation:
        rows = run_allocation.run_all(log=lambda line: print(line, flush=True))
        lines.append(run_allocation.render(rows, heading="##", script="benchmarks/run_samplers.py"))
        if not args.no_write:
            run_allocation.write(run_allocation.render(rows, script="benchmarks/run_samplers.py"))
    text = "\n".join(lines)
    if not args.no_write:
        OUTPUT.write_text("# Sampler benchmarks\n\n" + text, encoding="utf-8")
        # one heading level down: the section sits under RESULTS.md's own title
        body = ("\n" + text).replace("\n### ", "\n#### ").replace("\n## ", "\n### ")
        sections.write_section("samplers", "## Sampler benchmarks\n" + body)
        print(f"wrote {OUTPUT} and its section of RESULTS.md")


if __name__ == "__main__":
    main()
