"""``fx-lsp check --output-format json``: the report as JSON (docs/cli.md, "JSON output"). A
failure that a diagnostic reports gives its text there only: its entry under ``modules`` or
``files`` says ``"reported": true`` (``message_of`` reads it back). The report is made by
``fxcore.reporting.json_report``; this module reads it back."""

from __future__ import annotations

import json
from typing import IO, Any


def message_of(report: dict[str, Any], failure: dict[str, Any]) -> str:
    """The message of a failure of a JSON report's ``modules`` or ``files``: its own, or the
    diagnostic's at its place with its code (``"reported": true``)."""
    if "message" in failure:
        return failure["message"]
    return next(problem["message"] for problem in report["diagnostics"]
                if (problem["path"], problem.get("cell"), problem["line"], problem["column"],
                    problem["code"]) == (failure["path"], failure.get("cell"), failure["line"],
                                         failure["column"], failure["code"]))


def with_messages(report: Any) -> Any:
    """``report`` (a parsed JSON report) with every ``"reported": true`` failure given its
    diagnostic's message again, for a reader that wants each class's failures whole; any
    other JSON value as it is."""
    if not isinstance(report, dict) or "diagnostics" not in report:
        return report
    for entry in [*report.get("modules", []), *report.get("files", [])]:
        for key in ("failures", "hints", "shape_errors", "errors"):
            for failure in entry.get(key, []):
                if failure.get("reported"):
                    failure["message"] = message_of(report, failure)
    return report


def parse_report(text: str | bytes) -> Any:
    """JSON text, a report's with its messages whole (``with_messages``)."""
    return with_messages(json.loads(text))


def parse_report_file(stream: IO[str]) -> Any:
    """``parse_report`` of an open file."""
    return with_messages(json.load(stream))
