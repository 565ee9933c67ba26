"""Loops over per-step tensors, which torch.compile unrolls: over a list (or tuple) that
``forward`` takes, it guards the list's length (FX508), and over a tensor's first dimension
(``for step in x``, ``x.unbind(0)``), it specialises that size (FX506); either compiles again
for each new length. A loop over a tensor whose body is one computation per step, collected and
stacked, becomes that computation on the whole tensor once, whose first dimension automatic
dynamic shapes then make symbolic:

    outputs = []
    for step in x:                                ->   outputs = torch.relu(self.cell(x))
        outputs.append(torch.relu(self.cell(step)))
    return torch.stack(outputs)                        return outputs

Only where that computes the same: each step's result is a Linear layer, an elementwise
function or arithmetic with a number of the step (each acts on every step of the stacked
tensor as on the step alone), collected in a list read only by ``torch.stack`` (dimension 0).
``NoFix`` says why elsewhere: a loop that carries a value from one step to the next (a
recurrent state) cannot become one operation, and a loop over a tensor specialises its length
as the list's does; and no rewrite inside ``forward`` stops the guard on the length of a list
it takes (stacking it there, even under ``torch.compiler.disable``, reads the list in the
compiled frame, which real torch then compiles as often), so for a list the fix is the
caller's: pass the steps as one tensor.
"""

from __future__ import annotations

import libcst as cst

from fxcore.fixing.method_rewrites import (
    Method,
    NoFix,
    Rewritten,
    assigned_names,
    becomes,
    code,
    edited,
    method_at,
    nodes_of,
    read_names,
    self_attribute,
)

#: Layers that act on the last dimension alone, or on each element.
STEPWISE_LAYERS = frozenset({"Linear", "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Identity",
                             "LeakyReLU", "ELU", "Softplus", "Mish", "Hardswish"})
#: Elementwise functions of one tensor (``torch.relu``, ``F.gelu``, ``x.tanh()``).
ELEMENTWISE = frozenset({"relu", "gelu", "silu", "tanh", "sigmoid", "exp", "abs", "neg",
                         "sqrt", "square", "softplus", "mish", "elu", "leaky_relu", "sin",
                         "cos", "log1p", "expm1"})
FUNCTION_ROOTS = frozenset({"torch", "F", "nn.functional", "torch.nn.functional"})


def _layer(method: Method, attribute: str) -> str | None:
    """The class name of the layer ``__init__`` assigns to ``self.<attribute>``
    (``nn.Linear(8, 8)``: ``Linear``), if it does."""
    for init in method.methods():
        if init.name.value != "__init__":
            continue
        for assign in nodes_of(init, cst.Assign):
            assert isinstance(assign, cst.Assign)
            if any(self_attribute(target.target) == attribute for target in assign.targets) \
                    and isinstance(assign.value, cst.Call):
                return code(assign.value.func).rsplit(".", 1)[-1]
    return None


def _one_argument(call: cst.Call) -> cst.BaseExpression | None:
    if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    return None


def _not_stepwise(method: Method, node: cst.BaseExpression, step: str) -> cst.CSTNode | None:
    """The part of a step's result not known to act on each step of the stacked tensor as on
    the step alone, if any."""
    if isinstance(node, cst.Name):
        return None if node.value == step else node
    if isinstance(node, (cst.Integer, cst.Float)):
        return None
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        return _not_stepwise(method, node.expression, step)
    if isinstance(node, cst.BinaryOperation) and isinstance(
            node.operator, (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)):
        numbers = [side for side in (node.left, node.right)
                   if isinstance(side, (cst.Integer, cst.Float))]
        if len(numbers) != 1:
            return node
        return _not_stepwise(method, node.right if numbers[0] is node.left else node.left, step)
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute) and not node.args and \
                func.attr.value in ELEMENTWISE and self_attribute(func) is None:
            return _not_stepwise(method, func.value, step)  # ``x.tanh()``
        argument = _one_argument(node)
        attribute = self_attribute(func)
        known = (attribute is not None and _layer(method, attribute) in STEPWISE_LAYERS) or (
            isinstance(func, cst.Attribute) and func.attr.value in ELEMENTWISE
            and code(func.value) in FUNCTION_ROOTS)
        if known and argument is not None:
            return _not_stepwise(method, argument, step)
    return node


def _carried(loop: cst.For) -> str | None:
    """A name the loop's body reads and assigns: a value carried from step to step."""
    assigned = assigned_names(loop.body)
    carried = sorted(assigned & read_names(loop.body))
    return carried[0] if carried else None


def _append(loop: cst.For) -> tuple[str, cst.BaseExpression] | None:
    """(list, value) of a loop body that is one ``<list>.append(<value>)``."""
    body = loop.body
    if loop.orelse is not None or not isinstance(body, cst.IndentedBlock) or \
            len(body.body) != 1 or not isinstance(body.body[0], cst.SimpleStatementLine):
        return None
    (small,) = body.body[0].body
    if not (isinstance(small, cst.Expr) and isinstance(call := small.value, cst.Call)
            and isinstance(call.func, cst.Attribute) and call.func.attr.value == "append"
            and isinstance(call.func.value, cst.Name)):
        return None
    value = _one_argument(call)
    return None if value is None else (call.func.value.value, value)


def _is_stack_of(node: cst.CSTNode, method: Method, listed: str) -> bool:
    """``torch.stack(<listed>)`` (or with ``dim=0``/``0``)."""
    if not (isinstance(node, cst.Call) and code(node.func) == f"{method.torch}.stack"
            and node.args and code(node.args[0].value) == listed):
        return False
    return all(code(arg.value) == "0" and (arg.keyword is None or arg.keyword.value == "dim")
               for arg in node.args[1:])


def _empty_list(method: Method, listed: str) -> cst.SimpleStatementLine | None:
    for statement in method.statements():
        if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1 and \
                isinstance(assign := statement.body[0], cst.Assign) and \
                len(assign.targets) == 1 and code(assign.targets[0].target) == listed and \
                isinstance(assign.value, cst.List) and not assign.value.elements:
            return statement
    return None


def _rewrite(method: Method, steps: str, loop: cst.For) -> Rewritten:
    """The loop over the tensor ``steps`` as its body's computation on ``steps`` once."""
    appended = _append(loop)
    if appended is None:
        return NoFix(f"the loop over {steps} at line {method.line_of(loop)} is not one "
                     "append of each step's result to a list")
    listed, value = appended
    step = code(loop.target)
    empty = _empty_list(method, listed)
    stacks = [node for node in nodes_of(method.function, cst.Call)
              if _is_stack_of(node, method, listed)]
    uses = [node for node in nodes_of(method.function, cst.Name)
            if isinstance(node, cst.Name) and node.value == listed]
    # The list's own uses: emptied, appended to, stacked once.
    if empty is None or len(stacks) != 1 or len(uses) != 3:
        return NoFix(f"`{listed}` is used other than filled by the loop and stacked once by "
                     f"{method.torch}.stack")
    part = _not_stepwise(method, value, step)
    if part is not None:
        return NoFix(f"`{code(part)}` is not known to act on each step of the stacked tensor "
                     "as on the step alone (a Linear layer, an elementwise function or "
                     "arithmetic with a number is)")
    computed = value.visit(_ReplaceName(step, cst.Name(steps)))
    assert isinstance(computed, cst.BaseExpression)
    statement = cst.parse_statement(f"{listed} = {code(computed)}\n").with_changes(
        leading_lines=loop.leading_lines, trailing_whitespace=loop.body.header)  # type: ignore[attr-defined]
    edits = {id(empty): becomes(cst.RemovalSentinel.REMOVE), id(loop): becomes(statement),
             id(stacks[0]): becomes(cst.Name(listed))}
    return edited(method.module, edits)


class _ReplaceName(cst.CSTTransformer):
    def __init__(self, name: str, replacement: cst.BaseExpression) -> None:
        super().__init__()
        self.name = name
        self.replacement = replacement

    def leave_Name(self, original_node: cst.Name, updated_node: cst.Name
                   ) -> cst.BaseExpression:
        return self.replacement if original_node.value == self.name else updated_node


def _loops_over(method: Method, names: set[str]) -> list[cst.For]:
    """The loops of the method over one of ``names`` (or its ``.unbind()``, ``.unbind(0)``)."""
    spellings = {f"{name}{tail}" for name in names
                 for tail in ("", ".unbind()", ".unbind(0)", ".unbind(dim=0)")}
    return [loop for loop in nodes_of(method.function, cst.For)
            if isinstance(loop, cst.For) and code(loop.iter) in spellings]


def _iterated(loop: cst.For) -> str:
    """The name a loop of ``_loops_over`` iterates (``x`` of ``x.unbind(0)``)."""
    return code(loop.iter).split(".", 1)[0]


def _carries(loop: cst.For) -> NoFix | None:
    carried = _carried(loop)
    if carried is None:
        return None
    return NoFix(f"each step reads `{carried}`, which the step before assigned: the steps "
                 "cannot become one operation on the stacked tensor, and a loop over a "
                 "tensor's steps specialises their number as this loop does")


def list_loop_no_fix(source: str, line: int, steps: str) -> Rewritten:
    """Why a loop over the list (or tuple) parameter ``steps`` of the method at ``line`` has
    no fix inside the class (``NoFix``); None when the method has no such parameter or loop."""
    method = method_at(source, line)
    if method is None or steps not in {param.name.value
                                       for param in method.function.params.params}:
        return None
    loops = _loops_over(method, {steps})
    if len(loops) != 1:
        return None
    return _carries(loops[0]) or NoFix(
        f"torch.compile guards the length of the list {steps} that "
        f"{method.function.name.value} takes, whatever it does with it (stacking it inside, "
        "even under torch.compiler.disable, compiles as often): pass the steps as one tensor "
        "(torch.stack where the list is made), which a loop-free body can take whole")


def vectorise_steps(source: str, line: int) -> Rewritten:
    """``source`` with the loop over a tensor parameter's first dimension in the method at
    ``line`` (the one at the line, else the method's only one) made its body's computation on
    the tensor once; ``NoFix`` when that would not compute the same (said why); None when the
    method has no such loop."""
    method = method_at(source, line)
    if method is None:
        return None
    loops = _loops_over(method, {param.name.value for param in method.function.params.params}
                        - {"self"})
    at_line = [loop for loop in loops if method.line_of(loop) == line]
    if len(at_line) != 1 and len(loops) != 1:
        return None
    (loop,) = at_line or loops
    return _carries(loop) or _rewrite(method, _iterated(loop), loop)
