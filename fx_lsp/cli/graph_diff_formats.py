"""``fx-lsp diff``'s terminal table (rich) and Markdown (a pull request's comment): one row
per class and capture mode that changed."""

from __future__ import annotations

from typing import TextIO

from fxcore.reporting.graph_diff import ClassChange, ClassState, Problem


def _verdicts(change: ClassChange) -> str:
    def verdict(state: ClassState | None) -> str:
        return "absent" if state is None else state.verdict

    before, after = verdict(change.before), verdict(change.after)
    return before if before == after else f"{before} → {after}"


def _numbers(change: ClassChange, name: str) -> str:
    before = getattr(change.before, name, None) if change.before else None
    after = getattr(change.after, name, None) if change.after else None
    if before == after:
        return "" if before is None else str(before)
    return f"{'-' if before is None else before} → {'-' if after is None else after}"


def _problems(problems: list[Problem], sign: str) -> list[str]:
    return [f"{sign} {problem.code} line {problem.line}: {problem.words}…"
            for problem in problems]


def _operators(change: ClassChange) -> list[str]:
    return [*(f"+ {name}" for name in change.operators_added),
            *(f"- {name}" for name in change.operators_removed)]


def _row(change: ClassChange) -> list[str]:
    path, class_name, mode = change.key
    return [f"{path}::{class_name}" + (" (regression)" if change.regressed else ""), mode,
            _verdicts(change), _numbers(change, "graphs"), _numbers(change, "nodes"),
            _problems(change.new, "+") + _problems(change.fixed, "-"), _operators(change)]


HEADERS = ["Class", "Mode", "Verdict", "Graphs", "Nodes", "Problems (+ new, - fixed)",
           "Operators"]


def table(changes: list[ClassChange], stream: TextIO) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(file=stream, highlight=False, soft_wrap=False,
                      width=None if stream.isatty() else 200)
    if not changes:
        console.print("No class's graphs changed.")
        return
    shown = Table(*HEADERS)
    for change in changes:
        cells = _row(change)
        # Text, not markup: paths and messages are the workspace's text.
        shown.add_row(*(Text("\n".join(cell) if isinstance(cell, list) else cell)
                        for cell in cells))
    console.print(shown)


def _cell(cell: str | list[str]) -> str:
    text = "<br>".join(cell) if isinstance(cell, list) else cell
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(changes: list[ClassChange], base: str, head: str | None) -> str:
    title = f"### fx-lsp diff `{base}` → `{head or 'working tree'}`\n\n"
    if not changes:
        return title + "No class's graphs changed.\n"
    regressions = sum(change.regressed for change in changes)
    # Rows are per class and mode, and a row may change problems or operators without its
    # verdict: the line counts classes, and says what a row is.
    classes = len({change.key[:2] for change in changes})
    lines = [f"{classes} class{'es' * (classes != 1)} changed, {regressions} "
             f"regression{'s' * (regressions != 1)} ({len(changes)} "
             f"row{'s' * (len(changes) != 1)}, one per class and capture mode).", "",
             "| " + " | ".join(HEADERS) + " |", "|" + "---|" * len(HEADERS)]
    lines += ["| " + " | ".join(_cell(cell) for cell in _row(change)) + " |"
              for change in changes]
    return title + "\n".join(lines) + "\n"
