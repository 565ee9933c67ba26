"""fx-lsp as users install it: from the repository's files as a fresh
clone has them, ``python -m build`` makes the sdist and, from it, the wheel; ``twine check``
passes on both; the wheel goes into a new virtual environment that has only torch, and
``fx-lsp check``, ``fx-lsp graph`` and ``fx-lsp serve`` work there on a workspace outside the
repository, with nothing of the repository on their path.

torch is the one part not installed anew each run: ``pip install --target`` puts torch 2.13.0
(and what torch needs, nothing else) once in a cache folder (``FX_LSP_TEST_CACHE``, default
``~/.cache/fx-lsp-tests``), which the new environment sees through a ``.pth`` file. fx-lsp's
own dependencies come from the package index, as for a user. About two minutes in all on
these machines (115 s measured), 45 s more when the cache is empty."""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp.client import make_test_lsp_client

from engine_support import REPO_ROOT

#: The torch the tests run on (scripts/test.sh installs the same): a local CPU wheel here;
#: a bare ``torch`` would resolve gigabytes of CUDA packages.
TORCH_REQUIREMENT = "torch==2.13.0"
MODEL = """\
import torch
from torch import nn


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        if y.sum() > 0:
            return y
        return -y


class Fine(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x).relu()
"""
#: What the workspace's check reports (the FX001 on ``y.sum() > 0``, line 12).
FX001_LINE = "model.py:12:12: FX001 [Gate] Control flow depends on a traced value"
SUMMARY = "Checked 1 file: 2 modules traced, 1 traceable, 1 failed, 0 not traced."


def project_version() -> str:
    with open(REPO_ROOT / "pyproject.toml", "rb") as handle:
        return tomllib.load(handle)["project"]["version"]


def clean_environment() -> dict[str, str]:
    """This process's environment without what would put the repository (or its settings) in
    reach of the installed program: PYTHONPATH and the like, fx-lsp's own variables."""
    return {name: value for name, value in os.environ.items()
            if not name.startswith(("PYTHON", "FX_LSP_", "VIRTUAL_ENV"))}


def run(*command: str | Path, cwd: Path | None = None,
        timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(part) for part in command], cwd=cwd, env=clean_environment(),
                          capture_output=True, text=True, timeout=timeout)


def checked(completed: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert completed.returncode == 0, (completed.args, completed.stdout, completed.stderr)
    return completed


def tracked_files() -> list[str]:
    """The repository's files as a fresh clone of it has them (with files not yet committed but
    not ignored, so that a change is tested before its commit)."""
    listed = checked(run("git", "-C", REPO_ROOT, "ls-files", "-z", "--cached", "--others",
                         "--exclude-standard"))
    return [name for name in listed.stdout.split("\0") if name and (REPO_ROOT / name).is_file()]


def torch_site_packages() -> Path:
    """A folder holding torch and its dependencies only, made once per torch, Python and
    machine (made aside and renamed into place, so an interrupted install is never used)."""
    cache = Path(os.environ.get("FX_LSP_TEST_CACHE") or Path.home() / ".cache" / "fx-lsp-tests")
    name = f"{TORCH_REQUIREMENT.replace('==', '-')}-{sys.implementation.cache_tag}-" \
           f"{platform.machine()}"
    folder = cache / name
    if not folder.is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        partial = cache / f"{name}.partial-{os.getpid()}"
        shutil.rmtree(partial, ignore_errors=True)
        checked(run(sys.executable, "-m", "pip", "install", "--quiet", "--no-compile",
                    "--target", partial, TORCH_REQUIREMENT, timeout=1200))
        with contextlib.suppress(OSError):  # another run may have put its copy there first
            partial.rename(folder)
        shutil.rmtree(partial, ignore_errors=True)
    return folder


@pytest.fixture(scope="module")
def distributions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The sdist and the wheel that ``python -m build`` makes from a fresh clone's files (the
    wheel is built from the sdist, so both must carry everything)."""
    clone = tmp_path_factory.mktemp("clone")
    for name in tracked_files():
        (clone / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / name, clone / name)
    dist = tmp_path_factory.mktemp("dist")
    checked(run(sys.executable, "-m", "build", "--outdir", dist, clone, timeout=900))
    (sdist,) = dist.glob("*.tar.gz")
    (wheel,) = dist.glob("*.whl")
    return sdist, wheel


@pytest.fixture(scope="module")
def environment(tmp_path_factory: pytest.TempPathFactory,
                distributions: tuple[Path, Path]) -> Path:
    """A new virtual environment with only torch, into which the wheel is installed."""
    folder = tmp_path_factory.mktemp("venv")
    venv.create(folder, with_pip=True, symlinks=True)
    python = folder / "bin" / "python"
    site = Path(checked(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"))
                .stdout.strip())
    (site / "torch-2.13.pth").write_text(f"{torch_site_packages()}\n")
    before = installed(python)
    assert "torch" in before and not {"fx-lsp", "pygls", "libcst", "rich"} & before.keys(), before
    checked(run(python, "-m", "pip", "install", "--quiet", distributions[1], timeout=1200))
    assert installed(python)["fx-lsp"] == project_version()
    return folder


def installed(python: Path) -> dict[str, str]:
    listed = checked(run(python, "-m", "pip", "list", "--format", "freeze"))
    return dict(line.split("==", 1) for line in listed.stdout.splitlines())


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "model.py").write_text(MODEL)
    return folder


def test_twine_check_passes_on_the_wheel_and_the_sdist(distributions: tuple[Path, Path]) -> None:
    completed = checked(run(sys.executable, "-m", "twine", "check", "--strict", *distributions))
    assert completed.stdout.count("PASSED") == 2, completed.stdout


def test_the_distributions_carry_every_file_the_program_reads(
        distributions: tuple[Path, Path]) -> None:
    sdist, wheel = distributions
    package_files = {name for name in tracked_files()
                     if name.startswith(("fxcore/", "fx_lsp/"))}
    assert "fx_lsp/assets/graph.js" in package_files
    assert "fxcore/worker/capture/fx/__init__.py" in package_files
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = {name for name in archive.namelist() if not name.startswith("fx_lsp-")}
    assert in_wheel == package_files
    with tarfile.open(sdist) as archive:
        root = f"{sdist.name.removesuffix('.tar.gz')}/"
        in_sdist = {member.name.removeprefix(root) for member in archive.getmembers()}
    assert package_files | {"pyproject.toml", "README.md", "CHANGELOG.md"} <= in_sdist


def test_check_in_the_new_environment(environment: Path, workspace: Path) -> None:
    fx_lsp = environment / "bin" / "fx-lsp"
    version = checked(run(fx_lsp, "--version", cwd=workspace))
    assert version.stdout.startswith(f"fx-lsp {project_version()}\n")
    # The code documentation comes from the installed package.
    explained = checked(run(fx_lsp, "explain", "FX001", cwd=workspace))
    assert "Control flow" in explained.stdout
    # The program is the installed one, not the repository's.
    where = checked(run(environment / "bin" / "python", "-c",
                        "import fx_lsp, fxcore.worker.capture.fx as fx; "
                        "print(fx_lsp.__file__); print(fx.__file__)", cwd=workspace))
    assert all(line.startswith(str(environment)) for line in where.stdout.splitlines()), \
        where.stdout
    completed = run(fx_lsp, "check", "--no-cache", "model.py", cwd=workspace)
    assert completed.returncode == 1, completed.stderr
    lines = completed.stdout.splitlines()
    assert len(lines) == 2 and lines[0].startswith(FX001_LINE), completed.stdout
    assert lines[1] == SUMMARY


def test_graph_in_the_new_environment(environment: Path, workspace: Path) -> None:
    completed = run(environment / "bin" / "fx-lsp", "graph", "model.py::Fine", "-o",
                    "out.html", cwd=workspace)
    assert completed.returncode == 0, completed.stderr
    assert "out.html: model:Fine, traceable, 4 nodes" in completed.stderr
    page = (workspace / "out.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>model:Fine: torch.fx graph</title>" in page and '"className": "Fine"' in page
    # The drawing code is the installed package's copy of the graph view's bundle.
    bundle = (REPO_ROOT / "fx_lsp" / "assets" / "graph.js").read_text(encoding="utf-8")
    assert bundle.strip() and bundle.strip() in page


async def test_serve_in_the_new_environment(environment: Path, workspace: Path) -> None:
    client = make_test_lsp_client()
    await client.start_io(str(environment / "bin" / "fx-lsp"), "serve", cwd=str(workspace),
                          env=clean_environment())
    try:
        result = await client.initialize_session(types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=from_fs_path(str(workspace)),
            workspace_folders=[types.WorkspaceFolder(uri=from_fs_path(str(workspace)),
                                                     name="ws")]))
        assert result.server_info == types.ServerInfo(name="fx-lsp", version=project_version())
        uri = from_fs_path(str(workspace / "model.py"))
        client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                                 text=MODEL)))
        # The first publish is the trace's (nothing is published before it).
        async with asyncio.timeout(180):
            while uri not in client.diagnostics:
                await asyncio.sleep(0.05)
        (failure,) = client.diagnostics[uri]
        assert (failure.code, failure.range.start.line, failure.range.start.character) == (
            "FX001", 11, 11)
    finally:
        with contextlib.suppress(Exception):
            await client.shutdown_session()
        await client.stop()
