"""Ground truth of the export corpus (tests/corpus/export): what REAL torch.export does on CPU
with real weights and real inputs, printed as JSON (tests/test_export_capture.py and
tests/test_export_dynamic.py compute it in the same run on the installed torch, through
tests/real_torch_answers.py, never from a record).

For each class named in a corpus file's ``EXAMPLE_INPUTS``: the verdict and first line of
``torch.export.export(model, (), inputs, strict=False)``, and the lines of every
data-dependent error that ``torch.export.draft_export`` (which runs on the real values and
goes on past them) reports in that file. For a class also named in the file's
``DYNAMIC_SHAPES`` (spelled as the ``dynamic`` option of ``[tool.fx-lsp.modules]``), under
``dynamic``: the verdict of the same export with those ``dynamic_shapes``, the dimensions
torch says the code violated and the fixes it suggests. Under ``strict``: the verdict, first
line and error of the same export with ``strict=True`` (dynamo; its errors carry the user's
stack as ``real_stack``, their traceback holds only dynamo's frames).

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
import sys
import traceback
import warnings
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


def ground_truth() -> dict[str, dict[str, object]]:
    expected: dict[str, dict[str, object]] = {}
    for path in sorted(CORPUS.glob("*.py")):
        module = load(path)
        for name, specs in module.EXAMPLE_INPUTS.items():
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
