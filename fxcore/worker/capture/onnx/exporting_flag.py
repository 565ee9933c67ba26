"""``torch.onnx.is_in_onnx_export()``: True while ``torch.onnx.export`` captures a model, so
code may take another path for ONNX (``torch.onnx.ops.symbolic``, an operator ONNX lacks
replaced). A class whose module tree reads it is exported again for the onnx mode with the
flag set, as the exporter sets it; any other reuses the export mode's program."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator

import torch

from fxcore.worker.module_modes.judging import class_reads

#: The function and the flag behind it (``torch.onnx.__init__``).
FUNCTION = "is_in_onnx_export"
_FLAGS = "torch.onnx._internal.exporter._flags"
_FLAG = "_is_onnx_exporting"


def reads_flag(model: torch.nn.Module) -> bool:
    """Whether a class of ``model``'s module tree calls ``is_in_onnx_export``."""
    return any(class_reads(cls, FUNCTION) for cls in {type(module) for module in model.modules()})


def missing_flag() -> str | None:
    """Why this torch's exporting flag cannot be set, if it cannot."""
    try:
        flags = importlib.import_module(_FLAGS)
    except ImportError as error:
        return f"{_FLAGS} cannot be imported ({error})"
    return None if hasattr(flags, _FLAG) else f"{_FLAGS} has no {_FLAG}"


@contextlib.contextmanager
def onnx_exporting() -> Iterator[None]:
    """``torch.onnx.is_in_onnx_export()`` True inside, as during ``torch.onnx.export``."""
    flags = importlib.import_module(_FLAGS)
    before = getattr(flags, _FLAG)
    setattr(flags, _FLAG, True)
    try:
        yield
    finally:
        setattr(flags, _FLAG, before)
