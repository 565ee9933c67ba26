"""A second real client: Debian's headless Neovim 0.7 reads the diagnostics and a hover; it
has no notebook support, and a notebook in the workspace changes nothing for it."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

NVIM = shutil.which("nvim")
INIT = pathlib.Path(__file__).parent / "nvim" / "init.lua"


@pytest.mark.skipif(NVIM is None, reason="Neovim is not installed (apt-get install neovim)")
def test_neovim_shows_diagnostics_and_hover(
    workspace: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    net = workspace / "pkg" / "net.py"
    lines = net.read_text().splitlines()
    (line,) = [i for i, text in enumerate(lines) if "return x * len(x)" in text]
    character = lines[line].index("len(x)") + 1
    # A notebook next to the file (the server declares notebook sync only to clients that
    # support notebooks).
    (workspace / "pkg" / "models.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "code", "source": "import torch\nlen(torch.ones(2))",
                   "metadata": {}, "outputs": [], "execution_count": None}],
        "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    xdg = tmp_path / "xdg"
    env = {
        **os.environ,
        "XDG_CONFIG_HOME": str(xdg / "config"),
        "XDG_DATA_HOME": str(xdg / "data"),
        "XDG_STATE_HOME": str(xdg / "state"),
        "XDG_CACHE_HOME": str(xdg / "cache"),
        "FX_LSP_PYTHON": sys.executable,
        "FX_LSP_ROOT": str(workspace),
        "FX_LSP_HOVER": f"{line},{character}",
    }
    completed = subprocess.run(
        [NVIM, "--headless", "-i", "NONE", "-n", "-u", str(INIT), str(net)],
        cwd=workspace,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    output = [row for row in completed.stdout.splitlines() if row.startswith("{")]
    assert output, (completed.stdout, completed.stderr)
    result = json.loads(output[-1])
    assert result["ok"] is True
    assert result["notebook_sync"] is False
    codes = {(d["code"], d["lnum"]) for d in result["diagnostics"]}
    assert ("FX002", line) in codes
    assert all(d["source"] == "fx-lsp" for d in result["diagnostics"])
    (on_len,) = [d for d in result["diagnostics"] if d["lnum"] == line]
    assert on_len["col"] == lines[line].index("len(x)")
    assert result["hover"].startswith("**FX002** (len)")
    assert 'torch.fx.wrap("len")' in result["hover"]
