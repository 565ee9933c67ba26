"""Bad input to the CLI ends with one clear line on stderr and exit status 2, never a traceback:
a ``pyproject.toml`` that cannot be parsed (nested thousands deep, too large, not UTF-8, not
TOML), malformed shard reports given to ``fx-lsp merge``, and ``-o``/``--output-file`` paths
that cannot be written. A ``call`` too deep to read is a config problem: the rest of the config
still applies. All through the real CLI in a subprocess."""

from __future__ import annotations

import copy
import json
import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import cli_support
from engine_support import REPO_ROOT

MODEL = ("from torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
         "        return x + len(x)\n")
#: merge children may not take more memory than this: a report claiming 10**9 shards made
#: merge build a list of them (gigabytes) on a machine others share.
MERGE_MEMORY_BYTES = 2 << 30


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MERGE_MEMORY_BYTES, MERGE_MEMORY_BYTES))


def fx_lsp(cwd: Path, *arguments: str,
           preexec_fn: Callable[[], None] | None = None) -> subprocess.CompletedProcess[str]:
    if preexec_fn is None:
        return cli_support.fx_lsp(*arguments, cwd=cwd)
    # A limit set before the program starts needs a process of its own.
    environment = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run([sys.executable, "-m", "fx_lsp", *arguments], cwd=cwd,
                          env=environment, capture_output=True, text=True, timeout=300,
                          preexec_fn=preexec_fn)


def assert_one_clear_line(completed: subprocess.CompletedProcess[str], command: str,
                          *expected: str) -> str:
    """Exit status 2 and a single line on stderr, naming the command, without a traceback."""
    assert completed.returncode == 2, (completed.returncode, completed.stderr[-2000:])
    assert "Traceback" not in completed.stderr, completed.stderr[-2000:]
    lines = completed.stderr.splitlines()
    assert len(lines) == 1, completed.stderr[-2000:]
    assert lines[0].startswith(f"fx-lsp {command}: "), lines[0]
    for text in expected:
        assert text in lines[0], lines[0]
    return lines[0]


# -- pyproject.toml that cannot be parsed at all -------------------------------------------


def _deep_array(depth: int) -> bytes:
    return b"[tool.fx-lsp]\nexclude = " + b"[" * depth + b"]" * depth + b"\n"


UNREADABLE_PYPROJECTS = {
    "array-5000-deep": (_deep_array(5000), "nested too deeply"),
    "array-100000-deep": (_deep_array(100_000), "nested too deeply"),
    "inline-tables-5000-deep": (b"[tool.fx-lsp]\nmodules = " + b"{a = " * 5000 + b"1"
                                + b"}" * 5000 + b"\n", "nested too deeply"),
    # Read as any workspace file is (fxcore.workspace.file_access): a regular file of at most 4 MiB.
    "larger-than-4-MiB": (b"[tool.fx-lsp]\n" + b"# padding\n" * (500 * 1024),
                          "too large to check"),
    "utf-16": ("[tool.fx-lsp]\ntimeout = 5\n".encode("utf-16"), "not UTF-8"),
    "latin-1": ("# caf\xe9\n[tool.fx-lsp]\ntimeout = 5\n".encode("latin-1"), "not UTF-8"),
    "not-toml": (b"[tool.fx-lsp\ntimeout = 5\n", "cannot read [tool.fx-lsp]"),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE_PYPROJECTS))
def test_a_pyproject_that_cannot_be_parsed_stops_the_check_with_one_line(
        tmp_path: Path, case: str) -> None:
    """Nothing of such a file applies (excludes, ignores, arguments), so the run would report
    with settings the project does not have: exit 2, as ruff does."""
    content, message = UNREADABLE_PYPROJECTS[case]
    (tmp_path / "pyproject.toml").write_bytes(content)
    (tmp_path / "model.py").write_text(MODEL)
    completed = fx_lsp(tmp_path, "check", "--no-cache", "model.py")
    line = assert_one_clear_line(completed, "check", "pyproject.toml", message)
    assert len(line) < 300, line
    assert completed.stdout == ""


OTHER_TOOLS_UNREADABLE = {
    "array-5000-deep": b"[tool.other]\na = " + b"[" * 5000 + b"]" * 5000 + b"\n",
    "inline-tables-5000-deep": b"[tool.other]\na = " + b"{a = " * 5000 + b"1" + b"}" * 5000,
    "not-toml": b"[tool.other\na = 1\n",
}


@pytest.mark.parametrize("case", sorted(OTHER_TOOLS_UNREADABLE))
def test_another_tools_table_that_cannot_be_parsed_is_skipped_with_a_warning(
        tmp_path: Path, case: str) -> None:
    """Only [tool.fx-lsp] matters: it is read alone, and applies (here its ignore), while the
    rest of the file is skipped with one warning, as the server does."""
    (tmp_path / "pyproject.toml").write_bytes(
        b"[project]\nname = 'x'\n\n[tool.fx-lsp]\nignore = ['FX002']\n\n"
        + OTHER_TOOLS_UNREADABLE[case] + b"\n\n[tool.fx-lsp.modules.'model:Net']\nargs = []\n")
    (tmp_path / "model.py").write_text(MODEL)
    completed = fx_lsp(tmp_path, "check", "--no-cache", "model.py")
    assert completed.returncode == 0, completed.stdout + completed.stderr[-2000:]
    assert "Traceback" not in completed.stderr
    assert completed.stderr == ""
    warnings = [line for line in completed.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "only [tool.fx-lsp] was read" in warnings[0], warnings
    assert "FX002" not in completed.stdout and "1 failed" in completed.stdout


def test_graph_stops_likewise_on_a_pyproject_that_cannot_be_parsed(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_bytes(_deep_array(5000))
    (tmp_path / "model.py").write_text(MODEL)
    completed = fx_lsp(tmp_path, "graph", "model.py::Net", "--no-cache")
    assert_one_clear_line(completed, "graph", "nested too deeply")
    assert not (tmp_path / "Net.graph.html").exists()


def test_a_call_too_deep_to_read_is_a_config_problem_and_the_rest_applies(
        tmp_path: Path) -> None:
    terms = "+".join(["1"] * 100_000)
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fx-lsp]\nexclude = ["skipped.py"]\nignore = ["FX002"]\n\n'
        f'[tool.fx-lsp.modules."model:Net"]\ncall = "Net({terms})"\n')
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "skipped.py").write_text(MODEL.replace("Net", "Skipped"))
    completed = fx_lsp(tmp_path, "check", "--no-cache", "--output-format", "json", ".")
    assert "Traceback" not in completed.stderr, completed.stderr[-2000:]
    assert completed.returncode == 0, completed.stderr[-2000:]
    report = json.loads(completed.stdout)
    (problem,) = report["config_problems"]
    assert "modules.'model:Net': 'call' is nested too deeply to read" in problem
    assert len(problem) < 400, problem  # quotes the start of the call, not all of it
    # The rest of the file applies: skipped.py is excluded, FX002 ignored.
    assert [file["path"] for file in report["files"]] == ["model.py"]
    assert report["diagnostics"] == []
    assert [module["status"] for module in report["modules"]] == ["failed"]


def test_arguments_nested_hundreds_deep_are_a_config_problem(tmp_path: Path) -> None:
    """TOML parses 440 levels; the worker rebuilding them as Python source did not (FX199
    with a traceback of its recursion, and the class was never traced)."""
    depth = 440
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fx-lsp.modules."model:Net"]\nargs = ' + "[" * depth + "]" * depth + "\n")
    (tmp_path / "model.py").write_text(MODEL)
    completed = fx_lsp(tmp_path, "check", "--no-cache", "--output-format", "json", "model.py")
    assert completed.returncode == 1, completed.stderr[-2000:]  # the FX002
    report = json.loads(completed.stdout)
    (problem,) = report["config_problems"]
    assert "'args' is nested more than 100 levels deep" in problem
    assert [error for file in report["files"] for error in file["errors"]] == []
    assert [module["status"] for module in report["modules"]] == ["failed"]


# -- fx-lsp merge --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shard_reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """A real one-shard report in each format, with one FX002 in it."""
    root = tmp_path_factory.mktemp("shard")
    (root / "pyproject.toml").write_text("[project]\nname = 'shard'\n")
    (root / "model.py").write_text(MODEL)
    reports = {}
    for output_format in ("json", "sarif"):
        completed = fx_lsp(root, "check", "--no-cache", "--shard", "1/1", "--output-format",
                           output_format, "--output-file", f"shard.{output_format}",
                           "model.py")
        assert completed.returncode == 1, completed.stderr
        reports[output_format] = json.loads((root / f"shard.{output_format}").read_text())
    return reports


def _twice(report: dict[str, Any], key: str, change: Callable[[dict[str, Any]], None]) -> None:
    """Two items under ``key`` (sorting compares them), the second changed."""
    report[key].append(copy.deepcopy(report[key][0]))
    change(report[key][1])


def _sarif_results(report: dict[str, Any]) -> dict[str, Any]:
    return report["runs"][0]


JSON_CHANGES: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "10**9 shards": (lambda r: r["shard"].update(count=10**9), "$.shard.count"),
    "count infinite": (lambda r: r["shard"].update(count=float("inf")), "$.shard.count"),
    "count of 4,000 digits": (lambda r: r["shard"].update(count=10**3999), "$.shard.count"),
    "null module path": (lambda r: _twice(r, "modules", lambda m: m.update(path=None)),
                         "$.modules[1].path"),
    "null diagnostic path": (lambda r: _twice(r, "diagnostics", lambda d: d.update(path=None)),
                             "$.diagnostics[1].path"),
    "count as text": (lambda r: r["shard"].update(count="1"), "$.shard.count"),
    "index true": (lambda r: r["shard"].update(index=True), "$.shard.index"),
    "index missing": (lambda r: r["shard"].pop("index"), "'index' is a required property"),
    "no shard": (lambda r: r.pop("shard"), "'shard' is a required property"),
    "summary value text": (lambda r: r["summary"].update(files="x"), "$.summary.files"),
    "diagnostics a number": (lambda r: r.update(diagnostics=5), "$.diagnostics"),
    "files missing": (lambda r: r.pop("files"), "'files' is a required property"),
    "line a float": (lambda r: r["diagnostics"][0].update(line=1.5), "$.diagnostics[0].line"),
}
SARIF_CHANGES: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "null uri": (lambda r: _twice(_sarif_results(r), "results", lambda result: result[
        "locations"][0]["physicalLocation"]["artifactLocation"].update(uri=None)),
        "artifactLocation.uri"),
    "no locations": (lambda r: _sarif_results(r)["results"][0].update(locations=[]),
                     "$.runs[0].results[0].locations"),
    "runs empty": (lambda r: r.update(runs=[]), "$.runs"),
    "shard count huge": (lambda r: _sarif_results(r)["properties"]["fx-lsp"]["shard"].update(
        count=10**9), "['fx-lsp'].shard.count"),
}


def _merge(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return fx_lsp(tmp_path, "merge", *arguments, preexec_fn=_limit_memory)


@pytest.mark.parametrize(("output_format", "case"), [
    *(("json", case) for case in JSON_CHANGES), *(("sarif", case) for case in SARIF_CHANGES)])
def test_merge_of_a_malformed_shard_report_is_one_line(
        tmp_path: Path, shard_reports: dict[str, dict[str, Any]], output_format: str,
        case: str) -> None:
    change, expected = (JSON_CHANGES if output_format == "json" else SARIF_CHANGES)[case]
    report = copy.deepcopy(shard_reports[output_format])
    change(report)
    (tmp_path / f"shard.{output_format}").write_text(json.dumps(report))
    completed = _merge(tmp_path, f"shard.{output_format}")
    line = assert_one_clear_line(completed, "merge", expected)
    assert len(line) < 400, line


def test_check_refuses_a_split_into_10_to_the_9_shards(tmp_path: Path) -> None:
    """Splitting kept a load per shard: 10**9 of them took gigabytes before any tracing."""
    (tmp_path / "model.py").write_text(MODEL)
    completed = fx_lsp(tmp_path, "check", "--no-cache", "--shard", "1/1000000000", "model.py",
                       preexec_fn=_limit_memory)
    assert completed.returncode == 2, completed.stderr[-2000:]
    assert "Traceback" not in completed.stderr
    assert "--shard takes I/N with 1 <= I <= N <= 10000" in completed.stderr


RAW_REPORTS: dict[str, tuple[str, str]] = {
    "not JSON": ("{'shard': 1}", "cannot read"),
    "JSON 100,000 deep": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "a list": ("[1, 2]", "its JSON is not an object"),
    "a string": ('"shard"', "its JSON is not an object"),
}


@pytest.mark.parametrize("case", sorted(RAW_REPORTS))
def test_merge_of_a_file_that_is_no_report_is_one_line(tmp_path: Path, case: str) -> None:
    text, expected = RAW_REPORTS[case]
    (tmp_path / "report.json").write_text(text)
    assert_one_clear_line(_merge(tmp_path, "report.json"), "merge", expected)


def test_merge_of_a_folder_or_a_missing_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "folder").mkdir()
    assert_one_clear_line(_merge(tmp_path, "folder"), "merge", "cannot read folder")
    assert_one_clear_line(_merge(tmp_path, "missing.json"), "merge", "cannot read missing.json")


def test_merge_still_merges_a_real_report(tmp_path: Path,
                                          shard_reports: dict[str, dict[str, Any]]) -> None:
    """The validation accepts what fx-lsp check writes (the shard tests merge many)."""
    for output_format, report in shard_reports.items():
        (tmp_path / f"shard.{output_format}").write_text(json.dumps(report))
        completed = _merge(tmp_path, f"shard.{output_format}", "--output-file",
                           f"merged.{output_format}")
        assert completed.returncode == 1, completed.stderr  # the FX002
        assert json.loads((tmp_path / f"merged.{output_format}").read_text())


# -- -o / --output-file --------------------------------------------------------------------


@pytest.mark.parametrize("command", ["check", "graph", "merge"])
def test_an_output_file_that_cannot_be_written_is_one_line(
        tmp_path: Path, shard_reports: dict[str, dict[str, Any]], command: str) -> None:
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "shard.json").write_text(json.dumps(shard_reports["json"]))
    (tmp_path / "reports").mkdir()
    arguments = {"check": ["check", "--no-cache", "model.py", "--output-file"],
                 "graph": ["graph", "model.py::Net", "--no-cache", "-o"],
                 "merge": ["merge", "shard.json", "--output-file"]}[command]
    assert_one_clear_line(fx_lsp(tmp_path, *arguments, "reports"), command,
                          "cannot write reports: it is a folder")
    assert_one_clear_line(fx_lsp(tmp_path, *arguments, "missing/report.out"), command,
                          "there is no folder missing")
    assert not (tmp_path / "missing").exists()
    assert_one_clear_line(fx_lsp(tmp_path, *arguments, "/dev/full"), command,
                          "cannot write /dev/full")
