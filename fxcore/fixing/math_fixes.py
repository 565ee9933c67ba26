"""A number read with ``.item()`` (GB0124) that only feeds ``math`` functions kept a 0-d
tensor, with libcst; idempotent.

``math.exp(s)`` of ``s = self.log_scale.item()`` is where ``capture_scalar_outputs`` moves the
break to (a symbolic float Python's ``math`` cannot take); torch has the same functions for
tensors, so ``s = self.log_scale.detach().reshape(())`` and ``torch.exp(s)`` keep it in the
graph. ``.detach()`` because ``.item()`` took no gradient, ``.reshape(())`` because it read a
one-element tensor of any shape. Made only where every read of the number is the one argument
of such a function (``s`` or ``-s``), and each such call is an operand of ``+``, ``-``, ``*``
or ``/`` that is combined, at last, with an operand other than a number literal: a tensor
there, beside which a 0-d tensor takes no part in type promotion. The values are the same up
to float rounding: the function is computed in the tensor's dtype, not in a Python float's
double precision, hence unsafe.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import (
    ExpressionContext,
    ExpressionContextProvider,
    MetadataWrapper,
    ParentNodeProvider,
    PositionProvider,
)

from fxcore.fixing.libcst_edits import dotted_name, module_imports, parse_source
from fxcore.fixing.pt2_fixes import is_item_call, torch_spelling

#: ``math`` functions of one float and the torch functions of a tensor that compute them.
MATH_TO_TORCH = {name: name for name in (
    "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "sin", "cos", "tan", "asin",
    "acos", "atan", "sinh", "cosh", "tanh", "erf", "erfc")} | {"fabs": "abs"}
_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)


def _math_functions(module: cst.Module) -> dict[str, str]:
    """Callee spelling -> torch function: ``math.exp`` (or ``m.exp`` for ``import math as
    m``), ``exp`` for ``from math import exp``."""
    found = {}
    for small in module_imports(module):
        if isinstance(small, cst.Import):
            for alias in small.names:
                if dotted_name(alias.name) == "math":
                    bound = alias.asname.name if alias.asname else alias.name
                    prefix = bound.value if isinstance(bound, cst.Name) else "math"
                    found |= {f"{prefix}.{name}": torch for name, torch in MATH_TO_TORCH.items()}
        elif dotted_name(small.module or cst.Name("")) == "math" and \
                not isinstance(small.names, cst.ImportStar):
            for alias in small.names:
                name = dotted_name(alias.name)
                if name in MATH_TO_TORCH and alias.asname is None:
                    found[name] = MATH_TO_TORCH[name]
    return found


class _Rewrite:
    """The sites of one statement's number, found in a wrapped module."""

    def __init__(self, wrapper: MetadataWrapper) -> None:
        self.module = wrapper.module
        self.parents = wrapper.resolve(ParentNodeProvider)
        self.positions = wrapper.resolve(PositionProvider)
        self.contexts = wrapper.resolve(ExpressionContextProvider)
        self.functions = _math_functions(self.module)
        #: Original call -> the torch function it becomes, "" for the ``.item()`` kept a tensor.
        self.replacements: dict[cst.CSTNode, str] = {}
        self.torch = torch_spelling(self.module) or "torch"

    def site(self, node: cst.CSTNode) -> cst.Call | None:
        """The math call whose one argument ``node`` is (``f(s)`` or ``f(-s)``), or None."""
        parent = self.parents.get(node)
        if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus):
            node, parent = parent, self.parents.get(parent)
        if not isinstance(parent, cst.Arg) or parent.keyword is not None or parent.star:
            return None
        call = self.parents.get(parent)
        if isinstance(call, cst.Call) and len(call.args) == 1 and \
                dotted_name(call.func) in self.functions:
            return call
        return None

    def feeds_tensor_arithmetic(self, node: cst.CSTNode) -> bool:
        """Whether ``node``'s value is combined by arithmetic, at last, with an operand that is
        no number literal (nor another such call, which this checks in turn)."""
        while True:
            parent = self.parents.get(node)
            if isinstance(parent, cst.UnaryOperation) and isinstance(parent.operator, cst.Minus):
                node = parent
                continue
            if not isinstance(parent, cst.BinaryOperation) or \
                    not isinstance(parent.operator, _ARITHMETIC):
                return False
            other = parent.right if parent.left is node else parent.left
            if not isinstance(other, (cst.Integer, cst.Float)) and not self.is_site(other):
                return True
            node = parent

    def is_site(self, node: cst.CSTNode) -> bool:
        return isinstance(node, cst.Call) and dotted_name(node.func) in self.functions

    def keep(self, call: cst.Call) -> None:
        self.replacements[call] = f"{self.torch}.{self.functions[dotted_name(call.func) or '']}"

    def keep_item(self, item: cst.Call) -> None:
        self.replacements[item] = ""


class _Replace(cst.CSTTransformer):
    def __init__(self, replacements: dict[cst.CSTNode, str]) -> None:
        super().__init__()
        self.replacements = replacements

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call
                   ) -> cst.BaseExpression:
        function = self.replacements.get(original_node)
        if function is None:
            return updated_node
        if function:  # a math site: torch's function, of its argument as edited
            return updated_node.with_changes(func=cst.parse_expression(function))
        assert isinstance(updated_node.func, cst.Attribute)
        detached = cst.Call(func=cst.Attribute(value=updated_node.func.value,
                                               attr=cst.Name("detach")))
        return updated_node.with_changes(
            func=cst.Attribute(value=detached, attr=cst.Name("reshape")),
            args=[cst.Arg(cst.Tuple(elements=[]))])


def _statement_at(rewrite: _Rewrite, line: int) -> cst.BaseSmallStatement | None:
    for node, where in rewrite.positions.items():
        if isinstance(node, cst.SimpleStatementLine) and where.start.line == line and \
                len(node.body) == 1:
            return node.body[0]
    return None


def _function_of(rewrite: _Rewrite, node: cst.CSTNode) -> cst.FunctionDef | None:
    while (node := rewrite.parents.get(node)) is not None:
        if isinstance(node, cst.FunctionDef):
            return node
    return None


def _names_in(root: cst.CSTNode, name: str) -> list[cst.Name]:
    found: list[cst.Name] = []

    class _Names(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value == name:
                found.append(node)

    root.visit(_Names())
    return found


def _plan_named(rewrite: _Rewrite, statement: cst.Assign) -> bool:
    """``s = t.item()`` whose every read in its function is a math site feeding arithmetic."""
    if len(statement.targets) != 1 or not isinstance(statement.targets[0].target, cst.Name) or \
            not is_item_call(statement.value):
        return False
    target = statement.targets[0].target
    function = _function_of(rewrite, statement)
    if function is None:
        return False
    sites = []
    for name in _names_in(function, target.value):
        if name is target:
            continue
        site = rewrite.site(name) if rewrite.contexts.get(name) == ExpressionContext.LOAD \
            else None
        if site is None or not rewrite.feeds_tensor_arithmetic(site):
            return False  # stored again, deleted, or read as a Python number
        sites.append(site)
    if not sites:
        return False
    assert isinstance(statement.value, cst.Call)
    rewrite.keep_item(statement.value)
    for site in sites:
        rewrite.keep(site)
    return True


def _plan_inline(rewrite: _Rewrite, statement: cst.BaseSmallStatement) -> None:
    """``math.exp(t.item())`` (or of ``-t.item()``) feeding arithmetic, in the statement."""
    for item in _calls_in(statement):
        site = rewrite.site(item) if is_item_call(item) else None
        if site is not None and rewrite.feeds_tensor_arithmetic(site):
            rewrite.keep_item(item)
            rewrite.keep(site)


def _calls_in(root: cst.CSTNode) -> list[cst.Call]:
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            found.append(node)

    root.visit(_Calls())
    return found


def item_math_to_torch(source: str, line: int) -> str:
    """The ``.item()`` read at the statement starting on ``line`` kept a 0-d tensor, and the
    ``math`` functions it feeds made torch's, where it only feeds them (see above)."""
    wrapper = MetadataWrapper(parse_source(source))
    rewrite = _Rewrite(wrapper)
    statement = _statement_at(rewrite, line)
    if statement is None or not rewrite.functions:
        return source
    if not (isinstance(statement, cst.Assign) and _plan_named(rewrite, statement)):
        _plan_inline(rewrite, statement)
    if not rewrite.replacements:
        return source
    return rewrite.module.visit(_Replace(rewrite.replacements)).code


def item_reaches_math(source: str, line: int) -> bool:
    """Whether the number read at the statement starting on ``line`` is an argument of a
    ``math`` function (of ``MATH_TO_TORCH``), inline or through the name it is assigned to:
    ``capture_scalar_outputs`` would move the break there rather than remove it."""
    wrapper = MetadataWrapper(parse_source(source))
    rewrite = _Rewrite(wrapper)
    statement = _statement_at(rewrite, line)
    if statement is None or not rewrite.functions:
        return False
    if any(is_item_call(call) and rewrite.site(call) is not None
           for call in _calls_in(statement)):
        return True
    if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1
            and isinstance(target := statement.targets[0].target, cst.Name)):
        return False
    function = _function_of(rewrite, statement)
    return function is not None and any(
        rewrite.site(name) is not None for name in _names_in(function, target.value)
        if name is not target)
