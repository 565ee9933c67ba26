"""``fx-lsp check --shard I/N``: one scan split over N machines, this machine's part chosen.

Every shard lists the same files and splits them the same way: largest cost first, each to the
least loaded shard, the cost being the seconds the file took when the result cache knows it
(else the median of the known ones). A shard's report carries the partition's fingerprint
(``Shard``), by which ``fx-lsp merge`` refuses shards that disagree."""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from fxcore.checking.preparation import prepare
from fxcore.host.cache import ResultCache
from fxcore.model.job_spec import TraceJob
from fxcore.workspace.call_sites import CallSiteIndexes

#: More shards than this are a mistake (and a split into 10**9 shards would need gigabytes).
MAX_SHARDS = 10_000


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
    return (index, count) if 1 <= index <= count <= MAX_SHARDS else None


def _relative(path: str) -> str:
    return os.path.relpath(path).replace(os.sep, "/")


def split(costs: dict[str, float], count: int) -> list[list[str]]:
    """``count`` lists of paths with costs as equal as the greedy split makes them; between
    equally loaded shards the one with fewer files takes the next (files that cost nothing,
    fast traces rounded to 0.0 s, are shared out rather than all given to one shard)."""
    loads = [0.0] * count
    parts: list[list[str]] = [[] for _ in range(count)]
    for path, cost in sorted(costs.items(), key=lambda item: (-item[1], item[0])):
        lightest = min(range(count), key=lambda index: (loads[index], len(parts[index]), index))
        loads[lightest] += cost
        parts[lightest].append(path)
    return [sorted(part) for part in parts]


def cached_seconds(jobs: list[TraceJob], cache: ResultCache) -> dict[str, float | None]:
    """Each job's file (relative) -> how long its cached trace took, if the cache has one. The
    cache keys a result on the job as the pipeline prepared it (its classes' call sites and
    builders added), so each job is looked up prepared the same way."""
    call_sites = CallSiteIndexes()
    return {_relative(job.path): cache.seconds(prepare(job, call_sites).job) for job in jobs}


def select(jobs: list[TraceJob], index: int, count: int,
           cache: ResultCache | None = None) -> tuple[list[TraceJob], Shard]:
    """The jobs of shard ``index`` (1-based) of ``count``."""
    known = cached_seconds(jobs, cache or ResultCache())
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
