"""FX510 at a submodule swapped between calls (``self.head = self.head_b if ... else
self.head_a`` in ``forward``, or reassigned by the loop): torch.compile guards the type and
identity of the module ``self.head`` names, and compiles again for each one. The fix runs the
swap and each call of the attribute in methods under ``torch.compiler.disable``: the compiled
frame then never reads the attribute, so nothing guards it, and the modules run eagerly with
the same arguments in the same order, so outputs and the module's state are what they were.
Where ``forward`` reads the attribute otherwise (``self.head.weight``, passing it on), the
compiled frame would still guard it: ``NoFix`` says so.

Calling both modules and selecting with a tensor flag (``torch.where``) is not made: it needs
the flag as a tensor, which a swap on a Python condition (``self.head is self.head_a``) is not,
and both outputs of the same shape and dtype.
"""

from __future__ import annotations

import libcst as cst

from fxcore.fixing.method_rewrites import (
    Edit,
    Method,
    NoFix,
    Rewritten,
    assigned_names,
    becomes,
    code,
    edited,
    followed_by,
    method_at,
    new_method,
    nodes_of,
    reads,
    self_attribute,
)


def _swaps(method: Method, attribute: str) -> list[cst.SimpleStatementLine]:
    """The statements of the method that assign ``self.<attribute>`` alone."""
    found = []
    for statement in nodes_of(method.function, cst.SimpleStatementLine):
        assert isinstance(statement, cst.SimpleStatementLine)
        if len(statement.body) == 1 and isinstance(assign := statement.body[0], cst.Assign) \
                and len(assign.targets) == 1 and \
                self_attribute(assign.targets[0].target) == attribute:
            found.append(statement)
    return found


def _calls(method: Method, attribute: str) -> list[cst.Call]:
    return [call for call in nodes_of(method.function, cst.Call)
            if isinstance(call, cst.Call) and self_attribute(call.func) == attribute]


def _other_read(method: Method, attribute: str, swaps: list[cst.SimpleStatementLine],
                calls: list[cst.Call]) -> cst.Attribute | None:
    """A read of ``self.<attribute>`` that neither a swap nor a call of it makes."""
    inside = {id(node) for swap in swaps for node in nodes_of(swap, cst.Attribute)}
    inside |= {id(call.func) for call in calls}
    for node in nodes_of(method.function, cst.Attribute):
        if self_attribute(node) == attribute and id(node) not in inside:  # type: ignore[arg-type]
            assert isinstance(node, cst.Attribute)
            return node
    return None


def _swap_edit(method: Method, swap: cst.SimpleStatementLine, name: str) -> tuple[Edit, str]:
    """The call that replaces the swap, and the method it calls: the swap with the method's
    locals it reads as arguments."""
    local = assigned_names(method.function) - {"self"}
    arguments = [read for read in dict.fromkeys(reads(swap).names) if read in local]
    listed = "".join(f", {argument}" for argument in arguments)
    call = cst.parse_statement(f"self.{name}({', '.join(arguments)})\n").with_changes(
        leading_lines=swap.leading_lines, trailing_whitespace=swap.trailing_whitespace)
    text = (f"@{method.torch}.compiler.disable\n"
            f"def {name}(self{listed}) -> None:\n"
            "    # Run eagerly: torch.compile would guard which module it assigns.\n"
            f"    {code(swap.body[0])}\n")
    return becomes(call), text


def outside_graph(source: str, line: int, attribute: str) -> Rewritten:
    """``source`` with the swaps of ``self.<attribute>`` in the method at ``line`` and its calls
    there made by methods under ``torch.compiler.disable``; ``NoFix`` when the method reads the
    attribute otherwise; None when it does not call it."""
    method = method_at(source, line)
    if method is None:
        return None
    swaps, calls = _swaps(method, attribute), _calls(method, attribute)
    if not calls:
        return None
    other = _other_read(method, attribute, swaps, calls)
    if other is not None:
        return NoFix(f"{method.function.name.value} reads self.{attribute} at line "
                     f"{method.line_of(other)} other than by calling it or assigning it: "
                     "the compiled frame would still guard which module it is")
    call_name = method.fresh_method_name(f"_call_{attribute}")
    added = [new_method(f"@{method.torch}.compiler.disable\n"
                        f"def {call_name}(self, *args, **kwargs):\n"
                        "    # Run eagerly: torch.compile would guard which module "
                        f"self.{attribute} is.\n"
                        f"    return self.{attribute}(*args, **kwargs)\n")]
    edits: dict[int, Edit] = {}
    for call in calls:
        edits[id(call.func)] = becomes(cst.parse_expression(f"self.{call_name}"))
    if swaps:
        for number, swap in enumerate(swaps, start=1):
            swap_name = method.fresh_method_name(
                f"_swap_{attribute}" + (f"_{number}" if len(swaps) > 1 else ""))
            edits[id(swap)], text = _swap_edit(method, swap, swap_name)
            added.insert(number - 1, new_method(text))
    edits[id(method.function)] = followed_by(added)
    return edited(method.module, edits)
