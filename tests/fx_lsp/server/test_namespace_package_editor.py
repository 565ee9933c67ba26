"""In the editor, a module of a namespace package (a folder without ``__init__.py``, no project
file) imports its own package as Python does from the folder above: no FX100 on code that
works. The server's jobs go through the same import location as the CLI's, read from the
editor's buffers."""

from __future__ import annotations

import pathlib

import pytest

from lsp_support import FxClient

HELPER = """import torch


class Helper(torch.nn.Module):
    def forward(self, x):
        return x + 1
"""
NET = """import torch
{imports}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.helper = Helper()

    def forward(self, x):
        if x.sum() > 0:
            x = x - 1
        return self.helper(x)
"""


@pytest.mark.asyncio(loop_scope="session")
async def test_a_buffer_that_imports_its_namespace_package_is_traced(
        tmp_path: pathlib.Path, shared_client: FxClient) -> None:
    """The file on disk names no package; the unsaved buffer does: it imports as ``pkg.a``
    and its forward is traced (the FX001 of its ``if``), not reported unimportable."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "b.py").write_text(HELPER)
    model = package / "a.py"
    model.write_text(NET.format(imports="Helper = torch.nn.Identity"))
    uri = shared_client.open(model, NET.format(imports="from pkg.b import Helper"))
    diagnostics = await shared_client.diagnostics_for(uri, version=1, timeout=120)
    codes = {str(d.code) for d in diagnostics}
    assert "FX100" not in codes, [d.message for d in diagnostics]
    assert "FX001" in codes, [d.message for d in diagnostics]
