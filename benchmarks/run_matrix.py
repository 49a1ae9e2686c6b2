#!/usr/bin/env python
"""Matrix mechanisms: ``plda.matrix.sensitivity`` on n = 2,000 strategies, and the reductions.

* Sensitivity on banded and Toeplitz strategies of 2,000 steps (dense arrays and Toeplitz
  coefficients), best of 3 warm runs, with whether plda's value is exact or a certified bound;
  jax_privacy's sensitivity functions on the same strategies when it can be imported (it is
  looked for on ``--jax-privacy-path`` too, e.g. a ``pip install --target`` directory), in a
  fresh process (its first call includes jit compilation, the second does not).
* Brute-force enumeration against plda on small strategies (n = 10, 12).
* The reductions' certified epsilon against their references: BandMF with cyclic Poisson
  sampling against the DP-SGD composition, tree aggregation against dp_accounting's RDP
  accountant, a multi-epoch identity strategy against composed Gaussians.
* ``PoissonMatrixMechanism`` (every step Poisson-sampled, conditional composition): the
  certified bracket against the unamplified Gaussian and DP-SGD at the same noise, and a Monte
  Carlo estimate of the realized run's epsilon (with its 95% interval) where one is cheap.

Usage::

    python benchmarks/run_matrix.py                       # -> benchmarks/RESULTS_matrix.md
    python benchmarks/run_matrix.py --no-write            # print only
    python benchmarks/run_matrix.py --jax-privacy-path /tmp/jaxp
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import plda  # noqa: E402
import plda.matrix as pm  # noqa: E402

OUTPUT = HERE / "RESULTS_matrix.md"
N = 2000
DELTA = 1e-5


def banded(n: int, bands: int, seed: int, normalize: bool = True) -> np.ndarray:
    rng = np.random.default_rng(seed)
    offsets = np.subtract.outer(np.arange(n), np.arange(n))
    matrix = np.where((offsets >= 0) & (offsets < bands), rng.exponential(size=(n, n)), 0.0)
    return matrix / np.linalg.norm(matrix, axis=0) if normalize else matrix


def sqrt_prefix(n: int) -> np.ndarray:
    """binom(2t, t) / 4^t: the square root of the prefix-sum matrix."""
    t = np.arange(1, n)
    return np.cumprod(np.r_[1.0, (2 * t - 1) / (2 * t)])


def cases():
    """(label, kind, strategy, k, s): kind 'dense' or 'toeplitz' (coefficients)."""
    coefficients = sqrt_prefix(N)
    blt = 0.9 ** np.arange(64)
    rng = np.random.default_rng(9)
    signed = rng.normal(size=N) / np.arange(1, N + 1)
    offsets = np.subtract.outer(np.arange(N), np.arange(N))
    signed_band = np.where((offsets >= 0) & (offsets < 32), rng.normal(size=(N, N)), 0.0)
    return [
        ("BandMF dense, b = 16, s = 16", "dense", banded(N, 16, 0), 125, 16),
        ("BandMF dense, b = 64, s = 64", "dense", banded(N, 64, 1), 32, 64),
        ("BandMF dense, b = 32, s = 16 (s < b)", "dense", banded(N, 32, 2), 125, 16),
        ("sqrt prefix Toeplitz coefficients, s = 500", "toeplitz", coefficients, 4, 500),
        ("sqrt prefix Toeplitz coefficients, s = 100", "toeplitz", coefficients, 20, 100),
        ("sqrt prefix Toeplitz coefficients, s = 1", "toeplitz", coefficients, N, 1),
        ("sqrt prefix Toeplitz as a dense array, s = 100", "dense",
         pm.toeplitz_strategy(coefficients).dense(), 20, 100),
        ("banded Toeplitz 0.9^t, 64 bands, s = 16", "toeplitz", blt, 125, 16),
        ("signed Toeplitz, full width, s = 100", "toeplitz", signed, 20, 100),
        ("BandMF dense signed, b = 32, s = 16", "dense", signed_band, 125, 16),
    ]


def best_of(fn, repeats: int = 3) -> tuple[object, float]:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - start)
    return out, best


JAX_SCRIPT = r"""
import json, sys, time
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
from jax_privacy.matrix_factorization import sensitivity, toeplitz
out = []
N = int(sys.argv[2])
for path, kind, k, s in json.loads(sys.argv[1]):
    data = np.load(path)
    times, value = [], None
    try:
        for _ in range(2):
            start = time.perf_counter()
            if kind == "toeplitz":
                value = float(np.sqrt(toeplitz.minsep_sensitivity_squared(
                    data, min_sep=s, max_participations=k, n=N)))
            else:
                value = float(sensitivity.get_min_sep_sensitivity_upper_bound(
                    data, min_sep=s, max_participations=k))
            times.append(time.perf_counter() - start)
    except Exception as error:  # noqa: BLE001 - reported in the table
        out.append({"error": str(error).splitlines()[0][:60]})
        continue
    out.append({"value": value, "first": times[0], "second": times[1]})
print(json.dumps(out))
"""


def jax_privacy(case_list, path: str | None) -> tuple[list | None, str]:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    probe = subprocess.run(
        [sys.executable, "-c", "import jax_privacy, importlib.metadata as m; "
         "print(m.version('jax-privacy'))"],
        env=env, capture_output=True, text=True, timeout=300,
    )
    if probe.returncode != 0:
        return None, "not importable (`pip install jax-privacy` failed or was not tried)"
    version = probe.stdout.strip()
    with tempfile.TemporaryDirectory() as tmp:
        jobs = []
        for i, (_, kind, strategy, k, s) in enumerate(case_list):
            file = Path(tmp) / f"case{i}.npy"
            np.save(file, strategy)
            jobs.append((str(file), kind, k, s))
        done = subprocess.run([sys.executable, "-c", JAX_SCRIPT, json.dumps(jobs), str(N)], env=env,
                              capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        return None, f"jax-privacy {version} failed: {done.stderr.strip()[-300:]}"
    return json.loads(done.stdout.strip().splitlines()[-1]), f"jax-privacy {version}"


JAX_BANDMF_SCRIPT = r"""
import json, sys, time
import dp_accounting
from jax_privacy.experimental import accounting
out = []
for sigma, n, bands, q, delta in json.loads(sys.argv[1]):
    start = time.perf_counter()
    event = accounting.amplified_bandmf_event(sigma, n, num_bands=bands, sampling_prob=q)
    pld = dp_accounting.pld.PLDAccountant()
    pld.compose(event)
    out.append({"epsilon": pld.get_epsilon(delta), "seconds": time.perf_counter() - start})
print(json.dumps(out))
"""


def jax_privacy_bandmf(jobs, path: str | None) -> list | None:
    """jax_privacy's ``amplified_bandmf_event`` for each ``(sigma, n, bands, q, delta)``,
    read by dp_accounting's PLD accountant (its default), in a fresh process: epsilon and
    seconds (event and accounting, imports excluded); None when it cannot run."""
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = path + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", JAX_BANDMF_SCRIPT, json.dumps(jobs)], env=env,
                          capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def brute_force(matrix: np.ndarray, k: int, s: int) -> float:
    gram = matrix.T @ matrix
    n, best = gram.shape[0], 0.0
    for size in range(1, k + 1):
        for steps in itertools.combinations(range(n), size):
            if any(b - a < s for a, b in itertools.pairwise(steps)):
                continue
            block = gram[np.ix_(steps, steps)]
            for signs in itertools.product((-1.0, 1.0), repeat=size - 1):
                u = np.array((1.0, *signs))
                best = max(best, float(u @ block @ u))
    return math.sqrt(best)


def small_cases():
    rng = np.random.default_rng(7)
    out = []
    for n, bands, k, s, sign in ((10, 4, 3, 2, "non-negative"), (12, 5, 4, 2, "non-negative"),
                                 (10, 10, 3, 2, "mixed"), (12, 6, 3, 3, "mixed")):
        matrix = rng.normal(size=(n, n))
        if sign == "non-negative":
            matrix = np.abs(matrix)
        offsets = np.subtract.outer(np.arange(n), np.arange(n))
        matrix = np.where((offsets >= 0) & (offsets < bands), matrix, 0.0)
        out.append((f"n = {n}, b = {bands}, k = {k}, s = {s}, {sign}", matrix, k, s))
    return out


def reductions(jax_path: str | None = None):
    rows = []
    strategy = banded(N, 16, 3)
    band = pm.CyclicPoissonBandMF(strategy, 1.0, 0.05)
    (bounds, seconds) = best_of(lambda: pm.CyclicPoissonBandMF(strategy, 1.0, 0.05)
                                .pld().epsilon_bounds(DELTA), 1)
    reference = plda.PrivacyLossDistribution.from_mechanism(
        plda.PoissonSampled(plda.Gaussian(sigma=1.0 / band.max_column_norm), 0.05),
        band.rounds).epsilon_bounds(DELTA)
    realized = band.epsilon_bounds(DELTA)
    rows.append((f"BandMF n = 2000, b = 16, sigma = 1, q = 0.05 (cyclic Poisson; `pld()`; "
                 f"`epsilon_bounds` with the realized lower bound: [{realized.lower:.6f}, "
                 f"{realized.upper:.6f}], exact = {band.exact})", bounds, seconds,
                 f"DP-SGD, {band.rounds} steps: [{reference.lower:.6f}, "
                 f"{reference.upper:.6f}]", bool(tuple(bounds) == tuple(reference))))
    theirs = jax_privacy_bandmf([(1.0 / band.max_column_norm, N, 16, 0.05, DELTA)], jax_path)
    if theirs:
        inside = bounds.lower <= theirs[0]["epsilon"] <= bounds.upper
        rows.append(("the same BandMF, jax_privacy's `amplified_bandmf_event` read by "
                     "dp_accounting's PLD accountant", bounds, seconds,
                     f"{theirs[0]['epsilon']:.6f} in {theirs[0]['seconds']:.3f} s "
                     f"({theirs[0]['seconds'] / seconds:.1f}x plda's time)",
                     "inside the bracket" if inside else "OUTSIDE the bracket"))
    tree = pm.TreeAggregation(N, 4.0)
    (bounds, seconds) = best_of(lambda: pm.TreeAggregation(N, 4.0).epsilon_bounds(DELTA), 1)
    try:
        import dp_accounting as dpa

        rdp = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_SPECIAL)
        event = dpa.SingleEpochTreeAggregationDpEvent(noise_multiplier=4.0, step_counts=N)
        theirs = f"dp_accounting RDP: {rdp.compose(event).get_epsilon(DELTA):.6f}"
    except ImportError:
        theirs = "dp_accounting not installed"
    rows.append((f"Tree aggregation n = 2000 (depth {tree.depth}), sigma = 4", bounds, seconds,
                 theirs, None))
    multi = pm.MultiEpochMF(np.eye(N), 20.0, participations=20, min_separation=100)
    (bounds, seconds) = best_of(lambda: pm.MultiEpochMF(
        np.eye(N), 20.0, participations=20, min_separation=100).epsilon_bounds(DELTA), 1)
    composed = plda.PrivacyLossDistribution.from_mechanism(
        plda.Gaussian(sigma=20.0), 20).epsilon_bounds(DELTA)
    rows.append((f"Identity n = 2000, k = 20, s = 100, sigma = 20 (mu = {multi.mu:g})", bounds,
                 seconds, f"20 Gaussian steps: [{composed.lower:.6f}, {composed.upper:.6f}]",
                 bool(composed.lower <= bounds.upper and bounds.lower <= composed.upper)))
    return rows


def realized_log_ratios(c, sigma, q, n, samples, with_record, rng):
    """``log p/q`` of the realized run's output (the record's gradient one unit vector at every
    step, every other gradient 0) for ``samples`` outputs drawn with the record (P) or without
    (Q): the forward algorithm over the last ``b - 1`` participations of a ``b``-banded
    Toeplitz strategy ``c``."""
    c = np.asarray(c, dtype=float)
    states = 1 << (c.size - 1)  # bit k - 1 of a state: x_{i-k}
    means = np.array([[float(np.dot(c, [bit] + [(s >> k) & 1 for k in range(c.size - 1)]))
                       for bit in (0, 1)] for s in range(states)])
    log_alpha = np.full((samples, states), -np.inf)
    log_alpha[:, 0] = 0.0  # no participation before step 0
    history = np.zeros(samples, dtype=np.int64)
    log_prior = (math.log1p(-q), math.log(q))
    for _ in range(n):
        if with_record:
            bit = (rng.random(samples) < q).astype(np.int64)
            y = means[history, bit] + sigma * rng.standard_normal(samples)
            history = ((history << 1) | bit) & (states - 1)
        else:
            y = sigma * rng.standard_normal(samples)
        new = np.full((samples, states), -np.inf)
        for s in range(states):
            for b in (0, 1):
                m = means[s, b]
                to = ((s << 1) | b) & (states - 1)
                new[:, to] = np.logaddexp(new[:, to], log_alpha[:, s] + log_prior[b]
                                          + (m * y - m * m / 2) / sigma**2)
        log_alpha = new
    top = np.max(log_alpha, axis=1)
    return top + np.log(np.sum(np.exp(log_alpha - top[:, None]), axis=1))


def monte_carlo_epsilon(c, sigma, q, n, delta, samples, seed=0):
    """Estimated epsilon at ``delta`` of the realized run, and its 95% interval: delta(eps)
    estimated as the larger direction's mean of ``(1 - e^(eps -+ L))_+``, inverted at the
    estimate and at the estimate -+ 1.96 standard errors."""
    rng = np.random.default_rng(seed)
    with_record = realized_log_ratios(c, sigma, q, n, samples, True, rng)
    without = realized_log_ratios(c, sigma, q, n, samples, False, rng)

    def delta_at(eps, shift):
        remove = np.maximum(0.0, -np.expm1(eps - with_record))
        add = np.maximum(0.0, -np.expm1(eps + without))
        pick = remove if remove.mean() >= add.mean() else add
        return pick.mean() + shift * pick.std() / math.sqrt(samples)

    def invert(shift):
        lo, hi = 0.0, 50.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if delta_at(mid, shift) > delta else (lo, mid)
        return hi

    return invert(0.0), invert(-1.96), invert(1.96)


def conditional():
    rows = []
    band = np.array([1.0, 0.5, 0.25]) / math.sqrt(1.3125)
    q, delta = 0.01, 1e-6
    cases_ = [(f"3-band Toeplitz {np.round(band, 4).tolist()}", pm.toeplitz_strategy(band, N),
               sigma) for sigma in (2.0, 4.0, 8.0, 16.0)]
    cases_ += [("BandMF dense (random entries), b = 8", banded(N, 8, 3), sigma)
               for sigma in (8.0, 16.0)]
    cases_ += [("identity (DP-SGD)", pm.toeplitz_strategy([1.0], N), 2.0),
               ("sqrt prefix Toeplitz", pm.toeplitz_strategy(sqrt_prefix(200), 200), 16.0)]
    for label, strategy, sigma in cases_:
        (bounds, seconds) = best_of(lambda st=strategy, s=sigma: pm.PoissonMatrixMechanism(
            st, s, q).epsilon_bounds(delta), 1)
        run = pm.PoissonMatrixMechanism(strategy, sigma, q)
        steps = run.steps
        unamplified = plda.PrivacyLossDistribution.from_mechanism(run.unamplified).epsilon(delta)
        dp_sgd = plda.PrivacyLossDistribution.from_mechanism(
            plda.PoissonSampled(plda.Gaussian(sigma), q), steps).epsilon(delta)
        rows.append((f"{label}, n = {steps}, sigma = {sigma:g}", bounds, seconds, unamplified,
                     dp_sgd, len(run.laws())))
    return rows


def monte_carlo_rows(samples: int):
    band = np.array([1.0, 0.5, 0.25]) / math.sqrt(1.3125)
    q, delta = 0.01, 1e-3
    rows = []
    for sigma in (4.0, 8.0):
        bounds = pm.PoissonMatrixMechanism(pm.toeplitz_strategy(band, N), sigma,
                                           q).epsilon_bounds(delta)
        start = time.perf_counter()
        estimate = monte_carlo_epsilon(band, sigma, q, N, delta, samples)
        rows.append((sigma, bounds, estimate, time.perf_counter() - start))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--jax-privacy-path", default=None)
    parser.add_argument("--monte-carlo-samples", type=int, default=20_000)
    args = parser.parse_args()

    case_list = cases()
    lines = ["# Matrix mechanisms", "",
             f"Run {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC on "
             f"{platform.machine()}, Python {platform.python_version()}, plda "
             f"{plda.__version__}, numpy {np.__version__} (`benchmarks/run_matrix.py`).", ""]
    ours = []
    for _, kind, strategy, k, s in case_list:
        argument = pm.toeplitz_strategy(strategy, N) if kind == "toeplitz" else strategy
        found, seconds = best_of(lambda a=argument, k=k, s=s: pm.sensitivity(a, k, s))
        ours.append((found, seconds))
    jax_rows, jax_note = jax_privacy(case_list, args.jax_privacy_path)

    lines += ["## Sensitivity on n = 2,000 strategies", "",
              f"jax_privacy: {jax_note} (installed apart with `pip install --target DIR "
              "jax-privacy`, run from `--jax-privacy-path DIR` in its own process, float64). "
              "Its Toeplitz function is exact for non-negative "
              "non-increasing coefficients; for dense arrays it is the per-row upper bound "
              "`get_min_sep_sensitivity_upper_bound` (Algorithm 4 of the amplified BandMF "
              "paper), which ignores the separation between a row and its own column.", "",
              "| strategy | k | s | plda value | exact? | method | plda realized lower | plda s "
              "| jax_privacy value | jax_privacy s (first, second call) | relative difference |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, ((label, _, _, k, s), (found, seconds)) in enumerate(zip(case_list, ours,
                                                                       strict=True)):
        if jax_rows and "error" in jax_rows[i]:
            other = f"refused: {jax_rows[i]['error']} | - | -"
        elif jax_rows:
            theirs = jax_rows[i]
            other = (f"{theirs['value']:.10g} | {theirs['first']:.3f}, {theirs['second']:.3f} "
                     f"| {(found.value - theirs['value']) / theirs['value']:+.2e}")
        else:
            other = "- | - | -"
        lines.append(f"| {label} | {k} | {s} | {found.value:.10g} | "
                     f"{'exact' if found.exact else 'upper bound'} | {found.method} | "
                     f"{found.lower:.10g} | {seconds:.4f} | {other} |")
    lines += ["", "*plda s*: best of 3 warm runs of `plda.matrix.sensitivity` (validation, "
              "Gram by diagonals, dynamic programs); the dense cases include reading the "
              "2000 x 2000 array. *relative difference*: (plda - jax_privacy) / jax_privacy, "
              "negative where plda's certified value is smaller. *plda realized lower*: the "
              "value of a pattern plda found (signs by coordinate ascent), a lower bound on the "
              "true sensitivity. The machine's 2 cores "
              "were shared with another test run: times vary by 2x between runs.", ""]

    lines += ["## Against brute-force enumeration (small n)", "",
              "| strategy | brute force | s | plda (default) | exact? | s | plda bound "
              "(`exhaustive_limit=0`) | exact? | s |", "|---|---|---|---|---|---|---|---|---|"]
    for label, matrix, k, s in small_cases():
        reference, brute_seconds = best_of(lambda m=matrix, k=k, s=s: brute_force(m, k, s), 1)
        found, seconds = best_of(lambda m=matrix, k=k, s=s: pm.sensitivity(m, k, s))
        bound, bound_seconds = best_of(
            lambda m=matrix, k=k, s=s: pm.sensitivity(m, k, s, exhaustive_limit=0))
        lines.append(f"| {label} | {reference:.10g} | {brute_seconds:.3f} | {found.value:.10g} "
                     f"| {found.exact} | {seconds:.4f} | {bound.value:.10g} | {bound.exact} | "
                     f"{bound_seconds:.4f} |")
    lines += ["", "Brute force: every pattern and sign vector in Python. plda's default "
              "enumerates too at this size (exact); the forced structured path gives an exact "
              "value or its certified bound.", ""]

    lines += ["## Reductions: certified epsilon at delta = 1e-5 against references", "",
              "| run | plda [lower, upper] | s | reference | bit for bit |",
              "|---|---|---|---|---|"]
    for label, bounds, seconds, reference, same in reductions(args.jax_privacy_path):
        flag = same if isinstance(same, str) else (
            "-" if same is None else ("yes" if same else "within the bracket"))
        lines.append(f"| {label} | [{bounds.lower:.6f}, {bounds.upper:.6f}] | {seconds:.3f} | "
                     f"{reference} | {flag} |")
    lines += ["", "Tree aggregation: dp_accounting's RDP accountant reads the same Gaussian "
              "(RDP alpha depth / (2 sigma^2)); its epsilon is larger by the RDP-to-DP "
              "conversion, plda's is the PLD of the Gaussian itself. BandMF: the columns are "
              "normalized in floating point, so they differ from the largest by an ulp and "
              "`exact` is False; `epsilon_bounds` then takes its lower bound from the realized "
              "part at its smallest norm (it differs from the DP-SGD lower bound in the 10th "
              "digit). Times are cold (first query, discretization included).", ""]

    lines += ["## Every step Poisson-sampled: conditional composition (`PoissonMatrixMechanism`)",
              "", "Epsilon at delta = 1e-6, q = 0.01. *unamplified*: the record in every step "
              "(`run.unamplified`); *DP-SGD*: `PoissonSampled(Gaussian(sigma), q)` for as many "
              "steps, the identity strategy's value. Times are cold (posterior bounds, laws, "
              "SVD for the lower bound, both PLDs).", "",
              "| run | plda [lower, upper] | s | laws | unamplified Gaussian | DP-SGD at sigma |",
              "|---|---|---|---|---|---|"]
    for label, bounds, seconds, unamplified, dp_sgd, laws in conditional():
        lines.append(f"| {label} | [{bounds.lower:.4f}, {bounds.upper:.4f}] | {seconds:.2f} | "
                     f"{laws} | {unamplified:.4f} | {dp_sgd:.4f} |")
    samples = args.monte_carlo_samples
    lines += ["", f"Monte Carlo ({samples} outputs per direction, forward algorithm over the "
              "band) of the *realized* run (the record's gradient one unit vector at every "
              "step, every other gradient 0; the lower bound is a post-processing of it), "
              "epsilon at "
              "delta = 1e-3 for the 3-band strategy, n = 2000, q = 0.01. It estimates one "
              "realized pair, so it is not a certificate; a value inside plda's bracket says "
              "where the truth likely is.", "",
              "| sigma | plda [lower, upper] at 1e-3 | Monte Carlo estimate [95% interval] | "
              "Monte Carlo s |", "|---|---|---|---|"]
    for sigma, bounds, (value, low, high), seconds in monte_carlo_rows(samples):
        lines.append(f"| {sigma:g} | [{bounds.lower:.4f}, {bounds.upper:.4f}] | {value:.4f} "
                     f"[{low:.4f}, {high:.4f}] | {seconds:.1f} |")
    lines += ["", "No peer accounts this sampler with a certified bound: jax_privacy and opake "
              "reduce BandMF exactly under cyclic Poisson sampling (above) and estimate other "
              "samplers by Monte Carlo (opake's for b-min-sep sampling, another sampler).", ""]

    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        OUTPUT.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
