"""How many cores stood idle lately (fxcore.host.idle_cores), which decides whether an editor
trace's export and compile phases run side by side (Engine.side_by_side)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fxcore.host import idle_cores
from fxcore.host.engine import Engine
from fxcore.host.idle_cores import IdleCores


def write_stat(path: Path, idle: int, busy: int) -> None:
    """A /proc/stat whose all-cores line has ``busy`` user ticks and ``idle`` idle ticks."""
    path.write_text(f"cpu  {busy} 0 0 {idle} 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0 0 0\n")


@pytest.fixture
def cores(monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.5, 1.0, 1.0))
    return 2


def test_the_cores_idle_between_two_looks(tmp_path: Path, cores: int) -> None:
    stat = tmp_path / "stat"
    write_stat(stat, idle=1000, busy=1000)
    looks = IdleCores(str(stat))
    assert looks.look() == pytest.approx(0.5)  # no look before: the load average's
    write_stat(stat, idle=1012, busy=1004)  # 12 of 16 ticks idle: 1.5 cores of 2
    assert looks.look() == pytest.approx(1.5)
    write_stat(stat, idle=1012, busy=1020)  # none idle since
    assert looks.look() == pytest.approx(0.0)


def test_a_look_long_ago_or_no_tick_since_says_nothing_of_now(
        tmp_path: Path, cores: int, monkeypatch: pytest.MonkeyPatch) -> None:
    stat = tmp_path / "stat"
    write_stat(stat, idle=1000, busy=1000)
    clock = [100.0]
    monkeypatch.setattr(idle_cores.time, "monotonic", lambda: clock[0])
    looks = IdleCores(str(stat))
    looks.look()
    clock[0] += idle_cores.MAX_WINDOW_SECONDS + 1
    write_stat(stat, idle=1100, busy=1000)
    assert looks.look() == pytest.approx(0.5)  # the load average's, not 2.0
    clock[0] += 0.001
    assert looks.look() == pytest.approx(0.5)  # no tick since the last look
    clock[0] += 0.05
    write_stat(stat, idle=1104, busy=1000)
    assert looks.look() == pytest.approx(2.0)  # from the look that had ticks


@pytest.mark.parametrize("text", [None, "", "intr 1 2 3\n", "cpu  a b c d\n"])
def test_without_a_readable_stat_file_the_load_average_answers(
        tmp_path: Path, cores: int, monkeypatch: pytest.MonkeyPatch, text: str | None) -> None:
    stat = tmp_path / "stat"
    if text is not None:
        stat.write_text(text)
    looks = IdleCores(str(stat))
    assert looks.look() == pytest.approx(0.5) and looks.look() == pytest.approx(0.5)

    def no_load_average() -> tuple[float, float, float]:
        raise OSError("no load average here")

    monkeypatch.setattr(os, "getloadavg", no_load_average)
    assert looks.look() is None


def test_the_engine_runs_side_by_side_with_workers_and_idle_cores_for_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    idle: list[float | None] = [1.2]
    monkeypatch.setattr(IdleCores, "look", lambda self: idle[0])
    engine, alone = Engine(workers=2), Engine(workers=1)
    try:
        assert engine.side_by_side and not alone.side_by_side
        idle[0] = 0.3  # another process holds the other core
        assert not engine.side_by_side
        idle[0] = None  # nothing known: as many at once as there are workers
        assert engine.side_by_side
    finally:
        engine.close()
        alone.close()
