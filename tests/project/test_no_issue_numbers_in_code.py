"""No comment or docstring of the code, the tests or the scripts names an issue number of this
project: a number means nothing to a reader of the code, who needs the reason in words. (The
documentation and the benchmarks are checked by ``test_docs_text`` and
``test_benchmark_pages``.) A citation of an upstream tracker, such as ``pytorch#166962``, names
its project and stays."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import tokenize

from engine_support import REPO_ROOT

#: "issue 46", "Issues 33 and 46", "issue #46", "(#46)", "#46", across a line break too; not
#: "pytorch#46" or an anchor such as "#fx002".
ISSUE_NUMBER = re.compile(r"\bissues?\s+#?\d+|(?<![\w/&#])#\d+\b(?![\w-])", re.IGNORECASE)
#: The checks' own examples of what they look for.
EXAMPLES = {"tests/project/test_docs_text.py", "tests/project/test_benchmark_pages.py",
            "tests/project/test_no_issue_numbers_in_code.py"}


def issue_numbers(text: str) -> list[str]:
    return [match.group(0) for match in ISSUE_NUMBER.finditer(text)]


def python_prose(source: str) -> list[str]:
    """The comments and docstrings of a Python module: its prose, not its strings that are
    output."""
    comments = [token.string for token in tokenize.generate_tokens(io.StringIO(source).readline)
                if token.type == tokenize.COMMENT]
    nodes = [node for node in ast.walk(ast.parse(source))
             if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef
                           | ast.AsyncFunctionDef)]
    return comments + [doc for node in nodes if (doc := ast.get_docstring(node)) is not None]


def shell_comments(source: str) -> list[str]:
    return [line.split("#", 1)[1] for line in source.splitlines()
            if line.lstrip().startswith("#")]


def tracked(*suffixes: str) -> list[str]:
    names = subprocess.run(["git", "ls-files"], cwd=REPO_ROOT, capture_output=True, text=True,
                           check=True).stdout.split("\n")
    return [name for name in names if name.endswith(suffixes) and name not in EXAMPLES
            and not name.startswith("benchmarks/")]


def test_the_pattern_finds_issue_numbers_and_nothing_else() -> None:
    assert issue_numbers("(issue 46, item 6), Issues 33 and\n46, issue #7, (#12)") == [
        "issue 46", "Issues 33", "issue #7", "#12"]
    assert issue_numbers("pytorch#166962, pytorch/pytorch#98537, #8884, cli.md#fx002, #1-2") \
        == ["#8884"]
    source = '"""Module (issue 5)."""\nx = "issue 7"  # issue 9\ndef f():\n    """(#3)"""\n'
    assert sorted(issue_numbers(" ".join(python_prose(source)))) == ["#3", "issue 5", "issue 9"]


def test_no_comment_or_docstring_names_an_issue_number() -> None:
    found = {}
    for name in tracked(".py"):
        source = (REPO_ROOT / name).read_text(encoding="utf-8")
        # The prose is part of the text: only a text that names a number anywhere is read
        # apart into comments and docstrings (tokenizing and parsing all of them took most of
        # the test's time).
        if ISSUE_NUMBER.search(source):
            found[name] = issue_numbers("\n".join(python_prose(source)))
    for name in tracked(".sh"):
        found[name] = issue_numbers("\n".join(shell_comments(
            (REPO_ROOT / name).read_text(encoding="utf-8"))))
    assert {name: numbers for name, numbers in found.items() if numbers} == {}
