"""Whether the CPUs are contended (fxcore.host.cpu_pressure), which decides whether an editor
trace's export and compile phases run side by side (Engine.side_by_side)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fxcore.host.cpu_pressure import cpu_contended
from fxcore.host.engine import Engine

BUSY = ("some avg10=74.52 avg60=89.98 avg300=93.00 total=4278734395\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
IDLE = ("some avg10=1.25 avg60=0.40 avg300=0.10 total=1234\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")


def test_tasks_waiting_for_a_cpu_a_fifth_of_the_time_or_more_is_contention(
        tmp_path: Path) -> None:
    busy, idle = tmp_path / "busy", tmp_path / "idle"
    busy.write_text(BUSY)
    idle.write_text(IDLE)
    assert cpu_contended(str(busy))
    assert not cpu_contended(str(idle))


@pytest.mark.parametrize("text", [None, "", "some avg10=lots\n", "full avg10=99.0\n"])
def test_without_a_readable_pressure_file_the_load_average_decides(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | None) -> None:
    path = tmp_path / "cpu"
    if text is not None:
        path.write_text(text)
    cores = os.cpu_count() or 1
    monkeypatch.setattr(os, "getloadavg", lambda: (cores + 0.5, 0.0, 0.0))
    assert cpu_contended(str(path))
    monkeypatch.setattr(os, "getloadavg", lambda: (cores - 1.5, 0.0, 0.0))
    assert not cpu_contended(str(path))


def test_the_engine_runs_side_by_side_with_workers_and_cpus_for_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    contended = [False]
    monkeypatch.setattr("fxcore.host.engine.cpu_contended", lambda: contended[0])
    engine, alone = Engine(workers=2), Engine(workers=1)
    try:
        assert engine.side_by_side and not alone.side_by_side
        contended[0] = True
        assert not engine.side_by_side
    finally:
        engine.close()
        alone.close()

