"""``fx-lsp check --shard I/N`` and ``fx-lsp merge``: one scan split over N machines.

Every shard lists the same files and splits them the same way: largest cost first, each to the
least loaded shard, the cost being the seconds the file took when the result cache knows it
(else the median of the known ones). A shard's report carries the partition's fingerprint, and
``merge`` refuses shards that disagree (caches restored differently give different costs) or
that are missing, so a merged report is never silently short of files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, TextIO

from fxcore.cache import ResultCache
from fxcore.results import TraceJob


class MergeError(Exception):
    """The reports cannot be merged; the message says why."""


@dataclass(frozen=True)
class Shard:
    index: int
    count: int
    #: SHA-256 of the partition (all files, relative, and the costs they were split by).
    partition: str


def parse_shard(text: str) -> tuple[int, int] | None:
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    if match is None:
        return None
    index, count = int(match.group(1)), int(match.group(2))
    return (index, count) if 1 <= index <= count else None


def _relative(path: str) -> str:
    return os.path.relpath(path).replace(os.sep, "/")


def split(costs: dict[str, float], count: int) -> list[list[str]]:
    """``count`` lists of paths with costs as equal as the greedy split makes them."""
    loads = [0.0] * count
    parts: list[list[str]] = [[] for _ in range(count)]
    for path, cost in sorted(costs.items(), key=lambda item: (-item[1], item[0])):
        lightest = min(range(count), key=lambda index: (loads[index], index))
        loads[lightest] += cost
        parts[lightest].append(path)
    return [sorted(part) for part in parts]


def select(jobs: list[TraceJob], index: int, count: int,
           cache: ResultCache | None = None) -> tuple[list[TraceJob], Shard]:
    """The jobs of shard ``index`` (1-based) of ``count``."""
    cache = cache or ResultCache()
    known = {_relative(job.path): cache.seconds(job) for job in jobs}
    measured = [cost for cost in known.values() if cost is not None]
    default = statistics.median(measured) if measured else 1.0
    costs = {path: round(cost if cost is not None else default, 1) for path, cost in known.items()}
    partition = hashlib.sha256(
        json.dumps([count, sorted(costs.items())]).encode()).hexdigest()
    chosen = set(split(costs, count)[index - 1])
    return ([job for job in jobs if _relative(job.path) in chosen],
            Shard(index, count, partition))


def shard_json(shard: Shard) -> dict[str, Any]:
    return asdict(shard)


# -- merge ---------------------------------------------------------------------------------


def _shard_of(report: dict[str, Any], name: str) -> dict[str, Any]:
    shard = report.get("shard")
    if shard is None and "runs" in report:
        runs = report.get("runs") or [{}]
        shard = (runs[0].get("properties") or {}).get("fx-lsp", {}).get("shard")
    if not isinstance(shard, dict):
        raise MergeError(f"{name} is not the report of a shard (fx-lsp check --shard I/N "
                         "--output-format json or sarif)")
    return shard


def _load(paths: Sequence[str]) -> list[tuple[str, dict[str, Any]]]:
    loaded = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as handle:
                loaded.append((path, json.load(handle)))
        except (OSError, ValueError) as error:
            raise MergeError(f"cannot read {path}: {error}") from error
    return loaded


def _check_shards(reports: list[tuple[str, dict[str, Any]]]) -> None:
    shards = [(name, _shard_of(report, name)) for name, report in reports]
    counts = {shard.get("count") for _, shard in shards}
    partitions = {shard.get("partition") for _, shard in shards}
    if len(counts) != 1 or len(partitions) != 1:
        raise MergeError("the shards were split differently (their file lists or result "
                         "caches differ): give every shard the same files and the same cache")
    count = counts.pop()
    indices = sorted(shard.get("index") for _, shard in shards)
    if indices != list(range(1, int(count) + 1)):
        raise MergeError(f"expected shards 1 to {count} once each, got {indices}")


def _merge_json(reports: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    merged: dict[str, Any] = {"version": reports[0].get("version")}
    for key, sort_key in (("diagnostics", ("path", "line", "column", "code")),
                          ("modules", ("path", "line", "column")),
                          ("files", ("path",))):
        items = [item for report in reports for item in report.get(key, [])]
        merged[key] = sorted(items, key=lambda item: tuple(item.get(k) for k in sort_key))
    summary: dict[str, int] = {}
    for report in reports:
        for key, value in report.get("summary", {}).items():
            summary[key] = summary.get(key, 0) + value
    merged["summary"] = summary
    merged["config_problems"] = list(dict.fromkeys(
        problem for report in reports for problem in report.get("config_problems", [])))
    failed = any(item.get("severity") != "hint" for item in merged["diagnostics"])
    return merged, failed


def _merge_sarif(reports: list[dict[str, Any]]) -> tuple[dict[str, Any], bool]:
    merged = json.loads(json.dumps(reports[0]))
    run = merged["runs"][0]
    run.pop("properties", None)

    def position(result: dict[str, Any]) -> tuple[Any, ...]:
        location = result["locations"][0]["physicalLocation"]
        region = location["region"]
        return (location["artifactLocation"]["uri"], region["startLine"],
                region["startColumn"], result["ruleId"])

    run["results"] = sorted((result for report in reports for result in
                             report["runs"][0]["results"]), key=position)
    failed = any(result.get("level") != "note" for result in run["results"])
    return merged, failed


def merge(paths: Sequence[str], output_format: str | None = None) -> tuple[dict[str, Any], bool]:
    """The merged report and whether it reports any problem that is not a hint."""
    loaded = _load(paths)
    kinds = {"sarif" if "runs" in report else "json" for _, report in loaded}
    if len(kinds) != 1 or (output_format and output_format not in kinds):
        raise MergeError("the reports must all be json, or all sarif"
                         + (f" (--output-format {output_format})" if output_format else ""))
    _check_shards(loaded)
    reports = [report for _, report in loaded]
    return _merge_sarif(reports) if kinds == {"sarif"} else _merge_json(reports)


def write(report: dict[str, Any], stream: TextIO) -> None:
    json.dump(report, stream, indent=2)
    stream.write("\n")
