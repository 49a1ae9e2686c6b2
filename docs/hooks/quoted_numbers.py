"""Numbers quoted in the docs are checked against the code, so they cannot drift.

Used by tests/test_docs.py (and by the docs hook for the claims too slow for the test suite).
Three places quote results, and each has a rule:

1. **Trailing comments** of a code example: a statement whose last line ends in a comment that
   starts with a number, a tuple/list/array of numbers, ``Bounds(``, ``True`` or ``False``
   quotes what the statement produced: what it printed, the value of the expression, or the
   value of the names it assigned. The quoted part of the comment ends at the first ``" = "``,
   or at the first ``": "``, ``", "`` or ``" ("`` followed by a letter (the rest is prose); each
   number of the quoted part must be found, in that order, in what the statement produced.
   An assignment of a constant (``steps = 14_062  # 60 epochs``) quotes nothing, and neither does
   a statement that produces nothing (``acc.compose(law, count=4)  # 4 counting queries``).
2. **Transcripts**: comment lines right after a statement that printed, whose first word is the
   first word of the output, are that output; so is a plain or ``text`` code block that follows
   a code example with nothing but blank lines between (the whole example's output). They are
   compared word for word (whitespace normalized, ``...`` matches anything) with every number
   to its printed digits.
3. **Prose claims**: ``<!-- = expression -->`` right after a number, an interval ``[a, b]`` or a
   tuple in the text says which code produces it: the numbers of the last such group before the
   comment are compared with the value of the expression (evaluated with ``plda``, ``numpy as
   np`` and the reference runs ``B1`` (q = 0.01, sigma = 1, 1000 steps) and ``B2`` (q =
   256/60000, sigma = 1.1, 14062 steps) in scope, plus the page's ``<!-- claims-setup:
   statements -->``). ``<!-- slow= ... -->`` marks a claim that costs seconds: the docs build
   checks it, the unit tests do not.

"To its printed digits": a quoted ``1.8284`` accepts any value that rounds to it, to nearest or
outward (certified bounds are often quoted rounded down or up), i.e. within one unit of its last
digit (plus 1e-9 relative, for the float noise of other FFT backends).
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
import re
import tokenize
from dataclasses import dataclass

#: a number on its own (not the ``10`` of ``DRV10`` or of ``x10``), with its printed digits
NUMBER = re.compile(
    r"(?<![\w.])(?:[-+](?=[\d.]))?(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?![\w.]*[A-Za-z_])"
    r"|(?<!\w)(?:True|False|inf|nan)(?!\w)"
)
_QUOTE_START = re.compile(r"^\s*(?:[(\[]\s*)?(?:[-+]?\.?\d|Bounds\(|True|False)")
_PROSE_CUT = re.compile(r"\s=\s|(?::|,|\s\()\s*(?=[A-Za-z])")
_CLAIM = re.compile(r"<!--\s*(?P<kind>=|slow=)\s*(?P<expr>.*?)\s*-->", re.DOTALL)
_SETUP = re.compile(r"<!--\s*claims-setup:\s*(?P<code>.*?)\s*-->", re.DOTALL)
_GROUP = re.compile(
    r"\[[^\[\]]*\]|Bounds\([^()]*\)|\([^()]*\)"
    + rf"|(?:{NUMBER.pattern})(?:,\s*(?:{NUMBER.pattern}))*"  # a list: 0.2776, 0.3499, 0.6224
)


def numbers(text: str) -> list[str]:
    """The numbers of a text, as printed (``"1.8284"``, ``"5e-07"``, ``"True"``)."""
    return [m.group(0) for m in NUMBER.finditer(text)]


def _value(token: str) -> float:
    if token in ("True", "False"):
        return float(token == "True")
    return float(token.replace("_", ""))


def unit(token: str) -> float:
    """One unit of the last printed digit of ``token`` (0 for ``True``, ``False``, inf, nan)."""
    if token in ("True", "False", "inf", "nan") or token.lstrip("+-") in ("inf", "nan"):
        return 0.0
    mantissa, _, exponent = token.replace("_", "").lower().partition("e")
    decimals = len(mantissa.partition(".")[2])
    return 10.0 ** (int(exponent or 0) - decimals)


def agrees(quoted: str, actual: str) -> bool:
    """``actual`` (a number as the code printed it) rounds to ``quoted`` in some direction.

    Within one unit of the quoted last digit: rounded to nearest, down or up (certified bounds
    are often quoted rounded outward), plus 1e-9 relative for the float noise of FFT backends.
    """
    q, a = _value(quoted), _value(actual)
    if math.isnan(q) or math.isnan(a):
        return math.isnan(q) and math.isnan(a)
    if math.isinf(q) or math.isinf(a):
        return q == a
    # strictly less than a unit (6.1 is not 6.0 rounded in any direction), or float noise
    return a == q or abs(a - q) < max(unit(quoted) * (1 - 1e-9), 1e-9 * abs(q))


def quoted_part(comment: str) -> str | None:
    """The quoted result of a trailing comment (text after ``#``), or None if it quotes none."""
    if not _QUOTE_START.match(comment):
        return None
    cut = _PROSE_CUT.search(comment)
    return comment[: cut.start()] if cut else comment


def find_in_order(quoted: list[str], actual: list[str]) -> str | None:
    """None if every quoted number agrees with an actual one, in order; else what is missing."""
    position = 0
    for token in quoted:
        while position < len(actual) and not agrees(token, actual[position]):
            position += 1
        if position == len(actual):
            return f"{token} (not found, in order, among {actual[:12]})"
        position += 1
    return None


def same_transcript(quoted: str, actual: str) -> bool:
    """The comment transcript ``quoted`` is the output ``actual`` (numbers to printed digits)."""
    pattern, want = [], []
    for piece in re.split(r"(\.\.\.)", " ".join(quoted.split())):
        if piece == "...":
            pattern.append(r".*?")
            continue
        last = 0
        for m in NUMBER.finditer(piece):
            pattern.append(re.escape(piece[last : m.start()]).replace(r"\ ", r"\s*"))
            pattern.append(f"({NUMBER.pattern})")
            want.append(m.group(0))
            last = m.end()
        pattern.append(re.escape(piece[last:]).replace(r"\ ", r"\s*"))
    match = re.fullmatch("".join(pattern), " ".join(actual.split()), re.DOTALL)
    return match is not None and all(
        agrees(w, g) for w, g in zip(want, match.groups(), strict=True)
    )


# ---------------------------------------------------------------------------- code examples
def _comments(source: str) -> dict[int, str]:
    found = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.start[0]] = token.string[1:].strip()
    return found


def _is_constant(node: ast.AST) -> bool:
    return all(
        isinstance(n, ast.Constant | ast.BinOp | ast.UnaryOp | ast.operator | ast.unaryop)
        for n in ast.walk(node)
    )


def run_checking_quotes(source: str, namespace: dict, filename: str) -> tuple[list[str], str]:
    """Execute ``source`` statement by statement in ``namespace``.

    Returns the quotes that disagree with what the code produced, and all it printed.
    ``source`` is padded so that its line numbers are those of the file ``filename``.
    """
    tree = ast.parse(source, filename)
    comments = _comments(source)
    lines = source.splitlines()
    problems = []
    everything = []
    for statement in tree.body:
        output = io.StringIO()
        produced = []
        with contextlib.redirect_stdout(output):
            if isinstance(statement, ast.Expr):
                value = eval(compile(ast.Expression(statement.value), filename, "eval"), namespace)
                if value is not None:
                    produced.append(repr(value))
            else:
                module = ast.Module(body=[statement], type_ignores=[])
                exec(compile(module, filename, "exec"), namespace)  # noqa: S102 - the docs
                if isinstance(statement, ast.Assign | ast.AnnAssign | ast.AugAssign):
                    targets = getattr(statement, "targets", None) or [statement.target]
                    for target in targets:
                        produced.append(repr(eval(ast.unparse(target), namespace)))
        printed = output.getvalue()
        everything.append(printed)
        shown = printed + (produced[0] if isinstance(statement, ast.Expr) and produced else "")
        where = f"{filename}:{statement.end_lineno}"
        comment = comments.get(statement.end_lineno)
        quoted = quoted_part(comment) if comment is not None else None
        value_node = getattr(statement, "value", None)
        actual = numbers(printed + " " + " ".join(produced))
        constant = value_node is not None and _is_constant(value_node)
        if quoted is not None and (printed.strip() or produced) and not constant:
            missing = find_in_order(numbers(quoted), actual)
            if missing is not None:
                problems.append(f"{where}: the comment quotes {quoted.strip()!r}; {missing}")
        if shown.strip():
            transcript = []
            for line in lines[statement.end_lineno :]:
                if not line.strip().startswith("#"):
                    break
                transcript.append(line.strip()[1:].strip())
            text = " ".join(transcript)
            if text and text.split()[0] == shown.split()[0]:
                if not same_transcript(text, shown):
                    problems.append(
                        f"{where}: the comment below shows the output as\n    {text}\n"
                        f"  but it is\n    {' '.join(shown.split())}"
                    )
    return problems, "".join(everything)


# ------------------------------------------------------------------------------ prose claims
@dataclass(frozen=True)
class Claim:
    line: int
    quoted: str
    expression: str
    slow: bool


def claims(text: str) -> list[Claim]:
    """The ``<!-- = expression -->`` claims of a page, with the quoted group before each."""
    found = []
    previous_end = 0
    for match in _CLAIM.finditer(text):
        before = text[previous_end : match.start()]
        groups = list(_GROUP.finditer(before))
        quoted = " ".join(groups[-1].group(0).split()) if groups else ""
        line = text.count("\n", 0, match.start()) + 1
        expression = " ".join(match["expr"].split())
        found.append(Claim(line, quoted, expression, match["kind"] == "slow="))
        previous_end = match.end()
    return found


def claims_setup(text: str) -> str:
    return "\n".join(m["code"] for m in _SETUP.finditer(text))


def _claims_namespace(setup: str, filename: str) -> dict:
    import numpy as np

    import plda

    # cold caches: a PLD answers from the finest grid it has already built, so an earlier query
    # (an advantage, a Renyi curve) can tighten a later interval; each claim is what a fresh
    # session prints
    plda.clear_caches()
    steps = {
        # the reference runs the docs call B1 and B2 (a PLD computes nothing until asked)
        "B1": (plda.PoissonSampled(plda.Gaussian(sigma=1.0), sample_rate=0.01), 1000),
        "B2": (plda.PoissonSampled(plda.Gaussian(sigma=1.1), sample_rate=256 / 60000), 14062),
    }
    namespace: dict = {"plda": plda, "np": np}
    for name, (step, count) in steps.items():
        namespace[name] = plda.PrivacyLossDistribution.from_mechanism(step, count=count)
    exec(compile(setup, filename, "exec"), namespace)  # noqa: S102 - the docs' own setup
    return namespace


#: ``{(page setup, expression): value}``: pages quote the same reference numbers
_VALUES: dict[tuple[str, str], object] = {}


def check_claims(text: str, filename: str, *, include_slow: bool) -> list[str]:
    """The claims of a page whose quoted numbers disagree with their expression's value."""
    setup = claims_setup(text)
    problems = []
    for claim in claims(text):
        if claim.slow and not include_slow:
            continue
        key = (setup, claim.expression)
        if key not in _VALUES:
            namespace = _claims_namespace(setup, filename)
            _VALUES[key] = eval(claim.expression, namespace)  # noqa: S307 - the docs' expressions
        value = _VALUES[key]
        quoted = numbers(claim.quoted)
        actual = numbers(repr(value))
        if not quoted or len(quoted) != len(actual) or find_in_order(quoted, actual):
            problems.append(
                f"{filename}:{claim.line}: the text quotes {claim.quoted!r} but "
                f"{claim.expression} is {value!r}"
            )
    return problems


def main(paths: list[str]) -> int:
    """Check every claim of the given pages, the slow ones included (the docs build runs this)."""
    problems = []
    for path in paths:
        with open(path, encoding="utf-8") as page:
            problems += check_claims(page.read(), path, include_slow=True)
    print("\n".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
