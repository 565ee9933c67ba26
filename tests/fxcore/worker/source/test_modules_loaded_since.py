"""The modules a job loaded (fxcore.worker.source.import_overlay.ModulesLoadedSince): found from the
newest back to the last one loaded before the job, never fewer than were loaded, whatever the
job's code does to sys.modules."""

from __future__ import annotations

import sys
import types

import pytest

from fxcore.worker.source.import_overlay import ModulesLoadedSince


def add(monkeypatch: pytest.MonkeyPatch, *names: str) -> None:
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))


def test_only_the_modules_loaded_since_in_the_order_they_were_loaded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    add(monkeypatch, "fx_lsp_test_before")
    since = ModulesLoadedSince()
    add(monkeypatch, "fx_lsp_test_first", "fx_lsp_test_second")
    assert [name for name, _ in since.items()] == ["fx_lsp_test_first", "fx_lsp_test_second"]
    assert since.items()[0][1] is sys.modules["fx_lsp_test_first"]


def test_a_module_loaded_since_and_removed_again_is_not_listed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    add(monkeypatch, "fx_lsp_test_before")
    since = ModulesLoadedSince()
    add(monkeypatch, "fx_lsp_test_gone", "fx_lsp_test_kept")
    monkeypatch.delitem(sys.modules, "fx_lsp_test_gone")
    assert [name for name, _ in since.items()] == ["fx_lsp_test_kept"]


@pytest.mark.parametrize("change", ["removed", "replaced", "moved"])
def test_when_the_last_module_before_changes_the_one_before_it_marks_the_start(
        monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    add(monkeypatch, "fx_lsp_test_before", "fx_lsp_test_last")
    since = ModulesLoadedSince()
    add(monkeypatch, "fx_lsp_test_loaded")
    last = sys.modules["fx_lsp_test_last"]
    if change == "replaced":
        add(monkeypatch, "fx_lsp_test_last")
    else:
        monkeypatch.delitem(sys.modules, "fx_lsp_test_last")
    if change == "moved":  # the same module put back: after the one loaded since
        monkeypatch.setitem(sys.modules, "fx_lsp_test_last", last)
    assert [name for name, _ in since.items()] == ["fx_lsp_test_loaded"]


def test_when_every_mark_changed_every_module_but_them_counts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    marks = [f"fx_lsp_test_mark_{number}" for number in range(20)]
    add(monkeypatch, *marks)
    since = ModulesLoadedSince()
    add(monkeypatch, "fx_lsp_test_loaded")
    for name in marks:
        monkeypatch.delitem(sys.modules, name)
    names = [name for name, _ in since.items()]
    assert "fx_lsp_test_loaded" in names and "sys" in names
    assert len(names) == len(sys.modules)
