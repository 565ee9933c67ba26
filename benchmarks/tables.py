"""Result tables: printed by a benchmark, and written by the suite runner into the benchmark
pages of the documentation (docs/benchmarks/*.md) between the markers ``<!-- table: NAME -->``
and ``<!-- /table -->``.

A benchmark calls ``emit``; under the runner (which sets ``TABLES_ENVIRONMENT`` to a file)
each emitted table is also recorded there, and the runner replaces the block of that name, in
whichever page holds it, with the table under a provenance line. Text outside the blocks is
never touched. A block's name is its address: the page that explains a table holds its block,
and a table moves to another page by moving its block.
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
    """Print ``table`` and, under the suite runner, record it for the block ``name``."""
    print(table)
    record(name, table)


def record(name: str, table: str) -> None:
    """Under the suite runner, record ``table`` for the block ``name`` (for a table
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
    no such block (which page a table belongs in is a writer's choice, not the run's)."""
    replaced, count = _block(name).subn(
        lambda match: match.group(1) + body.rstrip("\n") + "\n" + match.group(3), text)
    return replaced if count else None


def pages(folder: str) -> list[str]:
    """The markdown pages of ``folder``, by name."""
    return sorted(os.path.join(folder, name) for name in os.listdir(folder)
                  if name.endswith(".md"))


def write_tables(folder: str, tables: dict[str, str],
                 provenance: str) -> tuple[dict[str, list[str]], list[str]]:
    """Writes each table with ``provenance`` above it into its block, in whichever page of
    ``folder`` holds that block; returns the names written, by page, and those no page holds."""
    written: dict[str, list[str]] = {}
    for page in pages(folder):
        with open(page, encoding="utf-8") as handle:
            text = handle.read()
        names = []
        for name, table in tables.items():
            replaced = replace_block(text, name, f"{provenance}\n\n{table}")
            if replaced is not None:
                text = replaced
                names.append(name)
        if names:
            with open(page, "w", encoding="utf-8") as handle:
                handle.write(text)
            written[page] = names
    placed = {name for names in written.values() for name in names}
    return written, [name for name in tables if name not in placed]
