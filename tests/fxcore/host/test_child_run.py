"""Following one child (fxcore.host.child_run): its result is complete at its last message,
whatever its exit then takes (the engine no longer waits for the exit: how much sooner the
result arrives is measured by benchmarks/editor/mode_latency.py, not here); what it printed before
that message is kept."""

from __future__ import annotations

import os
import signal
import time
from multiprocessing.connection import Connection

from fxcore.host.child_run import run_child
from fxcore.host.trace_handle import TraceHandle
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult
from fxcore.protocol.worker_messages import Classes, FileDone, encode_message

from engine_support import is_running

JOB = TraceJob(path="/ws/net.py", workspace_root="/ws")


class SlowToExit:
    """A zygote whose child reports a complete job, prints, and then takes a minute to exit
    (as a child that frees a large address space does, only longer)."""

    def __init__(self) -> None:
        self.pid = 0
        self.forgotten: list[int] = []

    def fork(self, job: TraceJob, fds: list[int]) -> int:
        pid = os.fork()
        if pid == 0:
            results_fd, output_fd = fds
            os.write(output_fd, b"printed by the job\n")
            results = Connection(results_fd, readable=False)
            results.send_bytes(encode_message(Classes([])))
            results.send_bytes(encode_message(FileDone(FileResult(path=job.path))))
            time.sleep(60)
            os._exit(0)
        self.pid = pid
        return pid

    def kill(self, pid: int) -> None:
        os.kill(pid, signal.SIGKILL)

    def has_exited(self, pid: int) -> bool:
        return not is_running(pid)

    def forget_exit(self, pid: int) -> None:
        self.forgotten.append(pid)

    def exit_code(self, pid: int, timeout: float) -> int | None:
        return None


def test_the_result_is_taken_at_the_last_message_not_at_the_exit() -> None:
    zygote = SlowToExit()
    handle = TraceHandle(JOB)
    try:
        attempt = run_child(handle, JOB, lambda: zygote)  # type: ignore[arg-type, return-value]
        still_running = is_running(zygote.pid)
    finally:
        os.kill(zygote.pid, signal.SIGKILL)
        os.waitpid(zygote.pid, 0)
    assert still_running
    assert attempt.file is not None and attempt.classes == [] and attempt.ended_by is None
    assert bytes(attempt.output) == b"printed by the job\n"
    assert zygote.forgotten == [zygote.pid]  # the zygote's report of its exit is not awaited
