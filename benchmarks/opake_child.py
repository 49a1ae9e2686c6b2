#!/usr/bin/env python
"""One timed opake query in this (fresh) process, reported as one JSON line on stdout.

Run by :mod:`opake_tool` under a Python 3.13 interpreter that has ``opake-accounting``
installed (opake's wheels need 3.13). The import, the native extension's start-up, is not
timed: the clock starts at the first mechanism built, as for the in-process peers.

Usage::

    python3.13 benchmarks/opake_child.py '{"delta": 1e-5, "components": [[1.0, 0.01, 1000]]}'

``components`` lists ``[noise_multiplier, sample_rate, count]`` (sensitivity 1; a sample rate
of 1 is the plain Gaussian). opake 0.16.1 has no Laplace mechanism: such a case is not run.
"""

from __future__ import annotations

import json
import sys
import time


def _status(key: str) -> int | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")  # resets VmHWM to the current RSS (Linux)
        return True
    except OSError:
        return False


def main() -> int:
    spec = json.loads(sys.argv[1])
    from opake.api.accounting.core import opake_accounting as native

    config = native.DiscretizationConfig()  # its defaults: grid 1e-4, as dp_accounting's
    before = _status("VmRSS")
    peak_ok = _reset_peak()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    composed = None
    for sigma, rate, count in spec["components"]:
        pld = native.gaussian_pld(float(sigma), config)
        if rate < 1.0:
            pld = native.poisson_pld(pld, float(rate))
        if count > 1:
            pld = pld.self_compose(int(count))
        composed = pld if composed is None else composed.compose(pld)
    epsilon = composed.epsilon_at(float(spec["delta"]))
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    after = _status("VmHWM") if peak_ok else None
    growth = after - before if after is not None and before is not None else None
    print(json.dumps({"upper": epsilon, "wall": wall, "cpu": cpu, "rss_growth": growth}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
