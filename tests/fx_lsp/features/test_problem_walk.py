"""The report's problems -> the editor's diagnostics, in one walk, without a worker: results
made by hand, ``fxcore.reporting.report.collect`` with the editor's selection
(``fx_lsp.server.settings``), ``fx_lsp.features.diagnostics.build``. One diagnostic per problem
that shows in the document, and the information codes FX103/FX104 governed by
select/ignore/per-file-ignores and suppression comments like any other code."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

from lsprotocol import types

from fx_lsp.cli.output_formats.concise import concise
from fx_lsp.features import diagnostics
from fx_lsp.features.initialization_options import Options
from fx_lsp.server.settings import Settings
from fxcore.model.job_spec import ReportConfig
from fxcore.model.results import (
    CODES,
    Arguments,
    Failure,
    FileResult,
    Frame,
    Hint,
    ModuleResult,
)
from fxcore.reporting.report import Report, Selection, collect
from fxcore.reporting.shown import show
from fxcore.reporting.verdict_counts import Summary
from fxcore.workspace.paths import split_lines

NET = textwrap.dedent('''
    from torch import nn


    def helper(x):
        return len(x)


    class Guessed(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.spare = nn.Linear(width, width)

        def forward(self, x):
            if x.sum() > 0:
                return x
            return helper(x)


    class Unbuilt(nn.Module):
        def __init__(self, config):
            super().__init__()

        def forward(self, x):
            return x


    class Plain(nn.Module):
        def forward(self, x):
            return x + 1
    ''').lstrip("\n")

OTHER = "from net import helper\n\n\nclass Outer:\n    pass\n"


def span(text: str, path: Path, snippet: str, after: str = "") -> dict:
    """The span of ``snippet`` on the first line holding it (after the line holding
    ``after``)."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    number = next(i for i in range(start, len(lines)) if snippet in lines[i])
    column = lines[number].index(snippet) + 1
    return {"path": str(path), "line": number + 1, "column": column, "end_line": number + 1,
            "end_column": column + len(snippet)}


def module(text: str, path: Path, name: str, **fields) -> ModuleResult:
    return ModuleResult(**span(text, path, name, f"class {name}"), class_name=name,
                        qualified_name=f"net:{name}", **fields)


def failure(text: str, path: Path, kind: str, snippet: str, message: str,
            frames: list[Frame] | None = None) -> Failure:
    return Failure(**span(text, path, snippet), code=CODES[kind], kind=kind, message=message,
                   frames=frames or [])


def workspace(tmp_path: Path, net: str = NET, table: str = "") -> tuple[Path, list[FileResult]]:
    """``net.py`` and ``other.py`` on disk, and their results: Guessed (guessed arguments, two
    failures, an unused member), Unbuilt (not traced), Plain (traceable); Outer in other.py
    reaches helper's ``len()`` too."""
    (tmp_path / "pyproject.toml").write_text(f"[project]\nname = 'w'\n[tool.fx-lsp]\n{table}\n")
    path, other = tmp_path / "net.py", tmp_path / "other.py"
    path.write_text(net)
    other.write_text(OTHER)
    call = Frame(**span(net, path, "helper(x)", "return helper"), function="forward")
    inner = Frame(**span(net, path, "len(x)"), function="helper")
    length = failure(net, path, "len", "len(x)", "len() is called on a traced value.",
                     [call, inner])
    guessed = module(
        net, path, "Guessed", status="failed",
        arguments=Arguments(origin="guessed", kwargs={"width": "16"}),
        failures=[failure(net, path, "control-flow", "if x.sum() > 0:",
                          "Control flow on a traced value."), length],
        hints=[Hint(**span(net, path, "self.spare"), code=CODES["unused"], kind="unused",
                    message="The submodule 'spare' is never used by forward().",
                    member="spare")])
    unbuilt = module(net, path, "Unbuilt", status="not-traced",
                     reason="The constructor needs arguments: config.")
    plain = module(net, path, "Plain", status="traceable")
    outer = ModuleResult(**span(OTHER, other, "Outer"), class_name="Outer",
                         qualified_name="other:Outer", status="failed",
                         failures=[Failure(**length.span(), code=length.code, kind=length.kind,
                                           message=length.message, frames=length.frames)])
    return path, [FileResult(path=str(path), modules=[guessed, unbuilt, plain]),
                  FileResult(path=str(other), modules=[outer])]


def editor(root: Path, **client: object) -> Settings:
    """The server's settings for ``root``: what it selects is what the editor shows."""
    settings = Settings(lambda path: None, lambda path: str(root), lambda problems, where: None)
    settings.apply(client)
    return settings


def text_of(path: str) -> str | None:
    return Path(path).read_text()


def lines_of(path: str) -> list[str]:
    return split_lines(Path(path).read_text())


def report(results: list[FileResult], selection_of) -> Report:
    return collect(results, text_of, selection_of)


def codes_at(found: Report, path: Path) -> set[str]:
    return {problem.code for problem in found.problems if problem.path == str(path)}


def test_each_problem_becomes_one_diagnostic(tmp_path: Path) -> None:
    path, results = workspace(tmp_path)
    found = report(results, editor(tmp_path, showNotTraced=True).selection)
    here = [problem for problem in found.problems if problem.path == str(path)]
    assert sorted(p.code for p in here) == ["FX001", "FX002", "FX103", "FX104", "FX200"]

    entries = diagnostics.build(str(path), found, lines_of, Options(), "utf-16")
    by_problem = [entry for entry in entries if entry.problem is not None]
    assert [entry.problem for entry in by_problem] == here  # one each, in the report's order
    for entry in by_problem:
        assert (entry.diagnostic.code, entry.diagnostic.range.start.line + 1) == \
            (entry.problem.code, entry.problem.line)
    by_code = {str(entry.diagnostic.code): entry.diagnostic for entry in by_problem}
    # What each shows comes from its problem: severity, tags, chain, classes that reached it.
    assert by_code["FX104"].severity == types.DiagnosticSeverity.Information
    assert by_code["FX104"].message.startswith(
        "Guessed was traced with guessed arguments: width=16.")
    assert by_code["FX103"].severity == types.DiagnosticSeverity.Information
    assert by_code["FX103"].message == \
        "Unbuilt was not traced: The constructor needs arguments: config."
    assert not by_code["FX104"].tags and not by_code["FX103"].tags
    assert by_code["FX200"].severity == types.DiagnosticSeverity.Hint
    assert by_code["FX200"].tags == [types.DiagnosticTag.Unnecessary]
    assert by_code["FX001"].severity == types.DiagnosticSeverity.Error
    assert by_code["FX002"].message.endswith("(in Guessed; also reached from Outer)")
    (related,) = by_code["FX002"].related_information
    assert related.message == "helper() called from forward()"
    # Guessed's failure outside its body also marks its name: the one entry without a problem.
    (summary,) = [entry for entry in entries if entry.problem is None]
    assert summary.diagnostic.message.startswith("Guessed is not FX-traceable: 2 failures")
    assert len(entries) == len(here) + 1

    # The document whose class reaches the helper shows only that class's summary.
    (outer,) = diagnostics.build(str(tmp_path / "other.py"), found, lines_of, Options(),
                                 "utf-16")
    assert outer.diagnostic.message == \
        "Outer is not FX-traceable: 1 failure (first: len at net.py:5)"


def test_a_failure_reached_only_from_another_file_says_which_trace(tmp_path: Path) -> None:
    path, (_, other) = workspace(tmp_path)
    found = report([other], editor(tmp_path).selection)
    (entry,) = diagnostics.build(str(path), found, lines_of, Options(), "utf-16")
    assert entry.diagnostic.message.endswith("(tracing Outer in other.py)")
    assert (entry.traced_path, entry.module.class_name) == (str(tmp_path / "other.py"), "Outer")


def test_the_editor_shows_fx104_and_fx103_with_show_not_traced_only(tmp_path: Path) -> None:
    path, results = workspace(tmp_path)
    assert {"FX104"} <= codes_at(report(results, editor(tmp_path).selection), path)
    assert "FX103" not in codes_at(report(results, editor(tmp_path).selection), path)
    shown = codes_at(report(results, editor(tmp_path, showNotTraced=True).selection), path)
    assert {"FX103", "FX104"} <= shown


def test_the_command_line_reports_information_codes_only_selected_in_full(tmp_path: Path
                                                                          ) -> None:
    path, results = workspace(tmp_path)
    found = report(results, lambda p: Selection(ReportConfig(), str(tmp_path)))
    assert codes_at(found, path) == {"FX001", "FX002", "FX200"}
    assert found.unselected == 2
    for select, expected in (["FX", "FX104"], {"FX104"}), (["FX1"], set()), \
            (["FX103", "FX104"], {"FX103", "FX104"}):
        selection = Selection(ReportConfig(select=select), str(tmp_path))
        assert codes_at(report(results, lambda p, s=selection: s), path) & \
            {"FX103", "FX104"} == expected, select


def test_select_ignore_and_per_file_ignores_govern_information_codes(tmp_path: Path) -> None:
    for table in ('ignore = ["FX104"]', 'ignore = ["FX1"]', 'select = ["FX0"]',
                  'per-file-ignores = {"net.py" = ["FX104"]}',
                  'per-file-ignores = {"*.py" = ["FX10"]}'):
        path, results = workspace(tmp_path, table=table)
        shown = codes_at(report(results, editor(tmp_path, showNotTraced=True).selection), path)
        assert "FX104" not in shown, table
    path, results = workspace(tmp_path, table='ignore = ["FX103"]')
    shown = codes_at(report(results, editor(tmp_path, showNotTraced=True).selection), path)
    assert "FX103" not in shown and "FX104" in shown


def test_suppression_comments_govern_information_codes(tmp_path: Path) -> None:
    net = (NET.replace("class Guessed(nn.Module):", "class Guessed(nn.Module):  # noqa: FX104")
           .replace("class Unbuilt(nn.Module):",
                    "class Unbuilt(nn.Module):  # fx-lsp: ignore[FX103]")
           .replace("class Plain(nn.Module):", "class Plain(nn.Module):  # fx-lsp: ignore[FX104]"))
    path, results = workspace(tmp_path, net)
    found = report(results, editor(tmp_path, showNotTraced=True).selection)
    assert codes_at(found, path) & {"FX103", "FX104"} == set()
    assert found.suppressed == 2
    # The comments that silenced them are used; the one on Plain, which has no guessed
    # arguments, silences nothing.
    (unused,) = [p for p in found.problems if p.code == "FX900"]
    assert unused.line == net.splitlines().index(
        "class Plain(nn.Module):  # fx-lsp: ignore[FX104]") + 1
    assert unused.message == "Unused suppression of FX104: not reported here."
    # On the command line, which does not report them, they are not counted as silenced,
    # and the comments are used all the same.
    found = report(results, lambda p: Selection(ReportConfig(), str(tmp_path)))
    assert found.suppressed == 0
    assert [p.line for p in found.problems if p.code == "FX900"] == [unused.line]


def test_the_terminal_mentions_a_class_not_traced_once(tmp_path: Path) -> None:
    """As a note by default; as FX103 instead when ``select`` names it."""
    _, results = workspace(tmp_path)
    for select, expected in ((["FX"], ": note: FX103 Unbuilt was not traced."),
                             (["FX", "FX103"], ": FX103 [Unbuilt] Unbuilt was not traced:")):
        selection = Selection(ReportConfig(select=select), str(tmp_path))
        found = report(results, lambda p, s=selection: s)
        stream = io.StringIO()
        concise(show(results, found, Summary(), lambda path: False), stream)
        (line,) = [line for line in stream.getvalue().splitlines() if "Unbuilt" in line]
        assert expected in line, select


def test_the_not_traced_note_obeys_ignore_per_file_ignores_and_noqa(tmp_path: Path) -> None:
    """The command line's note is FX103: what leaves FX103 out leaves the note out."""
    def notes(found: Report) -> list[str]:
        stream = io.StringIO()
        concise(show(results, found, Summary(), lambda path: False), stream)
        return [line for line in stream.getvalue().splitlines() if "note: FX103" in line]

    _, results = workspace(tmp_path)
    for config, shown in ((ReportConfig(), True), (ReportConfig(ignore=["FX103"]), False),
                          (ReportConfig(ignore=["FX1"]), False),
                          (ReportConfig(per_file_ignores={"net.py": ["FX103"]}), False),
                          (ReportConfig(per_file_ignores={"other.py": ["FX103"]}), True)):
        selection = Selection(config, str(tmp_path))
        assert bool(notes(report(results, lambda p, s=selection: s))) is shown, config
    _, results = workspace(tmp_path, NET.replace(
        "class Unbuilt(nn.Module):", "class Unbuilt(nn.Module):  # noqa: FX103"))
    assert notes(report(results, lambda p: Selection(ReportConfig(), str(tmp_path)))) == []


def test_two_classes_saying_different_things_at_one_place_get_a_diagnostic_each(
        tmp_path: Path) -> None:
    """Outer reaches helper's ``len(x)`` with a message of its own: the editor shows both
    messages there, each naming its class, rather than one that hides the other."""
    path, (net, other) = workspace(tmp_path)
    (outer,) = other.modules
    outer.failures[0].message = "len() is called on a traced value (Outer's words)."
    found = report([net, other], editor(tmp_path).selection)
    at_len = [entry.diagnostic.message
              for entry in diagnostics.build(str(path), found, lines_of, Options(), "utf-16")
              if entry.diagnostic.code == "FX002"]
    assert at_len == ["len() is called on a traced value.",
                      "len() is called on a traced value (Outer's words). "
                      "(tracing Outer in other.py)"]
