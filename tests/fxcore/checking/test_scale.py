"""``fx-lsp check`` does per-run work once, not once per file: the workspace's call-site index is
built by one walk per run, however many files (jobs) the run checks, and still finds the
constructor calls written in the workspace.

The real CLI runs in a subprocess whose ``os.walk`` counts its calls (printed at exit).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine_support import REPO_ROOT, Workspace

#: ``python -c``: count the walks of the workspace, run ``python -m fx_lsp`` with the
#: remaining arguments, print the count to stderr at exit.
COUNTING_CLI = """
import atexit, os, runpy, sys
real_walk, root = os.walk, os.path.realpath(sys.argv[1])
walks = []
def counting_walk(top, *args, **kwargs):
    if os.path.realpath(top) == root:
        walks.append(top)
    return real_walk(top, *args, **kwargs)
os.walk = counting_walk
atexit.register(lambda: print(f"WORKSPACE-WALKS {len(walks)}", file=sys.stderr))
sys.argv = ["fx_lsp", *sys.argv[2:]]
runpy.run_module("fx_lsp", run_name="__main__", alter_sys=True)
"""

NEEDS_WIDTH = '''
from torch import nn


class NeedsWidth(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x)
'''

README = '''
# Example

```python
model = NeedsWidth(width=12)
```
'''


def checked_with_walks(root: Path) -> tuple[dict[str, Any], int]:
    """The JSON report of ``fx-lsp check`` over ``root``, and how often it walked ``root``."""
    completed = subprocess.run(
        [sys.executable, "-c", COUNTING_CLI, str(root),
         "check", "--no-cache", "--format", "json", str(root)],
        capture_output=True, text=True, timeout=300, cwd=root.parent,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert completed.returncode in (0, 1), completed.stderr
    (count,) = [line.split()[1] for line in completed.stderr.splitlines()
                if line.startswith("WORKSPACE-WALKS ")]
    return json.loads(completed.stdout), int(count)


def workspace_with(root: Path, tiny_files: int) -> Path:
    root.mkdir()
    workspace = Workspace(root)
    workspace.write("model.py", NEEDS_WIDTH)
    workspace.write("README.md", README)
    for number in range(tiny_files):
        workspace.write(f"tiny/tiny_{number}.py", f"def tiny_{number}(x):\n    return x\n")
    return root


@pytest.mark.slow  # over 12 s in the loaded fast tier
def test_the_call_site_index_is_walked_once_per_run_not_once_per_job(tmp_path: Path) -> None:
    few = workspace_with(tmp_path / "few", tiny_files=2)
    many = workspace_with(tmp_path / "many", tiny_files=12)
    few_report, few_walks = checked_with_walks(few)
    many_report, many_walks = checked_with_walks(many)

    # Ten more jobs, not one more walk (main walked the workspace for every job: 4 and 14).
    assert many_walks == few_walks
    assert few_walks <= 2  # the file discovery and the index
    # The index still finds the README's call.
    for report in (few_report, many_report):
        (module,) = report["modules"]
        assert module["status"] == "traceable"
        assert module["arguments"] == {"from": "call-site", "args": [],
                                       "kwargs": {"width": "12"}, "site": "README.md:4"}
