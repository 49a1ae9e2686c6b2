"""Every code example of README.md, docs/**/*.md and the docstrings runs (issue 7).

* Each ```python block is executed. The blocks of one page run in order in one namespace, like
  a notebook, from a temporary working directory (examples that write files leave nothing behind).
* A block whose first line starts with ``>>>`` is a doctest: its outputs are checked too, with
  numbers compared to a relative tolerance of 1e-6 (the last digits of a float may differ
  between FFT backends and platforms).
* ``<!-- skip-test: reason -->`` on the line right before a block opts it out. This is only
  allowed for blocks that need an optional heavy dependency (torch, opacus, the peer accountants):
  such a block must import one of :data:`OPTIONAL_MODULES`, and it is still compiled.
* Shell and other blocks are not executed.
* The docstring examples of every plda module (shown on the API reference pages) run as doctests.
* Every public name is covered by an API reference directive (``::: plda...``); the docs build
  checks the rendered pages as well.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.util
import os
import pkgutil
import re
import shlex
import subprocess
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
PYTHON_LANGUAGES = {"python", "py", "python3", "pycon"}
SKIP_MARKER = re.compile(r"^\s*<!--\s*skip-test(?::\s*(?P<reason>.*?))?\s*-->\s*$")
#: what a skipped block may need (installing them for the docs test would be too heavy)
OPTIONAL_MODULES = ("torch", "opacus", "dp_accounting", "prv_accountant", "tensorflow", "jax")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the first code line
    code: str
    language: str
    skip_reason: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    @property
    def is_doctest(self) -> bool:
        first = next((x for x in self.code.splitlines() if x.strip()), "")
        return first.lstrip().startswith(">>>")


def extract_blocks(path: Path) -> list[Block]:
    """Fenced code blocks of a markdown file (fences may be indented, e.g. in admonitions)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, fence = match["indent"], match["fence"]
        language = match["info"].strip().split(" ")[0].strip("{}.").lower()
        previous = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = SKIP_MARKER.match(previous)
        body = []
        j = i + 1
        while j < len(lines):
            close = lines[j].strip()
            if close.startswith(fence[0] * len(fence)) and not close.strip(fence[0]):
                break
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        else:
            raise AssertionError(f"{path.relative_to(ROOT)}:{i + 1}: unclosed code fence")
        reason = (marker["reason"] or "").strip() if marker else None
        blocks.append(Block(path, i + 2, "\n".join(body) + "\n", language, reason))
        i = j + 1
    return blocks


def python_blocks(path: Path) -> list[Block]:
    return [b for b in extract_blocks(path) if b.language in PYTHON_LANGUAGES]


PAGES_WITH_CODE = [p for p in PAGES if python_blocks(p)]


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


#: the rules that check quoted numbers (shared with the docs hook)
QUOTES = _load("plda_docs_quoted_numbers", DOCS / "hooks" / "quoted_numbers.py")


# ------------------------------------------------------------------------------ doctests
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|[-+]?inf|nan")


class NumericOutputChecker(doctest.OutputChecker):
    """Exact match, or the same text with every number equal to a relative 1e-6."""

    def check_output(self, want, got, optionflags):
        if super().check_output(want, got, optionflags):
            return True
        want_numbers, got_numbers = _NUMBER.findall(want), _NUMBER.findall(got)
        if len(want_numbers) != len(got_numbers) or not want_numbers:
            return False
        if " ".join(_NUMBER.split(want)).split() != " ".join(_NUMBER.split(got)).split():
            return False
        for a, b in zip(want_numbers, got_numbers, strict=True):
            x, y = float(a), float(b)
            if x != y and not abs(x - y) <= 1e-6 * max(abs(x), abs(y)):
                return False
        return True


_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _run_doctest(source: str, namespace: dict, name: str, filename: str, line: int) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(source, namespace, name, filename, line - 1)
    output: list[str] = []
    runner = doctest.DocTestRunner(checker=NumericOutputChecker(), optionflags=_FLAGS)
    runner.run(test, out=output.append, clear_globs=False)
    if runner.failures:
        raise AssertionError("".join(output))


# ------------------------------------------------------------------------------ pages
@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    """Temporary working directory, non-interactive matplotlib, figures closed afterwards."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    yield tmp_path
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def _transcripts(path: Path) -> dict[int, str]:
    """``{first line of a python block: the plain/text block right after it}`` (its output)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = extract_blocks(path)
    found = {}
    for block, after in zip(blocks, blocks[1:], strict=False):
        closing = block.line + len(block.code.splitlines())  # 1-based line of the closing fence
        between = lines[closing : after.line - 2]
        if (
            block.language in PYTHON_LANGUAGES
            and after.language in ("", "text")
            and not any(x.strip() for x in between)
        ):
            found[block.line] = after.code
    return found


@pytest.mark.parametrize("path", PAGES_WITH_CODE, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(path, sandbox):
    """Each example runs, and the results its comments quote are what it produces (the rules are
    in docs/hooks/quoted_numbers.py)."""
    namespace: dict = {"__name__": "__docs__"}
    stale: list[str] = []
    transcripts = _transcripts(path)
    for block in python_blocks(path):
        if block.skip_reason is not None:
            continue
        failure = None
        try:
            if block.is_doctest:
                _run_doctest(block.code, namespace, block.where, str(path), block.line)
            else:
                # padded with newlines so tracebacks point at the line of the markdown file;
                # run statement by statement to check the results its comments quote
                source = "\n" * (block.line - 1) + block.code
                problems, printed = QUOTES.run_checking_quotes(source, namespace, str(path))
                stale += problems
                shown = transcripts.get(block.line)
                if shown is not None and not QUOTES.same_transcript(shown, printed):
                    stale.append(
                        f"{block.where}: the block after it shows the output as\n{shown}\n"
                        f"but it is\n{printed}"
                    )
        except Exception as exc:  # noqa: BLE001 - report which block failed, with its trace
            failure = "".join(traceback.format_exception(exc)[-12:])
        if failure is not None:
            pytest.fail(f"code block at {block.where} failed:\n{failure}", pytrace=False)
    assert not stale, "numbers quoted in comments disagree with the code:\n" + "\n".join(stale)


def _cli_transcripts() -> list[tuple[str, list[str], str]]:
    """``(where, arguments, shown output)`` of each ``$ plda ...`` / ``$ python -m plda ...`` line
    of a shell block that is followed by its output."""
    found = []
    command = re.compile(r"^\$ (?:python -m plda|plda)(?P<args>(?:\s[^#]*)?)(?:#.*)?$")
    for path in PAGES:
        for block in extract_blocks(path):
            if block.language not in ("bash", "console", "shell", "sh", ""):
                continue
            lines = block.code.splitlines()
            for i, line in enumerate(lines):
                end = i  # a command continued with a trailing backslash spans several lines
                while line.rstrip().endswith("\\") and end + 1 < len(lines):
                    end += 1
                    line = line.rstrip()[:-1] + " " + lines[end].strip()
                match = command.match(line.strip())
                if not match:
                    continue
                output = []
                for following in lines[end + 1 :]:
                    if following.startswith("$"):
                        break
                    output.append(following)
                if any(x.strip() for x in output):
                    where = f"{path.relative_to(ROOT)}:{block.line + i}"
                    found.append((where, shlex.split(match["args"]), "\n".join(output)))
    return found


def test_command_line_outputs_shown_in_the_docs_are_what_it_prints():
    """`$ python -m plda` in getting-started shows the reference run's bounds: they must be the
    ones the command prints today (numbers to their printed digits)."""
    transcripts = _cli_transcripts()
    assert any(where.startswith("docs/getting-started.md") for where, _, _ in transcripts)
    for where, arguments, shown in transcripts:
        done = subprocess.run(
            [sys.executable, "-m", "plda", *arguments],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, f"{where}: {done.stderr[-2000:]}"
        assert QUOTES.same_transcript(shown, done.stdout), (
            f"{where} shows\n{shown}\nbut the command prints\n{done.stdout}"
        )


PAGES_WITH_CLAIMS = [p for p in PAGES if QUOTES.claims(p.read_text(encoding="utf-8"))]
#: prose intervals that are not plda's output today, so no code can produce them (each says why)
UNCHECKED_INTERVALS = {
    ("docs/accountant.md", "[3.46, 5.22]"): "what the fast path gave before the tilted composition",
    ("docs/accountant.md", "[0.58615, 0.58792]"): "what the fast path gave above its fixed floor",
    ("docs/concepts/fft-composition.md", "[9.34, 12.53]"):
        "what laws kept to 1e-30 gave at 1e-30, before tilted queries kept them further out",
}
_PROSE_INTERVAL = re.compile(r"\[\s*-?\d+\.\d{2,}\s*,\s*-?\d+\.\d{2,}\s*\]")


@pytest.mark.parametrize("path", PAGES_WITH_CLAIMS, ids=lambda p: str(p.relative_to(ROOT)))
def test_numbers_quoted_in_the_prose_agree_with_the_code(path):
    """``[2.3812, 2.3817]<!-- = B2.epsilon_bounds(1e-5) -->``: the quoted numbers are the code's
    (to their printed digits). The ``slow=`` claims are checked by the docs build."""
    text = path.read_text(encoding="utf-8")
    problems = QUOTES.check_claims(text, str(path.relative_to(ROOT)), include_slow=False)
    assert not problems, "\n".join(problems)


def test_every_interval_quoted_in_the_prose_says_which_code_produces_it():
    """A bracketed interval of bounds in the text (outside code) carries a claim comment, so the
    tests check it; new quotes cannot go stale unnoticed."""
    unchecked = []
    for path in PAGES:
        lines = path.read_text(encoding="utf-8").splitlines()
        inside = {
            i
            for b in extract_blocks(path)
            for i in range(b.line - 1, b.line + 1 + len(b.code.splitlines()))
        }
        prose = "\n".join(x if i + 1 not in inside else "" for i, x in enumerate(lines))
        for match in _PROSE_INTERVAL.finditer(prose):
            following = prose[match.end() : match.end() + 8]
            where = str(path.relative_to(ROOT))
            if "<!--" not in following and (where, match[0]) not in UNCHECKED_INTERVALS:
                line = prose.count("\n", 0, match.start()) + 1
                unchecked.append(f"{where}:{line}: {match[0]}")
    assert not unchecked, "add <!-- = expression --> after: " + ", ".join(unchecked)


def test_quoted_number_rules():
    """The rules of docs/hooks/quoted_numbers.py on small cases."""
    assert QUOTES.numbers("DRV10: (1.8476, 0.05) at 1e-7)-DP, 3x looser, True") == [
        "1.8476",
        "0.05",
        "1e-7",
        "True",
    ]
    # to the printed digits: nearest, or rounded outward (a certified bound)
    assert QUOTES.agrees("1.8284", "1.82840341") and QUOTES.agrees("1.8285", "1.82840341")
    assert QUOTES.agrees("1.1e-4", "0.00011") and not QUOTES.agrees("1.8286", "1.82840341")
    assert not QUOTES.agrees("2.84", "2.851") and QUOTES.agrees("inf", "inf")
    assert not QUOTES.agrees("6.1", "6.0") and QUOTES.agrees("3", "3.0000000000000004")
    assert QUOTES.quoted_part("0.9592: certified epsilon <= 2.0") == "0.9592"
    assert QUOTES.quoted_part("0.412: 1.606") == "0.412: 1.606"
    assert QUOTES.quoted_part("500 = 1000 * 1/2") == "500"
    assert QUOTES.quoted_part("mu = 1/2") is None and QUOTES.quoted_part("... 2.38") is None
    assert QUOTES.same_transcript("a 1.5 ... b", "a  1.50001\nxyz b")
    assert not QUOTES.same_transcript("a 1.5 b", "a 1.7 b")
    claims = QUOTES.claims("x [1.0,\n 2.0]<!-- =\n f(1) -->, y 3, 4<!-- slow= g() -->")
    assert [(c.quoted, c.expression, c.slow) for c in claims] == [
        ("[1.0, 2.0]", "f(1)", False),
        ("3, 4", "g()", True),
    ]
    namespace: dict = {}
    source = "x = 2.5 * 2  # 5.0\nprint(x + 1)  # 6.1\n"
    problems, printed = QUOTES.run_checking_quotes(source, namespace, "page.md")
    assert printed == "6.0\n" and len(problems) == 1 and "page.md:2" in problems[0]


def test_every_claim_comment_is_read():
    """A ``<!-- = ... -->`` the parser would miss would be a quote nobody checks."""
    for path in PAGES:
        text = path.read_text(encoding="utf-8")
        opened = len(re.findall(r"<!--\s*(?:=|slow=)", text))
        assert opened == len(QUOTES.claims(text)), path


def test_skipped_blocks_need_an_optional_dependency():
    skipped = [b for p in PAGES for b in python_blocks(p) if b.skip_reason is not None]
    for block in skipped:
        imports = re.findall(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)", block.code, re.MULTILINE)
        assert set(imports) & set(OPTIONAL_MODULES), (
            f"{block.where}: skip-test is only for blocks that need one of {OPTIONAL_MODULES}"
        )
        assert block.skip_reason, f"{block.where}: say why, as <!-- skip-test: reason -->"
        compile(block.code, block.where, "exec")  # at least it is valid Python


def test_extractor_finds_indented_and_marked_blocks(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "text\n\n```python\nx = 1\n```\n\n!!! note\n    ```python\n    y = x + 1\n    ```\n\n"
        "<!-- skip-test: needs torch -->\n```python\nimport torch\n```\n\n```bash\nls\n```\n",
        encoding="utf-8",
    )
    blocks = extract_blocks(page)
    assert [b.language for b in blocks] == ["python", "python", "python", "bash"]
    assert blocks[1].code == "y = x + 1\n"
    assert blocks[1].line == 9
    assert [b.skip_reason for b in blocks[:3]] == [None, None, "needs torch"]


def test_numeric_output_checker():
    checker = NumericOutputChecker()
    assert checker.check_output("2.3817478234885505\n", "2.38174782349\n", 0)
    assert checker.check_output("(1.5, 'a')\n", "(1.5000000001, 'a')\n", 0)
    assert not checker.check_output("2.38\n", "2.39\n", 0)
    assert not checker.check_output("(1.5, 'a')\n", "(1.5, 'b')\n", 0)


# ------------------------------------------------------------------------ docstrings
def _plda_modules() -> list[str]:
    import plda

    names = ["plda"]
    for info in pkgutil.walk_packages(plda.__path__, "plda."):
        if not info.name.endswith("__main__"):  # importing it runs the command line
            names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("module_name", _plda_modules())
def test_docstring_examples_run(module_name, sandbox):
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(checker=NumericOutputChecker(), optionflags=_FLAGS)
    output: list[str] = []
    for test in finder.find(module, module_name):
        if test.examples:
            runner.run(test, out=output.append)
    assert not runner.failures, "".join(output)


# ------------------------------------------------------------------------- API reference
def _hook():
    spec = importlib.util.spec_from_file_location("plda_docs_hook", DOCS / "hooks" / "plda_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_api_reference_covers_every_public_name():
    directives = set()
    for page in (DOCS / "api").glob("*.md"):
        text = page.read_text(encoding="utf-8")
        directives |= set(re.findall(r"^:::\s*([\w.]+)", text, re.MULTILINE))
    missing = []
    for name, accepted in _hook().public_names().items():
        module = name.rsplit(".", 1)[0]
        defined_in = {a.rsplit(".", 1)[0] for a in accepted}
        if not (accepted | {module} | defined_in) & directives:
            missing.append(name)
    assert not missing, f"public names without an API reference directive: {missing}"


def test_every_public_module_is_in_the_api_completeness_check():
    """A direct submodule of plda that declares ``__all__`` is public API: the docs hook must check
    that each of its names is documented (plda.risk and plda.sweep were missed once)."""
    import plda

    public = set()
    for info in pkgutil.iter_modules(plda.__path__, "plda."):
        leaf = info.name.rsplit(".", 1)[-1]
        if leaf.startswith("_"):  # private modules and __main__ (importing it runs the CLI)
            continue
        if hasattr(importlib.import_module(info.name), "__all__"):
            public.add(info.name)
    assert {"plda.risk", "plda.sweep", "plda.mechanisms"} <= public
    missing = sorted(public - set(_hook().PUBLIC_MODULES))
    assert not missing, f"add to PUBLIC_MODULES in docs/hooks/plda_docs.py: {missing}"


def _lazy_submodules_in_source() -> tuple[set[str], set[str]]:
    """``(_SUBMODULES, names imported under `if TYPE_CHECKING:`)`` read from plda/__init__.py."""
    tree = ast.parse((ROOT / "plda" / "__init__.py").read_text(encoding="utf-8"))
    lazy: set[str] = set()
    typed: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_SUBMODULES" for t in node.targets
        ):
            lazy = set(ast.literal_eval(node.value))
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for statement in ast.walk(node):
                if isinstance(statement, ast.ImportFrom) and statement.module == "plda":
                    typed |= {alias.asname or alias.name for alias in statement.names}
                elif isinstance(statement, ast.Import):
                    typed |= {a.name.removeprefix("plda.") for a in statement.names}
    return lazy, typed


def test_lazy_submodules_are_listed_by_dir_and_seen_by_type_checkers():
    """Issue 15 item 7: what `plda.<name>` loads on first use is in dir(plda) (tab completion) and
    in the `if TYPE_CHECKING:` block (IDEs and type checkers cannot run __getattr__)."""
    lazy, typed = _lazy_submodules_in_source()
    assert {"theorems", "plot", "calibration", "adapters"} <= lazy
    assert typed == lazy, f"TYPE_CHECKING imports {sorted(typed)}, lazily loaded: {sorted(lazy)}"
    # a fresh interpreter: the submodules are not loaded by `import plda`, yet dir() lists them
    script = (
        "import sys, types, plda\n"
        f"lazy = {sorted(lazy)!r}\n"
        "unloaded = [n for n in lazy if f'plda.{n}' not in sys.modules]\n"
        "listed = set(dir(plda))\n"
        "assert set(plda.__all__) <= listed, set(plda.__all__) - listed\n"
        "assert set(lazy) <= listed, set(lazy) - listed\n"
        "assert 'plot' in unloaded and 'matplotlib' not in sys.modules\n"
        "for n in lazy:\n"
        "    m = getattr(plda, n)\n"
        "    assert isinstance(m, types.ModuleType) and m.__name__ == f'plda.{n}', n\n"
        "try:\n"
        "    plda.no_such_name\n"
        "except AttributeError as e:\n"
        "    assert 'no_such_name' in str(e)\n"
        "else:\n"
        "    raise AssertionError('unknown attribute did not raise')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_pages_are_in_the_nav():
    """Every page under docs/ is reachable from the site navigation (mkdocs.yml)."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = config[config.index("\nnav:") :]
    listed = set(re.findall(r"([\w./-]+\.md)\s*$", nav, re.MULTILINE))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert pages <= listed, f"pages missing from the nav of mkdocs.yml: {sorted(pages - listed)}"


def test_every_figure_is_drawn_by_a_script():
    """Figures are produced by code in docs/figures/ (the docs build reruns it), not pasted."""
    scripts = " ".join(p.read_text(encoding="utf-8") for p in (DOCS / "figures").glob("make_*.py"))
    image_link = re.compile(r"!\[[^\]]*\]\(([^)]+\.(?:png|svg|jpg))\)")
    for page in DOCS.rglob("*.md"):
        for image in image_link.findall(page.read_text(encoding="utf-8")):
            name = Path(image).name
            assert name in scripts or Path(image).stem in scripts, (
                f"{page.relative_to(ROOT)}: {image} is not written by any docs/figures/make_*.py"
            )


def test_install_commands_for_the_optional_peers_are_the_working_ones():
    """CPU torch comes from PyPI: `pip install torch==2.13.0 opacus` is the command the Opacus tests
    ran with (a custom --index-url is not reachable from every machine). The README's quick start
    stays two commands (CI runs it word for word); the peers get their own section."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick_start = readme[readme.index("## Quick start") : readme.index("## Usage")]
    assert "torch" not in quick_start
    for page in ("README.md", "docs/howto/opacus-and-dp-accounting.md", "docs/getting-started.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        assert "pip install torch==2.13.0 opacus" in text, page
        assert "tests/test_opacus.py" in text, page
    for page in PAGES:
        assert "--index-url" not in page.read_text(encoding="utf-8"), page


def test_every_figure_script_draws_where_the_build_asks():
    """The docs build redraws the figures into a folder of its own (PLDA_FIGURES_DIR), so it never
    rewrites the tracked PNGs (issue 15: it used to rewrite five of them)."""
    for script in sorted((DOCS / "figures").glob("make_*.py")):
        assert "PLDA_FIGURES_DIR" in script.read_text(encoding="utf-8"), script.name
    assert "PLDA_FIGURES_DIR" in (DOCS / "hooks" / "plda_docs.py").read_text(encoding="utf-8")


def test_strict_build_passes_links_only_local_scripts_and_leaves_the_tree_alone(tmp_path):
    """`mkdocs build --strict` into a temporary folder: it passes (API completeness included), the
    pages load MathJax from the site itself and no script from another host, and no tracked file
    changes. Figures and the slow prose claims are left to the full build (CI's .ci/run)."""
    for module in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python"):
        pytest.importorskip(module)
    try:
        mathjax = _hook().mathjax_source()
    except FileNotFoundError:
        pytest.skip("django-static-mathjax (docs extra) is not installed")

    def tree_state() -> str:
        done = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        return done.stdout if done.returncode == 0 else ""

    before = tree_state()
    site = tmp_path / "site"
    env = dict(os.environ, PLDA_DOCS_FIGURES="0", PLDA_DOCS_CLAIMS="0", NO_MKDOCS_2_WARNING="1")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(site)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert tree_state() == before, "the docs build changed tracked files"
    remote, local = set(), set()
    for page in site.rglob("*.html"):
        for src in re.findall(r"<script[^>]*\ssrc=\"([^\"]+)\"", page.read_text(encoding="utf-8")):
            if re.match(r"^(?:https?:)?//", src):
                remote.add(src)
            else:  # relative to the page, or to the site root (the 404 page)
                base = site if src.startswith("/") else page.parent
                local.add((base / src.lstrip("/").split("?")[0]).resolve())
    assert not remote, f"pages load scripts from other hosts: {sorted(remote)}"
    missing = sorted(str(p) for p in local if not p.is_file())
    assert not missing, f"pages load scripts the site does not have: {missing[:5]}"
    bundled = site / "javascripts" / "mathjax" / "tex-mml-chtml.js"
    assert bundled.read_bytes() == (mathjax / "tex-mml-chtml.js").read_bytes()
    assert bundled.resolve() in local


def test_readme_links_to_the_docs():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "mkdocs build" in readme, "README must say how to build the docs locally"
    for page in ("docs/getting-started.md", "docs/tutorials/dp-sgd.md", "docs/concepts/"):
        assert page in readme, f"README should link to {page}"


# ------------------------------------------------------------------------------ the site
def _mkdocs_config() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def test_site_loads_no_script_or_style_from_another_host():
    """Formulas render offline: MathJax is bundled from a PyPI package, never loaded from a CDN."""
    config = _mkdocs_config()
    assets = [*config.get("extra_javascript", []), *config.get("extra_css", [])]
    remote = [a for a in assets if re.match(r"^(?:https?:)?//", str(a))]
    assert not remote, f"mkdocs.yml loads assets from another host: {remote}"
    assert config["theme"].get("font") is False, "the theme must not download web fonts"
    hook = _hook()
    try:
        bundled = dict(hook.mathjax_files())
    except FileNotFoundError:
        pytest.skip("django-static-mathjax (docs extra) is not installed")
    for asset in assets:
        assert (DOCS / asset).is_file() or asset in bundled, f"{asset}: not in docs/, not bundled"
    assert f"{hook.MATHJAX_SITE_DIR}/tex-mml-chtml.js" in config["extra_javascript"]
    fonts = [p for p in bundled if p.startswith(f"{hook.MATHJAX_SITE_DIR}/output/chtml/fonts/")]
    assert any(p.endswith(".woff") for p in fonts), "MathJax's fonts must be bundled too"
