"""Result tables: printed by a benchmark, and written by the suite runner into
benchmarks/README.md between the markers ``<!-- table: NAME -->`` and ``<!-- /table -->``.

A benchmark calls ``emit``; under the runner (which sets ``TABLES_ENVIRONMENT`` to a file)
each emitted table is also recorded there, and the runner replaces the README block of that
name with the table under a provenance line. Text outside the blocks is never touched.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence

from benchmarks.timing import duration_cells

#: The file, one JSON object a line, where a benchmark run by the suite runner records its
#: tables; unset when a benchmark runs on its own.
TABLES_ENVIRONMENT = "FX_LSP_BENCHMARK_TABLES"


def markdown(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A markdown table; cells are written with ``str``, a ``|`` in one escaped (an error
    message may hold one)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell).replace("|", "\\|") for cell in row) + " |"
              for row in rows]
    return "\n".join(lines)


def durations(rows: Sequence[tuple[str, list[float]]], first: str = "",
              figures: Sequence[tuple[str, str]] = ()) -> str:
    """A table of durations, one row per label: n, median, p95, min and max; then a row per
    figure derived from them (a ratio), its value under the median."""
    return markdown([first, "n", "median", "p95", "min", "max"],
                    [[label, len(values), *duration_cells(values)] for label, values in rows]
                    + [[label, "", value, "", "", ""] for label, value in figures])


def met(target: str, condition: bool) -> str:
    """A target and whether this run met it, as a table cell."""
    return f"{target}: {'met' if condition else 'missed'}"


def emit(name: str, table: str) -> None:
    """Print ``table`` and, under the suite runner, record it for the README block ``name``."""
    print(table)
    record(name, table)


def record(name: str, table: str) -> None:
    """Under the suite runner, record ``table`` for the README block ``name`` (for a table
    printed a row at a time as its rows are measured)."""
    recording = os.environ.get(TABLES_ENVIRONMENT)
    if recording:
        with open(recording, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"name": name, "table": table}) + "\n")


def recorded(path: str) -> dict[str, str]:
    """The tables a run recorded, by name; the last of one name wins."""
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as handle:
        entries = [json.loads(line) for line in handle if line.strip()]
    return {entry["name"]: entry["table"] for entry in entries}


def _block(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- table: {re.escape(name)} -->\n)(.*?)(<!-- /table -->)", re.DOTALL)


def replace_block(text: str, name: str, body: str) -> str | None:
    """``text`` with the block ``name``'s content replaced by ``body``; None when ``text`` has
    no such block (where a table belongs in the README is a writer's choice, not the run's)."""
    replaced, count = _block(name).subn(
        lambda match: match.group(1) + body.rstrip("\n") + "\n" + match.group(3), text)
    return replaced if count else None


def write_tables(readme: str, tables: dict[str, str], provenance: str) -> list[str]:
    """Writes each table with ``provenance`` above it into its README block; returns the names
    that have no block there."""
    with open(readme, encoding="utf-8") as handle:
        text = handle.read()
    missing = []
    for name, table in tables.items():
        replaced = replace_block(text, name, f"{provenance}\n\n{table}")
        if replaced is None:
            missing.append(name)
        else:
            text = replaced
    with open(readme, "w", encoding="utf-8") as handle:
        handle.write(text)
    return missing
