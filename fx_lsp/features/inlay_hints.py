"""Shapes as inlay hints: at the end of each line of ``forward`` (and of the helpers and
submodules it runs) that produced a tensor, the shape of what the line produces; the dtype
only where it differs from the inputs'."""

from __future__ import annotations

from lsprotocol import types

from fx_lsp.features import positions
from fx_lsp.features.snapshot import DocumentSnapshot
from fxcore.model.results import first_verdicts
from fxcore.reporting.report import line_shapes


def _shown(shape: str, input_dtype: str | None) -> str:
    """``[2, 64]`` for the inputs' dtype, ``int64[2, 8]`` for another."""
    if input_dtype is not None and shape.startswith(input_dtype + "["):
        return shape[len(input_dtype):]
    return shape


def inlay_hints(snapshot: DocumentSnapshot, requested: types.Range) -> list[types.InlayHint]:
    """One hint per line of the document within ``requested``, when its settings ask for
    them; the first class that gives a line a shape wins (the document's own classes first).
    None from a result of an older text: its shapes would sit on the wrong lines."""
    if not snapshot.options.shape_hints or snapshot.result is None or not snapshot.current:
        return []
    path, lines = snapshot.path, snapshot.lines
    found: dict[int, str] = {}
    for result in (snapshot.result, *snapshot.traced_with):
        for module in first_verdicts(result.modules):
            if module.status != "traceable":
                continue  # a recovered graph's shapes are in the hover, marked as such
            tensors = module.inputs.tensors.values() if module.inputs else []
            dtypes = {spec.split("[")[0] for spec in tensors}
            input_dtype = dtypes.pop() if len(dtypes) == 1 else None
            for (where, line), shape in line_shapes(module).items():
                if where == path and requested.start.line <= line - 1 <= requested.end.line:
                    found.setdefault(line, _shown(shape, input_dtype))
    hints = []
    for line, label in sorted(found.items()):
        if line > len(lines):
            continue
        end = positions.to_lsp(lines, line, len(lines[line - 1]) + 1, snapshot.encoding)
        hints.append(types.InlayHint(position=end, label=label, kind=types.InlayHintKind.Type,
                                     padding_left=True))
    return hints
