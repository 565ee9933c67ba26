"""Shapes: example inputs (configured, annotated, inferred), propagation on meta tensors
checked against running the same instance on CPU with real tensors, and FX300."""

from __future__ import annotations

import dataclasses
import importlib
import sys
from pathlib import Path

import pytest
import torch
from torch import fx

from fxcore.host.engine import Engine
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import ModuleResult
from fxcore.model.tensor_spec import parse_spec
from fxcore.worker.building.construction import resolve
from fxcore.worker.inputs.from_layers.graph_layers import INFERENCE_RULES
from fxcore.worker.meta.lazy_meta import describe
from fxcore.workspace.config import load_config
from fxcore.workspace.module_config import module_config_for
from fxcore.workspace.paths import import_location

from engine_support import EXAMPLES, REPO_ROOT, Workspace, check_job, line_of

RECALL = REPO_ROOT / "tests" / "recall" / "models"
FOUND_ORIGINS = {"call-site", "config-class", "guessed"}


class _Record(fx.Interpreter):
    def __init__(self, module: fx.GraphModule) -> None:
        super().__init__(module)
        self.shapes: dict[str, str | None] = {}

    def run_node(self, node: fx.Node) -> object:
        result = super().run_node(node)
        self.shapes[node.name] = describe(result)
        return result


def real_shapes(path: Path, root: Path, module: ModuleResult) -> dict[str, str | None]:
    """Build the class as fx-lsp did, on CPU, trace it with plain torch.fx and run it on real
    tensors of fx-lsp's example inputs: every node's shape."""
    location = import_location(str(path))
    sys.path[:0] = [str(root), location.sys_path_entry]
    try:
        imported = importlib.import_module(location.module_name)
        config, _ = load_config(str(root))
        module_config = module_config_for(config, location.module_name, module.class_name)
        arguments = module.arguments
        if arguments is not None and arguments.origin in FOUND_ORIGINS:
            namespace = vars(imported)
            module_config = dataclasses.replace(
                module_config, args=[eval(text, namespace) for text in arguments.args],
                kwargs={name: eval(text, namespace) for name, text in arguments.kwargs.items()})
        build = resolve(module_config.factory) if module_config.factory else \
            getattr(imported, module.class_name)
        torch.manual_seed(0)
        model = build(*module_config.args, **module_config.kwargs).eval()
        graph_module = fx.symbolic_trace(model, concrete_args=module_config.concrete_args or None)
        inputs = []
        assert module.inputs is not None
        for node in graph_module.graph.nodes:
            if node.op == "placeholder":
                text = module.inputs.tensors.get(str(node.target))
                if text is None:
                    inputs.append(node.args[0] if node.args else None)
                    continue
                spec = parse_spec(text)
                dtype = getattr(torch, spec.dtype)
                inputs.append(torch.randn(spec.shape, dtype=dtype) if dtype.is_floating_point
                              else torch.zeros(spec.shape, dtype=dtype))
        recorder = _Record(graph_module)
        with torch.no_grad():
            recorder.run(*inputs)
        return recorder.shapes
    finally:
        del sys.path[:2]
        top = location.module_name.split(".")[0]
        for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
            del sys.modules[name]


def propagated(module: ModuleResult) -> dict[str, str]:
    return {node.name: node.shape for nodes in module.line_nodes.values() for node in nodes
            if node.shape is not None}


def check_against_reality(engine: Engine, path: Path, root: Path) -> int:
    result = check_job(engine, TraceJob(path=str(path), workspace_root=str(root),
                                        config=load_config(str(root))[0]))
    compared = 0
    for module in result.modules:
        if module.status != "traceable" or module.inputs is None:
            continue
        real = real_shapes(path, root, module)
        shapes = propagated(module)
        assert shapes, module.class_name
        for name, shape in shapes.items():
            assert real[name] == shape, (module.class_name, name)
        output = next(reversed(real.values()))
        assert module.output_shape == output, module.class_name
        compared += 1
    return compared


@pytest.mark.parametrize(("corpus", "at_least"), [("examples", 4), ("recall", 3)])
def test_propagated_shapes_equal_a_real_run(engine: Engine, corpus: str, at_least: int,
                                            tmp_path: Path) -> None:
    if corpus == "examples":
        files, root = sorted((EXAMPLES / "models").glob("*.py")), EXAMPLES
    else:
        root = tmp_path
        (root / "pyproject.toml").write_text("[project]\nname = 'recall'\n")
        (root / "recall_models").mkdir()
        for source in RECALL.glob("*.py"):
            (root / "recall_models" / source.name).write_text(source.read_text())
        files = sorted((root / "recall_models").glob("*.py"))
    compared = sum(check_against_reality(engine, path, root) for path in files)
    assert compared >= at_least


SHAPED = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = self.conv(x)
        z = y.mean((2, 3))
        return self.fc(z)


class Mismatch(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 16)
        self.b = nn.Linear(8, 4)

    def forward(self, x):
        h = torch.relu(self.a(x))
        return self.b(h)


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 32)

    def forward(self, ids):
        return self.embed(ids)


class Free(nn.Module):
    def forward(self, x):
        return x.sum()


class Annotated(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 4)

    def forward(self, x: "Float[Tensor, 'batch seq 16']"):
        return self.proj(x)
'''


def test_inputs_from_each_source_and_fx300(engine: Engine, workspace: Workspace) -> None:
    path = workspace.write("shaped.py", SHAPED)
    (workspace.root / "pyproject.toml").write_text(
        "[project]\nname = 'ws'\n"
        '[tool.fx-lsp.modules."shaped:Mismatch"]\ninputs = {x = "float32[batch=4, 8]"}\n')
    config = load_config(str(workspace.root))[0]
    result = check_job(engine, TraceJob(path=str(path), workspace_root=str(workspace.root),
                                        config=config))
    modules = {m.class_name: m for m in result.modules}
    net = modules["Net"]
    assert (net.inputs.origin, net.inputs.tensors) == ("inferred", {"x": "float32[2, 3, 32, 32]"})
    assert net.output_shape == "float32[2, 4]"
    conv_line = line_of(path, "y = self.conv(x)")
    assert [n.shape for n in net.line_nodes[(str(path), conv_line)]] == ["float32[2, 8, 32, 32]"]
    assert modules["Tokens"].inputs.tensors == {"ids": "int64[2, 8]"}
    assert modules["Tokens"].output_shape == "float32[2, 8, 32]"
    assert modules["Free"].inputs is None and "nothing decides the shape of `x`" in \
        modules["Free"].shapes_note
    annotated = modules["Annotated"]
    assert (annotated.inputs.origin, annotated.inputs.tensors) == \
        ("annotation", {"x": "float32[2, 8, 16]"})
    # Configured inputs that the first layer accepts; the second one does not fit.
    mismatch = modules["Mismatch"]
    assert mismatch.status == "traceable" and mismatch.inputs.origin == "config"
    (error,) = mismatch.shape_errors
    assert (error.code, error.line) == ("FX300", line_of(path, "return self.b(h)"))
    assert "`self.b` (Linear) on float32[4, 16] fails" in error.message
    assert "configured under [tool.fx-lsp.modules]" in error.message
    assert error.column == line_of_column(path, error.line, "self.b(h)")


def line_of_column(path: Path, line: int, snippet: str) -> int:
    return path.read_text().splitlines()[line - 1].index(snippet) + 1


def test_a_bad_inputs_value_is_one_message(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fx-lsp.modules."m:Net"]\ninputs = {x = "float33[2, 3]", y = "float32[2, a]"}\n')
    _, problems = load_config(str(tmp_path))
    assert len(problems) == 2
    assert "unknown dtype 'float33'" in problems[0] and "name=224" in problems[1]


def test_the_inputs_page_shows_the_inference_table() -> None:
    page = (REPO_ROOT / "docs" / "inputs.md").read_text(encoding="utf-8")
    for consumer, spec in INFERENCE_RULES:
        assert f"| {consumer} | `{spec}` |" in page


@pytest.mark.parametrize("lazy", [False, True], ids=["meta-tensors", "lazy-meta-tensors"])
def test_fast_results_equal_the_meta_kernels(lazy: bool) -> None:
    """Results computed from shapes (``fxcore.worker.meta.shapes.fast_result``) against
    torch's own meta kernels, on shapes that fit and shapes that do not (the kernel then
    decides), for inputs that are meta tensors or the lazy stand-ins propagation passes
    between fast results."""
    import operator

    from torch.nn import functional

    from fxcore.worker.meta.lazy_meta import LazyMetaTensor
    from fxcore.worker.meta.shapes import fast_result

    def meta(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
        return torch.empty(shape, dtype=dtype, device="meta")

    def argument(value: object) -> object:
        if lazy and isinstance(value, torch.Tensor):
            return LazyMetaTensor(value.shape, value.dtype)
        if isinstance(value, list):
            return [argument(item) for item in value]
        return value

    cases = [
        (operator.add, (meta(2, 1, 3), meta(4, 1))),
        (operator.mul, (meta(2, 3), 2.0)),
        (operator.mul, (meta(2, 3, dtype=torch.int64), 2.0)),
        (operator.add, (meta(2, 3, dtype=torch.int32), True)),
        (operator.add, (meta(2, 3, dtype=torch.float16), meta(dtype=torch.float64))),
        (operator.add, (meta(2, 3, dtype=torch.int64), meta(dtype=torch.float64))),
        (operator.truediv, (meta(2, 3, dtype=torch.int64), meta(3, dtype=torch.int64))),
        (operator.pow, (meta(5, dtype=torch.int64), 2)),
        ("add", (meta(3, 1), meta(1, 4, dtype=torch.float64))),
        (torch.rsqrt, (meta(2, 8),)),
        ("mean", (meta(2, 8, 4), -1)),
        (torch.cat, ([meta(2, 3), meta(2, 5)], 1)),
        (functional.scaled_dot_product_attention, (meta(2, 4, 8, 16), meta(2, 4, 6, 16),
                                                   meta(2, 4, 6, 32))),
    ]
    for target, args in cases:
        fast = fast_result(target, tuple(argument(a) for a in args), {})
        real = getattr(args[0], target)(*args[1:]) if isinstance(target, str) else target(*args)
        assert fast is not None and (fast.shape, fast.dtype) == (real.shape, real.dtype), target
    assert fast_result(operator.add, (argument(meta(2, 3)), argument(meta(4))), {}) is None
    assert fast_result(torch.cat, ([argument(meta(2, 3)), argument(meta(3, 3))], 1), {}) is None


def test_pooling_shapes_equal_the_meta_kernels() -> None:
    """Max, average and adaptive pooling computed from the layer's settings against torch's
    meta kernels over a grid of settings and sizes; where the kernel refuses an input the rule
    must leave it to the kernel (None), never give a shape."""
    import itertools

    from torch import nn

    from fxcore.worker.meta.layer_shapes import module_output_shape
    from fxcore.worker.meta.lazy_meta import LazyMetaTensor

    computed = 0

    def check(module: nn.Module, shape: tuple[int, ...]) -> None:
        nonlocal computed
        fast = module_output_shape(module, LazyMetaTensor(shape, torch.float32))
        if fast is None:
            return
        computed += 1
        real = module(torch.empty(shape, device="meta"))  # raises if the kernel refuses it
        assert fast == tuple(real.shape), (module, shape)

    for dims in (1, 2, 3):
        for kernel, stride, padding, dilation, ceil in itertools.product(
                (1, 2, 3), (None, 1, 2), (0, 1), (1, 2), (False, True)):
            for size, batched in itertools.product((1, 3, 5, 8), (True, False)):
                shape = (2, 3, *(size,) * dims) if batched else (3, *(size,) * dims)
                check(getattr(nn, f"MaxPool{dims}d")(kernel, stride, padding, dilation,
                                                     ceil_mode=ceil), shape)
                if dilation == 1:
                    check(getattr(nn, f"AvgPool{dims}d")(kernel, stride, padding,
                                                         ceil_mode=ceil), shape)
        for output, size, kind in itertools.product((1, 3, None), (1, 4, 7), ("Avg", "Max")):
            check(getattr(nn, f"Adaptive{kind}Pool{dims}d")(output or (None,) * dims),
                  (2, 3, *(size,) * dims))
    check(nn.MaxPool2d(2, stride=0), (2, 3, 8, 8))  # torch refuses a stride of 0
    assert computed > 1000  # the rules do answer, not only defer
    # An integer input goes to the kernel: CPU pooling refuses it, its meta kernel does not.
    assert module_output_shape(nn.MaxPool2d(2), LazyMetaTensor((2, 3, 8, 8), torch.int64)) is None
