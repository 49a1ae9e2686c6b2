"""opake, a Rust port of Google's PLD accounting, as a peer of :mod:`run_engine`.

opake's wheels need Python 3.13, so every run is a fresh 3.13 process
(:mod:`opake_child`) that times its own query after the native start-up and reports it;
:func:`run_engine.measure` takes that self-reported time, not the process's. The interpreter
is ``$PLDA_OPAKE_PYTHON``, else ``.venv-opake/bin/python`` at the repository's top, else
``python3.13`` on the ``PATH``, the first that imports opake; with none the tool is reported
"not installed" and skipped. To set one up::

    python3.13 -m venv .venv-opake
    .venv-opake/bin/pip install opake-accounting==0.16.1
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = HERE / "opake_child.py"
#: the import that proves opake's native extension is usable
PROBE = "from opake.api.accounting.core import opake_accounting"


@functools.cache
def interpreter() -> tuple[str | None, str]:
    """``(path, why)``: a Python that imports opake, or ``(None, why not)``."""
    candidates = [
        os.environ.get("PLDA_OPAKE_PYTHON"),
        str(HERE.parent / ".venv-opake" / "bin" / "python"),
        shutil.which("python3.13"),
    ]
    tried = []
    for path in filter(None, candidates):
        if not Path(path).exists():
            continue
        done = subprocess.run([path, "-c", PROBE], capture_output=True, text=True, timeout=120)
        if done.returncode == 0:
            return path, ""
        tried.append(path)
    where = ", ".join(tried) or "no Python 3.13 found"
    return None, f"not installed (needs Python 3.13 with opake-accounting; tried: {where})"


@functools.cache
def version() -> str:
    path, why = interpreter()
    if path is None:
        return "not installed"
    done = subprocess.run(
        [path, "-c", "import importlib.metadata as m; print(m.version('opake-accounting'))"],
        capture_output=True, text=True, timeout=120,
    )
    return done.stdout.strip() or "unknown"


def query(delta: float, components: list[tuple[float, float, int]]) -> dict:
    """One timed query in a fresh opake process: ``{"upper", "wall", "cpu", "rss_growth"}``.

    Raises
    ------
    RuntimeError
        If no interpreter imports opake, or the child fails.
    """
    path, why = interpreter()
    if path is None:
        raise RuntimeError(why)
    spec = json.dumps({"delta": delta, "components": [list(c) for c in components]})
    done = subprocess.run([path, str(CHILD), spec], capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        raise RuntimeError(f"opake child failed: {done.stderr.strip().splitlines()[-1:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
