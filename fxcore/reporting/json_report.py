"""A run's report as JSON data: what ``fx-lsp check --output-format json`` prints and ``fx-lsp
mcp``'s ``check`` returns (docs/cli.md, "JSON output"). A failure that a diagnostic reports
gives its text there only: its entry under ``modules`` or ``files`` says ``"reported": true``
(``fx_lsp.cli.output_formats.json_report.message_of`` reads it back)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from fxcore.model.instance_trust import judged_on
from fxcore.model.results import Arguments, Failure, Frame, Hint, ModuleResult, Span
from fxcore.model.version import VERSION
from fxcore.reporting.report import line_shapes
from fxcore.reporting.shown import Places, ShownProblem, ShownReport


def _span_json(span: Span, places: Places) -> dict[str, Any]:
    """The span's place; in a notebook, in its cell: ``cell`` (1-based, all cells counted, as
    ruff's JSON has it) and the line and columns in that cell."""
    file = places.of(span.path)
    data: dict[str, Any] = {**span.span(), "path": file.path}
    start = file.at(span.line, span.column).cell
    if start is not None:
        end = file.at(span.end_line, span.end_column).cell
        data.update(cell=start.cell_number, line=start.line, column=start.column)
        if end is not None and end.cell == start.cell:
            data.update(end_line=end.line, end_column=end.column)
        else:  # a span ending past its cell: it ends at its start, in the cell
            data.update(end_line=start.line, end_column=start.column)
    return data


def _line_json(path: str, line: int, places: Places) -> dict[str, Any]:
    """``path`` and ``line``; in a notebook, the line in its cell and the ``cell``."""
    shown = places.at(path, line, 1)
    if shown.cell is None:
        return {"path": shown.path, "line": line}
    return {"path": shown.path, "cell": shown.cell.cell_number, "line": shown.cell.line}


def _frame_json(frame: Frame, places: Places) -> dict[str, Any]:
    return {**_span_json(frame, places), "function": frame.function}


#: (path, line, column, code, message) of each reported problem: a failure of ``modules`` or
#: ``files`` at such a place says ``"reported": true`` instead of repeating the message, so
#: one failure's text appears once in the report, in its diagnostic (``message_of`` finds
#: it).
Reported = set[tuple[str, int, int, str, str]]


def _reported(problems: list[ShownProblem]) -> Reported:
    """The problems a failure may point to by place and code alone: where diagnostics at one
    place with one code say different things (two classes' messages about one line of a
    shared helper), a reader could not tell which is the failure's, so those failures keep
    their message."""
    messages: dict[tuple[str, int, int, str], set[str]] = defaultdict(set)
    for shown in problems:
        problem = shown.problem
        messages[problem.path, problem.line, problem.column, problem.code].add(problem.message)
    return {(path, line, column, code, *said) for (path, line, column, code), said
            in messages.items() if len(said) == 1}


def _failure_json(failure: Failure | Hint, reported: Reported,
                  places: Places) -> dict[str, Any]:
    data: dict[str, Any] = {"code": failure.code, "kind": failure.kind}
    if (failure.path, failure.line, failure.column, failure.code, failure.message) in reported:
        data["reported"] = True
    else:
        data["message"] = failure.message
    data.update(_span_json(failure, places))
    if isinstance(failure, Failure):
        data["frames"] = [_frame_json(frame, places) for frame in failure.frames]
        data["possible_consequence"] = failure.possible_consequence
        if failure.module_mode is not None:
            data["module_mode"] = failure.module_mode
    else:
        data["member"] = failure.member
    return data


def _arguments_json(arguments: Arguments | None) -> dict[str, Any] | None:
    if arguments is None:
        return None
    data: dict[str, Any] = {"from": arguments.origin, "args": arguments.args,
                            "kwargs": arguments.kwargs}
    for key, value in (("parent", arguments.parent), ("path", arguments.path),
                       ("parent_from", arguments.parent_origin), ("builder", arguments.builder),
                       ("site", arguments.site)):
        if value is not None:
            data[key] = value
    return data


def _module_json(module: ModuleResult, reported: Reported,
                 places: Places) -> dict[str, Any]:
    return {
        **_span_json(module, places),
        "class": module.class_name,
        "qualified_name": module.qualified_name,
        "status": module.status,
        "reason": module.reason,
        "node_count": module.node_count,
        "instantiated_on": module.instantiated_on,
        "arguments": _arguments_json(module.arguments),
        "weights": module.weights,
        "trace_seconds": round(module.trace_seconds, 4),
        # The part of trace_seconds that was compile mode's loop of calls.
        "loop_seconds": round(module.loop_seconds, 4),
        "failures": [_failure_json(failure, reported, places) for failure in module.failures],
        "hints": [_failure_json(hint, reported, places) for hint in module.hints],
        "inputs": {"from": module.inputs.origin, "tensors": module.inputs.tensors,
                   "note": module.inputs.note,
                   **({"values": module.inputs.values} if module.inputs.values else {}),
                   **({"found_by": module.inputs.found_by} if module.inputs.found_by else {})}
        if module.inputs else None,
        # Given by the user, taken from the code, or guessed: how far an error stands.
        "judged_on": judged_on(module),
        "output_shape": module.output_shape,
        "shapes_note": module.shapes_note,
        "shape_errors": [_failure_json(failure, reported, places)
                         for failure in module.shape_errors],
        "shapes": [{**_line_json(path, line, places), "shape": shape}
                   for (path, line), shape in line_shapes(module).items()],
        "nodes": _nodes_json(module, places),
        "mode": module.mode,
        "graph_count": module.graph_count,
        "module_modes": module.module_modes,
        **({"graph_counts": module.graph_counts} if module.graph_counts else {}),
        "capture_notes": module.capture_notes,
        **({"onnx_graph": _onnx_graph_json(module)} if module.onnx_node_count is not None
           else {}),
    }


def _onnx_graph_json(module: ModuleResult) -> dict[str, Any]:
    """The onnx mode's translated ONNX model: its node count and its first nodes."""
    return {"node_count": module.onnx_node_count,
            "truncated": len(module.onnx_graph) < (module.onnx_node_count or 0),
            "nodes": [{"op_type": node.op_type, "name": node.name, "domain": node.domain,
                       "inputs": node.inputs, "outputs": node.outputs}
                      for node in module.onnx_graph]}


def _nodes_json(module: ModuleResult, places: Places) -> list[dict[str, Any]]:
    """Each graph node made by workspace code once, at the first line that made it."""
    seen: dict[str, dict[str, Any]] = {}
    for (path, line), nodes in module.line_nodes.items():
        for node in nodes:
            seen.setdefault(node.name, {"name": node.name, "op": node.op, "target": node.target,
                                        "shape": node.shape,
                                        **_line_json(path, line, places)})
    return list(seen.values())


def _problem_json(shown: ShownProblem, places: Places) -> dict[str, Any]:
    problem = shown.problem
    return {"code": problem.code, "message": problem.message, "severity": problem.severity,
            **_span_json(problem, places), "classes": problem.classes, "mode": problem.mode}


def json_report(report: ShownReport, shard: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report's data; ``shard``: the entry of the shard it is (``fx-lsp check --shard``)."""
    results, summary, places = report.results, report.summary, report.places
    reported = _reported(report.problems)
    return {
        "version": VERSION,
        **({"shard": shard} if shard else {}),
        "diagnostics": [_problem_json(shown, places) for shown in report.problems],
        "modules": [_module_json(module, reported, places) for result in results
                    for module in result.modules],
        "files": [
            {
                "path": places.of(result.path).path,
                "errors": [_failure_json(error, reported, places) for error in result.errors],
                "imported_files": [places.of(path).path for path in result.imported_files],
                "seconds": round(result.seconds, 4),
                # The part of it that was compile mode's loop of calls, submodules' included.
                "loop_seconds": round(result.loop_seconds, 4),
            }
            for result in results
        ],
        "summary": {
            "files": summary.files,
            "traced": summary.traced,
            "traceable": summary.traceable,
            "failed": summary.failed,
            "not_traced": summary.not_traced,
            "not_built": summary.not_built,
            "instance_does_not_fit": summary.not_fitting,
            "on_real_instances": summary.real,
            "on_guessed_arguments": summary.guessed,
            "file_errors": summary.file_errors,
            "cached": summary.cached,
            "suppressed": report.suppressed,
            "baselined": report.baselined,
            "classes": len(summary.classes),
            "modes": {mode: {"traced": counts.traced, "traceable": counts.traceable,
                             "failed": counts.failed, "not_traced": counts.not_traced,
                             "not_built": counts.not_built,
                             "instance_does_not_fit": counts.not_fitting,
                             "with_graph_breaks": counts.broken,
                             "on_real_instances": counts.real,
                             "on_guessed_arguments": counts.guessed}
                      for mode, counts in summary.by_mode.items()},
        },
        "config_problems": summary.config_problems,
    }
