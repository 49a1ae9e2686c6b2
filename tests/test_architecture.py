"""The package's shape, kept by a test (issues 13 and 25).

1. **Layers that point one way**: :data:`LAYERS` declares, as data, the order in which plda's
   packages and modules build on each other, lowest first. A module may import its own unit
   (the package or module it belongs to) and any unit of a *lower* layer; an import of a higher
   layer fails, and so does one between two units of the same layer (they stand beside each
   other). The failure names the edge: importer, line, imported module, and both layers.
2. **No import cycles** among plda modules, counting imports inside functions too (a
   function-local import hides a cycle from Python, not from this test).
3. **No private name across modules**, in plda and in tests/: no ``from plda.y import _z``, no
   ``import plda._y`` of a private module, no ``alias._z`` read where ``alias`` is a plda module.
   Private *packages* are fine (``plda._internal.caches``: the package is private, the names
   inside it are public).
4. **No re-export-only module** outside a package ``__init__``: a module that defines nothing and
   only hands on names it imports is a shim (one name, two homes).
5. **No module over** :data:`MAX_LINES` physical lines.

Offenders of rules 3 and 4 are listed in the ``KNOWN_*`` allowlists below. They may only shrink:
the test fails when a new violation appears *and* when a listed one has gone (delete its entry
then), so the lists stay honest.

How the import graph is built (static, with :mod:`ast`, nothing is imported):

* ``import plda.a.b`` and ``from plda.a.b import X`` are edges to ``plda.a.b``; ``from plda.a
  import b`` is an edge to ``plda.a.b`` when ``b`` is a module, else to ``plda.a``. A package's
  ``__init__`` that re-exports from its submodules has edges to them.
* ``import_module("plda.a.b")`` and ``__import__("plda.a.b")`` with a string literal are edges
  too (a lazy import is still an import); a computed name (an f-string) is not seen.
* The implicit import of parent packages (``import plda.a.b`` also runs ``plda/a/__init__``) is
  not an edge: every submodule would otherwise form a cycle with its re-exporting package.
* Imports anywhere in the file count: module level, inside functions and classes, and under
  ``if TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "plda"
TESTS = ROOT / "tests"

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

#: the same for the test files (importer named ``tests.test_x``)
KNOWN_TEST_PRIVATE_ACCESS: frozenset[tuple[str, str]] = frozenset()

#: modules outside a package ``__init__`` that only re-export. plda 0.1.0 had two shims of former
#: paths: plda/grid.py became the package plda.grid; plda/accountant.py is left for the
#: ``doors`` branch of issue 25, which deprecates it (a module that warns defines something, so
#: it is no longer re-export-only): this list is then empty, and must stay so
KNOWN_REEXPORT_MODULES: frozenset[str] = frozenset()

# ------------------------------------------------------------------------ the layers
#: plda's layers, lowest first; each a tuple of units (a package, standing for all its modules,
#: or a module). A module belongs to the unit of the longest name that is its own or a prefix of
#: it; ``"plda"`` is the root package's ``__init__`` alone (the public face). A module may import
#: its own unit and the units of lower layers only; units of one layer stand beside each other
#: and import none of each other. ``filters``, ``theorems`` and ``testing`` stand beside the
#: layers they build on: they use plda's public names only (rule 3 holds everywhere).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("plda._internal",),  # floats, fft, caches, validation, errors: no plda imports
    ("plda.bounds",),  # the shared vocabulary: Bounds
    ("plda.mechanisms",),  # per-step mechanisms and their privacy-loss laws
    ("plda.grid",),  # the law on the grid (DiscreteLoss) and its profile
    ("plda.discretization",),  # a law to its pessimistic and optimistic grid laws
    ("plda.engine",),  # plans and compositions of grid laws
    ("plda.epochs",),  # epoch samplers: their laws are compositions
    ("plda.conversions",),  # tradeoff, Renyi, zCDP, Gaussian DP of composed laws
    ("plda.pld",),  # PrivacyLossDistribution: the recipe and its queries
    ("plda.tradeoff", "plda.renyi"),  # former facades, deprecated until 0.2.0 (the PLD's methods)
    ("plda.risk",),  # idem
    (
        "plda.serialization",
        "plda.samplers",  # the one sampler registry (issue 25)
        "plda.filters",
        "plda.theorems",
        "plda.testing",
        "plda.selection",  # tuning by random stopping (issue 29), on public names
        "plda.matrix",  # correlated noise: matrix mechanisms reduced to plda's (issue 28)
    ),
    ("plda.accounting",),  # PLDAccountant
    ("plda.accountant",),  # its former path, deprecated until 0.2.0
    ("plda.calibration",),
    ("plda.sweep",),
    ("plda.adapters",),  # Opacus and dp_accounting
    ("plda.plot",),
    ("plda",),  # the public face: re-exports from every layer below
    ("plda.cli",),  # the command line (reads plda.__version__, draws with plot)
    ("plda.__main__",),  # python -m plda
)


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


def _dynamic_target(node: ast.AST) -> str | None:
    """The module named by ``import_module("...")``, ``importlib.import_module("...")`` or
    ``__import__("...")`` with a string literal, else None."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    first = node.args[0]
    if name in ("import_module", "__import__") and isinstance(first, ast.Constant):
        return first.value if isinstance(first.value, str) else None
    return None


def imports(module: Module, known: set[str]) -> list[tuple[str, str | None, int]]:
    """``(target module, imported name or None, line)`` for every import in ``module`` (any
    scope, string-literal dynamic imports included), restricted to targets in ``known``;
    ``from a import b`` with ``a.b`` a module gives ``(a.b, None)``."""
    found = []
    for node in ast.walk(module.tree):
        dynamic = _dynamic_target(node)
        if dynamic is not None and dynamic in known:
            found.append((dynamic, None, node.lineno))
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
            if f"{target}.{node.attr}" in packages:  # a private package: its names are public
                continue
            if target in known and target != module.name:
                found.add(f"{target}.{node.attr}")
    return found


def _is_package_name(name: str, known: set[str]) -> bool:
    return any(other.startswith(name + ".") for other in known)


def line_count(source: str) -> int:
    return len(source.splitlines())


def unit_of(name: str, units: set[str]) -> str | None:
    """The declared unit ``name`` belongs to: the longest unit equal to it or a dotted prefix of
    it (the root ``"plda"`` holds its ``__init__`` only), None if none."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in units and (i > 1 or prefix == name):
            return prefix
    return None


def layer_problems(modules: dict[str, Module], layers) -> list[str]:
    """What breaks the declared layer order (empty: all is well): modules in no layer, units
    declared twice or matching no module, and every import that runs up the layers or between
    two units of one layer, each named by its edge."""
    level = {unit: i for i, layer in enumerate(layers) for unit in layer}
    problems = []
    declared = [unit for layer in layers for unit in layer]
    twice = sorted({unit for unit in declared if declared.count(unit) > 1})
    if twice:
        problems.append(f"units declared in more than one layer: {twice}")
    owner = {name: unit_of(name, set(level)) for name in modules}
    loose = sorted(name for name, unit in owner.items() if unit is None)
    if loose:
        problems.append(f"modules in no layer (declare their unit in LAYERS): {loose}")
    unused = sorted(set(level) - set(owner.values()))
    if unused:
        problems.append(f"declared units that match no module (delete them): {unused}")
    known = set(modules)
    for name, module in sorted(modules.items()):
        here = owner[name]
        for target, _, line in sorted(set(imports(module, known)), key=lambda t: (t[2], t[0])):
            there = owner[target]
            if here is None or there is None or there == here or level[there] < level[here]:
                continue
            way = "up" if level[there] > level[here] else "beside"
            problems.append(
                f"{name} (line {line}) imports {target}: {way} the layers, from {here} "
                f"(layer {level[here]}) to {there} (layer {level[there]})"
            )
    return problems


def _passes_names_only(value: ast.expr) -> bool:
    """Whether an assigned value only names things (``x``, ``a.b``, a tuple or list of them, a
    string): no computation of the module's own."""
    if isinstance(value, (ast.Name, ast.Attribute)):
        return True
    if isinstance(value, ast.Constant):
        return isinstance(value.value, str)
    if isinstance(value, (ast.Tuple, ast.List)):
        return all(_passes_names_only(item) for item in value.elts)
    return False


def reexport_only(module: Module) -> bool:
    """Whether ``module`` (not a package ``__init__``) only hands on imported names: it imports
    from its own package, defines no function or class, and every other statement is its
    docstring, an import, or an assignment that only names things (``__all__``, aliases)."""
    if module.is_package:
        return False
    root = module.name.split(".")[0]
    imports_own = False
    for node in module.tree.body:
        if isinstance(node, ast.ImportFrom):
            imports_own = imports_own or (node.module or "").split(".")[0] == root
        elif isinstance(node, ast.Import):
            imports_own = imports_own or any(a.name.split(".")[0] == root for a in node.names)
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # the docstring
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            if node.value is None or not _passes_names_only(node.value):
                return False
        else:
            return False
    return imports_own


def reexport_problems(modules: dict[str, Module], allowed: frozenset[str]) -> list[str]:
    found = {name for name, module in modules.items() if reexport_only(module)}
    problems = []
    if found - allowed:
        problems.append(
            "modules that only re-export (one name, two homes: import from the defining module, "
            f"or re-export from a package __init__): {sorted(found - allowed)}"
        )
    if allowed - found:
        problems.append(f"no longer re-export-only, so delete from the allowlist: "
                        f"{sorted(allowed - found)}")
    return problems


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


def private_problems(
    modules: dict[str, Module],
    allowed: frozenset[tuple[str, str]],
    importers: dict[str, Module] | None = None,
) -> list[str]:
    """Private access of ``importers`` (default: ``modules`` themselves) into ``modules``."""
    known = set(modules)
    importers = modules if importers is None else importers
    found = {(name, target) for name, m in importers.items() for target in private_access(m, known)}
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


def test_layers_point_one_way(modules):
    problems = layer_problems(modules, LAYERS)
    assert not problems, "\n".join(problems)


def test_no_import_cycles(modules):
    problems = cycle_problems(import_graph(modules), KNOWN_CYCLE_EDGES)
    assert not problems, "\n".join(problems)


def test_no_private_names_across_modules(modules):
    problems = private_problems(modules, KNOWN_PRIVATE_ACCESS)
    assert not problems, "\n".join(problems)


def test_tests_reach_no_private_names(modules):
    tests = load_modules(TESTS)
    tests.pop("tests.test_architecture")  # its synthetic packages are strings, not imports
    problems = private_problems(modules, KNOWN_TEST_PRIVATE_ACCESS, importers=tests)
    assert not problems, "\n".join(problems)


def test_no_reexport_only_modules(modules):
    problems = reexport_problems(modules, KNOWN_REEXPORT_MODULES)
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


def test_checker_counts_string_literal_dynamic_imports():
    modules = synthetic(
        {
            "p.__init__": "",
            "p.a": "from importlib import import_module\n"
            "def f():\n    return import_module('p.b').X\n",
            "p.b": "import importlib\nY = importlib.import_module('p.a')\n",
            "p.c": "def g(name):\n    return __import__('p.b'), __import__(f'p.{name}')\n",
        }
    )
    graph = import_graph(modules)
    assert graph == {"p": set(), "p.a": {"p.b"}, "p.b": {"p.a"}, "p.c": {"p.b"}}
    assert strongly_connected(graph) == [{"p.a", "p.b"}]


def test_checker_names_every_import_that_runs_up_or_beside_the_layers():
    modules = synthetic(
        {
            "p.__init__": "from p.top import T\n",
            "p.low.__init__": "",
            "p.low.x": "from p.low import y\n",  # within its own unit: fine
            "p.low.y": "import p.mid\n",  # up
            "p.mid": "from p.low.x import X\nfrom importlib import import_module\n"
            "Z = import_module('p.top')\n",  # down: fine; up (dynamic)
            "p.side": "import p.mid\n",  # beside
            "p.top": "import p.mid\nimport p.low.x\n",
        }
    )
    layers = (("p.low",), ("p.mid", "p.side"), ("p.top",), ("p",))
    problems = layer_problems(modules, layers)
    assert problems == [
        "p.low.y (line 1) imports p.mid: up the layers, from p.low (layer 0) to p.mid (layer 1)",
        "p.mid (line 3) imports p.top: up the layers, from p.mid (layer 1) to p.top (layer 2)",
        "p.side (line 1) imports p.mid: beside the layers, from p.side (layer 1) to p.mid "
        "(layer 1)",
    ]
    assert unit_of("p.low.x", {"p", "p.low"}) == "p.low"
    assert unit_of("p.other", {"p", "p.low"}) is None  # the root holds its __init__ only
    assert unit_of("p", {"p", "p.low"}) == "p"
    missing = layer_problems(modules, (("p.low", "p.gone"), ("p.mid",), ("p.top", "p.top")))
    assert any("in no layer" in m and "'p', 'p.side'" in m for m in missing)
    assert any("match no module" in m and "p.gone" in m for m in missing)
    assert any("more than one layer" in m and "p.top" in m for m in missing)


def test_checker_finds_reexport_only_modules():
    modules = synthetic(
        {
            "p.__init__": "from p.a import f\n__all__ = ['f']\n",  # a package face: fine
            "p.a": "def f(): ...\n",
            "p.shim": '"""Old path."""\nfrom p.a import f\nfrom p.a import f as _g\n'
            "__all__ = ['f']\nf.__module__ = __name__\nHELPERS = (f, _g)\n",
            "p.warns": "from p.a import f\ndef __getattr__(name): ...\n",
            "p.constant": "from p.a import f\nLIMIT = 2 ** 10\n",
            "p.main": "from p.a import f\nif __name__ == '__main__':\n    f()\n",
            "p.plain": "import math\nPI = math.pi\n",  # imports nothing of the package
        }
    )
    found = sorted(name for name, m in modules.items() if reexport_only(m))
    assert found == ["p.shim"]
    assert reexport_problems(modules, frozenset({"p.shim"})) == []
    assert reexport_problems(modules, frozenset()) != []  # new
    assert reexport_problems(modules, frozenset({"p.shim", "p.warns"})) != []  # stale


def test_checker_reads_private_access_of_other_importers():
    modules = synthetic({"p.__init__": "", "p._internal.__init__": "", "p._internal.e": "E = 1\n",
                         "p.a": "_x = 1\n"})
    tests = synthetic(
        {
            "t.test_a": "from p.a import _x\n",
            "t.test_b": "import p\nimport p._internal.e\ny = p._internal.e.E\n",
        }
    )
    assert private_problems(modules, frozenset({("t.test_a", "p.a._x")}), importers=tests) == []
    assert private_problems(modules, frozenset(), importers=tests) != []
