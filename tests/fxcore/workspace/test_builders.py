"""Builder functions as a source of real instances (``"arguments": {"from": "builder"}``): a
model zoo laid out as pytorchcv is (``ResNet(channels=[[...], ...])``, a ``get_resnet(blocks,
**kwargs)`` helper that computes the channel lists, ``def resnet50(**kwargs)`` entry points),
checked through the real CLI; the verdicts agree with plain torch.fx on the instance the same
builder builds."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import fx

from fx_lsp.features.hover import arguments_sentence
from fxcore.model.results import Arguments, ModuleResult
from fxcore.workspace.builders import builder_functions

from cli_support import fx_lsp
from engine_support import REPO_ROOT, Workspace, line_of

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.plain_fx_check import disagreement, plain_verdicts

RESNET = """
    import os

    from torch import nn


    class ResBottleneck(nn.Module):
        def __init__(self, in_channels, out_channels, stride):
            super().__init__()
            mid_channels = out_channels // 4
            self.conv1 = nn.Conv2d(in_channels, mid_channels, 1)
            self.conv2 = nn.Conv2d(mid_channels, mid_channels, 3, stride, 1)
            self.conv3 = nn.Conv2d(mid_channels, out_channels, 1)

        def forward(self, x):
            return self.conv3(self.conv2(self.conv1(x)).relu())


    class ResUnit(nn.Module):
        def __init__(self, in_channels, out_channels, stride):
            super().__init__()
            self.body = ResBottleneck(in_channels, out_channels, stride)
            self.resize_identity = (in_channels != out_channels) or (stride != 1)
            if self.resize_identity:
                self.identity_conv = nn.Conv2d(in_channels, out_channels, 1, stride)

        def forward(self, x):
            identity = self.identity_conv(x) if self.resize_identity else x
            return (self.body(x) + identity).relu()


    class ResNet(nn.Module):
        def __init__(self, channels, init_block_channels, in_channels=3, num_classes=10):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(in_channels, init_block_channels, 3, 2, 1))
            in_channels = init_block_channels
            for i, channels_per_stage in enumerate(channels):
                stage = nn.Sequential()
                for j, out_channels in enumerate(channels_per_stage):
                    stride = 2 if (j == 0) and (i != 0) else 1
                    stage.add_module(f"unit{j + 1}", ResUnit(in_channels, out_channels, stride))
                    in_channels = out_channels
                self.features.add_module(f"stage{i + 1}", stage)
            self.output = nn.Linear(in_channels, num_classes)

        def forward(self, x):
            x = self.features(x)
            return self.output(x.mean((2, 3)))


    def get_resnet(blocks, model_name=None, pretrained=False,
                   root=os.path.join("~", ".torch", "models"), **kwargs):
        if blocks == 50:
            layers = [3, 4, 6, 3]
        elif blocks == 26:
            layers = [2, 2, 2, 2]
        else:
            raise ValueError(f"Unsupported ResNet with number of blocks: {blocks}")
        channels_per_layers = [ci * 4 for ci in [16, 32, 64, 128]]
        channels = [[ci] * li for (ci, li) in zip(channels_per_layers, layers)]
        net = ResNet(channels=channels, init_block_channels=16, **kwargs)
        if pretrained:
            raise RuntimeError("pretrained weights would be downloaded here")
        return net


    def resnet26(**kwargs):
        return get_resnet(blocks=26, model_name="resnet26", **kwargs)


    def resnet50(**kwargs):
        return get_resnet(blocks=50, model_name="resnet50", **kwargs)
    """

#: A builder whose ``pretrained`` defaults to True, a class whose first builder (a generic
#: ``get_*`` that needs its caller's arguments) fails, and one whose defaults raise.
MOBILENET = """
    from torch import nn


    class MobileNet(nn.Module):
        def __init__(self, channels, in_channels=3):
            super().__init__()
            layers = []
            for out_channels in channels:
                layers.append(nn.Conv2d(in_channels, out_channels, 3, 2, 1))
                in_channels = out_channels
            self.features = nn.Sequential(*layers)

        def forward(self, x):
            x = self.features(x)
            if x.mean() > 0:
                x = x * 2
            return x


    def get_mobilenet(width_scale, pretrained=False, **kwargs):
        channels = [int(c * width_scale) for c in [32, 64, 128]]
        if pretrained:
            raise RuntimeError("pretrained weights would be downloaded here")
        return MobileNet(channels, **kwargs)


    def mobilenet_w1(pretrained=True, **kwargs):
        return get_mobilenet(1.0, pretrained=pretrained, **kwargs)


    class SegNet(nn.Module):
        def __init__(self, backbone_channels, num_classes=2):
            super().__init__()
            self.backbone = nn.Conv2d(3, backbone_channels[-1], 3)
            self.head = nn.Conv2d(backbone_channels[-1], num_classes, 1)

        def forward(self, x):
            return self.head(self.backbone(x))


    def get_segnet(model_name=None, **kwargs):
        net = SegNet(**kwargs)
        return net


    def segnet_small(**kwargs):
        return get_segnet(backbone_channels=[4, 8], model_name="segnet_small", **kwargs)


    class Head(nn.Module):
        def __init__(self, widths=()):
            super().__init__()
            self.proj = nn.Linear(widths[0], widths[-1])

        def forward(self, x):
            return self.proj(x)


    def head_small():
        return Head(widths=(4, 8))
    """


def check(root: Path, output_format: str) -> subprocess.CompletedProcess[str]:
    completed = fx_lsp("check", "--no-cache", "--format", output_format, ".", cwd=root)
    assert completed.returncode == 1, completed.stderr  # MobileNet has a branch on a tensor
    return completed


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]],
                                                          list[dict[str, Any]]]:
    workspace = Workspace(tmp_path_factory.mktemp("zoo"))
    workspace.write("zoo/__init__.py", "")
    workspace.write("zoo/resnet.py", RESNET)
    workspace.write("zoo/mobilenet.py", MOBILENET)
    modules = json.loads(check(workspace.root, "json").stdout)["modules"]
    return workspace.root, {module["class"]: module for module in modules}, modules


def test_a_class_needing_computed_channel_lists_is_built_by_its_builder(zoo) -> None:
    _, modules, _ = zoo
    resnet = modules["ResNet"]
    assert resnet["status"] == "traceable"
    # resnet26 is the first function that builds a ResNet without arguments: get_resnet
    # needs `blocks`.
    assert resnet["arguments"] == {"from": "builder", "builder": "zoo.resnet:resnet26",
                                   "args": [], "kwargs": {}}


def test_the_classes_a_builder_built_root_holds_get_its_instances(zoo) -> None:
    _, modules, _ = zoo
    for name, path in (("ResUnit", "features.stage1.unit1"),
                       ("ResBottleneck", "features.stage1.unit1.body")):
        arguments = modules[name]["arguments"]
        assert modules[name]["status"] == "traceable"
        assert (arguments["from"], arguments["parent"], arguments["path"],
                arguments["parent_from"], arguments["builder"]) == (
            "parent", "zoo.resnet:ResNet", path, "builder", "zoo.resnet:resnet26")


def test_a_builder_with_a_pretrained_parameter_is_called_with_pretrained_false(zoo) -> None:
    root, modules, _ = zoo
    mobilenet = modules["MobileNet"]
    assert mobilenet["arguments"] == {"from": "builder", "builder": "zoo.mobilenet:mobilenet_w1",
                                      "args": [], "kwargs": {"pretrained": "False"}}
    (failure,) = mobilenet["failures"]
    assert (failure["code"], failure["line"]) == (
        "FX001", line_of(root / "zoo/mobilenet.py", "if x.mean() > 0"))


def test_a_builder_that_fails_gives_way_to_the_next_in_the_file(zoo) -> None:
    _, modules, _ = zoo
    assert modules["SegNet"]["status"] == "traceable"
    assert modules["SegNet"]["arguments"]["builder"] == "zoo.mobilenet:segnet_small"


def test_a_class_whose_defaults_raise_is_built_by_its_builder(zoo) -> None:
    head = zoo[1]["Head"]
    assert (head["status"], head["arguments"]["builder"]) == ("traceable",
                                                              "zoo.mobilenet:head_small")


def test_the_full_format_names_the_builder(zoo) -> None:
    root, _, _ = zoo
    output = check(root, "full").stdout
    assert ("note: MobileNet was traced with the instance its builder function "
            "zoo.mobilenet:mobilenet_w1(pretrained=False) returns") in output


@pytest.mark.slow
def test_every_verdict_agrees_with_plain_fx_on_the_instance_the_builder_builds(zoo) -> None:
    root, _, reported = zoo
    outcomes = plain_verdicts(str(root), reported)
    by_class = {module["class"]: plain for module, plain in zip(reported, outcomes, strict=True)}
    assert (by_class["ResNet"]["status"], by_class["MobileNet"]["status"]) == (
        "traceable", "failed")
    problems = {module["qualified_name"]: disagreement(module, plain, str(root))
                for module, plain in zip(reported, outcomes, strict=True)}
    assert problems == dict.fromkeys(problems)


def test_plain_fx_traces_what_the_builder_returns_as_fx_lsp_says(zoo) -> None:
    """The same check without the report's rebuilding: call the builder named in the JSON
    and trace its instance with torch.fx in this process."""
    root, modules, _ = zoo
    sys.path.insert(0, str(root))
    try:
        for name in ("ResNet", "MobileNet"):
            arguments = modules[name]["arguments"]
            module_name, _, function = arguments["builder"].partition(":")
            builder = getattr(importlib.import_module(module_name), function)
            kwargs = {key: eval(value) for key, value in arguments["kwargs"].items()}
            with torch.device("meta"):
                instance = builder(**kwargs)
            try:
                fx.symbolic_trace(instance)
            except torch.fx.proxy.TraceError as error:
                assert "cannot be used as inputs to control flow" in str(error)
                assert modules[name]["status"] == "failed"
            else:
                assert modules[name]["status"] == "traceable"
    finally:
        sys.path.remove(str(root))
        for name in [n for n in sys.modules if n == "zoo" or n.startswith("zoo.")]:
            del sys.modules[name]


def test_the_hover_names_the_builder() -> None:
    module = ModuleResult(path="/ws/zoo/mobilenet.py", class_name="MobileNet",
                          qualified_name="zoo.mobilenet:MobileNet", line=4, column=7,
                          end_line=4, end_column=16, status="traceable",
                          arguments=Arguments(origin="builder",
                                              builder="zoo.mobilenet:mobilenet_w1",
                                              kwargs={"pretrained": "False"}))
    assert arguments_sentence(module) == (
        "Traced with the instance its builder function "
        "zoo.mobilenet:mobilenet\\_w1(pretrained=False) returns.")


# -- which functions are builders, read with ast -------------------------------------------


def builders_of(source: str) -> dict[str, list[str]]:
    tree = ast.parse(textwrap.dedent(source))
    classes = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    return {name: [builder.function for builder in builders]
            for name, builders in builder_functions(tree, classes).items()}


def test_builders_are_found_through_helpers_and_local_names() -> None:
    assert builders_of(RESNET) == {"ResNet": ["resnet26", "resnet50"]}
    assert builders_of(MOBILENET) == {"MobileNet": ["mobilenet_w1"],
                                      "SegNet": ["get_segnet", "segnet_small"],
                                      "Head": ["head_small"]}


def test_functions_that_are_not_builders() -> None:
    assert builders_of("""
        class Net:
            pass

        class Other:
            pass

        def needs_arguments(width):
            return Net(width)

        def either(flag=True):
            if flag:
                return Net()
            return Other()

        def inner_return():
            def make():
                return Net()
            return make

        def list_of_nets():
            return [Net()]

        def deeper(**kwargs):
            return level_1(**kwargs)

        def level_1(**kwargs):
            return level_2(**kwargs)

        def level_2(**kwargs):
            return level_3(**kwargs)

        def level_3(**kwargs):
            return Net(**kwargs)
        """) == {"Net": ["level_1", "level_2", "level_3"]}
