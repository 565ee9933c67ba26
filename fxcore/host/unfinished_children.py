"""Verdicts for what a child did not finish: a class or a submodule instance whose child timed
out or crashed gets a failure saying so, with the last lines the worker printed, which are
often the clue (a progress line, a warning, a C++ assertion)."""

from __future__ import annotations

import os

from fxcore.host.child_run import OUTPUT_TAIL_BYTES, ChildAttempt
from fxcore.host.zygote_host import OUTPUT_LINE_CHARACTERS, OUTPUT_TAIL_LINES
from fxcore.model.job_spec import TraceJob
from fxcore.model.not_reached import NOT_REACHED
from fxcore.model.results import CODES, Failure, FileResult, ModuleResult, Range
from fxcore.workspace.discovery import ParsedFile
from fxcore.workspace.paths import job_import_location


def file_failure(job: TraceJob, kind: str, message: str) -> Failure:
    return Failure(code=CODES[kind], kind=kind, message=message,
                   **Range(1, 1, 1, 1).at(os.path.abspath(job.path)))

def end_class(job: TraceJob, parsed: ParsedFile, name: str, attempt: ChildAttempt,
               result: FileResult, done: set[tuple[str, str]]) -> None:
    """Give ``name`` the verdict of a child that ended, in each mode it has none of."""
    missing = [mode for mode in job.config.modes if (name, mode) not in done]
    if not missing:
        return
    # Read once for all its modes: the name may read the file's folder (namespace packages).
    module_name = job_import_location(job, {os.path.abspath(job.path): parsed.text}).module_name
    for mode in missing:
        result.modules.append(ended_module(job, parsed, name, mode, attempt, module_name))
        done.add((name, mode))

def not_reached(job: TraceJob, parsed: ParsedFile, names: list[str], result: FileResult,
                done: set[tuple[str, str]]) -> None:
    """Give the classes of ``names`` still without a verdict in some mode, once the job's
    ``file-timeout`` ran out, a verdict that says so: information (FX103), not an error of
    theirs, with how many of the file's classes were judged."""
    modes = job.config.modes
    left = [name for name in names if any((name, mode) not in done for mode in modes)]
    judged = len({name for name, _mode in done if all((name, mode) in done for mode in modes)})
    path = os.path.abspath(job.path)
    module_name = job_import_location(job, {path: parsed.text}).module_name
    for name in left:
        source = parsed.classes.get(name)
        span = (source.name_span if source else Range(1, 1, 1, 1)).at(path)
        for mode in modes:
            if (name, mode) in done:
                continue
            result.modules.append(ModuleResult(
                **span, class_name=name,
                qualified_name=f"{module_name}:{name}",
                status="not-traced", forward=source.forward if source else None,
                reason=f"{NOT_REACHED} file's `file-timeout` ({job.config.file_timeout:g} s "
                f"for all its classes) ran out before it was judged; {judged} of its classes "
                "were. Raise `file-timeout` under [tool.fx-lsp] to judge them all, or split "
                "the file.",
                mode=mode))
            done.add((name, mode))


def ended_module(job: TraceJob, parsed: ParsedFile, name: str, mode: str,
                  attempt: ChildAttempt, module_name: str) -> ModuleResult:
    path = os.path.abspath(job.path)
    source = parsed.classes.get(name)
    span = (source.name_span if source else Range(1, 1, 1, 1)).at(path)
    kind = attempt.ended_by or "crash"
    advice = (
        "Raise the time-out with `timeout` under [tool.fx-lsp] if the model is just large."
        if kind == "timeout"
        else "Run its constructor and forward in a plain Python process to see why."
    )
    failure = Failure(
        code=CODES[kind], kind=kind,
        message=f"Tracing {name} stopped: the worker "
        f"{attempt.exit_description or 'ended without a verdict for it'}. {advice}"
        f"{last_output(attempt.output)}",
        **span,
    )
    return ModuleResult(
        **span, class_name=name,
        qualified_name=f"{module_name}:{name}",
        status="failed", forward=source.forward if source else None, failures=[failure],
        mode=mode,
    )

def ended_derived(attempt: ChildAttempt, module: ModuleResult) -> ModuleResult:
    kind = attempt.ended_by or "crash"
    arguments = module.arguments
    built_by = f"{arguments.parent} -> {arguments.path}" if arguments else "its parent"
    module.failures = [Failure(
        code=CODES[kind], kind=kind,
        message=f"Tracing {module.class_name} as built by {built_by} stopped: the worker "
        f"{attempt.exit_description}.{last_output(attempt.output)}",
        **module.span(),
    )]
    return module


def output_tail(output: bytearray, cut_before: int) -> str:
    """The last ``OUTPUT_TAIL_BYTES`` of what a job's children printed, behind a line saying
    how much was cut before them when anything was."""
    if not cut_before and len(output) <= OUTPUT_TAIL_BYTES:
        return output.decode("utf-8", errors="replace")
    marker = "… [{:,} earlier bytes of output cut by fx-lsp]\n"
    kept = OUTPUT_TAIL_BYTES - len(marker.format(cut_before + len(output)).encode())
    cut = cut_before + max(0, len(output) - kept)
    return marker.format(cut) + output[-kept:].decode("utf-8", errors="replace")


def last_output(output: bytes, lines: int = OUTPUT_TAIL_LINES) -> str:
    """The last lines the worker printed, as a message's last part ("" when it printed
    nothing): often the clue to a time-out or a crash (a progress line, a warning, a C++
    assertion)."""
    text = output[-OUTPUT_TAIL_BYTES:].decode("utf-8", errors="replace").rstrip()
    if not text:
        return ""
    tail = [line[:OUTPUT_LINE_CHARACTERS] for line in text.splitlines()[-lines:]]
    return "\nLast output of the worker:\n" + "\n".join(f"    {line}" for line in tail)


