"""Workspace text cannot forge output: a real ``fx-lsp check`` on a workspace whose file name,
source line, ``pyproject.toml`` key, exception message and submodule name carry newlines,
GitHub workflow commands, terminal escapes (OSC 52 clipboard writes, CSI), HTML and Markdown
links; and a real server's hovers over it. Each format keeps one line per problem, shows
control characters, parses (JUnit), keeps its script intact (graph HTML) and renders no link,
image or HTML (hover Markdown)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from lsprotocol import types
from markdown_it import MarkdownIt

from fx_lsp.escaping import terminal

from cli_support import fx_lsp
from lsp_support import session

#: Starts a new line with a workflow command and a fake problem, writes the clipboard (OSC 52),
#: sends a CSI (0x9b), uses GitHub's legacy command syntax, and carries HTML, Markdown and
#: rich markup.
PAYLOAD = ("\n::error file=x::forged\nsrc/fake.py:1:1: FX002 forged\r::add-mask::secret "
           "\x1b]52;c;Zm9yZ2Vk\x07 \x9b31m <!--<script> ](http://evil) <img src=x> [bold]red "
           "##[add-mask]secret")
#: A submodule name (``add_module`` takes any name without a dot): a backtick and a pipe end
#: a code span and a table cell.
SUBMODULE = "a`<img src=x>|<!--<script>](http://evil)"
FILE_NAME = "odd\x1b]52;c;Zm9yZ2Vk\x07\n::error file=x::forged.py"

MODEL = f'''import torch
from torch import nn


class Raises(nn.Module):
    def forward(self, x):
        raise ValueError({PAYLOAD!r})


class UsesLen(nn.Module):
    def forward(self, x):
        return x * len(x)  # "\x1b]52;c;Zm9yZ2Vk\x07\x1b[8m hidden"


class Sub(nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module({SUBMODULE!r}, nn.Linear(2, 2))

    def forward(self, x):
        return getattr(self, {SUBMODULE!r})(x)
'''

#: FILE_NAME as a terminal shows it.
SHOWN_FILE_NAME = "odd␛]52;c;Zm9yZ2Vk␇␊::error file=x::forged.py"
#: What may start a line of ``concise``: a config problem, a real problem's location (in
#: model.py or the oddly named file) and the summary.
CONCISE_LINE = re.compile(
    rf"(warning: |model\.py:\d+:\d+: |{re.escape(SHOWN_FILE_NAME)}:\d+:\d+: |Checked )")
#: The colours ``full`` means to print (SGR sequences): the only escapes allowed in it.
SGR = re.compile(r"\x1b\[[0-9;]*m")
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def physical_lines(text: str) -> list[str]:
    """Lines as a terminal or GitHub's runner sees them (it splits at \\r as well)."""
    return re.split(r"\r\n|\r|\n", text.removesuffix("\n"))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("escaping")
    (root / "pyproject.toml").write_text(
        "[project]\nname = 'ws'\n\n[tool.fx-lsp]\n" + json.dumps("key" + PAYLOAD) + " = 1\n",
        encoding="utf-8")
    (root / "model.py").write_text(MODEL, encoding="utf-8")
    (root / FILE_NAME).write_text("from torch import nn\n\n\nclass Odd(nn.Module):\n    pass\n",
                                  encoding="utf-8")
    return root


def check(workspace: Path, *arguments: str, env: dict[str, str] | None = None
          ) -> subprocess.CompletedProcess[str]:
    completed = fx_lsp("check", ".", *arguments, cwd=workspace, env={**os.environ, **(env or {})})
    assert completed.returncode == 1, completed.stderr
    return completed


@pytest.fixture(scope="module")
def report(workspace: Path) -> dict:
    return json.loads(check(workspace, "--output-format", "json").stdout)


def test_concise_prints_one_line_per_problem_and_no_control_character(
        workspace: Path, report: dict) -> None:
    output = check(workspace, "--output-format", "concise").stdout
    assert not CONTROL.search(output), repr(output)
    lines = physical_lines(output)
    assert [line for line in lines if not CONCISE_LINE.match(line)] == []
    assert len(lines) == len(report["config_problems"]) + len(report["diagnostics"]) + 1
    assert "##[" not in output
    # The text is still there to read, its controls shown as symbols.
    assert "::error file=x::forged␊src/fake.py:1:1: FX002 forged␍" in output
    assert "␛]52;c;Zm9yZ2Vk␇" in output and "\\x9b31m" in output


def test_full_keeps_its_colours_and_only_them(workspace: Path) -> None:
    output = check(workspace, "--output-format", "full", env={"FORCE_COLOR": "1"}).stdout
    assert SGR.search(output), "full prints no colour"
    shown = SGR.sub("", output)
    assert not CONTROL.search(shown), repr(shown)
    assert "##[" not in shown
    for line in physical_lines(shown):
        assert not line.lstrip().startswith("::"), line
        assert not line.startswith("src/fake.py"), line
    # A message's further lines follow it behind a bar; rich markup in it stays text.
    assert "  | src/fake.py:1:1: FX002 forged␍::add-mask::secret ␛]52;c;Zm9yZ2Vk␇" in shown
    assert "[bold]red" in shown
    # The quoted source line: controls shown, the carets still under len(x).
    source = next(line for line in physical_lines(shown) if "return x * len(x)" in line)
    carets = physical_lines(shown)[physical_lines(shown).index(source) + 1]
    assert '# "␛]52;c;Zm9yZ2Vk␇␛[8m hidden"' in source
    assert carets.index("^^^^^^") == source.index("len(x)")


def test_github_commands_are_one_line_each_and_decode_to_the_problems(
        workspace: Path, report: dict) -> None:
    output = check(workspace, "--output-format", "github").stdout
    lines = physical_lines(output)
    assert len(lines) == len(report["diagnostics"])
    decoded = []
    for line in lines:
        match = re.fullmatch(r"::(error|warning|notice) ([^:]*)::(.*)", line)
        assert match, line
        properties = dict(item.split("=", 1) for item in match.group(2).split(","))
        data = match.group(3)
        # @actions/core's escapeData/escapeProperty, undone as the runner undoes them.
        for escaped, character in (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","),
                                   ("%25", "%")):
            properties = {key: value.replace(escaped, character)
                          for key, value in properties.items()}
            data = data.replace(escaped, character)
        assert not CONTROL.search(data), repr(data)
        assert not CONTROL.search(properties["file"]), repr(properties["file"])
        decoded.append((properties["file"], int(properties["line"])))
    # The file name shown as every format shows it: a terminal escape in it would reach the
    # log raw.
    assert decoded == [(terminal(d["path"]), d["line"]) for d in report["diagnostics"]]
    assert (SHOWN_FILE_NAME, 1) in decoded


def test_junit_parses_whatever_the_file_names_and_messages(workspace: Path) -> None:
    output = check(workspace, "--output-format", "junit").stdout
    suites = ET.fromstring(output)
    names = [suite.get("name") for suite in suites]
    assert "model.py" in names and SHOWN_FILE_NAME.replace("␊", "\n") in names
    messages = [failure.get("message") for failure in suites.iter("failure")]
    assert any("[bold]red ##[add-mask]secret" in message for message in messages)


def test_graph_page_script_cannot_be_ended_by_a_submodule_name(workspace: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "graph", "model.py::Sub", "-o", "sub.html"],
        cwd=workspace, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    page = (workspace / "sub.html").read_text(encoding="utf-8")
    opening = "<script>window.FX_GRAPH = "
    start = page.index(opening) + len(opening)
    # The HTML tokenizer ends a script at the first "</script", and a "<!--" before it makes
    # it skip that end ("script data escaped" states): so the data must hold no "<" at all.
    script = page[start:page.lower().index("</script", start)]
    assert "<" not in script
    assert script.endswith(";")
    data = json.loads(script.removesuffix(";"))
    assert SUBMODULE in json.dumps(data, ensure_ascii=False)
    assert page.count("<script>") == 2 and page.rstrip().endswith("</html>")


def rendered(markdown: str) -> str:
    """The HTML a CommonMark renderer with GFM tables makes of a hover (raw HTML allowed, as
    renderers that trust hovers allow it)."""
    return MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)


async def test_hover_markdown_renders_no_link_image_or_html(workspace: Path) -> None:
    model = workspace / "model.py"
    lines = model.read_text(encoding="utf-8").splitlines()

    def at(needle: str) -> types.Position:
        line = next(index for index, text in enumerate(lines) if needle in text)
        return types.Position(line=line, character=lines[line].index(needle) + 1)

    async with session(workspace) as client:
        uri = client.open(model)
        await client.diagnostics_for(uri, version=1, timeout=120)
        hovers = {}
        for needle in ("Raises", "raise ValueError", "return getattr"):
            result = await client.text_document_hover_async(types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=at(needle)))
            assert result is not None, needle
            hovers[needle] = result.contents.value
    for needle, markdown in hovers.items():
        html = rendered(markdown)
        assert not re.search(r"<(a|img|script)\b|<!--", html), (needle, markdown, html)
    assert "&lt;img src=x&gt;" in rendered(hovers["raise ValueError"])
    table = rendered(hovers["return getattr"])
    assert "<table>" in table and "a`&lt;img src=x&gt;|&lt;!--&lt;script&gt;" in table


#: A class that needs arguments, traced as the child its parent built under an odd name: the
#: code lens and hover name that child.
LAYERS = '''from torch import nn


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)
'''
PARENT = '''from torch import nn

from pkg.layers import Block


class Parent(nn.Module):
    def __init__(self):
        super().__init__()
        self.add_module("$(alert)`<img src=x>", Block(4))

    def forward(self, x):
        return getattr(self, "$(alert)`<img src=x>")(x)
'''


@pytest.mark.slow
async def test_code_lens_and_hover_name_an_odd_child_as_text(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (tmp_path / "pkg").mkdir()
    for name, text in {"__init__.py": "", "layers.py": LAYERS, "parent.py": PARENT}.items():
        (tmp_path / "pkg" / name).write_text(text)
    async with session(tmp_path) as client:
        parent = client.open(tmp_path / "pkg" / "parent.py")
        await client.diagnostics_for(parent, version=1, timeout=120)
        uri = client.open(tmp_path / "pkg" / "layers.py")
        await client.diagnostics_for(uri, version=1, timeout=120)
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri)))
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=3, character=7)))
    # VS Code draws "$(name)" in a code lens title as an icon unless it is escaped.
    assert lenses[0].command.title.endswith(
        "traced as built by Parent.\\$(alert)`<img src=x>"), lenses[0].command.title
    assert hover is not None
    html = rendered(hover.contents.value)
    assert "<code>Parent.$(alert)`&lt;img src=x&gt;</code>" in html, hover.contents.value


@pytest.mark.slow  # over 12 s in the loaded fast tier
def test_fix_and_diff_show_an_odd_folder_and_source_line_as_text(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    folder = tmp_path / "d\x1b]52;c;Zm9yZ2Vk\x07\n::error file=x::forged"
    folder.mkdir()
    (folder / "model.py").write_text(
        'import torch\nfrom torch import nn  # "\x1b]52;c;Zm9yZ2Vk\x07"\n\n\n'
        "class UsesLen(nn.Module):\n    def forward(self, x):\n        return x * len(x)\n")
    printed = []
    for option in ("--diff", "--fix"):
        completed = subprocess.run(
            [sys.executable, "-m", "fx_lsp", "check", ".", option], cwd=tmp_path,
            capture_output=True, text=True, encoding="utf-8", timeout=300)
        printed += [completed.stdout, completed.stderr]
    assert "torch.fx.wrap" in printed[0] and "Fixed 1 problem" in printed[3]
    for output in printed:
        assert not CONTROL.search(output), repr(output)
        assert not [line for line in physical_lines(output) if line.lstrip().startswith("::")]
    assert ' from torch import nn  # "␛]52;c;Zm9yZ2Vk␇"' in printed[0]
    assert "  d␛]52;c;Zm9yZ2Vk␇␊::error file=x::forged/model.py:7:20: FX002" in printed[3]


@pytest.mark.slow  # over 15 s: five real processes, or a flood of edits
def test_a_file_name_that_is_not_utf8_is_reported_in_every_format(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    with open(os.path.join(os.fsencode(tmp_path), b"odd\xff.py"), "w") as handle:
        handle.write("from torch import nn\n\n\nclass Odd(nn.Module):\n    pass\n")
    outputs = {}
    for output_format in ("concise", "full", "junit", "sarif", "json"):
        completed = subprocess.run(
            [sys.executable, "-m", "fx_lsp", "check", ".", "--no-cache", "--output-format",
             output_format], cwd=tmp_path, capture_output=True, text=True, encoding="utf-8",
            timeout=300)
        assert completed.returncode == 1, (output_format, completed.stderr)
        outputs[output_format] = completed.stdout
    assert outputs["concise"].startswith("odd\\udcff.py:1:1: FX100")
    assert ET.fromstring(outputs["junit"]).find("testsuite").get("name") == "odd\\udcff.py"
    (result,) = json.loads(outputs["sarif"])["runs"][0]["results"]
    location = result["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert location == "odd%FF.py"
