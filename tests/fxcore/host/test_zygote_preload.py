"""The zygote preloads the installed packages earlier jobs imported, so later children start
with them (a timm or transformers workspace does not import them again in every child)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fxcore.host.engine import Engine

from engine_support import Workspace

FIRST = """
import hypothesis
from torch import nn


class UsesHypothesis(nn.Module):
    def forward(self, x):
        return x
"""

SECOND = """
import os
import sys
from torch import nn

with open(os.path.join(os.path.dirname(__file__), "preloaded.txt"), "w") as marker:
    marker.write(str("hypothesis" in sys.modules))


class Later(nn.Module):
    def forward(self, x):
        return x
"""


def test_packages_a_job_imported_are_preloaded_for_later_children(workspace: Workspace) -> None:
    workspace.write("first.py", FIRST)
    workspace.write("second.py", SECOND)
    engine = Engine(workers=1)
    try:
        first = workspace.check(engine, "first.py")
        assert "hypothesis" in first.third_party_packages
        assert "torch" not in first.third_party_packages  # the zygote had it already
        workspace.check(engine, "second.py")
    finally:
        engine.close()
    assert (workspace.root / "preloaded.txt").read_text() == "True"


CHILD_IMPORTS = """
import sys

import fxcore.host.preload
import fxcore.host.zygote

before = set(sys.modules)
# What a job's child imports before it runs the job (fxcore.host.zygote._run_child).
from multiprocessing.connection import Connection
from fxcore.host import sandbox
from fxcore.protocol.worker_messages import WorkerMessage, encode_message
from fxcore.worker.pipeline.job import run_job

print(sorted(set(sys.modules) - before))
"""


@pytest.mark.slow
def test_the_zygote_has_imported_what_each_child_imports_before_its_job() -> None:
    """Else every child imports it again: the sandbox imports the result cache, whose
    fingerprint hashes fxcore's own files (30 ms of CPU a child)."""
    done = subprocess.run([sys.executable, "-c", CHILD_IMPORTS], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "[]"
