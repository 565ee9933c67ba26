"""The exporter's translation of a decomposed program into an ONNX model, run on fake
tensors: the translation reads each node's fake value (its dtype and shape), never a
tensor's data, as ``torch.onnx.enable_fake_mode`` relies on. What it raises is located at the
node it was translating; an error that needs a tensor's values is said to be one."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import fx

from fxcore.model.results import OnnxNode
from fxcore.worker.capture.onnx.exporter import Exporter
from fxcore.worker.capture.onnx.operators import call_nodes
from fxcore.worker.job.job_context import describe_exception

TRANSLATION_ERROR = "onnx-translation-error"
NOT_CHECKABLE = "onnx-not-checkable"
#: The most ONNX nodes a verdict carries for the graph page: ordinary models translate to a
#: few thousand, and the page lists them as a table, which stays readable only so long.
NODE_LIMIT = 2_000


@dataclass
class Translated:
    """The ONNX model, or the error that stopped the translation and the node it was on."""

    model: Any | None = None
    error: BaseException | None = None
    node: fx.Node | None = None

    @property
    def needs_data(self) -> bool:
        """Whether the error is a fake tensor's: a tensor's values were needed."""
        return self.error is not None and any(_is_data_access(cause)
                                              for cause in _causes(self.error))

    def reason(self) -> str:
        """The innermost error of the chain, as the exporter's report shows it last."""
        assert self.error is not None
        return describe_exception(list(_causes(self.error))[-1])


def translate(exporter: Exporter, program: torch.export.ExportedProgram,
              opset: int) -> Translated:
    """``program`` (decomposed) translated as ``torch.onnx.export`` translates it, then
    converted to ``opset`` as it converts it (which also drops the values no node uses)."""
    try:
        onnx_program = exporter.core._exported_program_to_onnx_program(
            program, registry=exporter.registry(opset))
    except Exception as error:
        return Translated(error=error, node=_failed_node(error, program.graph_module))
    try:
        return Translated(model=exporter.convert_version(onnx_program.model, opset))
    except Exception as error:
        return Translated(error=error)


def onnx_nodes(model: Any, limit: int = NODE_LIMIT) -> list[OnnxNode]:
    """The first ``limit`` nodes of ``model``'s top-level graph (an ``onnx_ir`` model, as the
    exporter builds it), in graph order."""
    nodes = []
    for node in model.graph:
        if len(nodes) == limit:
            break
        nodes.append(OnnxNode(
            op_type=node.op_type, name=node.name or "", domain=node.domain,
            inputs=["" if value is None else value.name or "" for value in node.inputs],
            outputs=[value.name or "" for value in node.outputs]))
    return nodes


def _causes(error: BaseException) -> list[BaseException]:
    chain = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _failed_node(error: BaseException, module: fx.GraphModule) -> fx.Node | None:
    """The node the exporter names in ``Error when translating node <node>``."""
    text = str(error)
    for node in call_nodes(module):
        if node.format_node() in text:
            return node
    return None


def _is_data_access(error: BaseException) -> bool:
    """A fake tensor asked for its values (``.tolist()``, ``.item()``, ``.numpy()``)."""
    from torch._subclasses.fake_tensor import DataDependentOutputException
    return isinstance(error, DataDependentOutputException) or (
        isinstance(error, RuntimeError) and "not supported for tensor subclasses" in str(error))
