"""``--output-format sarif``: SARIF 2.1.0, for code-scanning services."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import quote

from fx_lsp.cli.output_formats.common import heading
from fxcore.api.shards import Shard, shard_json
from fxcore.model.version import VERSION
from fxcore.reporting.shown import ShownReport
from fxcore.rules.compile import GRAPH_BREAK_RULES
from fxcore.rules.documentation import docs_url, documentation, help_url

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

_SARIF_LEVELS = {"error": "error", "warning": "warning", "hint": "note"}


def _uri(shown_path: str) -> str:
    # A file name that is not UTF-8 holds its bytes as lone surrogates: percent-encode them.
    return quote(shown_path.replace(os.sep, "/"), errors="surrogateescape")


def sarif_rules(occurring: set[str]) -> list[dict[str, Any]]:
    """A rule per code of this project, and per graph break (PyTorch's ~500 GBnnnn) only
    when it occurs, as ruff lists only the rules it reports."""
    graph_breaks = {rule.code for rule in GRAPH_BREAK_RULES}
    return [
        {
            "id": doc.code,
            "shortDescription": {"text": doc.title},
            "fullDescription": {"text": doc.text},
            "help": {"text": doc.text, "markdown": doc.text},
            "helpUri": help_url(doc.code),
        }
        for doc in documentation().values()
        if doc.code not in graph_breaks or doc.code in occurring
    ]


def sarif(report: ShownReport, shard: Shard | None = None) -> dict[str, Any]:
    """SARIF 2.1.0: one run, a rule per code, a result per problem."""
    rules = sarif_rules({shown.problem.code for shown in report.problems})
    index = {rule["id"]: position for position, rule in enumerate(rules)}
    results = []
    for shown in report.problems:
        problem, place = shown.problem, shown.place.cell
        physical: dict[str, Any] = {
            "artifactLocation": {"uri": _uri(shown.place.path)},
            "region": {"startLine": problem.line, "startColumn": problem.column,
                       "endLine": problem.end_line, "endColumn": problem.end_column},
        }
        text = heading(problem)
        result: dict[str, Any] = {
            "ruleId": problem.code,
            "level": _SARIF_LEVELS[problem.severity],
            "message": {"text": text},
            "locations": [{"physicalLocation": physical}],
        }
        if place is not None:
            # A region would count the file's JSON lines: the notebook is the location, the
            # message names the cell, and the properties hold its place there.
            del physical["region"]
            result["message"]["text"] = f"{shown.place.cell_words}: {text}"
            result["properties"] = {"fx-lsp": {"cell": place.cell_number,
                                               "startLine": place.line,
                                               "startColumn": place.column}}
        if problem.code in index:
            result["ruleIndex"] = index[problem.code]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {"name": "fx-lsp", "version": VERSION,
                                "informationUri": docs_url(), "rules": rules}},
            "columnKind": "unicodeCodePoints",
            "results": results,
            **({"properties": {"fx-lsp": {"shard": shard_json(shard)}}} if shard else {}),
        }],
    }
