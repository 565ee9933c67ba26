"""What the server's workers print goes to the server's log (stderr: the editor's output
channel), never onto the protocol: here torch's "Failed to initialize NumPy" warning in an
environment without numpy, which every worker start prints."""

from __future__ import annotations

import os
import pathlib

import pytest
from no_numpy import NO_NUMPY

from lsp_support import session, wait_for

TESTS = pathlib.Path(__file__).parents[2]

NUMPY_WARNING = "UserWarning: Failed to initialize NumPy: No module named 'numpy'"


@pytest.mark.slow
async def test_torch_warnings_go_to_the_log(workspace: pathlib.Path, tmp_path: pathlib.Path,
                                            monkeypatch: pytest.MonkeyPatch,
                                            capfd: pytest.CaptureFixture[str]) -> None:
    site = tmp_path / "no-numpy-site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(NO_NUMPY)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(TESTS.parent)]))
    async with session(workspace) as client:
        uri = client.open(workspace / "pkg" / "net.py")
        diagnostics = await client.diagnostics_for(uri, version=1)
        assert any(diagnostic.code == "FX002" for diagnostic in diagnostics)
        # The test client copies the server's stderr to this process's.
        logged: list[str] = []

        def warned() -> list[str]:
            logged.extend(capfd.readouterr().err.splitlines())
            return [line for line in logged if NUMPY_WARNING in line]

        (warning,) = await wait_for(warned, what="torch's warning in the server's log")
        assert warning.startswith("INFO:fxcore.workers:fx-lsp worker: "), warning
