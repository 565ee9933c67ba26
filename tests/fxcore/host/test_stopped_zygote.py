"""A job whose code stops its parent (``os.kill(os.getppid(), SIGSTOP)``) stops the zygote,
which then forks nothing: the engine continues it and every later job runs. Checked with a
zygote stopped from here, then with a real check whose ``forward`` stops it."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from fxcore.host.engine import Engine
from fxcore.host.zygote import STOPPED_STATES, process_state
from fxcore.model.job_spec import TraceJob

import cli_support

FINE = '''
from torch import nn


class Fine(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
'''

STOPS_ITS_PARENT = '''
import os
import signal

from torch import nn


class StopsItsParent(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        os.kill(os.getppid(), signal.SIGSTOP)
        return self.fc(x)
'''


def _stops(pid: int) -> bool:
    """Whether the process is seen stopped within a minute (a signal is delivered when the
    kernel next schedules it)."""
    deadline = time.monotonic() + 60
    while process_state(pid) not in STOPPED_STATES:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_a_stopped_zygote_is_continued_and_forks_the_next_job(tmp_path: Path) -> None:
    (tmp_path / "fine.py").write_text(FINE)
    engine = Engine(workers=1)
    try:
        zygote = engine._live_zygote()
        assert zygote._wait_for(lambda: zygote._ready, 600)
        os.kill(zygote._process.pid, signal.SIGSTOP)
        assert _stops(zygote._process.pid)
        job = TraceJob(path=str(tmp_path / "fine.py"), workspace_root=str(tmp_path))
        result = engine.submit(job).future.result(timeout=600)
        assert [(m.class_name, m.status) for m in result.modules] == [("Fine", "traceable")]
        assert process_state(zygote._process.pid) not in STOPPED_STATES
    finally:
        engine.close()


def test_a_forward_that_stops_the_zygote_costs_no_other_file(tmp_path: Path) -> None:
    (tmp_path / "a_stops.py").write_text(STOPS_ITS_PARENT)
    for number in range(3):
        (tmp_path / f"fine_{number}.py").write_text(FINE.replace("Fine", f"Fine{number}"))
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export",
                                   "--output-format", "json", ".", cwd=tmp_path)
    assert completed.returncode == 0, completed.stderr
    assert "the worker process was stopped" in completed.stderr
    report = json.loads(completed.stdout)
    assert sorted((m["class"], m["status"]) for m in report["modules"]) == [
        ("Fine0", "traceable"), ("Fine1", "traceable"), ("Fine2", "traceable"),
        ("StopsItsParent", "traceable")]
