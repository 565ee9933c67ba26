"""A job reads and parses its file once in the host and once in the worker.

Reads are counted at ``fxcore.workspace.file_access.read_bytes`` (every bounded read of a workspace
file)
and at ``tokenize.open`` (how ``linecache`` reads a file), parses at ``ast.parse``, each only
for the job's own file. The host side runs in a real ``Pipeline`` and ``Engine`` (its worker is a
forked child, whose reads are not counted here); the worker side is a ``Job`` run in this process.
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
import textwrap
import tokenize
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxcore.checking.pipeline import Pipeline
from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.protocol.worker_messages import Derived, Verdict, WorkerMessage
from fxcore.worker.capture.fx.tracing import FxCapture
from fxcore.worker.pipeline.job import Job
from fxcore.workspace import file_access


def _counting(monkeypatch: pytest.MonkeyPatch, path: Path) -> Counter[str]:
    """Reads and parses of the file at ``path`` from now on."""
    counts: Counter[str] = Counter()
    text = path.read_text(encoding="utf-8")
    read_bytes, open_source, parse = file_access.read_bytes, tokenize.open, ast.parse

    def counted_read_bytes(name: str, *args: object, **kwargs: object) -> bytes:
        counts["read"] += os.path.abspath(name) == str(path)
        return read_bytes(name, *args, **kwargs)  # type: ignore[arg-type]

    def counted_open(name: str) -> object:
        counts["read"] += os.path.abspath(name) == str(path)
        return open_source(name)

    def counted_parse(source: object, *args: object, **kwargs: object) -> object:
        counts["parse"] += source == text
        return parse(source, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(file_access, "read_bytes", counted_read_bytes)
    monkeypatch.setattr(tokenize, "open", counted_open)
    monkeypatch.setattr(ast, "parse", counted_parse)
    return counts


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path.resolve()


def test_the_host_reads_and_parses_a_job_file_once(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Call sites and builders (``fxcore.checking.preparation``), the module-level-class check
    and the verdict of a class whose worker died (made by the engine, located from the file)
    share one read and one parse."""
    path = _write(tmp_path, "dies", """
        import os
        from torch import nn


        class Dies(nn.Module):
            def forward(self, x):
                os._exit(3)
    """)
    engine = Engine(workers=1)
    pipeline = Pipeline(engine)
    try:
        # The workspace's call-site index is built once per root, not per job.
        pipeline.call_sites.first_calls(str(tmp_path), [])
        counts = _counting(monkeypatch, path)
        result = pipeline.result_of(TraceJob(path=str(path), workspace_root=str(tmp_path),
                                             config=EngineConfig()))
    finally:
        engine.close()
        pipeline.close()
    [module] = result.modules
    assert module.failures[0].kind == "crash"
    assert module.line == 5 and module.forward is not None  # located from the file's parse
    assert counts == {"read": 1, "parse": 1}


MODELS = """
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self, width):
            super().__init__()
            self.fc = nn.Linear(width, width)

        def forward(self, x):
            return self.fc(x).relu()


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block(4)

        def forward(self, x, mask=None):
            if mask is not None:
                x = x * mask
            return self.block(x)


    class Lengthy(nn.Module):
        def forward(self, x):
            return x * len(x)
"""


@pytest.fixture
def importable(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    yield tmp_path
    sys.path.remove(str(tmp_path))


def test_the_worker_reads_and_parses_a_job_file_once(importable: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Discovery, skip comments, failures located in the file, FX201's look at forward and
    the submodule Block (found in this same file) share one read and one parse."""
    path = _write(importable, "parsed_once_models", MODELS)
    job = TraceJob(path=str(path), workspace_root=str(importable), config=EngineConfig())
    counts = _counting(monkeypatch, path)
    sent: list[WorkerMessage] = []
    Job(job, sent.append, [FxCapture()]).run()
    verdicts = {message.module.class_name: message.module for message in sent
                if isinstance(message, Verdict | Derived)}
    assert verdicts["Net"].status == "traceable"
    assert "FX201" in {hint.code for hint in verdicts["Net"].hints}
    assert verdicts["Block"].arguments is not None
    assert verdicts["Lengthy"].failures[0].line == 27  # located through the file's lines
    assert counts == {"read": 1, "parse": 1}
