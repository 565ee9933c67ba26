"""A class whose code raises ``SystemExit``, ``KeyboardInterrupt`` or ``GeneratorExit`` (from
``example_input_array``, ``dummy_inputs``, a hook, ``forward`` or its constructor) gets that as
its own failure, located where it was raised, in each mode it has no verdict in yet; the
file's other classes are judged as if it were not there. Real torch: each raises so when run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from source_modules import load_module

from fx_lsp.cli.output_formats.json_report import message_of

import cli_support

MODELS = '''
import torch
from torch import nn


class ExampleExits(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    @property
    def example_input_array(self):
        raise SystemExit(3)

    def forward(self, x):
        return self.fc(x)


class DummyInterrupts(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def dummy_inputs(self):
        raise KeyboardInterrupt

    def forward(self, x):
        return self.fc(x)


class ForwardExits(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        raise SystemExit(5)


class HookCloses(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.register_forward_pre_hook(self.closing)

    def closing(self, module, args):
        raise GeneratorExit

    def forward(self, x):
        return self.fc(x)


class Fine(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))
'''


def _line(text: str) -> int:
    return next(number for number, line in enumerate(MODELS.splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("class_exits")
    (root / "models.py").write_text(MODELS)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "fx,export,compile",
                                   "--output-format", "json", "models.py", cwd=root)
    assert completed.returncode == 1, completed.stderr
    return json.loads(completed.stdout)


def _verdicts(report: dict, name: str) -> dict[str, dict]:
    return {module["mode"]: module for module in report["modules"] if module["class"] == name}


def test_the_other_classes_keep_their_verdicts(report: dict) -> None:
    assert {mode: verdict["status"] for mode, verdict in _verdicts(report, "Fine").items()} \
        == {"fx": "traceable", "export": "traceable", "compile": "traceable"}
    assert not [d for d in report["diagnostics"] if d["code"] == "FX199" and not d["classes"]]


@pytest.mark.parametrize(("name", "raised", "where", "modes"), [
    ("ExampleExits", "SystemExit: 3", "raise SystemExit(3)", ("export", "compile")),
    ("DummyInterrupts", "KeyboardInterrupt", "raise KeyboardInterrupt", ("export", "compile")),
    ("ForwardExits", "SystemExit: 5", "raise SystemExit(5)", ("export", "compile")),
    ("HookCloses", "GeneratorExit", "raise GeneratorExit", ("export", "compile")),
])
def test_a_class_that_exits_fails_alone_where_it_raised(
        report: dict, tmp_path: Path, name: str, raised: str, where: str,
        modes: tuple[str, ...]) -> None:
    verdicts = _verdicts(report, name)
    for mode in modes:
        failures = verdicts[mode]["failures"]
        assert [(f["code"], f["kind"], f["line"]) for f in failures] \
            == [("FX102", "exited", _line(where))], (mode, failures)
        assert message_of(report, failures[0]) == f"Judging {name} stopped: {raised}"
    # Real torch: what fx-lsp ran raises so in plain Python too.
    (tmp_path / "models.py").write_text(MODELS)
    module = load_module(tmp_path / "models.py", f"class_exits_{name}")
    model = getattr(module, name)()
    with pytest.raises(BaseException) as caught:
        if name == "ExampleExits":
            model.example_input_array  # noqa: B018
        elif name == "DummyInterrupts":
            model.dummy_inputs()
        else:
            model(torch.randn(2, 4))
    assert f"{type(caught.value).__name__}" == raised.split(":")[0]
