"""The pieces of torch's ONNX exporter (``torch.onnx._internal.exporter``, the
``dynamo=True`` path) the onnx mode runs, feature-detected: its registry of translations
(``_registration``), the decomposition and translation it runs on an exported program
(``_core``), its dispatcher (``_dispatching``, what ``report=True``'s analysis calls) and its
opset numbers. They are private: where this torch lacks one, or the packages the exporter
imports (onnx, onnxscript) are missing or do not fit it, the mode says why instead."""

from __future__ import annotations

import functools
import importlib
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from fxcore.model.capture_modes import missing_packages_reason

#: How to install what the exporter imports.
INSTALL = "pip install 'fx-lsp[onnx]'"
#: The private attributes of each module of ``torch.onnx._internal.exporter`` used here.
_NEEDED: dict[str, tuple[str, ...]] = {
    "_registration": ("ONNXRegistry",),
    "_core": ("_prepare_exported_program_for_export", "_exported_program_to_onnx_program"),
    "_dispatching": ("dispatch",),
    "_constants": ("TORCHLIB_OPSET",),
}


@dataclass(frozen=True)
class Exporter:
    """The exporter's modules, as this torch has them."""

    registration: ModuleType
    core: ModuleType
    dispatching: ModuleType
    #: The opset the registry is written for: an export to a lower one translates at this
    #: one, then converts the model down (``torch.onnx``'s ``_compat``).
    torchlib_opset: int
    #: ``torch.onnx.export``'s ``opset_version`` when none is given, and the highest it takes.
    default_opset: int
    max_opset: int
    #: onnxscript's version converter, which ``torch.onnx.export`` runs on the translated
    #: model for the ``opset_version`` it is given (always: its default is a number).
    convert_version: Any

    def registry_opset(self, opset: int) -> int:
        """The opset of the registry ``torch.onnx.export(opset_version=opset)`` builds."""
        return max(opset, self.torchlib_opset)

    def registry(self, opset: int) -> Any:
        return _registry(self.registration, self.registry_opset(opset))


@functools.cache
def exporter() -> Exporter | str:
    """This torch's exporter pieces, or why they are not there."""
    missing = missing_packages_reason("onnx")
    if missing is not None:
        return missing
    modules: dict[str, ModuleType] = {}
    for name, attributes in _NEEDED.items():
        try:
            module = importlib.import_module(f"torch.onnx._internal.exporter.{name}")
        except Exception as error:  # an onnxscript that does not fit this torch, say
            return (f"this torch's ONNX exporter cannot be imported with the installed "
                    f"onnx/onnxscript ({type(error).__name__}: {error}); {INSTALL} in a "
                    f"version that fits this torch")
        lacking = [attribute for attribute in attributes if not hasattr(module, attribute)]
        if lacking:
            return (f"this torch's ONNX exporter has no {', '.join(lacking)} in "
                    f"torch.onnx._internal.exporter.{name}, which the onnx mode uses")
        modules[name] = module
    try:
        apis = importlib.import_module("torch.onnx._internal._lazy_import").onnxscript_apis
        convert_version = apis.convert_version
    except Exception as error:  # an onnxscript without the API this torch calls
        return (f"this torch's ONNX exporter cannot use the installed onnxscript "
                f"({type(error).__name__}: {error}); {INSTALL} in a version that fits "
                f"this torch")
    public = importlib.import_module("torch.onnx._constants")
    return Exporter(
        registration=modules["_registration"],
        core=modules["_core"],
        dispatching=modules["_dispatching"],
        torchlib_opset=modules["_constants"].TORCHLIB_OPSET,
        default_opset=getattr(public, "ONNX_DEFAULT_OPSET", modules["_constants"].TORCHLIB_OPSET),
        max_opset=getattr(public, "ONNX_MAX_OPSET", modules["_constants"].TORCHLIB_OPSET),
        convert_version=convert_version,
    )


@functools.cache
def _registry(registration: ModuleType, opset: int) -> Any:
    """The registry ``torch.onnx.export`` builds for ``opset`` (about a second each, once
    per process: a zygote's warm-up builds the default one)."""
    return registration.ONNXRegistry.from_torchlib(opset_version=opset)
