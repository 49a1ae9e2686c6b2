"""MkDocs hook of the plda documentation (listed under ``hooks:`` in mkdocs.yml).

1. Snippets: the base path of ``pymdownx.snippets`` is made absolute (the repository root), so
   ``--8<-- "benchmarks/RESULTS.md"`` works whatever directory mkdocs is started from.
2. Figures: before every ``mkdocs build`` each ``docs/figures/make_*.py`` script is run, so the
   figures on the site are always drawn by the code in the repository (not pasted images that
   can go stale). The scripts draw into a temporary folder (``PLDA_FIGURES_DIR``) whose images
   replace the tree's copies in the built site, so a build never rewrites tracked files.
   ``PLDA_DOCS_FIGURES=0`` skips this and uses the figures already in the tree
   (quick local iteration); ``mkdocs serve`` skips it too (rewriting files it watches would make
   it rebuild forever).
   Numbers quoted in the prose with ``<!-- = expression -->`` are checked meanwhile, the slow
   ones included (``PLDA_DOCS_CLAIMS=0`` skips this; see docs/hooks/quoted_numbers.py).
3. Docstrings: the Sphinx roles some docstrings use (``:class:`~plda.pld.X```) are shown as
   plain code (``X``) on the API pages; mkdocstrings would print the role verbatim.
4. API completeness: after the build, every public name (``plda.__all__`` and the ``__all__`` of
   the submodules in :data:`PUBLIC_MODULES`) must have an anchor on an API reference page;
   a missing one fails the build.
5. Math without a network: MathJax comes from a PyPI package (``django-static-mathjax``, in
   the ``docs`` extra; it ships MathJax's static files and needs no Django to be read). Its
   browser bundle, fonts and on-demand extensions are added to the site under
   :data:`MATHJAX_SITE_DIR`, so the pages load no script from another host.
"""

from __future__ import annotations

import ast
import html.parser
import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "docs" / "figures"

#: modules whose ``__all__`` is the public API that the reference must document; every direct
#: submodule of plda that declares ``__all__`` must be here (tests/test_docs.py checks it)
PUBLIC_MODULES = (
    "plda",
    "plda.theorems",
    "plda.filters",
    "plda.testing",
    "plda.plot",
    "plda.accountant",
    "plda.calibration",
    "plda.adapters",
    "plda.serialization",
    "plda.tradeoff",
    "plda.renyi",
    "plda.mechanisms",
    "plda.risk",
    "plda.sweep",
    "plda.samplers",
    "plda.pld",
    "plda.accounting",
    "plda.epochs",
    "plda.grid",
    "plda.cli",
    "plda.matrix",
    "plda.selection",
)

#: where the bundled MathJax goes in the site (mkdocs.yml's extra_javascript points into it)
MATHJAX_SITE_DIR = "javascripts/mathjax"
#: the parts of MathJax's ``es5`` folder the site needs: the TeX-to-HTML bundle, its fonts, the
#: TeX extensions it loads on demand, and the menu's accessibility tools (speech rules included)
MATHJAX_PARTS = ("tex-mml-chtml.js", "output/chtml", "input/tex/extensions", "ui", "a11y", "sre")

_command = "build"
#: where the figure scripts drew this build's images (copied into the site after the build)
_drawn: Path | None = None


def public_names() -> dict[str, set[str]]:
    """``{"plda.filters.AdvancedFilter": {acceptable anchor ids}, ...}`` for every public name.

    A name may be documented where it is exported, where it is defined (its ``__module__``),
    e.g. ``plda.plot.tradeoff`` is rendered as ``plda.plot.profiles.tradeoff``, or at the top
    level when ``plda`` re-exports the same object (``plda.mechanisms.Gaussian`` as
    ``plda.Gaussian``).
    """
    top = importlib.import_module("plda")
    names: dict[str, set[str]] = {}
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        exported = getattr(module, "__all__", None)
        if exported is None:
            raise RuntimeError(f"{module_name} has no __all__: its public API is undefined")
        for name in exported:
            try:
                obj = getattr(module, name)
            except ImportError:  # a lazily loaded submodule whose optional dependency is missing
                obj = None
            ids = {f"{module_name}.{name}"}
            if obj is None:  # documented where its source defines it, found without importing it
                ids |= {f"{where}.{name}" for where in _defining_submodules(module, name)}
            if obj is not None and getattr(top, name, None) is obj:
                ids.add(f"plda.{name}")
            defined_in = getattr(obj, "__module__", None)
            if isinstance(defined_in, str) and defined_in.startswith("plda"):
                ids.add(f"{defined_in}.{getattr(obj, '__qualname__', name)}")
            names[f"{module_name}.{name}"] = ids
    return names


def _module_level_definitions(tree: ast.Module) -> set[str]:
    """Classes and functions a module defines, also inside its ``if``/``try`` blocks (an adapter
    defines its class only when the optional dependency imports)."""
    defined, pending = set(), list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.If, ast.Try)):
            pending += [*node.body, *node.orelse, *getattr(node, "finalbody", [])]
            for handler in getattr(node, "handlers", []):
                pending += handler.body
    return defined


def _defining_submodules(package, name: str) -> list[str]:
    """Submodules of ``package`` whose source defines ``name`` at top level (read, not imported)."""
    found = []
    for folder in getattr(package, "__path__", []):
        for source in sorted(Path(folder).glob("*.py")):
            if name in _module_level_definitions(ast.parse(source.read_text(encoding="utf-8"))):
                found.append(f"{package.__name__}.{source.stem}")
    return found


def on_startup(command, dirty):  # noqa: ARG001 - mkdocs hook signature
    global _command
    _command = command


def on_config(config):
    snippets = config.mdx_configs.setdefault("pymdownx.snippets", {})
    snippets["base_path"] = [str(ROOT)]
    return config


def mathjax_source() -> Path:
    """The ``es5`` folder of the MathJax copy installed by ``django-static-mathjax``."""
    spec = importlib.util.find_spec("mathjax")  # found, not imported: the package needs no Django
    for location in (spec.submodule_search_locations or []) if spec else []:
        es5 = Path(location) / "static" / "mathjax" / "es5"
        if (es5 / "tex-mml-chtml.js").is_file():
            return es5
    raise FileNotFoundError(
        "the docs bundle MathJax from the django-static-mathjax package: pip install -e '.[docs]'"
    )


def mathjax_files() -> list[tuple[str, Path]]:
    """``(path in the site, installed file)`` for every MathJax file the site serves."""
    es5 = mathjax_source()
    pairs = []
    for part in MATHJAX_PARTS:
        source = es5 / part
        for path in [source] if source.is_file() else sorted(source.rglob("*")):
            if path.is_file():
                pairs.append((f"{MATHJAX_SITE_DIR}/{path.relative_to(es5).as_posix()}", path))
    return pairs


def on_files(files, config):
    from mkdocs.exceptions import PluginError
    from mkdocs.structure.files import File

    try:
        bundled = mathjax_files()
    except FileNotFoundError as exc:
        raise PluginError(str(exc)) from exc
    for site_path, source in bundled:
        files.append(File.generated(config, site_path, abs_src_path=str(source)))
    return files


def _run_figure_script(script: Path) -> tuple[Path, subprocess.CompletedProcess]:
    env = dict(os.environ, MPLBACKEND="Agg", PLDA_FIGURES_DIR=str(_drawn))
    done = subprocess.run(
        [sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True
    )
    return script, done


def _check_claims() -> subprocess.CompletedProcess:
    """Every ``<!-- = ... -->`` claim of README.md and docs/, the slow ones included."""
    pages = [str(ROOT / "README.md"), *sorted(str(p) for p in (ROOT / "docs").rglob("*.md"))]
    return subprocess.run(
        [sys.executable, str(Path(__file__).with_name("quoted_numbers.py")), *pages],
        cwd=ROOT,
        env=dict(os.environ, MPLBACKEND="Agg"),
        capture_output=True,
        text=True,
    )


def on_pre_build(config):  # noqa: ARG001 - mkdocs hook signature
    from mkdocs.exceptions import PluginError

    if _command == "serve":
        return
    with ThreadPoolExecutor(max_workers=1) as claims_pool:
        # the numbers quoted in the prose are checked while the figures are drawn
        claims = None
        if os.environ.get("PLDA_DOCS_CLAIMS", "1") != "0":
            claims = claims_pool.submit(_check_claims)
        _draw_figures()
        if claims is not None and claims.result().returncode != 0:
            done = claims.result()
            raise PluginError(
                "numbers quoted in the docs disagree with the code "
                f"(docs/hooks/quoted_numbers.py):\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
            )


def _draw_figures() -> None:
    from mkdocs.exceptions import PluginError

    if os.environ.get("PLDA_DOCS_FIGURES", "1") == "0":
        return
    try:
        import matplotlib  # noqa: F401
    except ImportError as exc:
        raise PluginError(
            "the docs figures are drawn at build time and need matplotlib: "
            "pip install -e '.[docs]' (or set PLDA_DOCS_FIGURES=0 to use the figures in the tree)"
        ) from exc
    global _drawn
    _drawn = Path(tempfile.mkdtemp(prefix="plda-docs-figures-"))
    scripts = sorted(FIGURES.glob("make_*.py"))
    with ThreadPoolExecutor(max_workers=2) as pool:
        for script, done in pool.map(_run_figure_script, scripts):
            if done.returncode != 0:
                raise PluginError(
                    f"figure script {script.relative_to(ROOT)} failed:\n{done.stderr[-3000:]}"
                )


_SPHINX_ROLE = re.compile(
    r":(?:py:)?(?:class|meth|func|mod|attr|data|exc|obj|const):<code>(~?)([^<]*)</code>"
)


def _plain_code(match: re.Match) -> str:
    target = match[2]
    return f"<code>{target.rsplit('.', 1)[-1] if match[1] else target}</code>"


def on_page_content(html, page, config, files):  # noqa: ARG001 - mkdocs hook signature
    if page.file.src_uri.startswith("api/"):
        return _SPHINX_ROLE.sub(_plain_code, html)
    return html


class _Anchors(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):  # noqa: ARG002
        for key, value in attrs:
            if key == "id" and value:
                self.ids.add(value)


def documented_ids(site_dir: Path) -> set[str]:
    """Every ``id`` attribute on the API reference pages of a built site."""
    parser = _Anchors()
    for page in (site_dir / "api").rglob("*.html"):
        parser.feed(page.read_text(encoding="utf-8"))
    return parser.ids


def on_post_build(config):
    from mkdocs.exceptions import PluginError

    global _drawn
    if _drawn is not None:  # this build's figures replace the tree's copies in the site only
        target = Path(config.site_dir) / "figures"
        target.mkdir(parents=True, exist_ok=True)
        for image in sorted(_drawn.glob("*.png")):
            shutil.copyfile(image, target / image.name)
        shutil.rmtree(_drawn, ignore_errors=True)
        _drawn = None

    ids = documented_ids(Path(config.site_dir))
    try:
        names = public_names()
    except (ImportError, RuntimeError) as exc:
        raise PluginError(f"the public API of plda cannot be listed: {exc}") from exc
    missing = sorted(name for name, accepted in names.items() if not accepted & ids)
    if missing:
        raise PluginError(
            "public names missing from the API reference (docs/api/*.md): " + ", ".join(missing)
        )
