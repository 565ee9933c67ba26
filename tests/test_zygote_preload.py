"""The zygote preloads the installed packages earlier jobs imported, so later children start
with them (a timm or transformers workspace does not import them again in every child)."""

from __future__ import annotations

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
