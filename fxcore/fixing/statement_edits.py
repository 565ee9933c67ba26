"""Rewrites of the expressions in the one simple statement a graph break is reported at: the
statement starting on the break's line (torch names the line of its first instruction), with
libcst so that formatting and comments survive. ``scalar_fixes``, ``dynamic_shape_fixes`` and
``loop_fixes`` give the transformer that rewrites its expressions; a rewrite that finds nothing
there leaves the text as it is, so that planning a fix is computing its edit."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from fxcore.fixing.libcst_edits import parse_source
from fxcore.fixing.pt2_fixes import torch_spelling

#: A transformer that rewrites the expressions of one statement, given torch's spelling.
ExpressionRewriter = Callable[[str], cst.CSTTransformer]


class _OnLine(cst.CSTTransformer):
    """Applies the rewriter to the first simple statement whose first line is ``line``."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int, rewriter: cst.CSTTransformer) -> None:
        super().__init__()
        self.line = line
        self.rewriter = rewriter
        self.done = False

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine
                                  ) -> cst.SimpleStatementLine:
        if self.done or self.get_metadata(PositionProvider, original_node).start.line \
                != self.line:
            return updated_node
        self.done = True
        rewritten = updated_node.visit(self.rewriter)
        return rewritten if isinstance(rewritten, cst.SimpleStatementLine) else updated_node


def rewrite_statement(source: str, line: int, rewriter: ExpressionRewriter) -> str:
    """``source`` with the simple statement starting on ``line`` rewritten by ``rewriter``
    (``import torch`` is the fix's ``import_edit``); ``source`` itself when nothing in it is
    rewritten or libcst cannot parse it."""
    try:
        module = parse_source(source)
    except cst.ParserSyntaxError:
        return source
    edit = _OnLine(line, rewriter(torch_spelling(module) or "torch"))
    return MetadataWrapper(module, unsafe_skip_copy=True).visit(edit).code


def is_method_call(node: cst.BaseExpression, names: tuple[str, ...], arguments: int = 0
                   ) -> bool:
    """``<receiver>.<name>()`` for one of ``names``, with ``arguments`` positional ones."""
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
        node.func.attr.value in names and len(node.args) == arguments and \
        all(arg.keyword is None and not arg.star for arg in node.args)


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node)
