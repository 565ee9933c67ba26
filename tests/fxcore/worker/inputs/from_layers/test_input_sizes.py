"""Sizes of inferred inputs, so that shape warnings are never false alarms: the image
size a model declares, a 2-D input for a ``Linear`` next to a ``BatchNorm1d``, and sizes the
model leaves free solved from its own constraints, so that FX300 on inferred inputs means no
size tried fits. Each chosen input is checked against real torch on the CPU, and the export
and compile modes get the same inputs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from torch import nn

from fx_lsp.features.hover import shapes_markdown
from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig
from fxcore.model.results import ModuleResult
from fxcore.model.tensor_spec import parse_spec
from fxcore.worker.inputs.from_layers.graph_layers import declared_size

from engine_support import Workspace, line_of

#: Every size tried in every mode, from one module fixture (over 20 s): the slow tier.
pytestmark = pytest.mark.slow

MODELS = '''
import torch
from torch import nn


class DeclaredSize(nn.Module):
    """Declares the size it takes, as pytorchcv's models do; needs at least 75 pixels."""

    def __init__(self):
        super().__init__()
        self.in_size = (299, 299)
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 7, stride=2), nn.ReLU(),
                                  nn.Conv2d(8, 8, 3, stride=2), nn.ReLU(),
                                  nn.Conv2d(8, 8, 3, stride=2), nn.ReLU())
        self.pool = nn.MaxPool2d(8)
        self.head = nn.Linear(8, 10)

    def forward(self, x):
        return self.head(self.pool(self.stem(x)).mean((2, 3)))


class UndeclaredSize(DeclaredSize):
    """The same model without the declaration."""

    def __init__(self):
        super().__init__()
        del self.in_size


class FeaturesThenNorm(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 6)
        self.bn = nn.BatchNorm1d(6)

    def forward(self, x):
        return self.bn(torch.relu(self.fc(x)))


class NormThenFeatures(nn.Module):
    def __init__(self):
        super().__init__()
        self.bn = nn.BatchNorm1d(12)
        self.fc = nn.Linear(12, 6)

    def forward(self, x):
        return self.fc(self.bn(x))


class PoolingStack(nn.Module):
    """AlexNet's convolutions and poolings: nothing smaller than 63 pixels goes through."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, kernel_size=11, stride=4, padding=2), nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(8, 8, kernel_size=5, padding=2), nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2),
            nn.Conv2d(8, 8, kernel_size=3, padding=1), nn.ReLU(),
            nn.MaxPool2d(kernel_size=3, stride=2))
        self.pool = nn.AdaptiveAvgPool2d((6, 6))
        self.classifier = nn.Linear(8 * 36, 10)

    def forward(self, x):
        return self.classifier(torch.flatten(self.pool(self.features(x)), 1))


class TokenMixing(nn.Module):
    """An MLP-Mixer layer: the token MLP over the transposed sequence axis fixes its length."""

    def __init__(self, tokens=16, dim=32):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.token_mlp = nn.Sequential(nn.Linear(tokens, 64), nn.GELU(), nn.Linear(64, tokens))

    def forward(self, x):
        y = self.token_mlp(self.norm(x).transpose(1, 2)).transpose(1, 2)
        return x + y


class MatrixProduct(nn.Module):
    """An N-BEATS block: a Linear, then `mm` with a basis, which takes 2-D inputs only."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)
        self.register_buffer("basis", torch.ones(4, 5))

    def forward(self, x):
        return self.fc(x).mm(self.basis)


class Mismatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(8, 4)

    def forward(self, x):
        return self.b(torch.relu(self.a(x)))
'''

#: class -> (the inputs chosen, words of the note on how they were chosen).
EXPECTED = {
    "DeclaredSize": ("float32[2, 3, 299, 299]",
                     "image size 299x299 declared by the model (`in_size = (299, 299)`)"),
    "UndeclaredSize": ("float32[2, 3, 128, 128]",
                       "128x128: the first size tried that the model accepts "
                       "(32x32, 64x64 do not fit)"),
    "FeaturesThenNorm": ("float32[2, 12]", None),
    "NormThenFeatures": ("float32[2, 12]", None),
    "PoolingStack": ("float32[2, 3, 64, 64]",
                     "64x64: the first size tried that the model accepts (32x32 does not fit)"),
    "TokenMixing": ("float32[2, 16, 32]",
                    "sequence length 16: the first size tried that the model accepts "
                    "(sequence length 8 does not fit)"),
    "MatrixProduct": ("float32[2, 6]",
                      "no sequence axis: the model accepts none of sequence lengths 8, 6, 4, 5, "
                      "16, 32, 64, 128"),
}
#: Inputs next to the chosen ones that real torch refuses: choosing was needed.
REFUSED = {"UndeclaredSize": "float32[2, 3, 74, 74]", "PoolingStack": "float32[2, 3, 62, 62]",
             "TokenMixing": "float32[2, 8, 32]", "FeaturesThenNorm": "float32[2, 8, 12]",
             "NormThenFeatures": "float32[2, 12, 32]", "MatrixProduct": "float32[2, 8, 6]"}
MISMATCH_LENGTHS = (8, 16, 32, 64, 128)


@dataclass
class Checked:
    """The workspace file, its namespace run on the CPU, and fx-lsp's results by class and
    mode."""

    path: Path
    namespace: dict[str, object]
    modules: dict[str, dict[str, ModuleResult]]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Checked]:
    """One check of ``MODELS`` in the fx, export and compile modes."""
    workspace = Workspace(tmp_path_factory.mktemp("input_sizes"))
    path = workspace.write("free_sizes.py", MODELS)
    engine = Engine(workers=2)
    try:
        result = workspace.check(engine, "free_sizes.py",
                                 EngineConfig(modes=("fx", "export", "compile")))
    finally:
        engine.close()
    namespace: dict[str, object] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    modules: dict[str, dict[str, ModuleResult]] = {}
    for module in result.modules:
        modules.setdefault(module.class_name, {})[module.mode] = module
    yield Checked(path, namespace, modules)


def _real_run(namespace: dict[str, object], name: str, spec: str) -> None:
    """Build the class on the CPU and run it on real tensors of ``spec`` (raises if the
    model does not accept them)."""
    torch.manual_seed(0)
    model = namespace[name]().eval()
    parsed = parse_spec(spec)
    with torch.no_grad():
        model(torch.randn(parsed.shape, dtype=getattr(torch, parsed.dtype)))


@pytest.mark.parametrize("name", list(EXPECTED))
def test_inferred_inputs_are_sizes_the_model_accepts_in_every_mode(checked: Checked,
                                                                   name: str) -> None:
    spec, note = EXPECTED[name]
    assert set(checked.modules[name]) == {"fx", "export", "compile"}
    for mode, module in checked.modules[name].items():
        assert module.status == "traceable", (mode, module.failures)
        assert not module.shape_errors, (mode, module.shape_errors)
        assert module.inputs is not None, mode
        assert (module.inputs.origin, module.inputs.tensors, module.inputs.note) == \
            ("inferred", {"x": spec}, note), mode
    if note is not None:  # the hover says how the sizes were chosen
        assert f"(inferred from the first layers that use them; {note})" in \
            shapes_markdown(checked.modules[name]["fx"]).replace("\\", "")
    _real_run(checked.namespace, name, spec)
    if name in REFUSED:  # the inferred input of today's main, or one size too small
        with pytest.raises((RuntimeError, ValueError)):
            _real_run(checked.namespace, name, REFUSED[name])


def test_a_real_shape_bug_is_fx300_on_every_size_tried(checked: Checked) -> None:
    mismatch = checked.modules["Mismatch"]
    (error,) = mismatch["fx"].shape_errors
    assert (error.code, error.line) == ("FX300",
                                        line_of(checked.path, "return self.b(torch.relu"))
    tried = ", ".join(map(str, MISMATCH_LENGTHS))
    assert "(inferred from the first layers that use them; no size tried fits the model: " \
           f"sequence lengths {tried})" in error.message
    # Export and compile fail there too, and the module fails as well when it merely runs on
    # the inputs fx-lsp inferred: a hint that they do not fit (FX406, FX504), not FX499/FX502.
    for mode, code in (("export", "FX406"), ("compile", "FX504")):
        assert mismatch[mode].status == "not-traced"
        assert [(failure.code, failure.line) for failure in mismatch[mode].failures] == \
            [(code, error.line)], mode
    for length in MISMATCH_LENGTHS:
        with pytest.raises(RuntimeError):
            _real_run(checked.namespace, "Mismatch", f"float32[2, {length}, 8]")


class _Declares(nn.Module):
    def __init__(self, **attributes: object) -> None:
        super().__init__()
        for name, value in attributes.items():
            setattr(self, name, value)


def test_declared_sizes_are_read_from_the_built_instance() -> None:
    cases = [
        (_Declares(img_size=224), ((224, 224), None, "`img_size = 224`")),
        (_Declares(in_size=(1024, 2048)), ((1024, 2048), None, "`in_size = (1024, 2048)`")),
        (_Declares(input_size=(1, 28, 28)), ((28, 28), 1, "`input_size = (1, 28, 28)`")),
        (_Declares(pretrained_cfg={"input_size": (3, 240, 240)}),
         ((240, 240), 3, "`pretrained_cfg['input_size'] = (3, 240, 240)`")),
        # The declaration nearest the root wins, and says where it is.
        (_Declares(body=_Declares(inner=_Declares(image_size=64)),
                   head=_Declares(img_size=96)), ((96, 96), None, "`head.img_size = 96`")),
    ]
    for module, (image, channels, source) in cases:
        found = declared_size(module)
        assert found is not None and (found.image, found.channels, found.source) == \
            (image, channels, source)
    # An LSTM's input_size is its feature count, a bool or a string no size.
    assert declared_size(_Declares(rnn=nn.LSTM(10, 4), img_size=True, input_size="224")) is None
