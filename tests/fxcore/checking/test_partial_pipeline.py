"""A running job's verdicts so far through the real pipeline and engine: a job whose last
class waits for a file the test creates gives the classes before it while it runs
(``CheckHandle.partial``), and its result then gives each of them the same verdicts."""

from __future__ import annotations

import threading
from pathlib import Path

from fxcore.checking.pipeline import Pipeline
from fxcore.host.engine import Engine
from fxcore.model.job_spec import TraceJob

from engine_support import Workspace

#: Classes judged before the gate.
CLASSES = 3


def _source(release: Path) -> str:
    parts = ["import os", "import time", "", "from torch import nn", ""]
    for number in range(CLASSES):
        parts.append(f"class Net{number}(nn.Module):\n"
                     f"    def forward(self, x):\n"
                     f"        return x * len(x) + {number}\n")
    parts.append("class Gate(nn.Module):\n"
                 "    def forward(self, x):\n"
                 f"        while not os.path.exists({str(release)!r}):\n"
                 "            time.sleep(0.05)\n"
                 "        return x + 1\n")
    return "\n".join(parts)


def test_a_running_job_gives_its_verdicts_so_far_and_its_result_keeps_them(
        engine: Engine, workspace: Workspace, tmp_path: Path) -> None:
    release = tmp_path / "release"
    path = workspace.write("models.py", _source(release))
    pipeline = Pipeline(engine)
    woken = threading.Event()
    try:
        handle = pipeline.submit(TraceJob(path=str(path), workspace_root=str(workspace.root)),
                                 ready=woken.set)
        so_far = []
        # Woken once per snapshot: until the classes before the gate are all in.
        while len(so_far) < CLASSES:
            assert woken.wait(300), "no verdicts came"
            woken.clear()
            partial = handle.partial()
            assert partial is not None
            so_far = partial.result.modules
        assert not handle.future.done()  # the gate holds the job
        assert [module.class_name for module in so_far] == [f"Net{n}" for n in range(CLASSES)]
        assert partial.unjudged == 1
        release.touch()
        result = handle.future.result(timeout=300)
    finally:
        pipeline.close()
    assert [module.class_name for module in result.modules] == \
        [*(f"Net{n}" for n in range(CLASSES)), "Gate"]
    assert result.modules[:CLASSES] == so_far
