"""Source edits behind torch.export's and torch.compile's quick fixes: at a failure's
position, calls into torch (``torch._assert_async`` for an assert, ``torch._check`` before a
guard, symbolic casts, code skipped while compiling; ``torch.cond`` is ``cond_rewrite``'s), with
libcst so that formatting and comments survive; idempotent.

They spell torch as the module imports it, or ``torch`` when it does not: then
``ensure_torch_import`` (the fix's ``import_edit``) adds ``import torch``, after every edit
located by position, so that the new line moves none of them."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from fxcore.fixing.libcst_edits import (
    EditAtPosition,
    add_import,
    alias_name,
    dotted_name,
    edit_at,
    module_imports,
    parse_source,
)


def torch_spelling(module: cst.Module) -> str | None:
    """The name a module-level import binds torch to (``import torch``, ``import torch.nn``,
    ``import torch as th``), or None."""
    for small in module_imports(module):
        if not isinstance(small, cst.Import):
            continue
        for alias in small.names:
            name = dotted_name(alias.name)
            if name == "torch" and alias.asname is not None:
                return alias_name(alias)
            if name is not None and name.split(".")[0] == "torch" and alias.asname is None:
                return "torch"
    return None


def ensure_torch_import(source: str) -> str:
    """Add ``import torch`` after the module's imports unless a module-level import binds it."""
    module = parse_source(source)
    if torch_spelling(module) is not None:
        return source
    return add_import(module, "import torch\n").code


def _torch(module: cst.Module, attribute: str) -> cst.BaseExpression:
    """``torch.<attribute>`` as the module spells torch."""
    return cst.parse_expression(f"{torch_spelling(module) or 'torch'}.{attribute}")


def is_plain_string(node: cst.BaseExpression) -> bool:
    """A string literal without formatting (``"a"``, ``"a" "b"``), not bytes."""
    if isinstance(node, cst.SimpleString):
        return isinstance(node.evaluated_value, str)
    if isinstance(node, cst.ConcatenatedString):
        return is_plain_string(node.left) and is_plain_string(node.right)
    return False


# FX401: assert <tensor condition>[, "message"] -> torch._assert_async(<condition>[, "message"])


class _AssertToAssertAsync(EditAtPosition):
    def leave_Assert(self, original_node: cst.Assert,
                     updated_node: cst.Assert) -> cst.BaseSmallStatement:
        if self.changed or not self.starts_here(original_node.test):
            return updated_node
        message = updated_node.msg
        if message is not None and not is_plain_string(message):
            # torch._assert_async takes a str, evaluated on every call (assert's only on
            # failure): an expression would cost each call and may break the graph.
            return updated_node
        self.changed = True
        arguments = [cst.Arg(updated_node.test)]
        if message is not None:
            arguments.append(cst.Arg(message))
        return cst.Expr(cst.Call(func=_torch(self.module, "_assert_async"), args=arguments),
                        semicolon=updated_node.semicolon)


def assert_to_assert_async(source: str, line: int, column: int) -> str:
    """Replace the ``assert`` whose condition starts at ``line``/``column`` with
    ``torch._assert_async(condition[, message])``: torch.export keeps it as a check of the
    exported program (torch.compile makes the same change to such an assert itself)."""
    return edit_at(source, _AssertToAssertAsync, line, column)


# FX402: int(t.item()) -> torch.sym_int(t.item()), float(t.item()) -> torch.sym_float(t.item())

#: The casts of a Python number that have a symbolic counterpart in torch.
SYMBOLIC_CASTS = {"int": "sym_int", "float": "sym_float"}


def is_item_call(node: cst.BaseExpression) -> bool:
    """``<expression>.item()``."""
    return isinstance(node, cst.Call) and not node.args and \
        isinstance(node.func, cst.Attribute) and node.func.attr.value == "item"


class _CastToSymbolic(EditAtPosition):
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.changed or not self.starts_here(original_node):
            return updated_node
        func = original_node.func
        if not (isinstance(func, cst.Name) and func.value in SYMBOLIC_CASTS
                and len(original_node.args) == 1 and original_node.args[0].keyword is None
                and not original_node.args[0].star and is_item_call(original_node.args[0].value)):
            return updated_node
        self.changed = True
        return updated_node.with_changes(func=_torch(self.module, SYMBOLIC_CASTS[func.value]))


def cast_to_symbolic(source: str, line: int, column: int) -> str:
    """Replace ``int(x.item())`` (``float(...)``) starting at ``line``/``column`` with
    ``torch.sym_int(x.item())`` (``torch.sym_float``): the same number when run, a symbol
    torch.export can keep."""
    return edit_at(source, _CastToSymbolic, line, column)


# Graph breaks at print / logging / warnings calls: run them only outside torch.compile

#: Methods of ``logging.Logger`` (and ``warnings.warn``) called for their output only.
LOGGING_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception",
                             "critical", "fatal", "log"})


def is_logging_call(node: cst.BaseExpression) -> bool:
    """``print(...)``, ``<anything>.warning(...)`` and the other logging methods."""
    if not isinstance(node, cst.Call):
        return False
    func = node.func
    return (isinstance(func, cst.Name) and func.value == "print") or (
        isinstance(func, cst.Attribute) and func.attr.value in LOGGING_METHODS)


def marks_requires_grad(statement: cst.BaseSmallStatement) -> bool:
    """``x.requires_grad = <value>``: a statement that marks a tensor for autograd and
    computes no value (dynamo breaks the graph there: GB0206)."""
    return isinstance(statement, cst.Assign) and len(statement.targets) == 1 and isinstance(
        target := statement.targets[0].target, cst.Attribute) and \
        target.attr.value == "requires_grad"


class _SkipWhenCompiling(EditAtPosition):
    def __init__(self, module: cst.Module, line: int, column: int) -> None:
        super().__init__(module, line, column)
        self.test = cst.parse_expression(
            f"not {torch_spelling(module) or 'torch'}.compiler.is_compiling()")
        #: The guard made, merged with the guards next to it once its block is left.
        self.guard: cst.If | None = None

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine
                                  ) -> cst.BaseStatement:
        if self.changed or not self.covers_here(original_node) or len(updated_node.body) != 1:
            return updated_node
        statement = updated_node.body[0]
        if not ((isinstance(statement, cst.Expr) and is_logging_call(statement.value))
                or marks_requires_grad(statement)):
            return updated_node
        self.changed = True
        self.guard = cst.If(
            test=self.test,
            body=cst.IndentedBlock(body=[updated_node.with_changes(leading_lines=[])]),
            leading_lines=updated_node.leading_lines,
        )
        return self.guard

    def _is_guard(self, statement: cst.BaseStatement) -> bool:
        return isinstance(statement, cst.If) and statement.orelse is None and \
            isinstance(statement.body, cst.IndentedBlock) and statement.test.deep_equals(
                self.test)

    def visit_If(self, node: cst.If) -> bool:
        return not self._is_guard(node)  # what a guard holds is kept out already

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        """The new guard and the guards right before and after it in its block as one:
        consecutive statements kept out of compiled code under one test."""
        body = list(updated_node.body)
        at = next((index for index, statement in enumerate(body)
                   if statement is self.guard), None)
        if at is None:
            return updated_node
        self.guard = None
        first = last = at
        while first > 0 and self._is_guard(body[first - 1]):
            first -= 1
        while last + 1 < len(body) and self._is_guard(body[last + 1]):
            last += 1
        guards = [statement for statement in body[first:last + 1]
                  if isinstance(statement, cst.If) and
                  isinstance(statement.body, cst.IndentedBlock)]
        if len(guards) < 2:
            return updated_node
        inner: list[cst.BaseStatement] = list(guards[0].body.body)
        for guard in guards[1:]:
            assert isinstance(guard.body, cst.IndentedBlock)
            head, *rest = guard.body.body
            # The blank lines and comments above a guard go above its statement, inside.
            inner += [head.with_changes(leading_lines=[*guard.leading_lines,
                                                       *head.leading_lines]), *rest]
        merged = guards[0].with_changes(body=guards[0].body.with_changes(body=inner))
        return updated_node.with_changes(body=[*body[:first], merged, *body[last + 1:]])


def skip_when_compiling(source: str, line: int, column: int) -> str:
    """Put the print/logging call statement, or the ``requires_grad`` mark
    (``marks_requires_grad``), at ``line``/``column`` under ``if not
    torch.compiler.is_compiling():``: it runs as before in eager code, and torch.compile
    leaves it out instead of breaking the graph there. Next to such a guard (of a statement
    fixed before), it joins it: consecutive statements kept out under one guard."""
    return edit_at(source, _SkipWhenCompiling, line, column)


# FX401 on a condition on Python numbers: torch._check(<the guard>) before its statement


class _InsertCheck(EditAtPosition):
    def __init__(self, module: cst.Module, line: int, column: int, guard: str) -> None:
        super().__init__(module, line, column)
        self.check = cst.parse_statement(
            f"{torch_spelling(module) or 'torch'}._check({guard})\n")

    def _insert(self, original: Sequence[cst.BaseStatement],
                body: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement] | None:
        """``body`` with the check before its statement at the position (located in the
        ``original`` body, whose nodes have positions), or None."""
        for index, located in enumerate(original):
            statement = body[index]
            if isinstance(located, (cst.SimpleStatementLine, cst.If)) and \
                    self.starts_here(located):
                if index and body[index - 1].with_changes(leading_lines=()).deep_equals(
                        self.check):
                    return None  # stated already
                self.changed = True
                # The check goes below the comments above the statement, next to it.
                check = self.check.with_changes(leading_lines=statement.leading_lines)
                return [*body[:index], check, statement.with_changes(leading_lines=[]),
                        *body[index + 1:]]
        return None

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        body = None if self.changed else self._insert(original_node.body, updated_node.body)
        return updated_node if body is None else updated_node.with_changes(body=body)

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = None if self.changed else self._insert(original_node.body, updated_node.body)
        return updated_node if body is None else updated_node.with_changes(body=body)


def insert_check(source: str, line: int, column: int, guard: str) -> str:
    """Put ``torch._check(<guard>)`` on a line of its own before the statement that starts at
    ``line``/``column`` (a simple statement or an ``if``): torch.export then knows the guard
    holds there, and the code raises where it does not."""
    return edit_at(source, _InsertCheck, line, column, guard)
