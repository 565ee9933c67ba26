"""Real torch's answers are computed in a child process (tests/support/forked_answer.py): a crash of
real torch there is one test's failure, naming the signal, where in the test process it took
the pytest-xdist process and the tests it had left."""

from __future__ import annotations

import ctypes
import faulthandler
import threading
import time
from pathlib import Path

import pytest
from forked_answer import forked_answer


def test_an_answer_comes_back_as_json_gives_it() -> None:
    assert forked_answer(lambda: {"verdict": "ok", "lines": (3, 4)}, "a class") == \
        {"verdict": "ok", "lines": [3, 4]}


def test_a_crash_of_real_torch_fails_the_test_only() -> None:
    def crashing() -> bytes:
        # The crash is this test's own: no "Fatal Python error" dump of it in the run's output,
        # where it reads as a real crash of the suite.
        faulthandler.disable()
        return ctypes.string_at(0)

    with pytest.raises(pytest.fail.Exception, match=r"crashed \(SIGSEGV\) computing a class"):
        forked_answer(crashing, "a class")


def test_an_error_of_real_torch_fails_the_test_only() -> None:
    def raising() -> None:
        raise RuntimeError("no answer")

    with pytest.raises(pytest.fail.Exception, match="computing a class with real torch raised"):
        forked_answer(raising, "a class")


def test_a_child_stuck_at_no_cpu_is_forked_again(monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    """A fork that copied a lock another thread held waits forever at no CPU: forked again,
    the next child answers; one stuck every time fails the test, saying so."""
    import forked_answer as module

    monkeypatch.setattr(module, "STUCK_SECONDS", 1)
    forks = tmp_path / "forks"

    def stuck_the_first_time() -> str:
        with forks.open("a") as log:
            log.write("x")
        if len(forks.read_text()) == 1:
            held = threading.Lock()
            held.acquire()
            held.acquire()  # never returns: a lock held, as one copied by a fork is
        return "answered"

    assert forked_answer(stuck_the_first_time, "a class") == "answered"
    assert forks.read_text() == "xx"
    with pytest.raises(pytest.fail.Exception, match="used no CPU for 1 s, 3 times"):
        forked_answer(lambda: time.sleep(3600), "a class")


def test_a_child_runs_torch_kernels_the_test_process_ran_in_parallel(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """After the test process ran a kernel on torch's OpenMP pool, a child's own parallel
    kernel waited forever on that pool, which a fork does not copy (export answers after
    compile answers, torch 2.10 and 2.15): the child runs torch's kernels on one thread."""
    import forked_answer as module
    import torch

    monkeypatch.setattr(module, "STUCK_SECONDS", 5)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        square = torch.ones(256, 256)
        assert float((square @ square).sum()) == 256.0 ** 3  # the pool's threads now exist
        assert forked_answer(lambda: float((square @ square).sum()), "a product") == 256.0 ** 3
    finally:
        torch.set_num_threads(threads)
