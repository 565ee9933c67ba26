"""Constructor guesses that fit what ``forward`` does with the parameter
(``fxcore.worker.building.forward_uses``): a parameter ``forward`` calls is never guessed
``None`` or a number, ``nn.Identity()`` only where every call passes one argument, one it
indexes is never ``None``, a number or ``nn.Identity()``, a ``None`` default it takes as a
number gets one, one it indexes a list of modules where nothing else fits; where no value fits,
the class has no verdict and the reason names the
parameter and the use. The same holds where ``forward`` reaches the attribute through a local
name (``stages = self.stages``) or a base class's ``__init__`` keeps it
(``super().__init__(decoder)``).

Small classes written for each, checked by the real CLI in export mode; every instance
fx-lsp built is rebuilt on the CPU from the report's arguments and run eagerly on the report's
inputs, and real ``torch.export`` judges it and the instance a user would write by hand, in a
forked child (``forked_answer``)."""

from __future__ import annotations

import importlib.util
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
from forked_answer import forked_answer

from cli_support import fx_lsp

BLOCKS = '''
import torch
from torch import nn


class Wrapper(nn.Module):
    def __init__(self, decoder, dim: int = 16):
        super().__init__()
        self.decoder = decoder
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, memory):
        return self.proj(self.decoder(x, memory))


class Router(nn.Module):
    def __init__(self, dim: int, experts: int = 4, top_k=None):
        super().__init__()
        self.gate = nn.Linear(dim, experts)
        self.top_k = top_k

    def forward(self, x):
        values, index = self.gate(x).topk(self.top_k, dim=-1)
        return values.softmax(-1)


class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.norm(x))


class PassedOn(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x, **kwargs):
        return self.fn(self.norm(x), **kwargs)


class Stages(nn.Module):
    def __init__(self, stages, dim: int = 16):
        super().__init__()
        self.stages = stages
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        return self.out(self.stages[-1](self.stages[0](x)))


class Select(nn.Module):
    def __init__(self, dim: int = 16, top_k=None):
        super().__init__()
        self.gate = nn.Linear(dim, 4)
        self.top_k = top_k

    def forward(self, x):
        return self.pick(self.gate(x))

    def pick(self, scores):
        return torch.topk(scores, self.top_k, dim=-1).values


class Mixer(nn.Module):
    def __init__(self, dim: int = 16, attn=1):
        super().__init__()
        self.attn = attn
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(self.attn(x))


class Head(nn.Module):
    def __init__(self, dim: int = 16, act=None):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.act = act

    def forward(self, x):
        return self.act(self.proj(x))


class Reader(nn.Module):
    def __init__(self, decoder=nn.Identity(), dim: int = 16):
        super().__init__()
        self.decoder = decoder
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        for layer in self.decoder.layers:
            x = layer(x)
        return self.proj(x)


class Guarded(nn.Module):
    def __init__(self, dim: int = 16, act=None):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.act = act

    def forward(self, x):
        x = self.proj(x)
        return x if self.act is None else self.act(x)


class AliasedWrapper(nn.Module):
    def __init__(self, decoder, dim: int = 16):
        super().__init__()
        self.decoder = decoder
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, memory):
        decoding = self.decoder
        return self.proj(decoding(x, memory))


class AliasedStages(nn.Module):
    def __init__(self, stages, dim: int = 16):
        super().__init__()
        self.stages = stages
        self.out = nn.Linear(dim, dim)

    def forward(self, x):
        stages = self.stages
        return self.out(stages[0](x))


class AliasedHead(nn.Module):
    def __init__(self, dim: int = 16, act=None):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.act = act

    def forward(self, x):
        act = self.act
        return act(self.proj(x))


class DecoderBase(nn.Module):
    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder


class InheritedWrapper(DecoderBase):
    def __init__(self, decoder, dim: int = 16):
        super().__init__(decoder)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, memory):
        return self.proj(self.decoder(x, memory))


class TwoInputs(nn.Module):
    def forward(self, x, memory):
        return x + memory


class Layers(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(dim, dim), nn.ReLU()])
'''

#: Per class: (the instance a user would write, its inputs' shapes), as source in the module.
BY_HAND = {
    "Wrapper": ("Wrapper(TwoInputs(), dim=32)", [(2, 8, 32), (2, 8, 32)]),
    "Router": ("Router(32, experts=8, top_k=2)", [(2, 8, 32)]),
    "PreNorm": ("PreNorm(32, nn.Linear(32, 32))", [(2, 8, 32)]),
    "PassedOn": ("PassedOn(32, nn.Linear(32, 32))", [(2, 8, 32)]),
    "Stages": ("Stages(nn.ModuleList([nn.Linear(16, 16), nn.GELU()]))", [(2, 8, 16)]),
    "Select": ("Select(top_k=3)", [(2, 8, 16)]),
    "Mixer": ("Mixer(attn=nn.GELU())", [(2, 8, 16)]),
    "Head": ("Head(act=nn.GELU())", [(2, 8, 16)]),
    "Reader": ("Reader(Layers(16))", [(2, 8, 16)]),
    "Guarded": ("Guarded(act=nn.GELU())", [(2, 8, 16)]),
    "AliasedWrapper": ("AliasedWrapper(TwoInputs(), dim=32)", [(2, 8, 32), (2, 8, 32)]),
    "AliasedStages": ("AliasedStages(nn.ModuleList([nn.Linear(16, 16)]))", [(2, 8, 16)]),
    "AliasedHead": ("AliasedHead(act=nn.GELU())", [(2, 8, 16)]),
    "InheritedWrapper": ("InheritedWrapper(TwoInputs(), dim=32)", [(2, 8, 32), (2, 8, 32)]),
}

#: Classes with no verdict, the words of their reason, and the guess fx-lsp used to build
#: them with (before it read ``forward``), which real torch refuses to run.
NO_VALUE = {
    "Wrapper": ("No constructor value found for decoder: forward calls self.decoder with 2 "
                "arguments", "Wrapper(nn.Identity())", "Identity.forward() takes 2"),
    "Reader": ("No constructor value found for decoder: forward reads self.decoder.layers",
               "Reader()", "'Identity' object has no attribute 'layers'"),
    # Reached through a local name, or kept by the base class's __init__.
    "AliasedWrapper": ("No constructor value found for decoder: forward calls self.decoder "
                       "with 2 arguments", "AliasedWrapper(1)", "'int' object is not callable"),
    "InheritedWrapper": ("No constructor value found for decoder: forward calls self.decoder "
                         "with 2 arguments", "InheritedWrapper(None)",
                         "'NoneType' object is not callable"),
}
#: A list of modules, as the report spells it.
STAGES = ("__import__('torch').nn.ModuleList([__import__('torch').nn.Linear(16, 16), "
          "__import__('torch').nn.Linear(16, 16)])")
#: Classes traced, with the guessed keyword arguments the report must name.
GUESSED = {
    "Router": {"top_k": "2"},
    "PreNorm": {"fn": "__import__('torch').nn.Identity()"},
    "Select": {"top_k": "2"},
    # Called with the forward's own **kwargs, empty when it is called with none.
    "PassedOn": {"fn": "__import__('torch').nn.Identity()"},
    "Mixer": {"attn": "__import__('torch').nn.Identity()"},
    "Head": {"act": "__import__('torch').nn.Identity()"},
    "AliasedHead": {"act": "__import__('torch').nn.Identity()"},
    # Indexed and called: modules of the width beside them (its default), never None.
    "Stages": {"stages": STAGES},
    "AliasedStages": {"stages": STAGES},
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The blocks' file and ``fx-lsp check --mode export``'s JSON report of it."""
    folder = tmp_path_factory.mktemp("forward-uses")
    path = folder / "blocks.py"
    path.write_text(textwrap.dedent(BLOCKS))
    done = fx_lsp("check", "--no-cache", "--mode", "export", "--output-format", "json",
                  str(path), cwd=folder)
    return path, json.loads(done.stdout)


def _module_of(report: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in report["modules"] if m["class"] == name)


def _load(path: Path) -> Any:
    spec = importlib.util.spec_from_file_location("blocks_by_hand", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _shapes(tensors: dict[str, str]) -> list[tuple[int, ...]]:
    """``{"x": "float32[2, 8, 64]"}`` -> ``[(2, 8, 64)]``."""
    found = []
    for spelled in tensors.values():
        assert spelled.startswith("float32["), spelled
        found.append(tuple(int(n) for n in re.findall(r"\d+", spelled.split("[", 1)[1])))
    return found


def _exported(model: torch.nn.Module, shapes: list[tuple[int, ...]]) -> str:
    """Real torch.export's verdict: "traceable", or the error's type."""
    inputs = tuple(torch.randn(shape) for shape in shapes)
    model.eval()
    try:
        torch.export.export(model, inputs)
    except Exception as error:
        return type(error).__name__
    return "traceable"


@pytest.mark.parametrize("name", sorted(NO_VALUE))
def test_a_parameter_no_value_fits_leaves_the_class_without_a_verdict(checked, name) -> None:
    """No stand-in is built: the class is not traced, no diagnostic blames its inputs, and
    the reason names the parameter and what ``forward`` does with it; the stand-in really
    does not run, and the instance a user writes exports."""
    path, report = checked
    result = _module_of(report, name)
    words, stand_in, error = NO_VALUE[name]
    assert result["status"] == "not-traced"
    assert words in result["reason"], result["reason"]
    assert result["failures"] == []
    assert not [d for d in report["diagnostics"] if name in d.get("classes", [])], \
        report["diagnostics"]

    def real() -> dict[str, str]:
        module = _load(path)
        namespace = vars(module)
        try:
            eval(stand_in, namespace)(*(torch.randn(2, 8, 16) for _ in
                                        BY_HAND[name][1]))
        except Exception as raised:
            eager = f"{type(raised).__name__}: {raised}"
        else:
            eager = "ran"
        source, shapes = BY_HAND[name]
        return {"eager": eager, "by_hand": _exported(eval(source, namespace), shapes)}

    answer = forked_answer(real, f"{name}'s stand-in and hand-written instance")
    assert error in answer["eager"], answer
    assert answer["by_hand"] == "traceable", answer


@pytest.mark.parametrize("name", sorted(GUESSED))
def test_a_guess_that_fits_forward_is_traced_as_real_export_judges(checked, name) -> None:
    """The guessed value fits ``forward``'s use; the instance fx-lsp built, rebuilt on the
    CPU from the report, runs eagerly on the report's inputs; real export's verdict on it and
    on a hand-written instance equals fx-lsp's."""
    path, report = checked
    result = _module_of(report, name)
    arguments = result["arguments"]
    assert arguments["from"] == "guessed", arguments
    for key, value in GUESSED[name].items():
        assert arguments["kwargs"][key] == value, arguments
    assert result["status"] == "traceable", (result["status"], result["reason"],
                                             result["failures"])
    shapes = _shapes(result["inputs"]["tensors"])

    def real() -> dict[str, str]:
        module = _load(path)
        namespace = vars(module)
        cls = namespace[name]
        model = cls(*(eval(a, namespace) for a in arguments["args"]),
                    **{k: eval(v, namespace) for k, v in arguments["kwargs"].items()})
        model.eval()
        with torch.no_grad():
            model(*(torch.randn(shape) for shape in shapes))  # raises if it does not run
        source, by_hand_shapes = BY_HAND[name]
        return {"built": _exported(model, shapes),
                "by_hand": _exported(eval(source, namespace), by_hand_shapes)}

    answer = forked_answer(real, f"{name}'s instances")
    assert answer == {"built": "traceable", "by_hand": "traceable"}, answer


def test_an_attribute_forward_tests_keeps_its_default(checked) -> None:
    """``x if self.act is None else self.act(x)``: ``None`` is one of the values the code
    expects, so the class is traced with its defaults, as real export judges it."""
    path, report = checked
    result = _module_of(report, "Guarded")
    assert result["arguments"]["from"] == "defaults", result["arguments"]
    assert result["status"] == "traceable", result["reason"]

    def real() -> dict[str, str]:
        namespace = vars(_load(path))
        source, shapes = BY_HAND["Guarded"]
        return {"defaults": _exported(namespace["Guarded"](), [(2, 8, 16)]),
                "by_hand": _exported(eval(source, namespace), shapes)}

    assert forked_answer(real, "Guarded's instances") == {"defaults": "traceable",
                                                          "by_hand": "traceable"}
