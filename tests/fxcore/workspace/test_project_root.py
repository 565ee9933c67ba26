"""The workspace root of a package's checkout that has a ``setup.py`` or ``setup.cfg`` and
no ``pyproject.toml`` (an unpacked sdist, an older project): its own helpers beside the
checked folder are the workspace's, so a failure inside one is located at the helper's line,
as plain torch.fx reports it (nnAudio's ``broadcast_dim`` in ``nnAudio/utils.py``, called
from ``nnAudio/features/mel.py``: fx-lsp reported the call in ``mel.py`` while the root
stopped at ``features/``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fxcore.workspace.paths import find_workspace_root

from cli_support import fx_lsp

HELPER = '''def broadcast_dim(x):
    if x.dim() == 2:
        x = x[:, None, :]
    return x
'''
MODEL = '''from torch import nn

from audio.utils import broadcast_dim


class Mel(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(1, 4, 3)

    def forward(self, x):
        return self.conv(broadcast_dim(x))
'''


@pytest.mark.parametrize("marker", ["setup.py", "setup.cfg"])
def test_a_package_checkout_s_helpers_are_located_at_their_lines(tmp_path: Path,
                                                                  marker: str) -> None:
    (tmp_path / marker).write_text("")
    features = tmp_path / "audio" / "features"
    features.mkdir(parents=True)
    for folder in (tmp_path / "audio", features):
        (folder / "__init__.py").write_text("")
    (tmp_path / "audio" / "utils.py").write_text(HELPER)
    (features / "mel.py").write_text(MODEL)
    assert find_workspace_root(str(features / "mel.py")) == str(tmp_path)
    completed = fx_lsp("check", "--no-cache", "--output-format", "json", "audio/features",
                       cwd=tmp_path)
    (failure,) = json.loads(completed.stdout)["modules"][0]["failures"]
    assert (failure["code"], failure["path"], failure["line"]) == (
        "FX001", "audio/utils.py", 2), failure
