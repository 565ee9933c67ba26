"""What a worker child sends back is data: JSON, checked field by field and against the job,
never unpickled; installed packages are preloaded only from the engine's own allow-list."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import sysconfig
import types
from pathlib import Path
from typing import Any

import pytest

from fxcore.host.child_run import ChildAttempt
from fxcore.host.engine import Engine
from fxcore.host.installed_packages import installed_import_names, preloadable
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import (
    Arguments,
    ExampleInputs,
    Failure,
    FileResult,
    Frame,
    GraphNodeInfo,
    Hint,
    ModuleResult,
    Range,
    RecompileSubject,
)
from fxcore.protocol import result_codec
from fxcore.protocol.result_codec import InvalidResultData
from fxcore.protocol.worker_messages import (
    MESSAGES,
    Classes,
    FileDone,
    Verdict,
    decode_message,
    encode_message,
)
from fxcore.worker.source.import_overlay import ModulesLoadedSince, imported_third_party_packages

from engine_support import Workspace

ROOT = "/ws"
JOB = TraceJob(path="/ws/pkg/net.py", workspace_root=ROOT)


def module_result(path: str = JOB.path, name: str = "Net") -> ModuleResult:
    return ModuleResult(
        **Range(3, 7, 3, 10).at(path), class_name=name, qualified_name=f"pkg.net:{name}",
        status="failed", forward=Range(4, 5, 4, 12),
        arguments=Arguments(origin="guessed", args=["2"]),
        failures=[Failure(**Range(5, 9, 5, 15).at(path), code="FX002", kind="len",
                          message="len", frames=[Frame(**Range(5, 9, 5, 15).at(path),
                                                       function="forward")])],
        line_nodes={(path, 5): [GraphNodeInfo("x", "placeholder", "x")]},
        # what a recompile's quick fixes read (the steps of ``for step in x``)
        hints=[Hint(**Range(6, 9, 6, 20).at(path), code="FX506", kind="recompiles-every-size",
                    message="recompiles", recompile=RecompileSubject("size", "x", 0))],
    )


def message(kind: str, payload: Any) -> bytes:
    """The bytes of the message of ``kind`` (its name on the wire) holding ``payload``."""
    return encode_message(MESSAGES[kind](payload))


def test_every_message_a_child_sends_comes_back_equal() -> None:
    file_result = FileResult(path=JOB.path, imported_files=[JOB.path, "/ws/pkg/layers.py"],
                             imported_hashes={JOB.path: "a" * 64},
                             third_party_packages=["timm"])
    for kind, payload in [("classes", ["Net", "Block"]), ("start", "Net"),
                          ("module", module_result()),
                          ("deriving", module_result("/ws/pkg/layers.py", "Block")),
                          ("derived", module_result("/ws/pkg/layers.py", "Block")),
                          # on the inputs its parent passes it
                          ("derived", dataclasses.replace(
                              module_result("/ws/pkg/layers.py", "Block"),
                              inputs=ExampleInputs("parent", {"x": "float32[2, 8, 4, 4]"},
                                                   "as Net passes them to blocks.0"))),
                          ("file", file_result), ("fatal", "Traceback ...")]:
        assert decode_message(message(kind, payload), JOB) == MESSAGES[kind](payload)


def mangled(change: Any) -> bytes:
    data = json.loads(message("module", module_result()))
    change(data["payload"])
    return json.dumps(data).encode()


@pytest.mark.parametrize("data", [
    b"\x80\x04\x95...",  # a pickle
    b'{"kind": "module"}',
    b'{"kind": "exec", "payload": "print(1)"}',
    b'{"kind": "start", "payload": "not a name"}',
    b'{"kind": "classes", "payload": ["Net", "Net"]}',
    b'{"kind": "fatal", "payload": NaN}',
    b"[" * 100_000,
    mangled(lambda payload: payload.update(line="3")),
    mangled(lambda payload: payload.update(status="fine")),
    mangled(lambda payload: payload.update(extra=1)),
    mangled(lambda payload: payload.pop("failures")),
    mangled(lambda payload: payload["failures"][0].update(frames={"a": 1})),
    mangled(lambda payload: payload.update(line_nodes={"x": []})),
    mangled(lambda payload: payload.update(trace_seconds=True)),
    mangled(lambda payload: payload["hints"][0]["recompile"].update(kind="sizes")),
    mangled(lambda payload: payload["hints"][0]["recompile"].update(dimension="0")),
    mangled(lambda payload: payload["hints"][0]["recompile"].pop("name")),
    mangled(lambda payload: payload["hints"][0].update(recompile="x")),
    # a verdict for another file than the job's, or a derived one outside the workspace
    mangled(lambda payload: payload.update(path="/ws/pkg/other.py")),
    message("derived", module_result("/etc/net.py")),
    message("derived", module_result("/ws/../etc/net.py")),
    message("file", FileResult(path="/ws/pkg/other.py")),
    message("file", FileResult(path=JOB.path, imported_files=["/usr/lib/python3/os.py"])),
    message("file", FileResult(path=JOB.path, imported_hashes={JOB.path: "not a hash"})),
    message("file", FileResult(path=JOB.path, third_party_packages=["os; rm -rf"])),
    message("file", FileResult(path=JOB.path, from_cache=True)),
    message("file", FileResult(path=JOB.path, loop_seconds=1.0)),
])
def test_a_message_no_child_of_fx_lsp_sends_is_refused(data: bytes) -> None:
    with pytest.raises(InvalidResultData):
        decode_message(data, JOB)


def test_the_seconds_of_compiles_loop_of_calls_come_back_and_only_as_a_number() -> None:
    job = TraceJob(path=JOB.path, workspace_root=ROOT, config=EngineConfig(modes=("compile",)))
    # compile mode's capture, and the part of it its loop of calls took
    result = dataclasses.replace(module_result(), mode="compile", trace_seconds=1.25,
                                 loop_seconds=0.75)
    decoded = decode_message(message("module", result), job)
    assert decoded == MESSAGES["module"](result)
    assert isinstance(decoded, Verdict) and decoded.module.loop_seconds == 0.75
    for change in [lambda payload: payload.update(loop_seconds="0.75"),
                   lambda payload: payload.update(loop_seconds=None),
                   lambda payload: payload.update(loop_seconds=True),
                   lambda payload: payload.pop("loop_seconds")]:
        data = json.loads(message("module", result))
        change(data["payload"])
        with pytest.raises(InvalidResultData):
            decode_message(json.dumps(data).encode(), job)


def test_a_child_asked_for_some_classes_cannot_announce_others() -> None:
    job = TraceJob(path=JOB.path, workspace_root=ROOT, only_classes=["Net"])
    assert decode_message(message("classes", ["Net"]), job) == Classes(["Net"])
    with pytest.raises(InvalidResultData):
        decode_message(message("classes", ["Net", "Other"]), job)


#: Model-file code that writes ``data``, framed as the results pipe frames it, into every pipe
#: the worker may write to besides stdout and stderr: the results pipe among them.
WRITE_INTO_EVERY_PIPE = """
import os
import stat


def write_into_every_pipe(data):
    for fd in range(3, 256):
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                continue
            with open(f"/proc/self/fdinfo/{fd}") as info:
                flags = int(info.read().split("flags:")[1].split()[0], 8)
            if flags & os.O_WRONLY:
                os.write(fd, len(data).to_bytes(4, "big") + data)
        except OSError:
            continue
"""

NET = """

class Net(nn.Module):
    def forward(self, x):
        return x + 1
"""

FORGED_PICKLE = WRITE_INTO_EVERY_PIPE + """
import pickle

import torch
from torch import nn


class Payload:
    def __reduce__(self):
        # Unpickling this creates the marker file in whatever process loads it.
        return (open, (MARKER, "w"))


write_into_every_pipe(pickle.dumps(("module", Payload())))
""" + NET


def test_a_pickle_written_into_the_results_pipe_is_never_loaded(
        engine: Engine, workspace: Workspace, tmp_path: Path) -> None:
    marker = tmp_path / "unpickled-in-the-host"
    workspace.write("forged.py", FORGED_PICKLE.replace("MARKER", repr(str(marker))))
    result = workspace.check(engine, "forged.py")
    assert not marker.exists(), "the engine unpickled what workspace code wrote"
    assert [error.code for error in result.errors] == ["FX102"]
    assert "not a result of this job" in result.errors[0].message
    # Nothing that child reported counts (it wrote before it announced any class).
    assert result.modules == []


FORGED_VERDICT = WRITE_INTO_EVERY_PIPE + """
import torch
from torch import nn

from fxcore.model.results import ModuleResult
from fxcore.protocol.worker_messages import Verdict, encode_message

write_into_every_pipe(encode_message(Verdict(ModuleResult(
    path="/etc/passwd", line=1, column=1, end_line=1, end_column=2, class_name="Net",
    qualified_name="x:Net", status="traceable"))))
""" + NET


def test_a_well_formed_verdict_for_another_file_is_refused(
        engine: Engine, workspace: Workspace) -> None:
    workspace.write("forged.py", FORGED_VERDICT)
    result = workspace.check(engine, "forged.py")
    assert all(module.path == str(workspace.root / "forged.py") for module in result.modules)
    assert not any(module.status == "traceable" for module in result.modules)
    assert "not a result of this job" in result.errors[0].message


def test_results_survive_the_codec_unchanged(engine: Engine, workspace: Workspace) -> None:
    """A real result (graph, line nodes, shapes, failures with frames) round-trips."""
    workspace.write("net.py", """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x) + len(x)
        """)
    result = workspace.check(engine, "net.py")
    assert result.modules and result.modules[0].failures
    data = result_codec.loads(result_codec.dumps(result))
    assert result_codec.decode_file_result(data) == result


class ScriptedEngine(Engine):
    """An engine whose children are replaced by scripted attempts (no process)."""

    def __init__(self, attempts: list[ChildAttempt]) -> None:
        super().__init__(workers=1)
        self.attempts = attempts
        self.asked: list[list[str]] = []

    def _run_child(self, handle: Any, job: TraceJob) -> ChildAttempt:
        self.asked.append(list(job.only_classes))
        return self.attempts.pop(0)


def test_every_announced_class_gets_a_verdict_whatever_its_child_did(
        workspace: Workspace) -> None:
    path = workspace.write("two.py", """
        from torch import nn

        class A(nn.Module):
            def forward(self, x):
                return x

        class B(nn.Module):
            def forward(self, x):
                return x
        """)
    done_a = module_result(str(path), "A")
    engine = ScriptedEngine([
        # A's verdict arrives, then the child exits (status 0) before it starts on B.
        ChildAttempt(classes=["A", "B"], modules=[done_a], ended_by="crash",
                 exit_description="exited with status 0"),
        # The child for B exits before it starts B, again.
        ChildAttempt(classes=["B"], ended_by="crash", exit_description="exited with status 0"),
    ])
    try:
        result = workspace.check(engine, "two.py")
    finally:
        engine.close()
    assert engine.asked == [[], ["B"]]
    assert result.errors == []
    verdicts = {module.class_name: module for module in result.modules}
    assert verdicts["A"] == done_a
    assert verdicts["B"].failures[0].code == "FX102"
    assert "exited with status 0" in verdicts["B"].failures[0].message


def test_only_installed_site_packages_are_preloaded() -> None:
    # Stand-ins for what a worker (or a crafted cache entry) may ask for.
    asked = ["timm", "os", "antigravity", "no_such_package_anywhere", "fx_lsp", "fxcore"]
    allowed = preloadable(asked)
    assert "timm" in allowed
    assert not {"os", "antigravity", "no_such_package_anywhere"} & set(allowed)
    # fx-lsp installed editable (`pip install -e .`, as the tests run it) lists its names
    # like any distribution, but its files are a source tree, not site-packages.
    import fxcore
    editable = "site-packages" not in os.path.realpath(fxcore.__file__)
    assert "fxcore" in installed_import_names()
    assert ("fxcore" in allowed) is not editable


def test_the_engine_asks_the_zygote_for_allowed_packages_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    class RecordingZygote:
        def __init__(self) -> None:
            self.preloaded: list[list[str]] = []

        def preload(self, packages: list[str]) -> None:
            self.preloaded.append(packages)

    monkeypatch.delenv("FX_LSP_NO_PRELOAD", raising=False)
    engine = Engine(workers=1)
    zygote = RecordingZygote()
    engine._zygote = zygote  # type: ignore[assignment]
    try:
        engine._preload(["antigravity", "timm", "this"])
        engine._preload(["timm", "antigravity"])
    finally:
        engine._zygote = None
        engine.close()
    assert zygote.preloaded == [["timm"]]


def test_an_honest_workers_package_names_pass_the_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed modules loaded by file under names that are no import names (sysconfig's
    ``_sysconfigdata__linux_x86_64-linux-gnu``, mypyc's ``81d2...__mypyc``) are not reported:
    the engine refuses a file result naming them, and nothing could preload them anyway."""
    purelib = sysconfig.get_paths()["purelib"]
    since = ModulesLoadedSince()
    for name in ("_sysconfigdata__linux_x86_64-linux-gnu", "81d243bd2c585b0f4821__mypyc",
                 "fx_lsp_test_installed_package"):
        module = types.ModuleType(name)
        module.__file__ = os.path.join(purelib, f"{name}.py")
        monkeypatch.setitem(sys.modules, name, module)
    packages = imported_third_party_packages(since, lambda _path: False)
    assert packages == ["fx_lsp_test_installed_package"]
    result = FileResult(path=JOB.path, third_party_packages=packages)
    assert decode_message(message("file", result), JOB) == FileDone(result)
