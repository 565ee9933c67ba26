"""``fx-lsp merge``: the reports of a scan split over N machines (``fx-lsp check --shard I/N``,
``fxcore.api.shards``) made one.

A shard's report carries the partition's fingerprint, and ``merge`` refuses shards that
disagree (caches restored differently give different costs) or that are missing, so a merged
report is never silently short of files. Reports come from other machines: each is checked
against a JSON schema of every part ``merge`` reads before it is used.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from typing import Any

from fxcore.api.shards import MAX_SHARDS


class MergeError(Exception):
    """The reports cannot be merged; the message says why."""


# -- merge ---------------------------------------------------------------------------------

#: Characters of a schema error quoted in the message (it may quote a whole value).
_QUOTED_ERROR_CHARACTERS = 160

_INTEGER = {"type": "integer"}
_TEXT = {"type": "string"}
_SHARD_NUMBER = {"type": "integer", "minimum": 1, "maximum": MAX_SHARDS}
_SHARD = {"type": "object", "required": ["index", "count", "partition"],
          "properties": {"index": _SHARD_NUMBER, "count": _SHARD_NUMBER, "partition": _TEXT}}


def _objects(**properties: Any) -> dict[str, Any]:
    """An array of objects that have these properties, of these types."""
    return {"type": "array", "items": {"type": "object", "required": list(properties),
                                       "properties": properties}}


#: What ``merge`` reads of a ``--output-format json`` shard report (the rest is copied as it
#: is): shards come from other machines, and a wrong type must be a message, not a traceback.
JSON_SHARD_REPORT = {
    "type": "object",
    "required": ["version", "shard", "diagnostics", "modules", "files", "summary",
                 "config_problems"],
    "properties": {
        "version": _TEXT,
        "shard": _SHARD,
        "diagnostics": _objects(path=_TEXT, line=_INTEGER, column=_INTEGER, code=_TEXT,
                                severity={"enum": ["error", "warning", "hint"]}),
        "modules": _objects(path=_TEXT, line=_INTEGER, column=_INTEGER),
        "files": _objects(path=_TEXT),
        "summary": {"type": "object", "additionalProperties": _INTEGER, "properties": {
            # Each capture mode's counts.
            "modes": {"type": "object", "additionalProperties": {
                "type": "object", "additionalProperties": _INTEGER}},
        }},
        "config_problems": {"type": "array", "items": _TEXT},
    },
}
#: Likewise for ``--output-format sarif``: its one run, the shard and each result's place.
SARIF_SHARD_REPORT = {
    "type": "object",
    "required": ["runs"],
    "properties": {"runs": {"type": "array", "minItems": 1, "maxItems": 1, "items": {
        "type": "object",
        "required": ["results", "properties"],
        "properties": {
            "properties": {"type": "object", "required": ["fx-lsp"], "properties": {
                "fx-lsp": {"type": "object", "required": ["shard"],
                           "properties": {"shard": _SHARD}}}},
            "results": _objects(
                ruleId=_TEXT,
                level={"enum": ["error", "warning", "note", "none"]},
                locations={"type": "array", "minItems": 1, "items": {
                    "type": "object", "required": ["physicalLocation"], "properties": {
                        "physicalLocation": {
                            # No region for a notebook's: its cell is in the message.
                            "type": "object", "required": ["artifactLocation"],
                            "properties": {
                                "artifactLocation": {"type": "object", "required": ["uri"],
                                                     "properties": {"uri": _TEXT}},
                                "region": {"type": "object",
                                           "required": ["startLine", "startColumn"],
                                           "properties": {"startLine": _INTEGER,
                                                          "startColumn": _INTEGER}}}}}}}),
        },
    }}},
}


def _load(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError) as error:
        raise MergeError(f"cannot read {path}: {error}") from error
    except (RecursionError, MemoryError) as error:
        raise MergeError(f"cannot read {path}: its JSON is nested too deeply or too large "
                         "to read") from error


def _kind(path: str, report: Any) -> str:
    if not isinstance(report, dict):
        raise MergeError(f"{path} is not a report of fx-lsp check: its JSON is not an object")
    return "sarif" if "runs" in report else "json"


def _validate(path: str, report: dict[str, Any], kind: str) -> dict[str, Any]:
    """``report``'s shard, once the report has every part merge reads, of the right type."""
    # jsonschema takes a tenth of a second to import: only merge needs it, not check or serve.
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import best_match

    schema = SARIF_SHARD_REPORT if kind == "sarif" else JSON_SHARD_REPORT
    error = best_match(Draft202012Validator(schema).iter_errors(report))
    if error is not None:
        what = error.message
        if len(what) > _QUOTED_ERROR_CHARACTERS:
            what = what[:_QUOTED_ERROR_CHARACTERS] + "..."
        raise MergeError(f"{path} is not the {kind} report of a shard (fx-lsp check --shard "
                         f"I/N --output-format {kind}): at {error.json_path}: {what}")
    shard: dict[str, Any] = (report["runs"][0]["properties"]["fx-lsp"]["shard"]
                             if kind == "sarif" else report["shard"])
    return shard


def _check_shards(shards: list[dict[str, Any]]) -> None:
    counts = {shard["count"] for shard in shards}
    partitions = {shard["partition"] for shard in shards}
    if len(counts) != 1 or len(partitions) != 1:
        raise MergeError("the shards were split differently (their file lists or result "
                         "caches differ): give every shard the same files and the same cache")
    count = counts.pop()
    indices = sorted(shard["index"] for shard in shards)
    if indices != list(range(1, len(indices) + 1)) or len(indices) != count:
        raise MergeError(f"expected shards 1 to {count} once each, got {indices}")


def _sum_counts(counts: list[dict[str, Any]]) -> dict[str, Any]:
    """The shards' counts added up, key by key; a nested table (a mode's counts) likewise.
    Shards split the files, and a class lives in one file, so every count adds up."""
    total: dict[str, Any] = {}
    for count in counts:
        for key, value in count.items():
            if isinstance(value, dict):
                total[key] = _sum_counts([total.get(key, {}), value])
            else:
                total[key] = total.get(key, 0) + value
    return total


def _merge_json(reports: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    merged: dict[str, Any] = {"version": reports[0]["version"]}
    # A notebook's places have a ``cell``, and lines in it.
    for key, sort_key in (("diagnostics", ("path", "cell", "line", "column", "code")),
                          ("modules", ("path", "cell", "line", "column")),
                          ("files", ("path",))):
        items = [item for report in reports for item in report[key]]
        merged[key] = sorted(items, key=lambda item: tuple(item.get(k, 0) for k in sort_key))
    merged["summary"] = _sum_counts([report["summary"] for report in reports])
    merged["config_problems"] = list(dict.fromkeys(
        problem for report in reports for problem in report["config_problems"]))
    failed = any(item["severity"] != "hint" for item in merged["diagnostics"])
    return merged, failed


def _merge_sarif(reports: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    merged = copy.deepcopy(reports[0])
    run = merged["runs"][0]
    run.pop("properties", None)

    def position(result: dict[str, Any]) -> tuple[Any, ...]:
        location = result["locations"][0]["physicalLocation"]
        # A notebook's result has its cell place in its properties instead of a region.
        region = location.get("region") or result.get("properties", {}).get("fx-lsp", {})
        return (location["artifactLocation"]["uri"], region.get("cell", 0),
                region.get("startLine", 0), region.get("startColumn", 0), result["ruleId"])

    run["results"] = sorted((result for report in reports for result in
                             report["runs"][0]["results"]), key=position)
    failed = any(result["level"] != "note" for result in run["results"])
    return merged, failed


def merge(paths: Sequence[str], output_format: str | None = None) -> tuple[dict[str, Any], bool]:
    """The merged report and whether it reports any problem that is not a hint. Raises
    ``MergeError`` for reports that cannot be read, are not shard reports of fx-lsp check
    (every part merge reads is checked against ``JSON_SHARD_REPORT`` or
    ``SARIF_SHARD_REPORT``) or do not fit together."""
    loaded = [(path, _load(path)) for path in paths]
    kinds = {_kind(path, report) for path, report in loaded}
    if len(kinds) != 1 or (output_format and output_format not in kinds):
        raise MergeError("the reports must all be json, or all sarif"
                         + (f" (--output-format {output_format})" if output_format else ""))
    kind = kinds.pop()
    _check_shards([_validate(path, report, kind) for path, report in loaded])
    reports = [report for _, report in loaded]
    try:
        return _merge_sarif(reports) if kind == "sarif" else _merge_json(reports)
    except RecursionError as error:
        raise MergeError("the reports are nested too deeply to copy") from error


def dumps(report: dict[str, Any]) -> str:
    """The merged report as the file's text."""
    try:
        return json.dumps(report, indent=2) + "\n"
    except RecursionError as error:
        # json.load reads deeper than the indenting encoder writes.
        raise MergeError("the merged report is nested too deeply to write") from error
