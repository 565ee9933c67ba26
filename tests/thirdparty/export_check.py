"""fx-lsp's export verdicts of some classes of a workspace: ``python export_check.py WORKSPACE
[--only CLASS...]`` prints JSON shaped as ``fx-lsp check --mode export --format json`` prints
it (``modules`` and ``files``, each module as the CLI writes it), for the classes asked for
only (the CLI checks whole files). Over the third-party workspace both gave the same verdicts,
first failures and inputs for all 128 classes (2026-11-24).

Each file runs the worker's own ``Job`` with ``ExportCapture`` in a child forked from this
process (user code never runs in the test process, and each file's imports stay in its child),
and its messages come back as worker messages checked by ``fxcore.protocol.worker_messages``, as the
engine receives them. The engine's sandbox and memory cap are left out: the workspace is the
test suite's own.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import sys
import traceback
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parents[1])]  # this checkout's fx-lsp, as real_shapes.py

from ground_truth import workspace_files  # noqa: E402

from fxcore.model.job_spec import EngineConfig, TraceJob  # noqa: E402
from fxcore.protocol.worker_messages import (  # noqa: E402
    Fatal,
    FileDone,
    Verdict,
    WorkerMessage,
    decode_message,
    encode_message,
)
from fxcore.reporting.json_report import _failure_json, _module_json  # noqa: E402
from fxcore.reporting.shown import Places  # noqa: E402
from fxcore.worker.capture.export.exporting import ExportCapture  # noqa: E402
from fxcore.worker.pipeline.job import Job  # noqa: E402
from fxcore.workspace.config import load_config  # noqa: E402
from fxcore.workspace.discovery import top_level_classes  # noqa: E402

#: The longest wait for the child's next message (an import, or one class's build and
#: capture): generous, as the workspace's own time-out (120 s) on a loaded 2-core machine.
MESSAGE_TIMEOUT = 600.0


def _run_in_child(job: TraceJob, results: Connection) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # this process's stdout is the JSON report
    os.dup2(devnull, 2)

    def send(message: WorkerMessage) -> None:
        results.send_bytes(encode_message(message))

    try:
        Job(job, send, [ExportCapture()]).run()
    except BaseException as error:  # as the worker's run_job: say why, do not just vanish
        send(Fatal("".join(traceback.format_exception(error))))


def check_file(path: Path, workspace: Path, config: EngineConfig,
               only: list[str]) -> tuple[list[Any], list[Any]]:
    """(module verdicts, file errors) of one file, its job run in a forked child."""
    job = TraceJob(path=str(path), workspace_root=str(workspace),
                   config=dataclasses.replace(config, modes=("export",)), only_classes=only)
    context = multiprocessing.get_context("fork")
    receive, send = context.Pipe(duplex=False)
    child = context.Process(target=_run_in_child, args=(job, send))
    child.start()
    send.close()
    modules, errors = [], []
    try:
        while receive.poll(MESSAGE_TIMEOUT):
            match decode_message(receive.recv_bytes(), job):
                case Verdict(module):
                    modules.append(module)
                case FileDone(result):
                    errors = result.errors
                case Fatal(traceback_text):
                    raise RuntimeError(f"{path.name}: the job failed:\n{traceback_text}")
    except EOFError:
        pass  # the child is done
    child.join(5)
    if child.is_alive():
        child.kill()
        raise RuntimeError(f"{path.name}: no message for {MESSAGE_TIMEOUT:.0f} s")
    return modules, errors


def check(workspace: Path, files: list[Path], only: list[str]) -> dict[str, Any]:
    config, problems = load_config(str(workspace))  # the workspace's [tool.fx-lsp], as the CLI
    if problems:
        raise ValueError(f"{workspace}: {problems}")
    report: dict[str, Any] = {"modules": [], "files": []}
    for path in files:
        if only and not set(only) & set(top_level_classes(path.read_text(encoding="utf-8"))):
            continue  # none of the classes asked for: not even imported
        modules, errors = check_file(path, workspace, config, only)
        # No diagnostics in this report: each failure keeps its message (none "reported").
        places = Places()  # the paths as they are: this report is read by the comparison only
        report["modules"] += [_module_json(module, set(), places) for module in modules]
        report["files"].append({"path": str(path), "errors": [
            _failure_json(error, set(), places) for error in errors]})
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace", type=Path)
    parser.add_argument("--only", nargs="*", default=[], help="class names (default: all)")
    options = parser.parse_args()
    workspace = options.workspace.resolve()
    json.dump(check(workspace, workspace_files(workspace), options.only), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
