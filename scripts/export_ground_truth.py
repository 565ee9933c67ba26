"""Ground truth of the export corpus (tests/corpus/export): what REAL torch.export does on CPU
with real weights and real inputs, printed as JSON
(tests/fxcore/worker/capture/export/test_export_capture.py and
tests/fxcore/worker/capture/export/test_export_dynamic.py compute it in the same run on the
installed torch, through tests/support/real_torch_answers.py, never from a record).

For each class named in a corpus file's ``EXAMPLE_INPUTS``: the verdict and first line of
``torch.export.export(model, (), inputs, strict=False)``, and the lines of every
data-dependent error that ``torch.export.draft_export`` (which runs on the real values and
goes on past them) reports in that file. For a class also named in the file's
``DYNAMIC_SHAPES`` (spelled as the ``dynamic`` option of ``[tool.fx-lsp.modules]``), under
``dynamic``: the verdict of the same export with those ``dynamic_shapes``, the dimensions
torch says the code violated and the fixes it suggests. Under ``strict``: the verdict, first
line and error of the same export with ``strict=True`` (dynamo; its errors carry the user's
stack as ``real_stack``, their traceback holds only dynamo's frames). Under ``auto_batch``,
for a class that exports: the input dimensions the export with them ``Dim.AUTO`` specialises
(each input's batch, the first or the one its spec names, and the sequence its spec names:
``int64[batch=4, seq=16]``), each with its size and the line of the guard that did it, read
from torch's own log of its shape environment (``TORCH_LOGS=dynamic``).

Every model is exported in eval mode (``model.eval()``), as fx-lsp's export mode judges it
(``module-mode = "auto"``), as deployment does. A file whose ``MODULE_MODES`` names "train"
also gets, under ``train``, the verdict and first line of the same export in train mode.

    python3 scripts/export_ground_truth.py
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import logging
import os
import re
import sys
import traceback
import warnings
from collections.abc import Collection
from pathlib import Path
from types import ModuleType

import torch
from torch._logging import structured

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "export"


def load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"export_corpus_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Registered as an import registers it: strict export (dynamo) looks the module of
    # ``forward`` up by name.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def real_inputs(specs: dict[str, str]) -> dict[str, torch.Tensor]:
    from fxcore.model.tensor_spec import parse_spec
    inputs = {}
    for name, text in specs.items():
        spec = parse_spec(text)
        dtype = getattr(torch, spec.dtype)
        inputs[name] = (torch.randn(spec.shape, dtype=dtype) if dtype.is_floating_point
                        else torch.randint(0, 10, spec.shape, dtype=dtype))
    return inputs


def first_line(error: BaseException, path: str) -> int | None:
    """The innermost line of ``path`` in the error's user stack (dynamo's ``real_stack``),
    else its traceback."""
    stack = getattr(error, "real_stack", None) or traceback.extract_tb(error.__traceback__)
    lines = [frame.lineno for frame in stack if os.path.abspath(frame.filename) == path]
    return lines[-1] if lines else None


def export_truth(model: torch.nn.Module, inputs: dict[str, torch.Tensor], path: str,
                 strict: bool) -> dict[str, object]:
    """Verdict, first line of ``path`` and error type of a real export."""
    try:
        torch.export.export(model, (), inputs, strict=strict)
        return {"verdict": "ok", "first_line": None, "error": None}
    except Exception as error:
        return {"verdict": "failed", "first_line": first_line(error, path),
                "error": type(error).__name__}


def draft_sites(model: torch.nn.Module, inputs: dict[str, torch.Tensor],
                path: str) -> list[int] | None:
    """Lines of ``path`` where draft_export met a data-dependent error (the innermost frame
    in ``path``); None when draft_export itself fails (an error that is not about data)."""
    try:
        program = torch.export.draft_export(model, (), inputs)
    except Exception:
        return None
    files = {index: name for name, index in structured.INTERN_TABLE.items()}
    sites = set()
    for failure in program._report.failures:
        if failure.failure_type.name != "DATA_DEPENDENT_ERROR":
            continue
        for frame in reversed(failure.data["user_stack"]):  # innermost first
            if os.path.abspath(files.get(frame["filename"], "")) == path:
                sites.add(frame["line"])
                break
    return sorted(sites)


def dynamic_truth(model: torch.nn.Module, inputs: dict[str, torch.Tensor],
                  spelled: dict[str, object]) -> dict[str, object]:
    """Real export with the configured dynamic dimensions: verdict, violated names, fixes."""
    from fxcore.worker.capture.export.dynamic import dynamic_shapes, violated_names
    from fxcore.workspace.config import parse_config
    config, problems = parse_config({"modules": {"Class": {"dynamic": spelled}}})
    assert not problems, problems
    dims = config.modules["Class"].dynamic
    try:
        torch.export.export(model, (), inputs, strict=False,
                            dynamic_shapes=dynamic_shapes(dims, list(inputs)))
        return {"verdict": "ok", "violated": [], "suggested_fixes": []}
    except Exception as error:
        text = str(error)
        fixes = text.split("Suggested fixes:\n", 1)[1].split("\n\n", 1)[0] \
            if "Suggested fixes:\n" in text else ""
        return {"verdict": "failed", "violated": violated_names(error),
                "suggested_fixes": [line.strip() for line in fixes.splitlines()]}


class GuardLines(logging.Handler):
    """torch's own log of the shape environment (``TORCH_LOGS=dynamic``): the input
    dimension of each symbol it creates, and each guard it adds with the innermost line of
    ``path`` on the stack as torch logs it."""

    def __init__(self, path: str) -> None:
        super().__init__(logging.INFO)
        self.path = path
        self.symbols: dict[str, str] = {}
        self.guards: list[tuple[str, int | None]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        created = re.match(r"create_symbol (s\d+) = \d+ for (\S+)", message)
        if created:
            self.symbols[created.group(1)] = created.group(2)
        added = re.match(r"\S+(?: \(forcing_spec\))? (.+?) \[guard added\]", message)
        if added:
            lines = [frame.lineno for frame in traceback.extract_stack()
                     if os.path.abspath(frame.filename) == self.path]
            self.guards.append((added.group(1), lines[-1] if lines else None))

    def first_line(self, source: str, constant: int) -> int | None:
        """The line of the first guard that fixed ``source`` to ``constant``, else of the
        first about it."""
        symbols = [symbol for symbol, named in self.symbols.items() if named == source]
        about = [(guard, line) for guard, line in self.guards
                 if any(re.search(rf"\b{symbol}\b", guard) for symbol in symbols)]
        pinned = [line for guard, line in about if re.fullmatch(
            rf"Eq\((s\d+, {constant}|{constant}, s\d+)\)", guard)]
        return (pinned or [line for _, line in about] or [None])[0]


def auto_batch_truth(model: torch.nn.Module, specs: dict[str, str],
                     inputs: dict[str, torch.Tensor], path: str) -> dict[str, object]:
    """Real export with the batch dimension of each input (its first, or the one its spec
    names) and its sequence dimension where its spec names one (``int64[batch=4, seq=16]``),
    each of size 2 or more, ``Dim.AUTO``: per input, the dimensions the exported program fixes
    to a constant (by index), with their role, that constant and the line torch logs the guard
    that fixed it at (none where that export fails)."""
    from torch.export import Dim
    from torch.fx.experimental.symbolic_shapes import is_concrete_int

    from fxcore.model.tensor_spec import parse_spec
    roles = {}
    for name, value in inputs.items():
        spec = parse_spec(specs[name])
        named = {spec.batch_dim: "batch", **({} if spec.sequence_dim is None
                                             else {spec.sequence_dim: "seq"})}
        roles[name] = {index: role for index, role in named.items()
                       if index < value.dim() and value.shape[index] >= 2}
    shapes = {name: dict.fromkeys(dims, Dim.AUTO) or None for name, dims in roles.items()}
    log = logging.getLogger("torch.fx.experimental.symbolic_shapes")
    handler, level = GuardLines(path), log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    previous = logging.root.manager.disable
    logging.disable(logging.NOTSET)
    try:
        program = torch.export.export(model, (), inputs, strict=False, dynamic_shapes=shapes)
    except Exception as error:  # an operator without a symbolic-shape kernel, say
        return {"specialised": {}, "error": type(error).__name__}
    finally:
        logging.disable(previous)
        log.setLevel(level)
        log.removeHandler(handler)
    specialised: dict[str, dict[str, object]] = {}
    for node in program.graph.nodes:
        if node.op != "placeholder" or node.name not in roles:
            continue
        for index, role in roles[node.name].items():
            # A specialised size stays a SymInt whose expression is the constant.
            if is_concrete_int(node.meta["val"].shape[index]):
                constant = int(node.meta["val"].shape[index])
                specialised.setdefault(node.name, {})[str(index)] = {
                    "role": role, "size": constant, "line": handler.first_line(
                        f"L['{node.name}'].size()[{index}]", constant)}
    return {"specialised": specialised, "error": None}


def ground_truth(only: Collection[str] | None = None) -> dict[str, dict[str, object]]:
    """Real export's answers for the corpus's classes (``file.py:Class``), or for ``only``
    those (a test run's shard asks for the classes it compares)."""
    expected: dict[str, dict[str, object]] = {}
    for path in sorted(CORPUS.glob("*.py")):
        if only is not None and not any(key.startswith(f"{path.name}:") for key in only):
            continue
        module = load(path)
        for name, specs in module.EXAMPLE_INPUTS.items():
            if only is not None and f"{path.name}:{name}" not in only:
                continue
            torch.manual_seed(0)
            model = getattr(module, name)()
            if "train" in getattr(module, "MODULE_MODES", ()):
                torch.manual_seed(0)
                trained = export_truth(model, real_inputs(specs), str(path), strict=False)
            model.eval()
            torch.manual_seed(0)
            truth = export_truth(model, real_inputs(specs), str(path), strict=False)
            torch.manual_seed(0)
            sites = draft_sites(model, real_inputs(specs), str(path))
            torch.manual_seed(0)
            strict = export_truth(model, real_inputs(specs), str(path), strict=True)
            expected[f"{path.name}:{name}"] = {
                **truth, "data_dependent_lines": sites, "strict": strict,
            }
            if "train" in getattr(module, "MODULE_MODES", ()):
                expected[f"{path.name}:{name}"]["train"] = trained
            spelled = getattr(module, "DYNAMIC_SHAPES", {}).get(name)
            if truth["verdict"] == "ok":
                torch.manual_seed(0)
                expected[f"{path.name}:{name}"]["auto_batch"] = auto_batch_truth(
                    model, specs, real_inputs(specs), str(path))
            if spelled is not None:
                torch.manual_seed(0)
                expected[f"{path.name}:{name}"]["dynamic"] = dynamic_truth(
                    model, real_inputs(specs), spelled)
    return expected


def main() -> int:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    print(json.dumps(ground_truth(), indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(CORPUS.parent.parent.parent))
    sys.exit(main())
