"""What a test process that died took with it: xdist says only "node down: Not properly
terminated" and the test it was running. CI's fast tier lost a process that way once (stop 56,
in test_export_capture.py, never seen again in a run here), with no Python fault dump in its
log, so the cause could not be told. These hooks say how the process ended (the signal or
status, read from its ``Popen``), which files it had run, and, where it ended itself through
``os._exit``, from where."""

from __future__ import annotations

import faulthandler
import os
import signal
import subprocess
import sys
import traceback
from typing import Any, TextIO

import pytest

#: Files each test process reported on, in order (filled in the controlling process).
_files_run: dict[str, list[str]] = {}


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        # The stderr of now, as pytest's faulthandler takes it: while a test runs, pytest
        # captures file descriptor 2 into a file that dies with the process.
        stderr = os.fdopen(os.dup(sys.__stderr__.fileno()), "w")
        _report_own_exit(stderr)
        # A SIGTERM (a supervisor's) ends it too: with every thread's stack first.
        faulthandler.register(signal.SIGTERM, file=stderr, all_threads=True, chain=True)


def _report_own_exit(stderr: TextIO) -> None:
    """A test process ends itself only through pytest; an ``os._exit`` in it (product code
    run in-process that means a forked child's exit) is printed with its stack first. Forked
    children of the test process exit as before, silently."""
    test_process = os.getpid()
    exit_now = os._exit

    def reported_exit(status: int) -> None:
        if os.getpid() == test_process:
            print(f"fx-lsp tests: the test process calls os._exit({status}) from:",
                  file=stderr)
            traceback.print_stack(file=stderr)
            stderr.flush()
        exit_now(status)

    os._exit = reported_exit  # type: ignore[assignment]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node = getattr(report, "node", None)  # set on reports a test process sent
    if node is None or report.when != "call":
        return
    files = _files_run.setdefault(node.gateway.id, [])
    file = report.nodeid.split("::", 1)[0]
    if not files or files[-1] != file:
        files.append(file)


def pytest_testnodedown(node: Any, error: object) -> None:
    if error is None:
        return
    popen = getattr(getattr(node.gateway, "_io", None), "popen", None)
    try:
        status = popen.wait(timeout=10) if popen is not None else None
    except subprocess.TimeoutExpired:
        status = None
    if status is None:
        ended = "its exit status unknown"
    elif status < 0:
        ended = f"killed by {signal.Signals(-status).name}"
    else:
        ended = f"exit status {status}"
    files = _files_run.get(node.gateway.id, [])
    print(f"\nfx-lsp tests: test process {node.gateway.id} ended ({ended}); the files it "
          f"ran, last last: {', '.join(files[-6:]) or 'none'}", file=sys.stderr)
