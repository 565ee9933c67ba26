"""Committed files that must not hang, exhaust or redirect fx-lsp: devices, FIFOs and huge
files are not read (a ``NOTES.md -> /dev/zero`` symlink, a named pipe ``model.py``), ``--fix``
writes no file through a symbolic link, a source too deep for Python's parser is one file's
problem, and a script whose classes are all inside functions is never imported. Each through
the real CLI (and the real server where it reads too), in processes with a memory cap and a
time-out, so that the failure before the fix is a failed test, not a stalled machine."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pathlib
import resource
import signal
import subprocess
import sys
from collections.abc import AsyncIterator

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

sys.path.insert(0, str(pathlib.Path(__file__).parents[2] / "fx_lsp" / "server"))
from lsp_support import FxClient, capabilities, make_client

#: Address space of the CLI or server and of everything it starts (a soft limit, which the
#: workers raise to their own cap): far above what they need (torch takes about 0.7 GB), far
#: below what reading /dev/zero to the end would take.
ADDRESS_SPACE_BYTES = 3 * 1024**3
#: Generous for one small workspace on a loaded machine; a read that blocks never ends.
RUN_SECONDS = 240

FAILING_MODEL = """\
import torch


class Counting(torch.nn.Module):
    def forward(self, x):
        return x * len(x)
"""

#: A class, then an expression Python's parser gives up on (RecursionError).
DEEP_MODEL = ("import torch\n\n\nclass Deep(torch.nn.Module):\n    def forward(self, x):\n"
              "        return x\n\n\nTOTAL = " + "+".join(["1"] * 100_000) + "\n")


def _cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE_BYTES, resource.RLIM_INFINITY))


def run_cli(root: pathlib.Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``fx-lsp check --no-cache <arguments> .`` in ``root``; a run that does not end in time
    is killed with everything it started and fails the test."""
    command = [sys.executable, "-m", "fx_lsp", "check", "--no-cache", *arguments, "."]
    process = subprocess.Popen(command, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, start_new_session=True, preexec_fn=_cap_address_space)
    try:
        stdout, stderr = process.communicate(timeout=RUN_SECONDS)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"fx-lsp check did not finish in {RUN_SECONDS} s")
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def project(tmp_path: pathlib.Path) -> pathlib.Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (root / "model.py").write_text(FAILING_MODEL)
    return root


def counting_reported(stdout: str) -> bool:
    return "model.py:6:20: FX002 [Counting]" in stdout


# -- reads: regular files only, of bounded size --------------------------------------------


def test_cli_does_not_read_a_committed_link_to_dev_zero(tmp_path: pathlib.Path) -> None:
    root = project(tmp_path)
    (root / "NOTES.md").symlink_to("/dev/zero")  # read by the call-site index
    (root / "zero.py").symlink_to("/dev/zero")  # a source: read by the host and the worker
    completed = run_cli(root)
    assert completed.returncode == 1, completed.stderr
    assert counting_reported(completed.stdout), completed.stdout
    # /dev/zero lies outside the workspace: the boundary refuses the link before anything
    # opens it (a device inside the workspace would be "not a regular file but a device").
    assert "zero.py:1:1: FX100 This file is a symbolic link, or lies in a linked folder, " \
        "that leads out of the workspace" in completed.stdout, completed.stdout


def test_cli_does_not_wait_on_a_committed_fifo(tmp_path: pathlib.Path) -> None:
    root = project(tmp_path)
    (root / "docs").mkdir()
    os.mkfifo(root / "docs" / "usage.md")  # opening it for reading waits for a writer
    os.mkfifo(root / "pipe.py")
    completed = run_cli(root)
    assert completed.returncode == 1, completed.stderr
    assert counting_reported(completed.stdout), completed.stdout
    assert "pipe.py:1:1: FX100 This file is not a regular file but a named pipe (FIFO)." in \
        completed.stdout


def test_a_source_over_the_size_cap_is_too_large_to_check(tmp_path: pathlib.Path) -> None:
    root = project(tmp_path)
    (root / "huge.py").write_text(FAILING_MODEL.replace("Counting", "Huge")
                                  + "PADDING = 0\n" * 400_000)  # 4.8 MB
    completed = run_cli(root)
    assert completed.returncode == 1, completed.stderr
    assert counting_reported(completed.stdout), completed.stdout
    assert ("huge.py:1:1: FX100 This file is too large to check (more than the 4,194,304 "
            "bytes fx-lsp reads of a file).") in completed.stdout
    assert "[Huge]" not in completed.stdout


# -- writes: never through a symbolic link -------------------------------------------------


def test_fix_neither_writes_through_nor_replaces_a_source_linked_out_of_the_workspace(
        tmp_path: pathlib.Path) -> None:
    root = project(tmp_path)
    outside = tmp_path / "outside.py"
    outside.write_text(FAILING_MODEL.replace("Counting", "Linked"))
    (root / "linked.py").symlink_to(outside)
    (root / "model.py").chmod(0o750)
    completed = run_cli(root, "--fix")
    # Refused before it is read (the workspace boundary): no problem of it to fix.
    assert "linked.py:1:1: FX100 This file is a symbolic link" in completed.stdout, \
        completed.stdout + completed.stderr
    assert "leads out of the workspace" in completed.stdout
    assert "linked.py" not in completed.stderr
    assert outside.read_text() == FAILING_MODEL.replace("Counting", "Linked")
    assert (root / "linked.py").is_symlink()
    assert 'torch.fx.wrap("len")' in (root / "model.py").read_text()
    assert (root / "model.py").stat().st_mode & 0o777 == 0o750  # the file's mode is kept
    assert sorted(path.name for path in root.iterdir()) == \
        ["linked.py", "model.py", "pyproject.toml"]  # no temporary file left


def test_fix_creates_no_file_through_a_dangling_pyproject_link(tmp_path: pathlib.Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / ".git").mkdir()  # the root marker, as pyproject.toml is a dangling link
    target = tmp_path / "elsewhere" / "planted.toml"
    target.parent.mkdir()
    (root / "pyproject.toml").symlink_to(target)
    # Control flow in a helper: the fix adds it to autowrap-functions in pyproject.toml.
    (root / "helpers.py").write_text(
        "def positive(x):\n    if x.sum() > 0:\n        return x\n    return -x\n")
    (root / "model.py").write_text(
        "import torch\n\nfrom helpers import positive\n\n\nclass Counting(torch.nn.Module):\n"
        "    def forward(self, x):\n        return positive(x)\n")
    completed = run_cli(root, "--fix")
    assert "not fixed: " in completed.stderr and "pyproject.toml is a symbolic link" in \
        completed.stderr, completed.stdout + completed.stderr
    assert not target.exists()
    assert (root / "pyproject.toml").is_symlink()


# -- parses: too deep for Python's parser is one file's problem ----------------------------


def test_cli_reports_a_source_too_deep_to_parse_and_checks_the_others(
        tmp_path: pathlib.Path) -> None:
    root = project(tmp_path)
    (root / "deep.py").write_text(DEEP_MODEL)
    completed = run_cli(root)
    assert completed.returncode == 1, completed.stderr
    assert counting_reported(completed.stdout), completed.stdout
    assert ("deep.py:1:1: FX100 This file cannot be checked: the source is too deeply nested "
            "or too long for Python's parser (RecursionError).") in completed.stdout
    assert "Traceback" not in completed.stderr


# -- imports: only files with a module-level class -----------------------------------------


def test_cli_never_imports_a_script_whose_classes_are_inside_functions(
        tmp_path: pathlib.Path) -> None:
    root = project(tmp_path)
    marker = tmp_path / "script-ran"
    (root / "train.py").write_text(script_with_nested_classes(marker))
    library_marker = tmp_path / "library-imported"
    # Classes inside module-level blocks are module attributes: such a file is imported.
    (root / "fused.py").write_text(
        f"import torch\nopen({str(library_marker)!r}, 'w').close()\n"
        "try:\n    import apex_not_installed\nexcept ImportError:\n"
        "    class Norm(torch.nn.Module):\n        def forward(self, x):\n            return x\n")
    completed = run_cli(root)
    assert completed.returncode == 1, completed.stderr
    assert counting_reported(completed.stdout), completed.stdout
    assert not marker.exists()
    assert library_marker.exists()


def script_with_nested_classes(marker: pathlib.Path) -> str:
    """A training script: running it writes ``marker``; its classes are in a function and
    under the main guard, neither of which is a module attribute after an import."""
    return (
        "import torch\n\n"
        f"open({str(marker)!r}, 'w').close()\n\n\n"
        "def main():\n"
        "    class Net(torch.nn.Module):\n"
        "        def forward(self, x):\n"
        "            return x\n"
        "    return Net()\n\n\n"
        "if __name__ == '__main__':\n"
        "    class Script(torch.nn.Module):\n"
        "        pass\n"
        "    main()\n"
    )


# -- the server ----------------------------------------------------------------------------

#: ``python -m fx_lsp serve --stdio`` with the address space capped.
SERVER_LAUNCH = (
    "import resource, runpy, sys\n"
    f"resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE_BYTES}, resource.RLIM_INFINITY))\n"
    "sys.argv = ['fx_lsp', 'serve', '--stdio']\n"
    "runpy.run_module('fx_lsp', run_name='__main__', alter_sys=True)\n"
)


@contextlib.asynccontextmanager
async def serve(root: pathlib.Path) -> AsyncIterator[FxClient]:
    """A real server (address space capped) with ``root`` as its workspace folder."""
    client = make_client()
    await client.start_io(sys.executable, "-c", SERVER_LAUNCH, cwd=str(root.parent))
    try:
        await client.initialize_session(types.InitializeParams(
            capabilities=capabilities(), root_uri=from_fs_path(str(root)),
            workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(root)), name="ws")]))
        yield client
    finally:
        with contextlib.suppress(Exception):  # the server under test may be what broke
            await asyncio.wait_for(client.shutdown_session(), 20)
        await client.stop()


def codes(diagnostics: list[types.Diagnostic]) -> list[str]:
    return [str(diagnostic.code) for diagnostic in diagnostics]


async def test_server_publishes_despite_a_link_to_dev_zero(tmp_path: pathlib.Path) -> None:
    root = project(tmp_path)
    (root / "NOTES.md").symlink_to("/dev/zero")
    async with serve(root) as client:
        uri = client.open(root / "model.py")
        diagnostics = await client.diagnostics_for(uri, timeout=RUN_SECONDS)
        assert codes(diagnostics) == ["FX002"]


async def test_server_publishes_for_a_source_too_deep_to_parse(tmp_path: pathlib.Path) -> None:
    root = project(tmp_path)
    (root / "deep.py").write_text(DEEP_MODEL)
    async with serve(root) as client:
        deep = client.open(root / "deep.py")
        (problem,) = await client.diagnostics_for(deep, timeout=RUN_SECONDS)
        assert (problem.code, problem.message) == (
            "FX100", "This file cannot be checked: the source is too deeply nested or too "
            "long for Python's parser (RecursionError).")
        model = client.open(root / "model.py")  # the server goes on with other files
        assert codes(await client.diagnostics_for(model, timeout=RUN_SECONDS)) == ["FX002"]


async def test_server_never_imports_a_script_whose_classes_are_inside_functions(
        tmp_path: pathlib.Path) -> None:
    root = project(tmp_path)
    marker = tmp_path / "script-ran"
    (root / "train.py").write_text(script_with_nested_classes(marker))
    async with serve(root) as client:
        script = client.open(root / "train.py")
        assert await client.diagnostics_for(script, timeout=RUN_SECONDS) == []
        # Traced after the script in the same engine: its verdict means the script's job ended.
        model = client.open(root / "model.py")
        assert codes(await client.diagnostics_for(model, timeout=RUN_SECONDS)) == ["FX002"]
    assert not marker.exists()
