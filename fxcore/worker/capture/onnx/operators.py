"""Every operator of a decomposed program looked up in the exporter's registry, as the
exporter's own dispatcher does when it translates a node (and ``report=True``'s analysis
does for all of them): what has no translation at the configured opset, and where a later
opset has one, the first that does."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from torch import fx

from fxcore.worker.capture.onnx.exporter import Exporter
from fxcore.worker.source.locate import RawPosition

#: A frame of a node's ``stack_trace`` (``traceback.format_list``'s lines).
_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
NO_TRANSLATION = "onnx-no-translation"
NEEDS_NEWER_OPSET = "onnx-needs-newer-opset"


@dataclass
class UntranslatedOperator:
    """One node the exporter's registry has no function for."""

    node: fx.Node
    kind: str
    message: str


def operator_name(node: fx.Node) -> str:
    """``aten.gelu.default``, as the exporter's messages name a target."""
    return str(node.target)


def node_stack(node: fx.Node) -> list[RawPosition]:
    """The user frames torch recorded when it made ``node`` (outermost first); the lines
    only, as a stack trace has no columns."""
    trace = node.meta.get("stack_trace") or ""
    return [RawPosition(path, function, int(line), None, None, None)
            for path, line, function in _FRAME.findall(trace)]


def call_nodes(module: fx.GraphModule) -> Iterator[fx.Node]:
    """The operator calls of ``module`` and of the subgraphs it holds (``torch.cond``'s
    branches), which the exporter translates as ONNX functions."""
    for submodule in module.modules():
        if isinstance(submodule, fx.GraphModule):
            yield from (node for node in submodule.graph.nodes if node.op == "call_function")


def untranslated(exporter: Exporter, module: fx.GraphModule,
                 opset: int) -> list[UntranslatedOperator]:
    """The nodes of ``module`` without a translation at ``opset``, each saying why."""
    registry = exporter.registry(opset)
    found = []
    for node in call_nodes(module):
        if _is_onnx_op(node):
            continue  # torch.onnx.ops.symbolic and the like: already ONNX
        function, reason = exporter.dispatching.dispatch(node, registry)
        if function is not None:
            continue
        name = operator_name(node)
        later = _first_opset_with(exporter, node, opset)
        if later is not None:
            found.append(UntranslatedOperator(node, NEEDS_NEWER_OPSET, (
                f"`{name}` has an ONNX translation only from opset {later} on: at opset "
                f"{opset} torch.onnx.export(..., dynamo=True) finds none and stops here "
                f"(export with opset_version={later}, or set onnx-opset = {later} to check "
                f"that export)")))
        else:
            found.append(UntranslatedOperator(node, NO_TRANSLATION, (
                f"`{name}` has no ONNX translation (opset {opset}, nor any up to "
                f"{exporter.max_opset}): torch.onnx.export(..., dynamo=True) stops here "
                f"({reason}). Give one in custom_translation_table: "
                f"{{{_python_name(node)}: <an onnxscript function>}}")))
    return found


def _first_opset_with(exporter: Exporter, node: fx.Node, opset: int) -> int | None:
    """The first opset after ``opset`` whose registry translates ``node``."""
    for later in range(exporter.registry_opset(opset) + 1, exporter.max_opset + 1):
        function, _ = exporter.dispatching.dispatch(node, exporter.registry(later))
        if function is not None:
            return later
    return None


def _is_onnx_op(node: fx.Node) -> bool:
    """An ``onnx::`` operator (``torch.onnx.ops``): the exporter emits it as it is."""
    namespace = getattr(node.target, "namespace", None)
    return namespace == "onnx"


def _python_name(node: fx.Node) -> str:
    """``torch.ops.my_lib.fused.default``: the key of a custom_translation_table entry."""
    return f"torch.ops.{operator_name(node)}"
