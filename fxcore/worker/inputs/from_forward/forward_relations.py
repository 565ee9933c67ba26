"""How ``forward``'s tensor arguments relate to one another and to the layers that take them,
read from its source with ``ast`` (nothing runs): the submodule each argument is passed to
(``self.conv(x)``), the layers that take a ``torch.cat`` of it with other values (a decoder's
``self.conv(torch.cat([self.up(inp), skip], 1))``), the arguments it is combined with (by
``cat``/``stack``, ``+ - * /``, ``grid_sample``, ``interpolate(size=other.shape[2:])``) and the
scale of the submodule or ``interpolate`` applied to the other one on the way (a transposed
convolution of stride 2 doubles it, a convolution of stride 2 halves it), and whether the
argument's channels are moved last (``ddf.permute(0, 2, 3, 1)``: a displacement field has one
channel per spatial dimension), and the rank a ``permute`` names. ``related`` searches
candidates in the order these say.

A local name is followed to the last assignment before the place it is read
(``out = self.up(inp)``, then ``out = torch.cat((out, skip), 1)``), and a module that wraps its
layers scales as they do; the code is read, not run, so a branch's both sides count.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

from torch import nn

from fxcore.worker.source.function_trees import function_tree

#: Calls that concatenate or stack their first argument's items.
_JOINING = frozenset({"cat", "concat", "concatenate", "stack"})
#: Calls whose tensor arguments must fit one another (a sampling grid and its image).
_PAIRING = frozenset({"grid_sample", "interpolate", "where", "matmul", "bmm"})
#: How many times a local name is followed to what it was assigned (``a = b`` chains).
_ALIAS_DEPTH = 8


@dataclass
class ArgumentUse:
    """What ``forward``'s code says of one tensor argument."""

    #: The submodules it is passed to as their first argument, in the order of the code.
    takers: list[nn.Module] = field(default_factory=list)
    #: The submodules it is passed to in another place than the first (a cross-attention's
    #: keys and values: ``self.attn(x, context, context)``).
    passed_to: list[nn.Module] = field(default_factory=list)
    #: The submodules that take a concatenation that has it as one of the items, each with
    #: the other items: the channels a submodule applied to one gives (its
    #: ``out_channels``...), another argument's name, or None where the code does not say.
    joined_into: list[tuple[nn.Module, list[int | str | None]]] = field(default_factory=list)
    #: (another argument it meets, the scale applied to that one, the scale applied to this
    #: one on the way): ``cat([self.up(inp), skip])`` gives skip ("inp", 2.0, 1.0).
    partners: list[tuple[str, float, float]] = field(default_factory=list)
    #: Its channels are moved last (``permute(0, 2, 3, 1)``, ``movedim(1, -1)``).
    channels_last: bool = False
    #: The rank a ``permute`` of it names.
    rank: int | None = None


def forward_tree(cls: type) -> ast.AST | None:
    """``forward``'s source as an ``ast`` tree; None when it cannot be read."""
    return function_tree(cls.forward)


def argument_uses(tree: ast.AST, model: nn.Module, names: list[str]) -> dict[str, ArgumentUse]:
    """What the code says of each argument of ``names``."""
    aliases = local_assignments(tree)
    uses = {name: ArgumentUse() for name in names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            _read_call(node, model, aliases, uses)
        elif isinstance(node, ast.BinOp) and isinstance(
                node.op, (ast.Add, ast.Sub, ast.Mult, ast.Div)):
            _pair(model, aliases, uses, [node.left, node.right])
    return uses


def _read_call(node: ast.Call, model: nn.Module, aliases: Assignments,
               uses: dict[str, ArgumentUse]) -> None:
    called = submodule(model, node.func)
    first = assigned_value(node.args[0], aliases) if node.args else None
    if called is not None and first is not None:
        if isinstance(first, ast.Name) and first.id in uses:
            uses[first.id].takers.append(called)
        elif _joining(first) is not None:
            items = [assigned_value(item, aliases) for item in _joining(first) or []]
            for index, item in enumerate(items):
                if isinstance(item, ast.Name) and item.id in uses:
                    others = [_item_channels(model, uses, other)
                              for position, other in enumerate(items) if position != index]
                    uses[item.id].joined_into.append((called, others))
    if called is not None:
        for later in [*node.args[1:], *(keyword.value for keyword in node.keywords)]:
            resolved = assigned_value(later, aliases)
            if isinstance(resolved, ast.Name) and resolved.id in uses:
                uses[resolved.id].passed_to.append(called)
    name = _function_name(node.func)
    if name in _JOINING and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
        _pair(model, aliases, uses, list(node.args[0].elts))
    elif name in _PAIRING:
        _pair(model, aliases, uses, [*node.args, *(k.value for k in node.keywords)])
    elif name in ("permute", "movedim") and isinstance(node.func, ast.Attribute):
        owner = assigned_value(node.func.value, aliases)
        if isinstance(owner, ast.Name) and owner.id in uses:
            _read_permute(node, uses[owner.id])


def _read_permute(node: ast.Call, use: ArgumentUse) -> None:
    numbers = [a.value for a in node.args if isinstance(a, ast.Constant)
               and type(a.value) is int]
    if len(numbers) != len(node.args) or not numbers:
        return
    if node.func.attr == "movedim":  # type: ignore[attr-defined]
        use.channels_last = use.channels_last or numbers[:2] == [1, -1]
        return
    use.rank = len(numbers)
    use.channels_last = use.channels_last or (len(numbers) > 2 and numbers[-1] == 1)


def _pair(model: nn.Module, aliases: Assignments, uses: dict[str, ArgumentUse],
          operands: list[ast.expr]) -> None:
    """Record that the arguments under ``operands`` meet, each with the scale applied to it."""
    met = [found for operand in operands
           if (found := _argument_and_scale(model, aliases, uses, operand)) is not None]
    for name, own in met:
        for other, scale in met:
            if other != name and (other, scale, own) not in uses[name].partners:
                uses[name].partners.append((other, scale, own))


def _argument_and_scale(model: nn.Module, aliases: Assignments,
                        uses: dict[str, ArgumentUse], node: ast.expr) -> tuple[str, float] | None:
    """(the argument ``node`` is made of, the scale of what was applied to it on the way):
    the argument itself, a submodule or ``interpolate`` call on it, its ``.shape``."""
    scale = 1.0
    for _ in range(_ALIAS_DEPTH):
        node = assigned_value(node, aliases)
        if isinstance(node, ast.Name):
            return (node.id, scale) if node.id in uses else None
        if isinstance(node, ast.Call) and node.args:
            called = submodule(model, node.func)
            if called is not None:
                scale *= module_scale(called)
            elif _function_name(node.func) == "interpolate":
                scale *= _keyword_number(node, "scale_factor") or 1.0
            node = node.args[0]
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        else:
            return None
    return None


def _item_channels(model: nn.Module, uses: dict[str, ArgumentUse],
                   item: ast.expr) -> int | str | None:
    """The channels an item of a concatenation has, as far as the code says: a submodule's
    output channels, or the argument it is."""
    if isinstance(item, ast.Name):
        return item.id if item.id in uses else None
    if isinstance(item, ast.Call):
        called = submodule(model, item.func)
        if called is not None:
            return out_channels(called)
    return None


def declared_sizes(module: nn.Module) -> list[int]:
    """The sizes ``module`` declares in its own attributes named for one (``kdim``,
    ``context_dim``, ``in_channels``, ``num_features``): what an argument passed to it in
    another place than the first may have as its channels or features."""
    return [value for name, value in vars(module).items()
            if type(value) is int and value > 0
            and any(word in name for word in ("dim", "channels", "features"))]


def out_channels(module: nn.Module) -> int | None:
    """The channels (features) ``module`` gives, where one of its attributes says it (a
    ``Sequential``'s: its last layer that says it)."""
    if isinstance(module, nn.Sequential):
        return next((found for layer in reversed(module) if (found := out_channels(layer))),
                    None)
    for name in ("out_channels", "out_features", "num_features", "num_channels", "embed_dim"):
        value = getattr(module, name, None)
        if type(value) is int:
            return value
    return None


def module_scale(module: nn.Module) -> float:
    """How much ``module`` scales spatial sizes: a transposed convolution's stride, an
    ``Upsample``'s factor, one over a strided convolution's or pooling's stride; for a module
    that wraps layers (a library's own convolution block), what its layers do: a
    ``Sequential``'s all in turn, another's first that scales (its branches meet again)."""
    own = _layer_scale(module)
    if own is not None:
        return own
    scales = [scale for child in module.children() if (scale := module_scale(child)) != 1.0]
    if isinstance(module, nn.Sequential):
        return float(math.prod(scales))
    return scales[0] if scales else 1.0


def _layer_scale(module: nn.Module) -> float | None:
    """The scale of a layer that scales by itself; None for anything else."""
    if isinstance(module, nn.Upsample):
        factor = module.scale_factor
        if factor is None:
            return 1.0
        return float(factor[0] if isinstance(factor, tuple) else factor)
    if not isinstance(module, (nn.modules.conv._ConvNd, nn.modules.pooling._MaxPoolNd,
                               nn.modules.pooling._AvgPoolNd)):
        return None
    stride = getattr(module, "stride", None)
    first = stride[0] if isinstance(stride, tuple) and stride else stride
    if not isinstance(first, int) or first <= 1:
        return 1.0
    if isinstance(module, nn.modules.conv._ConvTransposeNd):
        return float(first)
    return 1.0 / first


def _keyword_number(node: ast.Call, name: str) -> float | None:
    for keyword in node.keywords:
        if keyword.arg == name and isinstance(keyword.value, ast.Constant) \
                and isinstance(keyword.value.value, (int, float)):
            return float(keyword.value.value)
    return None


def _joining(node: ast.expr) -> list[ast.expr] | None:
    """The items of ``torch.cat([...])`` (or ``stack``); None for anything else."""
    if isinstance(node, ast.Call) and _function_name(node.func) in _JOINING and node.args \
            and isinstance(node.args[0], (ast.List, ast.Tuple)):
        return list(node.args[0].elts)
    return None


def _function_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else None


#: A local name's assignments: (where the statement ends, the value assigned), in the order
#: of the code; None for a name a loop or an augmented assignment also sets.
Assignments = dict[str, list[tuple[tuple[int, int], ast.expr]] | None]


def local_assignments(tree: ast.AST) -> Assignments:
    """Each local name's assignments (``forward``'s own arguments included: after
    ``x = self.conv(x)``, ``x`` is the new value). A name set again (``out = self.up(inp)``,
    then ``out = torch.cat((out, skip), 1)``) is, where it is read, what its last assignment
    before that place gave; one a loop or ``+=`` sets has no value the code says."""
    assigned: Assignments = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            found = assigned.setdefault(node.targets[0].id, [])
            if found is not None:
                found.append(((node.end_lineno or 0, node.end_col_offset or 0), node.value))
        elif isinstance(node, (ast.AugAssign, ast.For, ast.comprehension)):
            target = node.target
            if isinstance(target, ast.Name):
                assigned[target.id] = None
    for found in assigned.values():
        if found is not None:
            found.sort(key=lambda row: row[0])
    return assigned


def assigned_value(node: ast.expr, aliases: Assignments) -> ast.expr:
    """The value a local name read at ``node`` holds: its last assignment that ends before
    the place it is read; the name itself (an argument, a loop's name) where none does."""
    for _ in range(_ALIAS_DEPTH):
        if not isinstance(node, ast.Name) or not aliases.get(node.id):
            return node
        place = (node.lineno, node.col_offset)
        before = [value for end, value in aliases[node.id] or [] if end <= place]
        if not before:
            return node
        node = before[-1]
    return node


def submodule(model: nn.Module, node: ast.expr) -> nn.Module | None:
    """``self.a.b`` (or ``self.a["k"]``/``self.a[0]``) as a submodule of ``model``."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        table = submodule(model, node.value)
        if table is None:
            return None
        return table._modules.get(str(node.slice.value))
    path: list[str] = []
    while isinstance(node, ast.Attribute):
        path.insert(0, node.attr)
        node = node.value
    if not (isinstance(node, ast.Name) and node.id == "self") or not path:
        return None
    try:
        return model.get_submodule(".".join(path))
    except AttributeError:
        return None
