"""The check of an exported program's constants that torch.export skips on fake inputs, made
by fx-lsp after its own export, so that the verdict is the one real inputs get.

A tensor that ``forward`` reaches without export tracing it (read through ``.data``, which
export does not record; a ``set_`` from it inside an ``autograd.Function``) becomes a constant
of the exported program, named by export (``lifted_tensor_0``), whose value is a fake tensor
without data. Non-strict ``torch.export.export`` on real inputs then raises ``RuntimeError:
We found a fake tensor in the exported program constant's list`` (``_export_for_training`` in
``torch/export/_trace.py``); but when its inputs are already fake, as fx-lsp's are (``fake``),
it expects fake constants and lets them through (``has_ambient_mode``). Strict export never
makes this check.

This is the only check torch.export relaxes for fake inputs (torch 2.13); the other places
that look for fake inputs only choose which fake mode to trace in.
"""

from __future__ import annotations

import re

import torch
from torch.export.graph_signature import InputKind

from fxcore.worker.capture.export import torch_hooks
from fxcore.worker.job.capture_target import RecordedFailure
from fxcore.worker.source.locate import RawPosition, is_plumbing

#: The kind of the failure (FX499): real torch ends the export with this error; its own kind,
#: as no eager run repeats it (``fxcore.worker.inputs.eager_runs.own_choices`` looks for
#: "export-error").
KIND = "export-untraced-constant"
#: A frame of a node's ``stack_trace`` (traceback text, outermost first).
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


def untraced_constants(program: torch.export.ExportedProgram
                       ) -> tuple[list[RecordedFailure], str | None]:
    """A failure for each constant of ``program`` that real inputs would have made export
    reject, at the first line that uses it; and why the check cannot be made in this torch,
    or None."""
    made_up = torch_hooks.made_up_constant_test()
    if made_up is None:
        return [], None
    if isinstance(made_up, str):
        return [], made_up
    failures = []
    for name, value in program.constants.items():
        if isinstance(value, torch_hooks.FakeTensor) and made_up(name):
            failures.append(RecordedFailure(KIND, _message(name), _first_use(program, name)))
    return failures, None


def _first_use(program: torch.export.ExportedProgram, name: str) -> list[RawPosition]:
    """The stack of the first node that uses the constant ``name`` (its own input node has
    none: export drops it when it lifts the constant)."""
    inputs = {spec.arg.name for spec in program.graph_signature.input_specs
              if spec.kind == InputKind.CONSTANT_TENSOR and spec.target == name}
    for node in program.graph.nodes:
        trace = node.meta.get("stack_trace")
        if trace and any(used.name in inputs for used in node.all_input_nodes):
            return [RawPosition(path, function, int(line), None, None, None)
                    for path, line, function in _FRAME.findall(trace)
                    if not is_plumbing(path)]
    return []


def _message(name: str) -> str:
    return (f"torch.export failed: this line uses a tensor that torch.export did not trace, "
            f"so the exported program holds it as the constant `{name}`, a fake tensor "
            f"without data. On real inputs torch.export raises RuntimeError: \"We found a "
            f"fake tensor in the exported program constant's list\" (on the fake inputs "
            f"fx-lsp exports with, torch lets it through). A tensor read through `.data` is "
            f"not traced: use the tensor itself, or `.detach()` where no gradient may "
            f"flow.")
