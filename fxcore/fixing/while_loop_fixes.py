"""A ``while`` loop on tensor data (GB0170 at its test) as ``torch.while_loop``, or, where the
workers' torch has none, as a loop of a fixed number of masked steps; with libcst, idempotent.

::

    while x.abs().max() > 1:          def _loop_cond(x):
        x = x / 2                         return x.abs().max() > 1

                                      def _loop_body(x):
                                          x = x / 2
                                          return (x,)
                                      (x,) = torch.while_loop(_loop_cond, _loop_body, (x,))

The values the loop carries are the names its body assigns that are bound before it; a name
the body assigns that is not (a temporary) may be read neither by the test nor after the loop.
Only where the test is a comparison or an ``.any()``/``.all()`` (or ``not`` one), the body
only assigns names (``y = <expression>``, one name each: no augmented assignment, which is in
place on a tensor) and calls no in-place method (``x.add_()``): ``torch.while_loop`` forbids
mutating what it carries. Its other constraints (each value keeps its shape and dtype, none
aliases an input) the check after the fix shows. Same outputs, the same operations in the same
order; unsafe all the same, as the loop now runs as torch's operator (its eager call compiles
it).

Without ``torch.while_loop``: ``for _ in range(N):`` of ``go = <test>`` then
``y = torch.where(go, <expression>, y)`` for each carried name: once the test fails what it
reads no longer changes, so the values are those the loop left, if N steps are enough, which
nothing here can show: unsafe, and the fix's title says so.
"""

from __future__ import annotations

import functools

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from fxcore.fixing.fix import Fix, Run
from fxcore.fixing.libcst_edits import parse_source
from fxcore.fixing.loop_fixes import BoundBefore, assigned_name, is_condition, names_in
from fxcore.fixing.pt2_fixes import ensure_torch_import, torch_spelling
from fxcore.fixing.scoped_options import torch_text
from fxcore.fixing.statement_edits import code
from fxcore.model.results import Failure

#: The steps of the masked loop made where torch has no ``while_loop``.
MASKED_STEPS = 64


@functools.cache
def has_while_loop() -> bool:
    """Whether the torch the workers import has ``torch.while_loop`` (read from its source:
    the host never imports torch)."""
    text = torch_text("__init__.py")
    return text is not None and "while_loop as while_loop" in text


class _Calls(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.in_place = False

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Attribute) and node.func.attr.value.endswith("_") and \
                not node.func.attr.value.startswith("_"):
            self.in_place = True


def _in_place(node: cst.CSTNode) -> bool:
    calls = _Calls()
    node.visit(calls)
    return calls.in_place


class _Loop(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int, torch: str, bound: set[str], after: set[str],
                 steps: int | None) -> None:
        super().__init__()
        self.line, self.torch, self.bound, self.after = line, torch, bound, after
        #: None: ``torch.while_loop``; else the masked loop's steps.
        self.steps = steps
        self.taken = set(bound) | after

    def _fresh(self, name: str) -> str:
        found = next(f"{name}{suffix}" for suffix in ("", *(f"_{n}" for n in range(1, 99)))
                     if f"{name}{suffix}" not in self.taken)
        self.taken.add(found)
        return found

    def leave_While(self, original_node: cst.While, updated_node: cst.While
                    ) -> cst.BaseStatement | cst.FlattenSentinel[cst.BaseStatement]:
        body = original_node.body
        if self.get_metadata(PositionProvider, original_node).start.line != self.line or \
                original_node.orelse is not None or not isinstance(body, cst.IndentedBlock):
            return updated_node
        test = original_node.test
        inner = test.expression if isinstance(test, cst.UnaryOperation) and \
            isinstance(test.operator, cst.Not) else test
        assigned = [assigned_name(statement) for statement in body.body]
        if not is_condition(inner) or None in assigned or _in_place(original_node):
            return updated_node
        names = list(dict.fromkeys(name for name in assigned if name is not None))
        carried = [name for name in names if name in self.bound]
        temporary = set(names) - set(carried)
        if not carried or temporary & (names_in(test) | self.after):
            return updated_node
        self.taken |= names_in(original_node)
        condition = code(inner) if inner is test else \
            f"{self.torch}.logical_not({code(inner)})"
        if self.steps is not None:
            return self._masked(body, condition, carried, leading=updated_node.leading_lines)
        cond, step = self._fresh("_loop_cond"), self._fresh("_loop_body")
        parameters = ", ".join(carried)
        returned = f"({carried[0]},)" if len(carried) == 1 else parameters
        values = f"({carried[0]},)" if len(carried) == 1 else f"({parameters})"
        definitions = cst.parse_module(
            f"def {cond}({parameters}):\n    return {condition}\n"
            f"def {step}({parameters}):\n    pass\n    return {returned}\n").body
        cond_def, step_def = definitions
        assert isinstance(step_def, cst.FunctionDef) and \
            isinstance(step_def.body, cst.IndentedBlock)
        step_def = step_def.with_changes(body=step_def.body.with_changes(
            body=[*body.body, step_def.body.body[-1]]))
        call = cst.parse_statement(
            f"{returned} = {self.torch}.while_loop({cond}, {step}, {values})\n")
        return cst.FlattenSentinel([
            cond_def.with_changes(leading_lines=updated_node.leading_lines), step_def, call])

    def _masked(self, body: cst.IndentedBlock, condition: str, carried: list[str],
                leading: tuple[cst.EmptyLine, ...] | list[cst.EmptyLine]) -> cst.For:
        go = self._fresh("go")
        lines: list[cst.BaseStatement] = [cst.parse_statement(f"{go} = {condition}\n")]
        for statement in body.body:
            assert isinstance(statement, cst.SimpleStatementLine)
            small = statement.body[0]
            assert isinstance(small, cst.Assign)
            name = code(small.targets[0].target)
            if name in carried:
                small = small.with_changes(value=cst.parse_expression(
                    f"{self.torch}.where({go}, {code(small.value)}, {name})"))
            lines.append(statement.with_changes(body=[small]))
        loop = cst.parse_statement(f"for _ in range({self.steps}):\n    pass\n")
        assert isinstance(loop, cst.For) and isinstance(loop.body, cst.IndentedBlock)
        return loop.with_changes(body=loop.body.with_changes(body=lines), leading_lines=leading)


class _After(cst.CSTVisitor):
    """Names read in the function around ``line`` after the line ``end``."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.end = line
        self.names: set[str] = set()

    def visit_While(self, node: cst.While) -> None:
        where = self.get_metadata(PositionProvider, node)
        if where.start.line == self.line:
            self.end = where.end.line

    def visit_Name(self, node: cst.Name) -> None:
        if self.get_metadata(PositionProvider, node).start.line > self.end:
            self.names.add(node.value)


def _rewritten(source: str, line: int, steps: int | None) -> str:
    try:
        module = parse_source(source)
    except cst.ParserSyntaxError:
        return source
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    bound, after = BoundBefore(line), _After(line)
    wrapper.visit(bound)
    wrapper.visit(after)
    return wrapper.visit(_Loop(line, torch_spelling(module) or "torch", bound.names,
                               after.names, steps)).code


def while_to_while_loop(source: str, line: int) -> str:
    """The ``while`` loop starting on ``line`` as ``torch.while_loop`` (see above); ``source``
    itself when it is not of that shape."""
    return _rewritten(source, line, None)


def while_to_masked_steps(source: str, line: int, steps: int = MASKED_STEPS) -> str:
    """The ``while`` loop starting on ``line`` as ``steps`` masked steps (see above)."""
    return _rewritten(source, line, steps)


def fixes_of(failure: Failure, source: str, run: Run) -> list[Fix]:
    """``torch.while_loop`` where the workers' torch has it, else the masked steps."""
    if has_while_loop():
        edit, title = while_to_while_loop, (
            "Rewrite the while loop as torch.while_loop (the same operations in the same "
            "order; its eager call compiles the loop: unsafe)")
    else:
        edit, title = while_to_masked_steps, (
            f"Rewrite the while loop as {MASKED_STEPS} masked steps (torch.where; unsafe: "
            f"nothing shows {MASKED_STEPS} steps are enough, a loop that needs more stops "
            "early)")
    if run(edit, source, failure.line) == source:
        return []
    return [Fix(title, failure.path, functools.partial(edit, line=failure.line), True,
                safe=False, position=(failure.line, failure.column),
                import_edit=ensure_torch_import)]
