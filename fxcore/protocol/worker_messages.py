"""What a worker child reports to the engine, and how the engine checks it.

A child imports and runs workspace code, and that code can write to the child's results pipe
as easily as fx-lsp can: whatever arrives there is treated as untrusted data. Each message is
one JSON document (``{"kind": ..., "payload": ...}``) framed by
``multiprocessing.connection.Connection.send_bytes``; the engine reads it with
``recv_bytes(MAX_MESSAGE_BYTES)``, so nothing is ever unpickled, and decodes it with
``fxcore.protocol.result_codec``, so every field has its declared type. On top of the types,
a message must fit the job it answers: verdicts for the job's own file, derived verdicts and
imported files inside the job's workspace, class and package names that are identifiers.

The messages, one small dataclass each, in the order a child sends them: ``Classes`` (the
names of the file's ``nn.Module`` classes it will trace), ``Start`` (the class it starts on:
its time-out starts now), ``Deriving`` and ``Derived`` (a submodule instance of a finished
root, without and with its verdict, per mode), ``Verdict`` (the started class's, one per
configured capture mode), then ``FileDone`` (the job is done) or ``Fatal`` (the job itself
failed: a traceback of fx-lsp's own code).
"""

from __future__ import annotations

import dataclasses
import keyword
import os
import re
from typing import Any, ClassVar

from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult, ModuleResult
from fxcore.protocol.result_codec import InvalidResultData, decode_file_result, decode_module_result
from fxcore.protocol.result_codec import dumps as encode_result
from fxcore.protocol.result_codec import loads as parse_json
from fxcore.workspace.paths import is_workspace_file

#: The largest message the engine reads (a 200,000-node class's verdict is about 60 MB).
MAX_MESSAGE_BYTES = 256 * 1024 * 1024
#: More classes than any file defines: a bound on the retries a lying child could cause.
MAX_CLASSES = 10_000
MAX_FATAL_CHARACTERS = 64 * 1024

_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclasses.dataclass(frozen=True)
class Classes:
    """The names of the file's ``nn.Module`` classes the child will trace."""

    kind: ClassVar[str] = "classes"
    names: list[str]


@dataclasses.dataclass(frozen=True)
class Start:
    """The class the child starts on: its time-out starts now."""

    kind: ClassVar[str] = "start"
    class_name: str


@dataclasses.dataclass(frozen=True)
class _OfModule:
    """A message that carries one class's result."""

    module: ModuleResult


class Deriving(_OfModule):
    """A submodule instance of a finished root the child starts on, without a verdict yet
    (the engine completes it if the child never returns)."""

    kind: ClassVar[str] = "deriving"


class Derived(_OfModule):
    """That submodule instance's verdict, in one mode."""

    kind: ClassVar[str] = "derived"


class Verdict(_OfModule):
    """The started class's verdict in one capture mode (``module.mode``)."""

    kind: ClassVar[str] = "module"


@dataclasses.dataclass(frozen=True)
class FileDone:
    """The file's own result (errors, imported files): the job is done."""

    kind: ClassVar[str] = "file"
    result: FileResult


@dataclasses.dataclass(frozen=True)
class Fatal:
    """The job itself failed: a traceback of fx-lsp's own code."""

    kind: ClassVar[str] = "fatal"
    traceback: str


WorkerMessage = Classes | Start | Deriving | Derived | Verdict | FileDone | Fatal
#: Each message's class by its ``kind`` on the wire.
MESSAGES: dict[str, type[WorkerMessage]] = {
    message.kind: message for message in (Classes, Start, Deriving, Derived, Verdict,
                                          FileDone, Fatal)}


def encode_message(message: WorkerMessage) -> bytes:
    """One message as the bytes a child sends (inside the worker)."""
    (payload,) = (getattr(message, field.name) for field in dataclasses.fields(message))
    return encode_result({"kind": message.kind, "payload": payload})


def decode_message(data: bytes, job: TraceJob) -> WorkerMessage:
    """A message from the child running ``job`` (whose paths are absolute), checked;
    ``InvalidResultData`` when it is not one the job's child may send."""
    message = parse_json(data)
    if not isinstance(message, dict) or message.keys() != {"kind", "payload"} \
            or message["kind"] not in MESSAGES:
        raise InvalidResultData("not a worker message")
    kind, payload = message["kind"], message["payload"]
    if kind == Classes.kind:
        return Classes(_class_names(payload, job))
    if kind == Start.kind:
        return Start(_identifier(payload, "class name"))
    if kind == Verdict.kind:
        return Verdict(_own_module(decode_module_result(payload), job))
    if kind == Deriving.kind:
        return Deriving(_workspace_module(decode_module_result(payload), job))
    if kind == Derived.kind:
        return Derived(_workspace_module(decode_module_result(payload), job))
    if kind == FileDone.kind:
        return FileDone(_own_file(decode_file_result(payload), job))
    if not isinstance(payload, str) or len(payload) > MAX_FATAL_CHARACTERS:
        raise InvalidResultData("fatal: expected a message")
    return Fatal(payload)


def _identifier(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.isidentifier() or keyword.iskeyword(value):
        raise InvalidResultData(f"{what}: not a Python name")
    return value


def _class_names(value: Any, job: TraceJob) -> list[str]:
    if not isinstance(value, list) or len(value) > MAX_CLASSES:
        raise InvalidResultData("classes: expected a list of names")
    names = [_identifier(name, "class name") for name in value]
    if len(set(names)) != len(names):
        raise InvalidResultData("classes: a name is listed twice")
    if job.only_classes and not set(names) <= set(job.only_classes):
        raise InvalidResultData("classes: a class the job did not ask for")
    if set(names) & set(job.reused_classes):
        raise InvalidResultData("classes: a class whose verdicts the host keeps")
    return names


def _configured_mode(module: ModuleResult, job: TraceJob) -> None:
    if module.mode not in job.config.modes:
        raise InvalidResultData("module: a verdict of a capture mode the job did not ask for")


def _own_module(module: ModuleResult, job: TraceJob) -> ModuleResult:
    _identifier(module.class_name, "class name")
    _configured_mode(module, job)
    if module.path != job.path:
        raise InvalidResultData("module: a verdict for another file than the job's")
    return module


def _workspace_module(module: ModuleResult, job: TraceJob) -> ModuleResult:
    _identifier(module.class_name, "class name")
    _configured_mode(module, job)
    if not _in_workspace(module.path, job):
        raise InvalidResultData("derived module: a verdict for a file outside the workspace")
    return module


def _own_file(result: FileResult, job: TraceJob) -> FileResult:
    if result.path != job.path:
        raise InvalidResultData("file: the result of another file than the job's")
    for module in result.modules:
        _own_module(module, job)
    for module in result.derived_modules:
        _workspace_module(module, job)
    if not all(_in_workspace(path, job)
               for path in [*result.imported_files, *result.imported_hashes]):
        raise InvalidResultData("file: an imported file outside the workspace")
    if not all(_SHA256.fullmatch(digest) for digest in result.imported_hashes.values()):
        raise InvalidResultData("file: an imported file's hash is not a SHA-256")
    if not all(_in_workspace(folder, job)
               for folders in result.missing_modules.values() for folder in folders):
        raise InvalidResultData("file: a module missing from a folder outside the workspace")
    for package in result.third_party_packages:
        _identifier(package, "package name")
    for assignment in result.failed_assignments:
        for name in assignment.names:
            _identifier(name, "assigned name")
    if result.from_cache:
        raise InvalidResultData("file: a worker's result cannot come from the cache")
    if result.loop_seconds:
        raise InvalidResultData("file: the engine sums a job's loop seconds, not its worker")
    return result


def _in_workspace(path: str, job: TraceJob) -> bool:
    # Normalised, so that no ``..`` can climb out of the workspace after the check.
    return os.path.isabs(path) and os.path.normpath(path) == path \
        and (path == job.path or is_workspace_file(path, job.workspace_root))
