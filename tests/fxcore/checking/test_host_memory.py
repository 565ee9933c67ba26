"""The host keeps per file only what later steps need: the memory of ``fx-lsp check --no-cache``
grows by a few KB per one-line file, however many files the run checks, where a copy per job of
the run's whole set of paths once made it grow with the square of the files (16 GB for
10,000); a job done keeps no parse of its file.

The real command line runs in a subprocess under ``tracemalloc``, twice: the growth of its peak
of traced Python memory from the smaller run to the larger, per added file, is a count of bytes
(not a time), the same on a loaded machine. Files with no class start no worker.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fxcore.host.engine import Engine
from fxcore.host.trace_handle import TraceHandle
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult
from fxcore.workspace.discovery import ParsedFile, parsed_file

from engine_support import REPO_ROOT

#: ``python -c``: for each size, a workspace of that many one-line files and the peak traced
#: memory of ``fx-lsp check --no-cache`` over it, in this one process (the first small runs
#: import what every run needs).
MEASURING_CLI = """
import os, sys, tracemalloc
from fx_lsp.cli.main import main
def workspace(size):
    root = os.path.join(sys.argv[1], f"files_{size}_{len(os.listdir(sys.argv[1]))}")
    os.makedirs(os.path.join(root, "package"))
    with open(os.path.join(root, "pyproject.toml"), "w") as handle:
        handle.write("[project]\\nname = 'memory'\\n")
    for number in range(size):
        with open(os.path.join(root, "package", f"line_{number}.py"), "w") as handle:
            handle.write(f"VALUE_{number} = {number}\\n")
    return root
tracemalloc.start()
for size in map(int, sys.argv[2:]):
    root = workspace(size)
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    status = main(["check", "--no-cache", root])
    assert status in (0, None), status
    print("PEAK", size, tracemalloc.get_traced_memory()[1] - before, flush=True)
"""

#: Bytes of peak memory each added one-line file may cost: about 20 KB now (its job, the
#: pipeline's and the executor's futures, its result); a copy of the run's paths per job costs
#: about 250 bytes per file of the run for each file: over 100 KB a file at 400 files.
MAX_BYTES_PER_FILE = 50_000


@pytest.mark.slow
def test_check_memory_grows_by_a_few_kb_per_file(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", MEASURING_CLI, str(tmp_path), "20", "100", "400"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)})
    assert completed.returncode == 0, completed.stderr
    peaks = {int(size): int(peak) for _, size, peak in
             (line.split() for line in completed.stdout.splitlines()
              if line.startswith("PEAK "))}
    per_file = (peaks[400] - peaks[100]) / 300
    assert per_file < MAX_BYTES_PER_FILE, (peaks, per_file)


class _NoChildEngine(Engine):
    """An engine whose jobs end at once, without a child: what is left of a job once done."""

    def _run_job(self, handle: TraceHandle, parsed: ParsedFile) -> FileResult:
        return FileResult(path=handle.job.path)


def test_a_done_job_keeps_no_parse_of_its_file(tmp_path: Path) -> None:
    """A run keeps every job's handle until it ends: the file's text and tree are let go as
    soon as its job has its result, not held per file for the whole run."""
    source = tmp_path / "model.py"
    source.write_text("from torch import nn\n\n\nclass Net(nn.Module):\n    pass\n")
    engine = _NoChildEngine(workers=1)
    try:
        job = TraceJob(path=str(source), workspace_root=str(tmp_path))
        parsed = parsed_file(str(source), {})
        assert parsed.tree is not None
        handle = engine.submit(job, parsed)
        handle.future.result(timeout=60)
        assert handle.parsed is None
    finally:
        engine.close()
