"""FX510 at a submodule swapped between calls in ``forward`` (``self.head = self.head_b if
self.head is self.head_a else self.head_a``): torch.compile guards the type and identity of the
module ``self.head`` names, and compiles again for each. The fix keeps the swap, under
``torch.compiler.disable``, returning which module it chose as a tensor flag, and calls both
modules and selects with that flag (``torch.where``): the compiled code then reads neither the
attribute nor a Python flag, so nothing guards them, and the state the swap keeps is what it
was.

    self.head = self.head_b if ... else self.head_a   ->   head_is_head_b = self._swap_head()
    return self.head(x)                                     return torch.where(head_is_head_b,
                                                                self.head_b(x), self.head_a(x))

Only where that gives the same outputs: the swap picks one of two submodules, each built in
``__init__`` from layers that keep no state and draw no random numbers (a Linear layer, an
activation, a ``Sequential`` of them: calling the one not chosen changes nothing), both giving
the same number of features (so ``torch.where`` selects, never broadcasts), called with names
as arguments, after the swap. ``NoFix`` says which condition fails, and a swap outside
``forward`` (a loop reassigning the attribute) is not one the method can see.
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

#: Layers that keep no state between calls and draw no random numbers, and the features they
#: give: ``Linear``'s second argument, the input's for the others.
STATELESS_LAYERS = frozenset({"Linear", "ReLU", "GELU", "SiLU", "Tanh", "Sigmoid", "Identity",
                              "LeakyReLU", "ELU", "Softplus", "Mish", "Hardswish", "LayerNorm"})
#: Features of a layer that keeps its input's.
SAME = "same"


def _features(layer: cst.BaseExpression) -> str | None:
    """The features a stateless layer (or a ``Sequential`` of them) gives: a ``Linear``'s out
    features as written, ``SAME`` for one that keeps its input's; None for any other."""
    if not isinstance(layer, cst.Call):
        return None
    name = code(layer.func).rsplit(".", 1)[-1]
    if name == "Sequential":
        found: str | None = SAME
        for arg in layer.args:
            inner = _features(arg.value) if arg.keyword is None and not arg.star else None
            if inner is None:
                return None
            found = found if inner == SAME else inner
        return found
    if name not in STATELESS_LAYERS:
        return None
    if name != "Linear":
        return SAME
    positional = [arg for arg in layer.args if arg.keyword is None]
    named = [arg for arg in layer.args if arg.keyword is not None
             and arg.keyword.value == "out_features"]
    given = positional[1:2] or named
    return code(given[0].value) if given else None


def _built(method: Method, attribute: str) -> cst.BaseExpression | None:
    """What ``__init__`` assigns to ``self.<attribute>``, if it does, once."""
    found = [assign.value for init in method.methods() if init.name.value == "__init__"
             for assign in nodes_of(init, cst.Assign) if isinstance(assign, cst.Assign)
             and any(self_attribute(target.target) == attribute for target in assign.targets)]
    return found[0] if len(found) == 1 else None


def _swap(method: Method, attribute: str) -> cst.SimpleStatementLine | None:
    """The method's one statement that assigns ``self.<attribute>`` alone."""
    found = []
    for statement in nodes_of(method.function, cst.SimpleStatementLine):
        assert isinstance(statement, cst.SimpleStatementLine)
        if len(statement.body) == 1 and isinstance(assign := statement.body[0], cst.Assign) \
                and any(self_attribute(target.target) == attribute for target in assign.targets):
            found.append(statement)
    return found[0] if len(found) == 1 else None


def _why_not(method: Method, attribute: str, swap: cst.SimpleStatementLine,
             calls: list[cst.Call]) -> str | tuple[str, str]:
    """(chosen, other): the submodule the swap's condition picks and the other; else why no
    fix."""
    assign = swap.body[0]
    assert isinstance(assign, cst.Assign)
    value = assign.value
    chosen = self_attribute(value.body) if isinstance(value, cst.IfExp) else None
    other = self_attribute(value.orelse) if isinstance(value, cst.IfExp) else None
    if len(assign.targets) != 1 or chosen is None or other is None or chosen == other:
        return (f"self.{attribute} is assigned `{code(value)}`, not one of two submodules "
                "by a condition: which modules it may name is not known here")
    features = {name: _features(built) if (built := _built(method, name)) is not None else None
                for name in (chosen, other)}
    for name, found in features.items():
        if found is None:
            return (f"self.{name} is not built in __init__ from layers known to keep no "
                    "state and draw no random numbers: calling it when the other is chosen "
                    "could change outputs")
    if features[chosen] != features[other]:
        return (f"self.{chosen} and self.{other} give different features: torch.where would "
                "broadcast their outputs, not select one")
    swapped_at = method.positions[swap].end.line
    inside = {id(node) for node in nodes_of(swap, cst.Attribute)}
    inside |= {id(call.func) for call in calls}
    for node in nodes_of(method.function, cst.Attribute):
        if self_attribute(node) == attribute and id(node) not in inside:  # type: ignore[arg-type]
            return (f"{method.function.name.value} reads self.{attribute} at line "
                    f"{method.line_of(node)} other than by calling it: the compiled frame "
                    "would still guard which module it is")
    for call in calls:
        if method.line_of(call) <= swapped_at or any(
                arg.keyword is not None or arg.star or not isinstance(
                    arg.value, (cst.Name, cst.Attribute, cst.Integer, cst.Float))
                for arg in call.args):
            return (f"the call of self.{attribute} at line {method.line_of(call)} is not "
                    "after the swap with names as arguments: calling both modules with it "
                    "could compute it twice")
    return chosen, other


def select_with_flag(source: str, line: int, attribute: str) -> Rewritten:
    """``source`` with the swap of ``self.<attribute>`` in the method at ``line`` made under
    ``torch.compiler.disable``, returning a tensor flag, and each later call of the attribute
    both modules' outputs selected by the flag; ``NoFix`` when that would change outputs or
    leave the guard; None when the method does not call the attribute."""
    method = method_at(source, line)
    if method is None:
        return None
    calls = [call for call in nodes_of(method.function, cst.Call)
             if isinstance(call, cst.Call) and self_attribute(call.func) == attribute]
    if not calls:
        return None
    swap = _swap(method, attribute)
    if swap is None:
        return NoFix(f"self.{attribute} is not assigned once in {method.function.name.value} "
                     "(a loop reassigning it between calls): which modules it may name is not "
                     "known here")
    found = _why_not(method, attribute, swap, calls)
    if isinstance(found, str):
        return NoFix(found)
    chosen, other = found
    torch = method.torch
    flag = method.fresh_local_name(f"{attribute}_is_{chosen.lstrip('_')}")
    swap_name = method.fresh_method_name(f"_swap_{attribute}")
    local = assigned_names(method.function) - {"self"}
    arguments = [read for read in dict.fromkeys(reads(swap).names) if read in local]
    listed = ", ".join(arguments)
    edits: dict[int, Edit] = {id(swap): becomes(
        cst.parse_statement(f"{flag} = self.{swap_name}({listed})\n").with_changes(
            leading_lines=swap.leading_lines, trailing_whitespace=swap.trailing_whitespace))}
    for call in calls:
        given = ", ".join(code(arg.value) for arg in call.args)
        edits[id(call)] = becomes(cst.parse_expression(
            f"{torch}.where({flag}, self.{chosen}({given}), self.{other}({given}))"))
    added = new_method(
        f"@{torch}.compiler.disable\n"
        f"def {swap_name}(self{''.join(f', {name}' for name in arguments)}):\n"
        "    # Eagerly, with which module it chose as a tensor: torch.compile would guard\n"
        f"    # which module self.{attribute} is, and a Python flag's value.\n"
        f"    {code(swap.body[0])}\n"
        f"    return {torch}.tensor(self.{attribute} is self.{chosen})\n")
    edits[id(method.function)] = followed_by([added])
    return edited(method.module, edits)
