"""``fx-lsp explain``: one code's page, or every code (``--all``), as text or JSON, each from
the registry (``fxcore.rules``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fxcore import rules
from fxcore.rules.compile import GRAPH_BREAK_RULES
from fxcore.rules.documentation import code_page, help_url

from cli_support import fx_lsp

#: Every code, in the order ``--all`` lists them: this project's own, then the graph breaks.
CODES = sorted(rule.code for rule in rules.RULES)


def test_explain_prints_the_documentation_of_a_code(tmp_path: Path) -> None:
    completed = fx_lsp("explain", "fx002", cwd=tmp_path)
    assert completed.returncode == 0
    assert "len() on a traced value" in completed.stdout and "x.size(0)" in completed.stdout
    unknown = fx_lsp("explain", "FX999", cwd=tmp_path)
    assert unknown.returncode == 2 and "unknown code" in unknown.stderr


def test_all_lists_every_code_with_its_summary(tmp_path: Path) -> None:
    completed = fx_lsp("explain", "--all", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    listed = [line.split(None, 1) for line in completed.stdout.splitlines()]
    assert [code for code, _ in listed] == CODES
    assert all(summary == rules.BY_CODE[code].title for code, summary in listed)
    assert GRAPH_BREAK_RULES[0].code in {code for code, _ in listed}
    # One column of summaries, whatever the length of a code (FX001, GB0170).
    assert len({line.index(summary) for line, (_, summary)
                in zip(completed.stdout.splitlines(), listed, strict=True)}) == 1


def test_all_as_json_is_every_codes_whole_record(tmp_path: Path) -> None:
    completed = fx_lsp("explain", "--all", "--output-format", "json", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    records = json.loads(completed.stdout)
    assert [record["code"] for record in records] == CODES
    for record in records:
        rule = rules.BY_CODE[record["code"]]
        assert record == {"code": rule.code, "summary": rule.title, "severity": rule.severity,
                          "information": rule.information, "mode": rule.mode,
                          "kinds": list(rule.kinds), "url": help_url(rule.code),
                          "explanation": code_page(rule)}
    one = fx_lsp("explain", "fx103", "--format", "json", cwd=tmp_path)
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout) == next(r for r in records if r["code"] == "FX103")
    assert json.loads(one.stdout)["information"] is True


def test_explain_needs_a_code_or_all_and_not_both(tmp_path: Path) -> None:
    for arguments, said in ((("explain",), "give a CODE, or --all"),
                            (("explain", "FX001", "--all"), "not both"),
                            (("explain", "FX999", "--format", "json"), "unknown code")):
        completed = fx_lsp(*arguments, cwd=tmp_path)
        assert (completed.returncode, completed.stdout) == (2, ""), arguments
        assert said in completed.stderr, (arguments, completed.stderr)


def test_a_reader_that_goes_away_stops_the_listing_quietly(tmp_path: Path) -> None:
    """``fx-lsp explain --all --format json | head``: the JSON is larger than a pipe holds,
    so the command is still writing when its reader closes the pipe."""
    with subprocess.Popen([sys.executable, "-m", "fx_lsp", "explain", "--all", "--format",
                           "json"], cwd=tmp_path, env=os.environ.copy(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE) as process:
        assert process.stdout is not None and process.stderr is not None
        assert process.stdout.readline() == b"[\n"
        process.stdout.close()
        stderr = process.stderr.read()
        # 128 + SIGPIPE, as a shell reports a command stopped by its pipe; nothing on stderr.
        assert (process.wait(timeout=60), stderr) == (141, b"")
