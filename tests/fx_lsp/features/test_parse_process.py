"""fx_lsp.features.parse_process: quick-fix parses in a process of the server's own."""

from __future__ import annotations

import os
import signal
import time
from concurrent.futures.process import BrokenProcessPool

import pytest

from fx_lsp.features.parse_process import ParseProcess
from fxcore.fixing import fixes
from fxcore.fixing.fix_plan import run_here
from fxcore.workspace import parsing

from engine_support import is_running

SOURCE = """import torch


class UsesLen(torch.nn.Module):
    def forward(self, x):
        return x * len(x)


def helper(x):
    return x
"""


@pytest.fixture
def parse_process():
    process = ParseProcess()
    yield process
    process.close()


def test_runs_in_another_process_in_the_same_working_folder(parse_process: ParseProcess) -> None:
    assert parse_process.run(os.getpid) != os.getpid()
    assert parse_process.run(os.getcwd) == os.getcwd()


def test_gives_what_the_function_gives_here(parse_process: ParseProcess) -> None:
    assert parse_process.run(parsing.outline, SOURCE) == run_here(
        parsing.outline, SOURCE
    )
    assert parse_process.run(fixes.wrap_len, SOURCE) == fixes.wrap_len(SOURCE)


def test_results_are_cached_per_arguments(parse_process: ParseProcess) -> None:
    first = parse_process.run(time.monotonic_ns)
    assert parse_process.run(time.monotonic_ns) == first


def test_a_killed_process_fails_one_call_and_is_replaced(parse_process: ParseProcess) -> None:
    worker = parse_process.run(os.getpid)
    os.kill(worker, signal.SIGKILL)
    with pytest.raises(BrokenProcessPool):
        parse_process.run(os.getcwd)
    assert parse_process.run(parsing.outline, SOURCE).functions == {"helper"}


def test_close_ends_the_process() -> None:
    process = ParseProcess()
    worker = process.run(os.getpid)
    process.close()
    deadline = time.monotonic() + 10
    while is_running(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not is_running(worker)
    with pytest.raises(RuntimeError):
        process.run(os.getpid)
