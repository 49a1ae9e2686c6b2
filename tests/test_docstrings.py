"""Docstrings that serve a reader (issue 25, item 5): every public callable says what it takes,
what it gives back and what it raises, in numpy style.

What is public (per module: every module of plda but ``__main__`` and those of private packages
such as ``plda._internal``):

* the names of the module's ``__all__``, or, without one, the functions and classes it defines
  whose names do not start with ``_`` (a name another module may import: the architecture test
  forbids importing private ones);
* of a public class, the methods, class methods, static methods and properties defined in its
  body whose names do not start with ``_``.

A callable defined once and re-exported elsewhere is counted once, in its defining module.

What each one needs (:func:`missing_sections`):

* a one-line summary: a docstring whose first paragraph is one line;
* ``Parameters`` when it takes arguments (beyond ``self``/``cls``); for a class, when its
  ``__init__`` does (a dataclass, built by keyword, may list its fields under ``Attributes``);
* ``Returns`` (or ``Yields``) when it returns a value (a ``return`` with a value in its body, or a
  return annotation that is not ``None``); not for classes and properties (a property is read
  like an attribute and documented like one, numpydoc's convention);
* ``Raises`` when its body has a ``raise`` statement (a class: its ``__init__``). Exceptions that
  only propagate from a checked argument are documented where they matter to a caller, which no
  test can decide; this one keeps the direct ones honest.

The packages of :data:`COVERED` must have no offender, and their docstrings must render as
written on the API pages (griffe's numpy parser, which mkdocstrings uses, warns about nothing and
shows each argument's real default; skipped without griffe). The other packages' offenders are
listed in :data:`KNOWN_MISSING`, which may only shrink: a new public callable without its
sections fails, and so does an entry that has been fixed, moved or deleted (delete the entry
then; after a move, ``--missing`` prints the list anew).

Run as a script (``python tests/test_docstrings.py``) it prints the share of public callables
with their sections, per package and for plda as a whole; ``--missing`` prints today's
offenders outside the covered packages, in the form of :data:`KNOWN_MISSING`.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import inspect
import pkgutil
import re
import sys
import textwrap
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: packages (or modules) whose public callables all have their sections
COVERED = (
    "plda.calibration",
    "plda.filters",
    "plda.theorems",
    "plda.conversions",
    "plda.serialization",
    "plda.bounds",
    "plda.epochs",
    "plda.accounting",
    "plda.adapters",
    "plda.cli",
    "plda.plot",
    "plda.samplers",
    "plda.sweep",
    "plda.testing",
    "plda.engine",
    "plda.grid",
    "plda.discretization",
    "plda.pld",
    "plda.mechanisms",
    "plda.matrix",
    "plda.selection",
)

_SECTION = re.compile(r"^\s*(?P<name>[A-Z][A-Za-z ]+)\n\s*-{3,}\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Entry:
    """One public callable: where it is defined and what it is."""

    name: str  # "module:qualname"
    kind: str  # "function", "method", "property" or "class"
    obj: object


def _modules() -> list[str]:
    """Every public module of plda: not ``__main__`` (importing it runs the command line) and
    not inside a private package (``plda._internal``: its names are not the API)."""
    plda = importlib.import_module("plda")
    names = ["plda"]
    for info in pkgutil.walk_packages(plda.__path__, "plda."):
        parts = info.name.split(".")
        if parts[-1] != "__main__" and not any(p.startswith("_") for p in parts):
            names.append(info.name)
    return sorted(names)


def _defined_in(obj, module_name: str) -> bool:
    return getattr(obj, "__module__", None) == module_name


def _public_members(cls) -> list[tuple[str, str, object]]:
    """``(name, kind, function)`` of the public methods and properties of ``cls``'s own body."""
    found = []
    for name, value in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(value, property):
            found.append((name, "property", value.fget))
        elif isinstance(value, functools.cached_property):
            found.append((name, "property", value.func))
        elif isinstance(value, staticmethod | classmethod):
            found.append((name, "method", value.__func__))
        elif inspect.isfunction(value):
            found.append((name, "method", value))
    return found


def _exported(module, name: str) -> object:
    """``module.name``, or None when it needs an optional dependency that is not installed (its
    door raises ``ImportError`` naming the extra: ``plda.adapters.PLDPrivacyAccountant`` without
    dp_accounting); its docstrings are then checked where the extra is installed."""
    try:
        return getattr(module, name, None)
    except ImportError:
        return None


@functools.cache
def public_callables() -> dict[str, Entry]:
    """Every public callable of plda, by ``"module:qualname"`` of its definition."""
    entries: dict[str, Entry] = {}
    for module_name in _modules():
        module = importlib.import_module(module_name)
        if hasattr(module, "__all__"):
            objects = [_exported(module, name) for name in module.__all__]
        else:
            objects = [
                value
                for name, value in vars(module).items()
                if not name.startswith("_") and _defined_in(value, module_name)
            ]
        for obj in objects:
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue  # constants, type aliases, submodules
            home = getattr(obj, "__module__", "") or ""
            if not home.startswith("plda"):
                continue
            key = f"{home}:{obj.__qualname__}"
            if inspect.isclass(obj):
                entries[key] = Entry(key, "class", obj)
                for name, kind, function in _public_members(obj):
                    entries[f"{key}.{name}"] = Entry(f"{key}.{name}", kind, function)
            else:
                entries[key] = Entry(key, "function", obj)
    return entries


# ------------------------------------------------------------------------------ the rules
def _sections(doc: str) -> set[str]:
    return {m["name"].strip() for m in _SECTION.finditer(doc)}


def _function_node(function) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:
        source = textwrap.dedent(inspect.getsource(function))
    except (OSError, TypeError):
        return None
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node
    return None


def _own_nodes(node):
    """The nodes of a function's body, not those of functions or classes nested in it."""
    stack = list(node.body)
    while stack:
        child = stack.pop()
        yield child
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        stack.extend(ast.iter_child_nodes(child))


def _raises(node) -> bool:
    return node is not None and any(isinstance(n, ast.Raise) for n in _own_nodes(node))


def _returns(node) -> bool:
    if node is None:
        return False
    annotation = node.returns
    if annotation is not None:
        return not (isinstance(annotation, ast.Constant) and annotation.value is None)
    return any(isinstance(n, ast.Return) and n.value is not None for n in _own_nodes(node))


def _yields(node) -> bool:
    if node is None:
        return False
    return any(isinstance(n, ast.Yield | ast.YieldFrom) for n in _own_nodes(node))


def _takes_arguments(function) -> bool:
    try:
        parameters = list(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return False
    return bool([p for p in parameters if p not in ("self", "cls")])


def missing_sections(entry: Entry) -> list[str]:
    """What the docstring of ``entry`` lacks (empty: it serves a reader)."""
    obj = entry.obj
    if entry.kind == "class":
        doc = vars(obj).get("__doc__")  # its own, not inherited
    else:
        doc = obj.__doc__
    doc = inspect.cleandoc(doc) if doc else None
    if not doc:
        return ["docstring"]
    missing = []
    if "\n" in doc.split("\n\n", 1)[0].strip():
        missing.append("one-line summary")
    sections = _sections(doc)
    if entry.kind == "class":
        init = vars(obj).get("__init__")
        if dataclasses.is_dataclass(obj):
            if dataclasses.fields(obj) and not sections & {"Parameters", "Attributes"}:
                missing.append("Parameters or Attributes")
        elif init is not None and _takes_arguments(init) and "Parameters" not in sections:
            missing.append("Parameters")
        if init is not None and _raises(_function_node(init)) and "Raises" not in sections:
            missing.append("Raises")
        return missing
    node = _function_node(obj)
    if entry.kind != "property":
        if _takes_arguments(obj) and "Parameters" not in sections:
            missing.append("Parameters")
        if _yields(node):
            if "Yields" not in sections:
                missing.append("Yields")
        elif _returns(node) and "Returns" not in sections:
            missing.append("Returns")
    if _raises(node) and "Raises" not in sections:
        missing.append("Raises")
    return missing


def _package(key: str) -> str:
    module = key.partition(":")[0]
    parts = module.split(".")
    return ".".join(parts[:2])


def _covered(key: str) -> bool:
    module = key.partition(":")[0]
    return any(module == c or module.startswith(c + ".") for c in COVERED)


# ------------------------------------------------------------------------------ allowlist
#: public callables outside :data:`COVERED` that lack sections today; may only shrink
KNOWN_MISSING: frozenset[str] = frozenset(
    {
    }
)


# ------------------------------------------------------------------------------ tests
def test_the_walk_finds_the_public_api():
    entries = public_callables()
    assert "plda.filters.base:PrivacyFilter.spend" in entries
    assert "plda.theorems.kov:kairouz_oh_viswanath" in entries
    assert "plda.serialization:save_pld" in entries
    assert not any(key.rpartition(".")[2].startswith("_") for key in entries)


def test_the_rules_on_small_cases():
    def documented(x: int) -> int:
        """Twice ``x``.

        Parameters
        ----------
        x
            A number.

        Returns
        -------
        int
            ``2 x``.

        Raises
        ------
        ValueError
            If ``x`` is negative.
        """
        if x < 0:
            raise ValueError("x must be >= 0")
        return 2 * x

    def bare(x):
        """Twice ``x``,
        or more."""
        if x < 0:
            raise ValueError("x must be >= 0")
        return 2 * x

    assert missing_sections(Entry("t:documented", "function", documented)) == []
    assert missing_sections(Entry("t:bare", "function", bare)) == [
        "one-line summary",
        "Parameters",
        "Returns",
        "Raises",
    ]


@pytest.mark.parametrize("package", COVERED)
def test_covered_packages_have_every_section(package):
    offenders = {
        key: missing_sections(entry)
        for key, entry in public_callables().items()
        if _covered(key) and key.startswith(package) and missing_sections(entry)
    }
    assert not offenders, "add the missing docstring sections:\n" + "\n".join(
        f"  {key}: {', '.join(missing)}" for key, missing in sorted(offenders.items())
    )


def test_other_packages_only_improve():
    missing = {
        key
        for key, entry in public_callables().items()
        if not _covered(key) and missing_sections(entry)
    }
    new = sorted(missing - KNOWN_MISSING)
    fixed = sorted(KNOWN_MISSING - missing)
    assert not new, "public callables without their docstring sections:\n  " + "\n  ".join(new)
    assert not fixed, (
        "fixed, moved or deleted: remove from KNOWN_MISSING:\n  " + "\n  ".join(fixed)
    )


def _parsed_problems(prefixes: tuple[str, ...]) -> list[str]:
    """What griffe's numpy parser (mkdocstrings reads the docstrings with it) finds wrong in the
    docstrings under ``prefixes``: its warnings, and documented defaults that are not the
    signature's (griffe gives a group of names the first one's default, and a ``{a, b}`` type
    its first choice)."""
    import logging

    griffe = pytest.importorskip("griffe")
    found: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            found.append(record.getMessage())

    logger = logging.getLogger("griffe")
    handler = Collect(level=logging.WARNING)
    logger.addHandler(handler)
    try:
        package = griffe.load(
            "plda", search_paths=[str(ROOT)], docstring_parser="numpy", resolve_aliases=False
        )

        def walk(obj):
            if obj.is_alias:
                return
            if obj.docstring and obj.path.startswith(prefixes):
                sections = obj.docstring.parse("numpy")
                signature = getattr(obj, "parameters", None) if obj.is_function else None
                for section in sections:
                    if section.kind.value != "parameters" or signature is None:
                        continue
                    for documented in section.value:
                        if documented.name not in signature:
                            continue
                        said = str(documented.value).replace('"', "'")
                        real = str(signature[documented.name].default).replace('"', "'")
                        if said != real:
                            found.append(
                                f"{obj.path}: {documented.name} renders with default {said}, "
                                f"its default is {real}"
                            )
            for member in obj.members.values():
                walk(member)

        walk(package)
    finally:
        logger.removeHandler(handler)
    return found


def test_covered_docstrings_render_as_written():
    problems = _parsed_problems(COVERED)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------------ the measure
def shares() -> dict[str, tuple[int, int]]:
    """``{package: (callables with their sections, public callables)}``, and ``"plda"`` for all."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for key, entry in public_callables().items():
        ok = not missing_sections(entry)
        for name in (_package(key), "plda (all)"):
            counts[name][0] += ok
            counts[name][1] += 1
    return {name: (good, total) for name, (good, total) in counts.items()}


def _report() -> str:
    lines = [f"{'package':28} {'with sections':>14} {'public':>7} {'share':>6}"]
    for name, (good, total) in sorted(shares().items(), key=lambda x: (x[0] == "plda (all)", x[0])):
        lines.append(f"{name:28} {good:14d} {total:7d} {good / total:6.0%}")
    return "\n".join(lines)


if __name__ == "__main__":
    # measure this checkout's plda, not an installed one
    sys.path.insert(0, str(ROOT))
    if "--missing" in sys.argv:
        for key, entry in sorted(public_callables().items()):
            if not _covered(key) and missing_sections(entry):
                print(f'    "{key}",')
    else:
        print(_report())
