"""Real torch's answers computed in a forked child of the test process: real torch can crash
(a SIGSEGV) on code it accepts, and in the test process such a crash takes the pytest-xdist
process and every test it had left with it ("node down: Not properly terminated"). In a child,
it is this test's failure, naming the signal; and what the child changes in torch's global
state (a corpus file executed again, which redefines its ``torch.library.custom_op`` and so
destroys the library the test process's own copy of the operator still points to) stays
there."""

from __future__ import annotations

import json
import os
import select
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

#: Longer than any one class's answer takes on a loaded machine, shorter than the test's own
#: time-out (pyproject.toml), so that a child that hangs is this test's failure, killed.
ANSWER_SECONDS = 240
#: A child that used no CPU at all for this long is stuck, not slow: on a busy machine every
#: runnable process still gets the CPU many times a second. A fork can copy a lock another
#: thread of the test process held at that moment (pytest-xdist's I/O thread, torch's pools),
#: which the child then waits on forever; fork again.
STUCK_SECONDS = 20
#: How many times a stuck child is forked again before the test fails.
FORKS = 3


def forked_answer(compute: Callable[[], Any], what: str) -> Any:
    """``compute()``, run in a forked child, as JSON gives it back; the test fails, saying
    why, when the child crashes, raises or hangs (a child stuck at no CPU is forked again)."""
    for _ in range(FORKS):
        answered = _forked_once(compute, what)
        if answered is not _STUCK:
            return answered
    pytest.fail(f"real torch's child for {what} used no CPU for {STUCK_SECONDS} s, "
                f"{FORKS} times")


_STUCK = object()


def _cpu_seconds(pid: int) -> float:
    """The CPU time ``pid`` has used (user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _one_thread_of_torch() -> None:
    """In a forked child: torch's parallel kernels run on this thread alone. The test process's
    OpenMP pool (its threads ran torch's kernels before the fork) is not in the child, whose
    first parallel kernel would wait on it forever (seen: export answers stuck in a linear's
    kernel after compile answers ran in the test process)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(1)


def _forked_once(compute: Callable[[], Any], what: str) -> Any:
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, write, and exit without running the parent's exits
        os.close(reader)
        _one_thread_of_torch()
        status = 1
        try:
            payload = json.dumps(compute()).encode()
            with os.fdopen(writer, "wb") as stream:
                stream.write(payload)
            status = 0
        except BaseException:  # the parent says the child failed; the traceback says why
            traceback.print_exc()
        finally:
            os._exit(status)
    os.close(writer)
    chunks = []
    deadline = time.monotonic() + ANSWER_SECONDS
    used, since = 0.0, time.monotonic()
    with os.fdopen(reader, "rb") as stream:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail(f"real torch did not answer {what} in {ANSWER_SECONDS} s")
            if not select.select([stream], [], [], min(left, 1.0))[0]:
                try:
                    now = _cpu_seconds(pid)
                except (OSError, IndexError, ValueError):  # exited: the pipe says so next
                    continue
                if now > used:
                    used, since = now, time.monotonic()
                elif time.monotonic() - since > STUCK_SECONDS:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    return _STUCK
                continue
            chunk = stream.read1(1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        pytest.fail(f"real torch crashed ({name}) computing {what}: the reference, in a child "
                    "process, not the test process")
    if os.WEXITSTATUS(status) != 0:
        pytest.fail(f"computing {what} with real torch raised (its traceback is on stderr)")
    return json.loads(b"".join(chunks))
