"""The sections of ``benchmarks/RESULTS.md``, each written by one script.

``RESULTS.md`` is the engine report of ``run_engine.py`` followed by marked sections that other
scripts own: ``run_accountant.py`` (accountant loops and calibration, per-step schedules) and
``run_samplers.py`` (the samplers against dp_accounting and PLD_accounting), ``run_groups.py``
(group privacy). Each script
replaces only its own section, so all results stay in one file, in a fixed order.
"""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
#: section name -> the marker line that starts it, in the order the sections appear
MARKERS = {
    "accountant": "<!-- accountant benchmark: written by run_accountant.py -->",
    "samplers": "<!-- sampler benchmark: written by run_samplers.py -->",
    "groups": "<!-- group privacy benchmark: written by run_groups.py -->",
}


def split(text: str) -> tuple[str, dict[str, str]]:
    """``(head, {name: body})``: the text before the first marker and each marked section."""
    found = sorted(
        (text.find(marker), name) for name, marker in MARKERS.items() if marker in text
    )
    head = text[: found[0][0]] if found else text
    sections = {}
    for i, (start, name) in enumerate(found):
        end = found[i + 1][0] if i + 1 < len(found) else len(text)
        sections[name] = text[start + len(MARKERS[name]) : end].strip("\n")
    return head.rstrip("\n"), sections


def join(head: str, sections: dict[str, str]) -> str:
    parts = [head.rstrip("\n")]
    for name, marker in MARKERS.items():
        if name in sections:
            parts.append(marker + "\n\n" + sections[name].strip("\n"))
    return "\n\n".join(part for part in parts if part) + "\n"


def write_head(head: str, path: Path = RESULTS) -> None:
    """Replace the engine report, keeping every marked section."""
    _, sections = split(path.read_text(encoding="utf-8") if path.exists() else "")
    path.write_text(join(head, sections), encoding="utf-8")


def write_section(name: str, body: str, path: Path = RESULTS) -> None:
    """Replace (or add) the section ``name``, keeping the rest (a name without a marker is an
    error: it would be dropped silently)."""
    if name not in MARKERS:
        raise ValueError(f"no section {name!r} in RESULTS.md: add its marker to MARKERS")
    head, sections = split(path.read_text(encoding="utf-8") if path.exists() else "")
    sections[name] = body
    path.write_text(join(head, sections), encoding="utf-8")
