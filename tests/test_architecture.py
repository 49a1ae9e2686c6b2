"""The engine's shape, kept by a test (issue 13).

1. **No import cycles** among plda modules, counting imports inside functions too (a
   function-local import hides a cycle from Python, not from this test).
2. **No private name across modules**: no ``from plda.y import _z``, no ``import plda._y`` of a
   private module, no ``alias._z`` read where ``alias`` is a plda module. Private *packages* are
   fine (``plda._internal.caches``: the package is private, the names inside it are public).
3. **No module over** :data:`MAX_LINES` physical lines.

Today's offenders are listed in the ``KNOWN_*`` allowlists below. They may only shrink: the test
fails when a new violation appears *and* when a listed one has gone (delete its entry then), so
the lists stay honest.

How the import graph is built (static, with :mod:`ast`, nothing is imported):

* ``import plda.a.b`` and ``from plda.a.b import X`` are edges to ``plda.a.b``; ``from plda.a
  import b`` is an edge to ``plda.a.b`` when ``b`` is a module, else to ``plda.a``. A package's
  ``__init__`` that re-exports from its submodules has edges to them.
* The implicit import of parent packages (``import plda.a.b`` also runs ``plda/a/__init__``) is
  not an edge: every submodule would otherwise form a cycle with its re-exporting package.
* Imports anywhere in the file count: module level, inside functions and classes, and under
  ``if TYPE_CHECKING``. Dynamic imports (``importlib.import_module``) are not seen.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "plda"

#: the size limit of a module (physical lines)
MAX_LINES = 500

# ------------------------------------------------------------------------ allowlists
# Each list holds today's offenders; it may only shrink. When you fix one, delete its entry (the
# test tells you). All three are empty: a new offender fails the test.

#: modules allowed over MAX_LINES, with the size they must not grow past
KNOWN_LONG_MODULES: dict[str, int] = {}

#: import edges (importer, imported) that close a cycle; with them removed the graph must be
#: acyclic, and each must still close one (else it is stale)
KNOWN_CYCLE_EDGES: frozenset[tuple[str, str]] = frozenset()

#: (importer, private name or module it reaches across modules)
KNOWN_PRIVATE_ACCESS: frozenset[tuple[str, str]] = frozenset()


# ------------------------------------------------------------------------ the checker
@dataclass(frozen=True)
class Module:
    name: str  # dotted, e.g. "plda.filters.base"; a package is named without "__init__"
    is_package: bool
    source: str

    @property
    def tree(self) -> ast.Module:
        return ast.parse(self.source, filename=self.name)

    @property
    def package(self) -> str:
        return self.name if self.is_package else self.name.rpartition(".")[0]


def load_modules(root: Path = PACKAGE) -> dict[str, Module]:
    """Every ``.py`` file under ``root`` as a :class:`Module`, by dotted name."""
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        modules[name] = Module(name, is_package, path.read_text(encoding="utf-8"))
    return modules


def _is_private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _absolute(module: Module, node: ast.ImportFrom) -> str:
    """The absolute module of ``from ... import``, relative levels resolved."""
    if not node.level:
        return node.module or ""
    base = module.package.split(".")
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: Module, known: set[str]) -> list[tuple[str, str | None, int]]:
    """``(target module, imported name or None, line)`` for every import in ``module`` (any
    scope), restricted to targets in ``known``; ``from a import b`` with ``a.b`` a module gives
    ``(a.b, None)``."""
    found = []
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    found.append((alias.name, None, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            for alias in node.names:
                if f"{source}.{alias.name}" in known:
                    found.append((f"{source}.{alias.name}", None, node.lineno))
                elif source in known:
                    found.append((source, alias.name, node.lineno))
    return found


def import_graph(modules: dict[str, Module]) -> dict[str, set[str]]:
    """``{module: {modules it imports}}`` over ``modules`` (self-imports dropped)."""
    known = set(modules)
    return {
        name: {target for target, _, _ in imports(module, known) if target != name}
        for name, module in modules.items()
    }


def strongly_connected(graph: dict[str, set[str]]) -> list[set[str]]:
    """The cycles of ``graph``: its strongly connected components with more than one module
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return components


def cycle_edges(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """Every edge that lies on some cycle (both ends in one strongly connected component)."""
    where = {m: i for i, component in enumerate(strongly_connected(graph)) for m in component}
    return {
        (a, b)
        for a, targets in graph.items()
        for b in targets
        if a in where and where.get(b) == where[a]
    }


def _module_aliases(module: Module, known: set[str]) -> dict[str, str]:
    """Local names bound to plda modules: ``import plda.a as x``, ``from plda import a``, and the
    root ``plda`` of a plain ``import plda.a``."""
    aliases = {}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in known:
                    if alias.asname:
                        aliases[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        aliases[root] = root
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            for alias in node.names:
                if f"{source}.{alias.name}" in known:
                    aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
    return aliases


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def private_access(module: Module, known: set[str]) -> set[str]:
    """What ``module`` reaches of another module's private parts, as dotted names: private
    names it imports, private modules it imports (unless every private part of the path is a
    package, like ``plda._internal``), and ``alias._name`` reads on imported plda modules."""
    found = set()
    packages = {name for name in known if _is_package_name(name, known)}

    def private_module(name: str) -> bool:
        parts = name.split(".")
        prefixes = [".".join(parts[: i + 1]) for i in range(len(parts))]
        return any(
            _is_private(part) and prefix not in packages
            for part, prefix in zip(parts, prefixes, strict=True)
        )

    for target, name, _ in imports(module, known):
        if target == module.name:
            continue
        if name is not None and _is_private(name):
            found.add(f"{target}.{name}")
        elif private_module(target):
            found.add(target)
    aliases = _module_aliases(module, known)
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Attribute) and _is_private(node.attr):
            base = _dotted(node.value)
            if base is None:
                continue
            head, _, rest = base.partition(".")
            if head not in aliases:
                continue
            target = aliases[head] + (f".{rest}" if rest else "")
            if target in known and target != module.name:
                found.add(f"{target}.{node.attr}")
    return found


def _is_package_name(name: str, known: set[str]) -> bool:
    return any(other.startswith(name + ".") for other in known)


def line_count(source: str) -> int:
    return len(source.splitlines())


# ------------------------------------------------------------------------ the package
@pytest.fixture(scope="module")
def modules() -> dict[str, Module]:
    return load_modules()


def cycle_problems(graph: dict[str, set[str]], allowed: frozenset[tuple[str, str]]) -> list[str]:
    """What is wrong with ``graph`` given the allowlisted cycle edges (empty: all is well)."""
    problems = []
    gone = sorted(edge for edge in allowed if edge[1] not in graph.get(edge[0], set()))
    if gone:
        problems.append(f"allowlisted imports that no longer exist, delete them: {gone}")
    stale = sorted(set(allowed) - cycle_edges(graph) - set(gone))
    if stale:
        problems.append(f"allowlisted imports that no longer close a cycle, delete them: {stale}")
    pruned = {a: {b for b in bs if (a, b) not in allowed} for a, bs in graph.items()}
    cycles = [sorted(component) for component in strongly_connected(pruned)]
    if cycles:
        problems.append(f"import cycles (imports inside functions count): {cycles}")
    return problems


def private_problems(modules: dict[str, Module], allowed: frozenset[tuple[str, str]]) -> list[str]:
    known = set(modules)
    found = {(name, target) for name, m in modules.items() for target in private_access(m, known)}
    problems = []
    if found - allowed:
        problems.append(f"private names reached across modules: {sorted(found - allowed)}")
    if allowed - found:
        problems.append(f"fixed, so delete from the allowlist: {sorted(allowed - found)}")
    return problems


def size_problems(modules: dict[str, Module], allowed: dict[str, int], limit: int) -> list[str]:
    long = {name: line_count(m.source) for name, m in modules.items()}
    long = {name: n for name, n in long.items() if n > limit}
    problems = []
    new = sorted((name, n) for name, n in long.items() if name not in allowed)
    if new:
        problems.append(f"modules over {limit} lines: {new}")
    grown = sorted((n, long[n], cap) for n, cap in allowed.items() if long.get(n, 0) > cap)
    if grown:
        problems.append(f"allowlisted long modules grew (name, lines, allowed): {grown}")
    stale = sorted(set(allowed) - set(long))
    if stale:
        problems.append(f"no longer over {limit} lines, so delete from the allowlist: {stale}")
    return problems


def test_no_import_cycles(modules):
    problems = cycle_problems(import_graph(modules), KNOWN_CYCLE_EDGES)
    assert not problems, "\n".join(problems)


def test_no_private_names_across_modules(modules):
    problems = private_problems(modules, KNOWN_PRIVATE_ACCESS)
    assert not problems, "\n".join(problems)


def test_no_long_modules(modules):
    problems = size_problems(modules, KNOWN_LONG_MODULES, MAX_LINES)
    assert not problems, "\n".join(problems)


# ------------------------------------------------------------------------ the checker itself
def synthetic(files: dict[str, str]) -> dict[str, Module]:
    """Modules from source strings; a name ending in ``.__init__`` is a package."""
    modules = {}
    for name, source in files.items():
        is_package = name.endswith(".__init__")
        name = name.removesuffix(".__init__")
        modules[name] = Module(name, is_package, source)
    return modules


def test_checker_finds_a_cycle_through_a_function_local_import():
    modules = synthetic(
        {
            "p.__init__": "",
            "p.a": "from p.b import f\n",
            "p.b": "def f():\n    from p import a\n    return a\n",
            "p.c": "import p.a\n",
        }
    )
    graph = import_graph(modules)
    assert graph == {"p": set(), "p.a": {"p.b"}, "p.b": {"p.a"}, "p.c": {"p.a"}}
    assert strongly_connected(graph) == [{"p.a", "p.b"}]
    assert cycle_edges(graph) == {("p.a", "p.b"), ("p.b", "p.a")}


def test_checker_sees_reexports_relative_imports_and_longer_cycles():
    modules = synthetic(
        {
            "p.__init__": "from p.x import X\n",
            "p.x": "from .y import Y\nclass X: ...\n",
            "p.y": "class Y:\n    def m(self):\n        from p import X\n        return X\n",
        }
    )
    graph = import_graph(modules)
    assert graph["p"] == {"p.x"} and graph["p.x"] == {"p.y"} and graph["p.y"] == {"p"}
    assert strongly_connected(graph) == [{"p", "p.x", "p.y"}]
    acyclic = synthetic({"p.__init__": "from p.x import X\n", "p.x": "import math\nX = 1\n"})
    assert strongly_connected(import_graph(acyclic)) == []


def test_checker_finds_private_names_across_modules():
    modules = synthetic(
        {
            "p.__init__": "",
            "p._private": "VALUE = 1\n",
            "p._internal.__init__": "",
            "p._internal.tools": "def helper(): ...\n",
            "p.a": "_mine = 1\ndef public(): ...\ndef _hidden(): ...\n",
            "p.b": "from p.a import _hidden\n",
            "p.c": "from p import a\ndef f():\n    return a._mine + a.public()\n",
            "p.d": "import p.a\nx = p.a._mine\n",
            "p.e": "from p import _private as check\n",
            "p.f": "from p._internal.tools import helper\nfrom p._internal import tools\n",
            "p.g": "from p.a import public\nclass K:\n    def m(self):\n        return self._x\n",
        }
    )
    known = set(modules)
    found = {name: private_access(m, known) for name, m in modules.items()}
    assert found["p.b"] == {"p.a._hidden"}
    assert found["p.c"] == {"p.a._mine"}
    assert found["p.d"] == {"p.a._mine"}
    assert found["p.e"] == {"p._private"}
    assert found["p.f"] == set()  # a private package with public names is fine
    assert found["p.g"] == set()  # own attributes are not checked
    assert found["p.a"] == set()


def test_checker_counts_physical_lines():
    assert line_count("") == 0
    assert line_count("a = 1\n") == 1
    assert line_count("a = 1\n\n\nb = 2") == 4
    long = synthetic({"p.big": "x = 1\n" * (MAX_LINES + 1), "p.ok": "x = 1\n" * MAX_LINES})
    assert [n for n, m in long.items() if line_count(m.source) > MAX_LINES] == ["p.big"]


def test_allowlists_may_only_shrink():
    modules = synthetic(
        {
            "p.__init__": "",
            "p.a": "import p.b\n" + "x = 1\n" * 9,
            "p.b": "def f():\n    import p.a\n",
            "p.c": "from p.a import _x\n",
        }
    )
    graph = import_graph(modules)
    assert cycle_problems(graph, frozenset({("p.b", "p.a")})) == []
    assert cycle_problems(graph, frozenset()) != []  # a new cycle
    assert cycle_problems(graph, frozenset({("p.b", "p.a"), ("p.c", "p.a")})) != []  # stale
    fixed = {**graph, "p.b": set()}
    assert cycle_problems(fixed, frozenset({("p.b", "p.a")})) != []  # stale
    assert private_problems(modules, frozenset({("p.c", "p.a._x")})) == []
    assert private_problems(modules, frozenset()) != []
    assert private_problems(modules, frozenset({("p.c", "p.a._x"), ("p.b", "p.a._y")})) != []
    assert size_problems(modules, {"p.a": 10}, 5) == []
    assert size_problems(modules, {}, 5) != []  # new
    assert size_problems(modules, {"p.a": 9}, 5) != []  # grew
    assert size_problems(modules, {"p.a": 10, "p.b": 10}, 5) != []  # stale
