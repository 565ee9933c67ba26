"""The capture modes by name: what ``Job`` captures each class with."""

from __future__ import annotations

from fxcore.worker.capture.base import Capture
from fxcore.worker.capture.compile.capture import CompileCapture
from fxcore.worker.capture.export.capture import ExportCapture
from fxcore.worker.capture.fx.capture import FxCapture

CAPTURES: dict[str, Capture] = {FxCapture.mode: FxCapture(), ExportCapture.mode: ExportCapture(),
                                CompileCapture.mode: CompileCapture()}
