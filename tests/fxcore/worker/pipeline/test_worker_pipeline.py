"""The per-class pipeline of a worker, in this process (no fork): build -> capture -> verdict,
stage by stage, with the fx capture and with a capture mode of the test's own.

The end-to-end tests drive the same code through forked workers; these pin each stage's
contract so that a new capture mode can rely on it.
"""

from __future__ import annotations

import importlib
import itertools
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import pytest
import torch
from plain_capture import PlainSymbolicTrace

from fxcore.model.job_spec import EngineConfig, ModuleConfig, TraceJob
from fxcore.model.results import ModuleResult
from fxcore.protocol.worker_messages import Classes, FileDone, Verdict, WorkerMessage
from fxcore.worker.building.instances import Built, build_class
from fxcore.worker.capture.fx.tracing import FxCapture
from fxcore.worker.capture.modes import CAPTURES
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import UNDECIDED
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.pipeline.job import Job
from fxcore.worker.pipeline.verdict import module_verdict
from fxcore.workspace.discovery import top_level_classes

_names = itertools.count()


class LoadedFile:
    """A workspace file imported into this process under a fresh module name."""

    def __init__(self, root: Path, text: str, config: EngineConfig | None = None) -> None:
        self.name = f"pipeline_model_{next(_names)}"
        self.path = root / f"{self.name}.py"
        self.path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        self.job = TraceJob(path=str(self.path), workspace_root=str(root),
                            config=config or EngineConfig())
        self.context = JobContext(self.job)
        self.sources = top_level_classes(self.path.read_text(encoding="utf-8"))

    @property
    def module(self) -> ModuleType:
        """The file imported (a ``Job`` imports it itself: run it before asking for this)."""
        return importlib.import_module(self.name)

    def built(self, name: str) -> Built | ModuleResult:
        return build_class(self.context, getattr(self.module, name), self.sources[name])

    def target(self, name: str) -> CaptureTarget:
        built = self.built(name)
        assert isinstance(built, Built), built
        return CaptureTarget(getattr(self.module, name), self.sources[name], built.model,
                             built.instantiated_on, built.concrete_args)


@pytest.fixture
def loaded(tmp_path: Path) -> Iterator[Callable[..., LoadedFile]]:
    sys.path.insert(0, str(tmp_path))
    yield lambda text, config=None: LoadedFile(tmp_path, text, config)
    sys.path.remove(str(tmp_path))


def line_of(snippet: str) -> int:
    lines = textwrap.dedent(MODELS).lstrip("\n").splitlines()
    return next(number for number, text in enumerate(lines, 1) if snippet in text)


MODELS = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.unused = nn.Linear(width, 2)

    def forward(self, x):
        return self.fc(x).relu()


class Lengthy(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x) * len(x)


class NeedsArguments(nn.Module):
    def __init__(self, secret_handle):
        super().__init__()

    def forward(self, x):
        return x


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        raise RuntimeError("no")

    def forward(self, x):
        return x
"""


def test_building_uses_defaults_on_meta_and_says_so(loaded) -> None:
    file = loaded(MODELS)
    built = file.built("Net")
    assert isinstance(built, Built)
    assert built.instantiated_on == "meta"
    assert built.model.fc.weight.is_meta
    assert built.arguments.origin == "defaults"


def test_building_that_cannot_give_an_instance_gives_the_verdict(loaded) -> None:
    file = loaded(MODELS, EngineConfig(guess_arguments=False))
    needs = file.built("NeedsArguments")
    assert isinstance(needs, ModuleResult) and needs.status == "not-traced"
    assert "secret_handle" in (needs.reason or "")
    broken = file.built("Broken")
    assert isinstance(broken, ModuleResult) and broken.status == "failed"
    assert broken.failures[0].code == "FX101"


def test_building_takes_configured_arguments_first(loaded) -> None:
    file = loaded(MODELS)
    file.job.config.modules[f"{file.name}:Net"] = ModuleConfig(kwargs={"width": 3})
    built = file.built("Net")
    assert isinstance(built, Built)
    assert built.arguments.origin == "config"
    assert built.model.fc.in_features == 3


def test_the_fx_capture_records_the_graph_and_what_made_it(loaded) -> None:
    file = loaded(MODELS)
    record = FxCapture().capture(file.context, file.target("Net"), UNDECIDED)
    assert record.mode == "fx" and record.complete and record.failures == []
    assert [node.op for node in record.graph.nodes] == \
        ["placeholder", "call_module", "call_method", "output"]
    assert record.module_order == ["fc"]
    assert {line for origin in record.node_origins for _path, line in origin.lines} == \
        {line_of("self.fc(x).relu()")}


def test_the_fx_capture_locates_every_failure_and_keeps_the_recovered_graph(loaded) -> None:
    file = loaded(MODELS)
    record = FxCapture().capture(file.context, file.target("Lengthy"), UNDECIDED)
    assert not record.complete and record.graph_module is None
    assert [(failure.code, failure.line) for failure in record.failures] == \
        [("FX002", line_of("len(x)"))]
    assert record.graph is not None  # recovered past the failure


def test_the_verdict_reads_only_the_record(loaded) -> None:
    file = loaded(MODELS)
    target = file.target("Net")
    capture = FxCapture()
    result = module_verdict(file.context, capture, target, UNDECIDED,
                            capture.capture(file.context, target, UNDECIDED))
    assert result.status == "traceable"
    assert result.node_count == 4
    assert "self.fc(x)" in (result.generated_code or "")
    assert [hint.member for hint in result.hints if hint.code == "FX200"] == ["unused"]
    assert result.inputs is not None and result.output_shape is not None
    assert (str(file.path), line_of("self.fc(x).relu()")) in result.line_nodes


def test_a_capture_mode_of_its_own_runs_through_the_whole_job(loaded) -> None:
    file = loaded(MODELS, EngineConfig(guess_arguments=False))
    sent: list[WorkerMessage] = []
    Job(file.job, sent.append, [PlainSymbolicTrace()]).run()
    assert isinstance(sent[0], Classes) and isinstance(sent[-1], FileDone)
    verdicts = {message.module.class_name: message.module for message in sent
                if isinstance(message, Verdict)}
    assert verdicts["Net"].status == "traceable"
    assert verdicts["Net"].generated_code is not None
    assert verdicts["Lengthy"].status == "failed"
    # No recovery: one failure, where symbolic_trace raised (its own frames, located on
    # the innermost workspace frame: the len() call).
    assert [failure.code for failure in verdicts["Lengthy"].failures] == ["FX199"]
    assert verdicts["Lengthy"].failures[0].line == line_of("len(x)")
    assert verdicts["NeedsArguments"].status == "not-traced"
    assert verdicts["Broken"].failures[0].code == "FX101"
    file_result = sent[-1].result
    assert str(file.path) in file_result.imported_files


def test_shapes_need_the_complete_graph_only(loaded) -> None:
    """Shapes propagate over any mode's complete graph: a record from the toy mode gets the
    same shapes as the fx capture."""
    file = loaded(MODELS)
    target = file.target("Net")
    toy, fx_capture = PlainSymbolicTrace(), FxCapture()
    toy_result = module_verdict(file.context, toy, target, UNDECIDED,
                                toy.capture(file.context, target, UNDECIDED))
    fx_result = module_verdict(file.context, fx_capture, target, UNDECIDED,
                               fx_capture.capture(file.context, target, UNDECIDED))
    assert toy_result.output_shape == fx_result.output_shape is not None
    assert toy_result.inputs == fx_result.inputs


def test_meta_instances_stay_on_meta(loaded) -> None:
    file = loaded(MODELS)
    target = file.target("Net")
    FxCapture().capture(file.context, target, UNDECIDED)
    assert all(parameter.device == torch.device("meta")
               for parameter in target.module.parameters())


PICKED_HEADS = """
import torch
from torch import nn


class PickedHead(nn.Module):
    def __init__(self, classify: bool = False):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.cls_head = nn.Linear(8, 3)
        self.reg_head = nn.Linear(8, 1)
        self.head = self.reg_head
        self.unused = nn.Linear(8, 8)
        self.classify = classify

    def forward(self, x):
        self.head = self.cls_head if self.classify else self.reg_head
        return self.head(self.body(x))


class HelperHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Linear(8, 8)
        self.aux = nn.Linear(8, 1)
        self.spare = nn.Linear(8, 8)
        self.use_aux = False

    def forward(self, x):
        return self._finish(self.body(x))

    def _finish(self, y):
        return self.aux(y) if self.use_aux else y

    def reset(self):
        self.spare.reset_parameters()
"""


def test_fx200_spares_a_head_forward_picks_by_assigning_it(loaded) -> None:
    """Export names the picked head by the attribute it was assigned to (``head``), not by the
    member (``reg_head``); the head this instance did not pick (``cls_head``), or that a method
    forward calls uses only on another path (``aux``), is used by forward all the same. Members
    only other methods name stay unused."""
    file = loaded(PICKED_HEADS, EngineConfig(modes=("export",)))
    sent: list[WorkerMessage] = []
    Job(file.job, sent.append, [CAPTURES["export"]]).run()
    unused = {message.module.class_name: [hint.member for hint in message.module.hints
                                          if hint.code == "FX200"]
              for message in sent if isinstance(message, Verdict)}
    assert unused == {"PickedHead": ["unused"], "HelperHead": ["spare"]}
