"""The capture modes an agent asks for are chosen as the command line chooses them (once, in
the engine session): a mode this machine cannot run, its packages missing, is left out of the
MCP ``check`` as it is of ``fx-lsp check --mode``, so that both report the same classes."""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import pytest

from fx_lsp.mcp_server.tools import Tools

from cli_support import fx_lsp, process_state
from engine_support import USES_LEN_AND_FINE


def _verdicts(report: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(module["class"], module["mode"], module["status"]) for module in report["modules"]}


@pytest.mark.slow  # the MCP tools' own engine, started for the call
def test_check_leaves_out_a_mode_whose_packages_are_missing(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (tmp_path / "models.py").write_text(USES_LEN_AND_FINE)
    # The onnx mode's package not found on this machine (``find_spec`` answers None for it).
    monkeypatch.setitem(sys.modules, "onnx", None)

    printed = fx_lsp("check", "--mode", "fx,onnx", "--format", "json", "models.py",
                     cwd=tmp_path)
    assert "the onnx capture mode needs onnx" in printed.stderr
    tools = Tools(str(tmp_path), trusted=True)
    try:
        with process_state(tmp_path, None):
            checked = tools.check(["models.py"], ["fx", "onnx"])
    finally:
        tools.close()
    assert {mode for _, mode, _ in _verdicts(checked)} == {"fx"}
    assert _verdicts(checked) == _verdicts(json.loads(printed.stdout))
