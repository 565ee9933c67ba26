"""``FX_LSP_TIMEOUT_SCALE``, the one scale of the wall-clock limits (``fxcore.model.
timeout_scale``): read as a number of at least 1, anything else ignored with a warning, and
applied to the host's time-out of a class, here followed on a child that takes a second
between its class's start and its result."""

from __future__ import annotations

import logging
import os
import signal
import time
from multiprocessing.connection import Connection

import pytest

from fxcore.host.child_run import run_child
from fxcore.host.trace_handle import TraceHandle
from fxcore.host.worker_environment import zygote_environment
from fxcore.model import timeout_scale as timeout_scale_module
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import FileResult
from fxcore.model.timeout_scale import timeout_scale
from fxcore.protocol.worker_messages import Classes, FileDone, Start, encode_message

#: A class's time-out, and how long the child's class takes: over it, within 20 times it.
TIMEOUT = 0.3
CLASS_SECONDS = 1.0
JOB = TraceJob(path="/ws/net.py", workspace_root="/ws", config=EngineConfig(timeout=TIMEOUT))


@pytest.mark.parametrize(("value", "scale"), [("10", 10.0), (" 2.5 ", 2.5), ("1", 1.0),
                                              ("", 1.0)])
def test_a_number_of_at_least_one_is_the_scale(monkeypatch: pytest.MonkeyPatch, value: str,
                                               scale: float) -> None:
    monkeypatch.setenv("FX_LSP_TIMEOUT_SCALE", value)
    assert timeout_scale() == scale


def test_unset_is_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FX_LSP_TIMEOUT_SCALE")
    assert timeout_scale() == 1.0


@pytest.mark.parametrize("value", ["0.5", "0", "-3", "soon", "inf", "nan"])
def test_anything_else_is_ignored_with_a_warning(monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture,
                                                 value: str) -> None:
    monkeypatch.setenv("FX_LSP_TIMEOUT_SCALE", value)
    timeout_scale_module._ignored.cache_clear()
    with caplog.at_level(logging.WARNING):
        assert timeout_scale() == timeout_scale() == 1.0
    # Once per process and value: it is read at every job.
    assert [record.getMessage() for record in caplog.records] == [
        f"fx-lsp: FX_LSP_TIMEOUT_SCALE={value.strip()!r} ignored: it must be a number of at "
        "least 1 (the time-outs are not scaled)"]


class TakesASecond:
    """A zygote whose child announces one class, starts it, and reports its file a second
    later."""

    def __init__(self) -> None:
        self.pid = 0

    def fork(self, job: TraceJob, fds: list[int]) -> int:
        pid = os.fork()
        if pid == 0:
            results = Connection(fds[0], readable=False)
            results.send_bytes(encode_message(Classes(["Net"])))
            results.send_bytes(encode_message(Start("Net")))
            time.sleep(CLASS_SECONDS)
            results.send_bytes(encode_message(FileDone(FileResult(path=job.path))))
            os._exit(0)
        self.pid = pid
        return pid

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def has_exited(self, pid: int) -> bool:
        return os.waitpid(pid, os.WNOHANG) != (0, 0)

    def forget_exit(self, pid: int) -> None:
        pass

    def exit_code(self, pid: int, timeout: float) -> int | None:
        return None


def followed(monkeypatch: pytest.MonkeyPatch, scale: str) -> tuple[str | None, str]:
    monkeypatch.setenv("FX_LSP_TIMEOUT_SCALE", scale)
    zygote = TakesASecond()
    try:
        attempt = run_child(TraceHandle(JOB), JOB, lambda: zygote)  # type: ignore[arg-type, return-value]
    finally:
        try:
            os.kill(zygote.pid, signal.SIGKILL)
            os.waitpid(zygote.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
    return attempt.ended_by, attempt.exit_description


def test_the_host_stops_a_class_after_its_time_out_unscaled(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert followed(monkeypatch, "1") == ("timeout", f"took longer than {TIMEOUT:g} s and "
                                                     "was stopped")


def test_the_scale_multiplies_the_hosts_time_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """At 20, the time-out is 6 s: the class's second is within it."""
    assert followed(monkeypatch, "20") == (None, "")


def test_the_workers_read_the_same_scale() -> None:
    """The workers' backstops read it from the environment their zygote started with."""
    passed = zygote_environment({"FX_LSP_TIMEOUT_SCALE": "10", "GITHUB_TOKEN": "secret"})
    assert passed["FX_LSP_TIMEOUT_SCALE"] == "10" and "GITHUB_TOKEN" not in passed
