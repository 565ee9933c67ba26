"""Rows filtered by a boolean test read with ``.tolist()`` (GB0109, GB0033 at the read) kept a
boolean mask in the graph, with libcst; idempotent.

::

    keep = (scores > t).tolist()                      keep = scores > t
    rows = [r for r, k in zip(x, keep) if k]    ->    rows = x[keep]
    return torch.stack(rows)                          return rows

Also of ``zip(keep, x)`` (``strict=`` either way: the mask has one flag per row), of
``[x[i] for i, k in enumerate(keep) if k]``, of the ``.tolist()`` read inside the
comprehension, of the comprehension given to ``torch.stack`` straight, and ``torch.cat(rows)``
as ``rows.flatten(0, 1)``. Only where the test is boolean (a comparison, ``.gt()`` and its kin,
``~``, ``&``, ``|`` of such), the flags are read by that comprehension only, and the rows only
by that ``torch.stack``/``torch.cat`` along dimension 0. The same values where the test gives
one flag per row and some row is kept (stacking no rows raises, a mask of none gives an empty
tensor): unsafe. The mask's selection has a size read from data: the class's compiled calls
need ``capture_dynamic_output_shape_ops``, set for them only
(``scoped_options``, by name: the fix's ``import_edit``).
"""

from __future__ import annotations

import functools

import libcst as cst
from libcst.metadata import (
    ExpressionContext,
    ExpressionContextProvider,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
)

from fxcore.fixing import scoped_options
from fxcore.fixing.fix import Fix, Run
from fxcore.fixing.libcst_edits import dotted_name, parse_source
from fxcore.fixing.pt2_fixes import ensure_torch_import, torch_spelling
from fxcore.fixing.statement_edits import code, is_method_call
from fxcore.model.results import Failure, ModuleResult

OPTION = "torch._dynamo.config.capture_dynamic_output_shape_ops"
#: Tensor methods that give a boolean tensor.
_BOOLEAN_METHODS = ("gt", "ge", "lt", "le", "eq", "ne", "logical_and", "logical_or",
                    "logical_not", "isfinite", "isnan", "isinf", "bool")


def _boolean(node: cst.BaseExpression) -> bool:
    if isinstance(node, cst.Comparison):
        return len(node.comparisons) == 1
    if isinstance(node, cst.UnaryOperation):
        return isinstance(node.operator, cst.BitInvert) and _boolean(node.expression)
    if isinstance(node, cst.BinaryOperation):
        return isinstance(node.operator, (cst.BitAnd, cst.BitOr)) and \
            _boolean(node.left) and _boolean(node.right)
    return isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
        node.func.attr.value in _BOOLEAN_METHODS


class _Plan:
    """The nodes of one filter, found from the ``.tolist()`` read, and what replaces them."""

    def __init__(self, wrapper: MetadataWrapper, torch: str) -> None:
        self.parents = wrapper.resolve(ParentNodeProvider)
        self.positions = wrapper.resolve(PositionProvider)
        self.contexts = wrapper.resolve(ExpressionContextProvider)
        self.torch = torch
        self.replacements: dict[cst.CSTNode, cst.CSTNode] = {}

    def read_once(self, target: cst.Name) -> cst.Name | None:
        """The one load of ``target``'s name in its function (``target`` itself left out),
        None where it is read more often, or stored again."""
        function = target
        while function is not None and not isinstance(function, cst.FunctionDef):
            function = self.parents.get(function)
        if function is None:
            return None
        found: list[cst.Name] = []
        contexts = self.contexts

        class _Loads(cst.CSTVisitor):
            def visit_Name(self, node: cst.Name) -> None:
                if node.value == target.value and node is not target:
                    found.append(node)

        function.visit(_Loads())
        return found[0] if len(found) == 1 and \
            contexts.get(found[0]) == ExpressionContext.LOAD else None

    def joined(self, rows: cst.CSTNode) -> tuple[cst.Call, str] | None:
        """The ``torch.stack(rows)``/``torch.cat(rows)`` along dimension 0 ``rows`` is given
        to, and the method chain that makes its value of the selected rows."""
        argument = self.parents.get(rows)
        call = self.parents.get(argument)
        if not isinstance(argument, cst.Arg) or not isinstance(call, cst.Call) or \
                argument.keyword is not None or argument.star or call.args[0] is not argument:
            return None
        function = dotted_name(call.func) or ""
        chain = {f"{self.torch}.stack": "", f"{self.torch}.cat": ".flatten(0, 1)"}.get(function)
        dims = [(arg.keyword.value if arg.keyword else None, code(arg.value))
                for arg in call.args[1:]]
        if chain is None or dims not in ([], [(None, "0")], [("dim", "0")]):
            return None
        return call, chain

    def comprehension(self, flags: cst.CSTNode) -> tuple[cst.ListComp, str] | None:
        """The ``[r for r, k in zip(x, flags) if k]`` (or of ``zip(flags, x)``, or
        ``[x[i] for i, k in enumerate(flags) if k]``) ``flags`` is iterated in, and ``x``."""
        argument = self.parents.get(flags)
        call = self.parents.get(argument)
        loop = self.parents.get(call)
        comp = self.parents.get(loop)
        if not (isinstance(argument, cst.Arg) and isinstance(call, cst.Call) and
                isinstance(loop, cst.CompFor) and loop.iter is call and
                isinstance(comp, cst.ListComp) and loop.inner_for_in is None and
                len(loop.ifs) == 1 and isinstance(loop.target, cst.Tuple) and
                len(loop.target.elements) == 2 and loop.asynchronous is None and
                not any(arg.star for arg in call.args)):
            return None
        keywords = [arg.keyword.value for arg in call.args if arg.keyword is not None]
        positional = [arg for arg in call.args if arg.keyword is None]
        names = [code(element.value) for element in loop.target.elements]
        test, element = code(loop.ifs[0].test), code(comp.elt)
        function = dotted_name(call.func)
        if function == "zip" and len(positional) == 2 and keywords in ([], ["strict"]):
            at = 1 if positional[1] is argument else 0
            rows = code(positional[1 - at].value)
            return (comp, rows) if test == names[at] and element == names[1 - at] else None
        if function == "enumerate" and len(positional) == 1 and not keywords and \
                test == names[1] and \
                isinstance(comp.elt, cst.Subscript) and len(comp.elt.slice) == 1 and \
                code(comp.elt.slice[0].slice) == names[0]:
            return comp, code(comp.elt.value)
        return None

    def plan(self, read: cst.Call, statement: cst.BaseSmallStatement) -> bool:
        """Fill ``replacements`` for the filter of ``read`` (``<test>.tolist()``)."""
        assert isinstance(read.func, cst.Attribute)
        test = read.func.value
        if isinstance(statement, cst.Assign) and statement.value is read:
            targets = statement.targets
            if len(targets) != 1 or not isinstance(targets[0].target, cst.Name):
                return False
            flags: cst.CSTNode | None = self.read_once(targets[0].target)
            mask = targets[0].target.value
        else:
            flags, mask = read, code(test.with_changes(lpar=[], rpar=[]))
        found = self.comprehension(flags) if flags is not None else None
        if found is None:
            return False
        comp, rows = found
        selected = f"{rows}[{mask}]"
        assignment = self.parents.get(comp)
        if isinstance(assignment, cst.Assign) and len(assignment.targets) == 1 and \
                isinstance(name := assignment.targets[0].target, cst.Name):
            use = self.read_once(name)
            joined = self.joined(use) if use is not None else None
            if joined is None:
                return False
            self.replacements[joined[0]] = cst.parse_expression(f"{name.value}{joined[1]}")
        else:
            joined = self.joined(comp)
            if joined is None:
                return False
            selected += joined[1]
            comp = joined[0]
        if read is not flags:
            self.replacements[read] = test.with_changes(lpar=[], rpar=[])
        self.replacements[comp] = cst.parse_expression(selected)
        return True


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: dict[cst.CSTNode, cst.CSTNode]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode
                 ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        return self.replacements.get(original_node, updated_node)


def rows_to_mask(source: str, line: int) -> str:
    """The filter whose ``.tolist()`` read is in the statement starting on ``line`` as a
    boolean mask (see above); ``source`` itself when it is not of that shape."""
    try:
        module = parse_source(source)
    except cst.ParserSyntaxError:
        return source
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    plan = _Plan(wrapper, torch_spelling(module) or "torch")
    statements = [node for node, where in plan.positions.items()
                  if isinstance(node, cst.SimpleStatementLine) and where.start.line == line
                  and len(node.body) == 1]
    reads: list[cst.Call] = []

    class _Reads(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if is_method_call(node, ("tolist",)) and isinstance(node.func, cst.Attribute) \
                    and _boolean(node.func.value):
                reads.append(node)

    for statement in statements:
        statement.visit(_Reads())
        if len(reads) == 1 and plan.plan(reads[0], statement.body[0]):
            return module.visit(_Replace(plan.replacements)).code
    return source


def _scoped(source: str, class_name: str) -> str:
    """The option set for ``class_name``'s compiled calls, and ``import torch``."""
    return ensure_torch_import(scoped_options.scope_config_option(source, class_name, OPTION))


def fixes_of(failure: Failure, module: ModuleResult | None, source: str, run: Run
             ) -> list[Fix]:
    """The mask, where the class's calls can have the option set for them only."""
    if module is None or module.path != failure.path or \
            scoped_options.why_not_scoped(OPTION) is not None or \
            not run(scoped_options.has_forward, source, module.class_name) or \
            run(rows_to_mask, source, failure.line) == source:
        return []
    return [Fix(f"Keep the row filter a boolean mask in the graph (x[mask] for the rows a "
                f".tolist() of the test keeps, stacked; {module.class_name}'s compiled calls "
                "get capture_dynamic_output_shape_ops: the same values where the test gives "
                "one flag per row and keeps some: unsafe)", failure.path,
                functools.partial(rows_to_mask, line=failure.line), True, safe=False,
                position=(failure.line, failure.column),
                import_edit=functools.partial(_scoped, class_name=module.class_name))]
