"""The capture modes by name: what ``Job`` captures each class with.

The built-in modes (``fxcore.model.capture_modes.BUILTIN_MODES``), then those
``FX_LSP_EXTRA_CAPTURES`` names, each imported here from its installed module.
"""

from __future__ import annotations

import importlib

from fxcore.model.capture_modes import extra_captures
from fxcore.worker.capture.base import Capture
from fxcore.worker.capture.compile.compiling import CompileCapture
from fxcore.worker.capture.export.exporting import ExportCapture
from fxcore.worker.capture.fx.tracing import FxCapture
from fxcore.worker.capture.onnx.converting import OnnxCapture


def _extra_capture(mode: str, import_path: str) -> Capture:
    module_name, _, class_name = import_path.partition(":")
    capture = getattr(importlib.import_module(module_name), class_name)()
    if capture.mode != mode:
        raise ValueError(f"FX_LSP_EXTRA_CAPTURES: {import_path} is the mode {capture.mode!r}, "
                         f"not {mode!r}")
    return capture


CAPTURES: dict[str, Capture] = {FxCapture.mode: FxCapture(), ExportCapture.mode: ExportCapture(),
                                CompileCapture.mode: CompileCapture(),
                                OnnxCapture.mode: OnnxCapture()}
CAPTURES.update({mode: _extra_capture(mode, import_path)
                 for mode, import_path in extra_captures().items() if mode not in CAPTURES})
