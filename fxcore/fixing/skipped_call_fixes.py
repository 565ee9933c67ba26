"""Fixes of graph breaks at calls dynamo does not trace: a C extension's or a third-party
function, numpy functions ``torch._numpy`` lacks, ``copy.deepcopy`` of a tensor. The sites are
``skipped_call_sites``'s; the edits are made with libcst, idempotent.

In the order ``--fix`` prefers them:

- an element-wise call on one tensor through numpy: a ``torch.library.custom_op`` around the
  expression, its fake implementation ``torch.empty_like`` of the tensor (safe: the compiled
  code calls the same function on the same data);
- a call whose value depends on shapes only (``zlib.crc32(str(x.shape).encode())``): a
  helper ``@torch.compiler.assume_constant_result`` (``shape_constant_fixes``; unsafe: a dynamic
  size still breaks the graph there);
- a break inside a module-level helper: ``@torch._dynamo.nonstrict_trace`` where the workers'
  torch has it (unsafe: the helper's Python runs when torch traces it, not on every call);
  ``@torch.compiler.disable`` last (unsafe: the helper runs uncompiled, and the call to it still
  breaks the graph, so it is never preferred);
- ``copy.deepcopy(x)`` of a tensor: ``x.detach().clone()`` (unsafe: the copy is no longer a
  leaf tensor that requires grad; its values are the same).
"""

from __future__ import annotations

import functools
import re

import libcst as cst

from fxcore.fixing.fix import Fix, Run, TextOf
from fxcore.fixing.libcst_edits import EditAtPosition, dotted_name, edit_at, parse_source
from fxcore.fixing.pt2_fixes import ensure_torch_import, torch_spelling
from fxcore.fixing.shape_constant_fixes import (
    define_helpers,
    has_constant_result,
    shape_constant_calls,
    shape_constant_helpers,
)
from fxcore.fixing.skipped_call_sites import OpSite, call_sites, dynamo_decorators
from fxcore.model.results import Failure
from fxcore.rules.compile import GRAPH_BREAK_PREFIX
from fxcore.workspace.paths import import_location

#: Breaks at a call dynamo does not trace into: a skipped function (GB0007-GB0009), a C
#: extension's method (``ufunc.__call__``, GB0156), a numpy function torch._numpy lacks.
SKIPPED_CALLS = frozenset(f"{GRAPH_BREAK_PREFIX}gb{code}"
                          for code in ("0007", "0008", "0009", "0156", "0294"))
DEEPCOPY = f"{GRAPH_BREAK_PREFIX}gb4198"


class _ReplaceWithOp(EditAtPosition):
    def __init__(self, module: cst.Module, line: int, column: int, op_name: str,
                 tensor: str) -> None:
        super().__init__(module, line, column)
        self.call = cst.parse_expression(f"{op_name}({tensor})")

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        called = dotted_name(original_node.func) or ""
        if self.changed or not self.starts_here(original_node) \
                or called.rsplit(".", 1)[-1] not in ("from_numpy", "as_tensor", "tensor"):
            return updated_node
        self.changed = True
        return self.call.with_changes(lpar=updated_node.lpar, rpar=updated_node.rpar)


def replace_with_op(source: str, line: int, column: int, op_name: str, tensor: str) -> str:
    """Replace the call starting at ``line``/``column`` with ``op_name(tensor)``."""
    return edit_at(source, _ReplaceWithOp, line, column, op_name, tensor)


def _defines(module: cst.Module, name: str) -> bool:
    return any(isinstance(statement, cst.FunctionDef) and statement.name.value == name
               for statement in module.body)


def define_op(source: str, op_name: str, qualified: str, body: str, dtype: str | None) -> str:
    """Define the custom op ``op_name`` (computing ``body`` of ``tensor``) before the
    first module-level statement that uses it, with ``import torch``; unchanged when defined."""
    module = parse_source(source)
    if _defines(module, op_name):
        return source
    torch = torch_spelling(module) or "torch"
    cast = f", dtype={torch}.{dtype}" if dtype else ""
    definition = parse_source(
        f'@{torch}.library.custom_op("fx_lsp_fixes::{qualified}", mutates_args=())\n'
        f"def {op_name}(tensor: {torch}.Tensor) -> {torch}.Tensor:\n"
        f"    return {body}\n\n\n"
        f"@{op_name}.register_fake\n"
        f"def {op_name}_fake(tensor: {torch}.Tensor) -> {torch}.Tensor:\n"
        f"    # Element-wise: the input's shape.\n"
        f"    return {torch}.empty_like(tensor{cast})\n").body
    body = list(module.body)
    pattern = re.compile(rf"\b{re.escape(op_name)}\b")
    at = next((index for index, statement in enumerate(body)
               if pattern.search(module.code_for_node(statement))), len(body))
    spacing = [cst.EmptyLine(), cst.EmptyLine()]
    following = [body[at].with_changes(leading_lines=spacing)] if at < len(body) else []
    first = definition[0].with_changes(leading_lines=spacing if at else [])
    body[at:at + 1] = [first, definition[1].with_changes(leading_lines=spacing), *following]
    return ensure_torch_import(module.with_changes(body=body).code)


def decorate_helper(source: str, function: str, decorator: str) -> str:
    """Decorate the module-level ``def function`` with ``@torch.<decorator>`` (as the file
    spells torch); unchanged when it has that decorator."""
    module = parse_source(source)
    torch = torch_spelling(module) or "torch"
    wanted = f"{torch}.{decorator}"
    body = []
    changed = False
    for statement in module.body:
        if isinstance(statement, cst.FunctionDef) and statement.name.value == function and \
                all(dotted_name(d.decorator) != wanted for d in statement.decorators):
            statement = statement.with_changes(decorators=[
                *statement.decorators, cst.Decorator(cst.parse_expression(wanted))])
            changed = True
        body.append(statement)
    return module.with_changes(body=body).code if changed else source


class _DeepcopyToClone(EditAtPosition):
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.changed or not self.starts_here(original_node) or len(updated_node.args) != 1 \
                or (dotted_name(original_node.func) or "").rsplit(".", 1)[-1] != "deepcopy":
            return updated_node
        copied = updated_node.args[0].value
        if not isinstance(copied, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            copied = copied.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        self.changed = True
        detached = cst.Call(func=cst.Attribute(value=copied, attr=cst.Name("detach")))
        return cst.Call(func=cst.Attribute(value=detached, attr=cst.Name("clone")),
                        lpar=updated_node.lpar, rpar=updated_node.rpar)


def deepcopy_to_clone(source: str, line: int, column: int) -> str:
    """Replace the ``copy.deepcopy(x)`` starting at ``line``/``column`` with
    ``x.detach().clone()``."""
    return edit_at(source, _DeepcopyToClone, line, column)


def _on_lines(failure: Failure, line: int) -> bool:
    return failure.line <= line <= max(failure.end_line, failure.line)


def _op_fix(failure: Failure, site: OpSite, text_of: TextOf) -> Fix:
    module_name = re.sub(r"\W", "_", import_location(failure.path, text_of).module_name)
    definition = functools.partial(
        define_op, op_name=site.op_name, qualified=f"{module_name}{site.op_name}",
        body=site.body, dtype=site.dtype)
    return Fix(f"Run {site.function}() as a custom op (torch.library.custom_op, its fake "
               "the input's shape; outputs kept: safe)", failure.path,
               functools.partial(replace_with_op, line=site.line, column=site.column,
                                 op_name=site.op_name, tensor=site.tensor),
               preferred=True, position=(site.line, site.column), import_edit=definition)


def _helper_fixes(failure: Failure, helpers: tuple[tuple[str, int, int], ...]) -> list[Fix]:
    """The escape hatches over the smallest module-level function the break is in."""
    helper = next((name for name, first, last in helpers if first <= failure.line <= last), None)
    if helper is None:
        return []
    found = []
    if "nonstrict_trace" in dynamo_decorators():
        found.append(Fix(
            f"Trace {helper}() non-strictly (@torch._dynamo.nonstrict_trace; its Python runs "
            "when traced, not per call: unsafe)", failure.path,
            functools.partial(decorate_helper, function=helper,
                              decorator="_dynamo.nonstrict_trace"),
            preferred=True, safe=False, import_edit=ensure_torch_import))
    found.append(Fix(
        f"Leave {helper}() uncompiled (@torch.compiler.disable; the call still breaks the "
        "graph: unsafe)", failure.path,
        functools.partial(decorate_helper, function=helper, decorator="compiler.disable"),
        safe=False, import_edit=ensure_torch_import))
    return found


def _operand(expression: str) -> str:
    """``expression`` as the receiver of a method call: parenthesised unless a name chain."""
    return expression if re.fullmatch(r"[\w.]+", expression) else f"({expression})"


def fixes_of(failure: Failure, text_of: TextOf, run: Run) -> list[Fix]:
    """The fixes of a graph break at a skipped call or a deepcopy of a tensor."""
    if failure.kind not in SKIPPED_CALLS and failure.kind != DEEPCOPY:
        return []
    source = text_of(failure.path)
    sites = run(call_sites, source) if source is not None else None
    if sites is None:
        return []
    if failure.kind == DEEPCOPY:
        return [Fix(f"Replace copy.deepcopy({site.copied}) with {_operand(site.copied)}"
                     ".detach().clone() "
                     "(the same values; no longer a leaf that requires grad: unsafe)",
                     failure.path, functools.partial(deepcopy_to_clone, line=site.line,
                                                     column=site.column),
                     preferred=True, safe=False, position=(site.line, site.column))
                for site in sites.deepcopies if _on_lines(failure, site.line)][:1]
    ops = [site for site in sites.ops if _on_lines(failure, site.line)]
    if ops:
        return [_op_fix(failure, ops[0], text_of)]
    helpers = run(shape_constant_helpers, source, failure.line) \
        if has_constant_result() and source is not None else ()
    if helpers:
        return [Fix("Compute the call on shapes in a helper torch.compile takes as a constant "
                    "(@torch.compiler.assume_constant_result: computed once per shape, the "
                    "same values; where a size is dynamic the call still breaks the graph: "
                    "unsafe)", failure.path,
                    functools.partial(shape_constant_calls, line=failure.line),
                    preferred=True, safe=False, position=(failure.line, failure.column),
                    import_edit=functools.partial(define_helpers, helpers=helpers))]
    return _helper_fixes(failure, sites.helpers)
