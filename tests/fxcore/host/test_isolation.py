"""User code runs in worker children that are contained whatever they do."""

from __future__ import annotations

import os

import pytest

from fxcore.host import child_run
from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig
from fxcore.model.timeout_scale import timeout_scale

from engine_support import Workspace

GOOD = """
import torch
from torch import nn


class Good(nn.Module):
    def forward(self, x):
        return x + 1
"""

MISBEHAVING = {
    "hang": ("import time\n\n\nclass Bad(nn.Module):\n    def forward(self, x):\n"
             "        while True:\n            time.sleep(0.1)\n", "timeout"),
    "segfault": ("import ctypes\n\n\nclass Bad(nn.Module):\n    def forward(self, x):\n"
                 "        ctypes.string_at(0)\n        return x\n", "crash"),
    "exit": ("import os\n\n\nclass Bad(nn.Module):\n    def forward(self, x):\n"
             "        os._exit(3)\n", "crash"),
    "memory": ("class Bad(nn.Module):\n    def forward(self, x):\n        hoard = []\n"
               "        while True:\n            hoard.append(bytearray(64 * 1024 * 1024))\n",
               "error"),
}


def first_child_unscaled(monkeypatch: pytest.MonkeyPatch) -> None:
    """The host's time-out at its own size for the first child of a job, the one that meets
    the hanging class, and at the suite's scale for the next, whose class's verdict is
    compared: a loaded machine cannot time it out."""
    scales = iter([1.0])
    monkeypatch.setattr(child_run, "timeout_scale", lambda: next(scales, timeout_scale()))


@pytest.mark.parametrize("behaviour", sorted(MISBEHAVING))
def test_misbehaving_class_is_contained_and_the_next_class_traces(
        engine: Engine, workspace: Workspace, behaviour: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the hang meets the time-out; a crash, an exit or a full memory limit is reached
    # however busy the machine is, and at the unscaled 3 s a loaded machine's worker was
    # stopped before its allocations reached the limit ("timeout" for "error").
    if behaviour == "hang":
        first_child_unscaled(monkeypatch)
    body, kind = MISBEHAVING[behaviour]
    workspace.write("bad.py", "import torch\nfrom torch import nn\n" + body + GOOD)
    config = EngineConfig(timeout=3.0, memory_limit_mb=512)
    result = workspace.check(engine, "bad.py", config=config)
    by_name = {module.class_name: module for module in result.modules}
    bad, good = by_name["Bad"], by_name["Good"]
    assert bad.status == "failed"
    assert bad.failures[0].kind == kind, bad.failures[0].message
    if behaviour == "exit":
        assert "exited with status 3" in bad.failures[0].message
    if behaviour == "segfault":
        assert "SIGSEGV" in bad.failures[0].message
    if behaviour == "memory":
        assert "MemoryError" in bad.failures[0].message
    assert good.status == "traceable"
    # And the engine still serves the next job.
    workspace.write("good.py", GOOD)
    assert workspace.check(engine, "good.py").modules[0].status == "traceable"


def test_fifty_megabytes_of_output_are_captured_not_leaked(
        engine: Engine, workspace: Workspace, capfd: pytest.CaptureFixture[str]) -> None:
    workspace.write("loud.py", """
        import sys
        import torch
        from torch import nn

        sys.stdout.write("x" * (50 * 1024 * 1024))
        print("END-OF-IMPORT-OUTPUT")


        class Loud(nn.Module):
            def forward(self, x):
                print("tracing", file=sys.stderr)
                return x * 2
        """)
    result = workspace.check(engine, "loud.py")
    assert result.modules[0].status == "traceable"
    assert "END-OF-IMPORT-OUTPUT" in result.output
    assert result.output.rstrip().endswith("tracing")
    assert len(result.output) <= 64 * 1024
    captured = capfd.readouterr()
    assert "END-OF-IMPORT-OUTPUT" not in captured.out + captured.err


@pytest.mark.parametrize(
    ("ending", "kind"),
    [("time.sleep(60)", "timeout"), ("os._exit(3)", "crash")],
)
def test_a_time_out_or_crash_quotes_the_last_lines_the_worker_printed(
        engine: Engine, workspace: Workspace, ending: str, kind: str,
        request: pytest.FixtureRequest) -> None:
    if kind == "timeout":  # the crash at the suite's scale, which load cannot reach
        request.getfixturevalue("unscaled_timeouts")
    workspace.write("chatty.py", f"""
        import os
        import time
        from torch import nn


        class Chatty(nn.Module):
            def forward(self, x):
                for shard in range(1, 9):
                    print(f"loading shard {{shard}} of 8")
                print("waiting for the parameter server")
                {ending}
        """)
    result = workspace.check(engine, "chatty.py", config=EngineConfig(timeout=3.0))
    (failure,) = result.modules[0].failures
    assert (failure.code, failure.kind) == ("FX102", kind), failure.message
    quoted = failure.message.split("Last output of the worker:\n", 1)[1].splitlines()
    assert [line.strip() for line in quoted] == [
        "loading shard 5 of 8", "loading shard 6 of 8", "loading shard 7 of 8",
        "loading shard 8 of 8", "waiting for the parameter server",
    ]


def test_a_crash_while_importing_quotes_what_the_worker_printed(
        engine: Engine, workspace: Workspace) -> None:
    workspace.write("quits.py", "import os\nprint('no GPU found')\nos._exit(4)\nclass Net: ...\n")
    (error,) = workspace.check(engine, "quits.py").errors
    assert error.code == "FX102"
    assert error.message.endswith("Last output of the worker:\n    no GPU found")


def test_exit_during_import_is_a_file_error(engine: Engine, workspace: Workspace) -> None:
    # A file that defines a class (only those are imported) and exits while importing.
    workspace.write("quits.py", "import os\nos._exit(4)\nclass Net: ...\n")
    result = workspace.check(engine, "quits.py")
    (error,) = result.errors
    assert (error.code, error.kind) == ("FX102", "crash")
    assert "exited with status 4" in error.message


def test_sys_exit_during_import_is_an_import_error(engine: Engine, workspace: Workspace) -> None:
    workspace.write("quits.py", "import sys\nsys.exit('no thanks')\nclass Net: ...\n")
    (error,) = workspace.check(engine, "quits.py").errors
    assert (error.code, error.kind, error.line) == ("FX100", "import", 2)
    assert "SystemExit: no thanks" in error.message


def test_cancel_kills_the_running_child(engine: Engine, workspace: Workspace) -> None:
    from concurrent.futures import CancelledError

    workspace.write("slow.py", """
        import time
        import torch
        from torch import nn


        class Slow(nn.Module):
            def forward(self, x):
                time.sleep(60)
                return x
        """)
    from fxcore.model.job_spec import TraceJob

    handle = engine.submit(TraceJob(path=str(workspace.root / "slow.py"),
                                    workspace_root=str(workspace.root)))
    import time

    time.sleep(1.0)
    handle.cancel()
    with pytest.raises(CancelledError):
        handle.future.result(timeout=10)


def test_user_code_does_not_run_in_the_calling_process(
        engine: Engine, workspace: Workspace) -> None:
    marker = workspace.root / "ran-in.txt"
    workspace.write("marks.py", f"""
        import os
        import torch
        from torch import nn

        with open({str(marker)!r}, "w") as handle:
            handle.write(str(os.getpid()))


        class M(nn.Module):
            def forward(self, x):
                return x
        """)
    workspace.check(engine, "marks.py")
    assert int(marker.read_text()) != os.getpid()
