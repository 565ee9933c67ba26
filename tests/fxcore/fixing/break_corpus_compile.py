"""Real torch.compile on the CPU over one file of ``break_corpus`` (its convention is in
``break_corpus/__init__.py``): per class, the graph breaks torch's ``graph_breaks`` log names
(``compile_ground_truth.parse_break``), and the outputs of eager and compiled runs on the same
seeded weights and inputs.

Run as a script in a process of its own, since a fixed file sets ``torch._dynamo.config``
options when imported: ``python3 break_corpus_compile.py <file.py> <outputs.pt>`` prints
``{class: [[line, code], ...]}`` as JSON and saves ``{class: (eager, compiled)}``.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "thirdparty"))

from compile_ground_truth import _break_logger, _BreakLog, parse_break

_SPEC = re.compile(r"^(\w+)\[([\d,]*)\]$")


def load(path: str) -> ModuleType:
    """The corpus file imported as a module of its own name."""
    name = Path(path).stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def example_inputs(specs: dict[str, str]) -> dict[str, Any]:
    """The inputs of one class, drawn as the corpus convention says."""
    import torch

    torch.manual_seed(1)
    inputs = {}
    for name, spec in specs.items():
        match = _SPEC.match(spec.replace(" ", ""))
        assert match is not None, spec
        shape = [int(size) for size in match.group(2).split(",") if size]
        dtype = getattr(torch, match.group(1))
        if dtype.is_floating_point:
            inputs[name] = torch.randn(shape, dtype=dtype)
        elif dtype == torch.bool:
            inputs[name] = torch.rand(shape) > 0.5
        else:
            inputs[name] = torch.randint(0, 4, shape, dtype=dtype)
    return inputs


def run_class(module: ModuleType, name: str) -> tuple[list[list[Any]], Any, Any]:
    """(breaks as [line, code], eager output, compiled output) of one class."""
    import torch

    torch.manual_seed(0)
    model = getattr(module, name)().eval()
    inputs = example_inputs(module.INPUTS[name])
    logger = _break_logger()
    log = _BreakLog()
    logger.addHandler(log)
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            eager = model(**inputs)
            compiled = torch.compile(model, backend=lambda graph, _: graph.forward)(**inputs)
    finally:
        logger.removeHandler(log)
        torch._dynamo.reset()
    breaks = {(found["line"], found["code"]) for message in log.messages
              if (found := parse_break(message)) is not None}
    return [list(item) for item in sorted(breaks)], eager, compiled


def main(path: str, outputs_path: str) -> None:
    import torch

    module = load(path)
    breaks, outputs = {}, {}
    for name in module.INPUTS:
        breaks[name], eager, compiled = run_class(module, name)
        outputs[name] = (eager, compiled)
    torch.save(outputs, outputs_path)
    print(json.dumps(breaks))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
