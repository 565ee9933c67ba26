"""What ``forward`` does with the constructor parameters ``__init__`` keeps as attributes
(``self.decoder = decoder``), read with ``ast`` from ``forward`` and the methods of the class
it calls on ``self`` (nothing runs): calls it (``self.decoder(x, memory)``: how many
positional arguments, which keywords), indexes or iterates it (``self.blocks[0]``, ``for
block in self.blocks``), reads its attributes (``self.decoder.layers``), or takes it as a
number (``topk(self.top_k)``, ``range(self.n)``, ``x.view(b, self.heads, -1)``, arithmetic).

A guessed constructor value must fit those uses (``fits``): never ``None`` or a number for
a parameter ``forward`` calls, ``nn.Identity()`` only where every call passes one positional
argument, nothing that cannot be indexed for one it indexes, a number for one it takes as a
number. An attribute ``forward`` tests (``if self.act is not None``, ``isinstance``,
``callable``) is left alone: the code says it may be anything. ``misfit`` reads a built
instance's attributes (what ``__init__`` made of the arguments), so an argument replaced in
``__init__`` (``self.act = act or nn.Identity()``) is judged by what it became.
"""

from __future__ import annotations

import ast
import functools
import inspect
from dataclasses import dataclass, field
from typing import Any

import torch

from fxcore.worker.building.called_checks import called_functions, own_init
from fxcore.worker.source.function_trees import function_tree

#: Calls whose every argument that is one of the attributes is taken as an int (a size, a
#: count): ``x.topk(self.k)``, ``torch.topk(x, self.k)``, ``x.view(b, self.heads, -1)``.
_INT_TAKING = frozenset({
    "range", "topk", "kthvalue", "chunk", "split", "tensor_split", "view", "reshape",
    "expand", "repeat", "tile", "unflatten", "narrow", "roll", "repeat_interleave",
    "new_zeros", "new_ones", "new_empty", "zeros", "ones", "empty", "randn", "rand", "arange",
    "unfold", "pixel_shuffle", "pixel_unshuffle", "rearrange", "flatten",
})
#: Calls that iterate their arguments.
_ITERATING = frozenset({"enumerate", "zip", "len", "reversed", "list", "tuple", "iter"})
#: Calls that test what they are given: the code expects more than one kind.
_TESTING = frozenset({"isinstance", "callable", "hasattr", "getattr", "type"})
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
#: How many methods of the class, called from ``forward`` on ``self``, are read with it.
_MAX_METHODS = 8
#: How many base ``__init__``s deep a parameter handed on is followed.
_MAX_BASES = 4


class ForwardMisfit(Exception):
    """A built instance whose attribute does not fit what ``forward`` does with it; the
    message names the constructor parameter and the use."""


@dataclass
class AttributeUse:
    """What ``forward`` does with one attribute."""

    #: Each call: the positional arguments and the keywords it spells, and whether it also
    #: passes ``*args`` or ``**kwargs`` (often a ``forward``'s own, empty).
    calls: list[tuple[int, tuple[str, ...], bool]] = field(default_factory=list)
    indexed: bool = False
    iterated: bool = False
    #: The attributes read from it (``self.decoder.layers``: ``layers``).
    attributes: list[str] = field(default_factory=list)
    number: bool = False
    #: It is tested (``if self.act``, ``self.act is None``, ``isinstance``): any kind may do.
    tested: bool = False

    def described(self, attribute: str) -> str:
        """The use, in words: ``forward calls self.decoder with 2 arguments``."""
        owner = f"self.{attribute}"
        uses = []
        for positional, keywords, more in self.calls:
            if positional != 1 or keywords:
                uses.append(f"calls {owner} with "
                            f"{_arguments_text(positional, keywords, more)}")
                break
        else:
            if self.calls:
                uses.append(f"calls {owner}")
        if self.indexed or self.iterated:
            uses.append(f"{'indexes' if self.indexed else 'iterates'} {owner}")
        if self.attributes:
            uses.append(f"reads {owner}.{self.attributes[0]}")
        if self.number:
            uses.append(f"takes {owner} as a number")
        return "forward " + " and ".join(uses)


def _arguments_text(positional: int, keywords: tuple[str, ...], more: bool) -> str:
    parts = [f"{positional} argument{'' if positional == 1 else 's'}"]
    if keywords:
        parts.append(f"keyword{'' if len(keywords) == 1 else 's'} " + ", ".join(keywords))
    return " and ".join(parts) + (" (and more unpacked)" if more else "")


@functools.lru_cache(maxsize=64)
def parameter_uses(cls: type) -> dict[str, tuple[str, AttributeUse]]:
    """Constructor parameter -> (the attribute ``__init__`` keeps it as, what ``forward``
    does with that attribute), for the parameters ``forward`` uses and does not test."""
    kept = _kept_parameters(cls)
    if not kept:
        return {}
    uses = {attribute: AttributeUse() for attribute in kept}
    for tree in forward_trees(cls):
        _read(tree, uses)
    return {parameter: (attribute, uses[attribute]) for attribute, parameter in kept.items()
            if not uses[attribute].tested and (uses[attribute].calls or uses[attribute].indexed
                                               or uses[attribute].iterated
                                               or uses[attribute].attributes
                                               or uses[attribute].number)}


def _kept_parameters(cls: type) -> dict[str, str]:
    """Attribute -> the constructor parameter ``__init__`` assigns to it as it is
    (``self.decoder = decoder``), itself or through the base ``__init__`` it hands the
    parameter to (``super().__init__(decoder)``, whose own ``self.decoder = decoder``)."""
    found = own_init(cls)
    return _kept_by(found[0], found[1], cls, None, 0) if found is not None else {}


def _kept_by(function: Any, owner: type | None, cls: type, given: dict[str, str] | None,
             depth: int) -> dict[str, str]:
    """Attribute -> parameter of the outermost ``__init__``, as ``function`` (defined on
    ``owner``) keeps them; ``given``: its parameters that hold one of the outermost's, by
    name (None: ``function`` is the outermost)."""
    tree = function_tree(function)
    if tree is None or not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        return {}
    definition = tree.body[0]
    arguments = definition.args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    outer = {name: name for name in names} if given is None else given
    kept: dict[str, str] = {}
    # The base ``__init__``s first: an assignment of the class's own replaces theirs.
    if depth < _MAX_BASES:
        for called in called_functions(definition, getattr(function, "__globals__", {}), cls,
                                       owner):
            if called.owner is None:
                continue  # a helper keeps nothing on ``self``
            handed = {parameter: outer[value.id] for parameter, value in called.bound.items()
                      if isinstance(value, ast.Name) and value.id in outer}
            if handed:
                kept.update(_kept_by(called.function, called.owner, cls, handed, depth + 1))
    inherited = set(kept)
    for node in ast.walk(definition):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if (attribute := _own_attribute(target)) is None:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in outer:
                kept[attribute] = outer[node.value.id]
            elif attribute in inherited:
                del kept[attribute]  # a base's, replaced here by something else
                inherited.discard(attribute)
    return kept


def forward_trees(cls: type) -> list[ast.AST]:
    """``forward``'s tree, then those of the class's own methods it calls on ``self``."""
    tree = function_tree(cls.forward) if callable(getattr(cls, "forward", None)) else None
    trees = [] if tree is None else [tree]
    seen = {"forward"}
    index = 0
    while index < len(trees) and len(seen) <= _MAX_METHODS:
        for node in ast.walk(trees[index]):
            name = _own_attribute(node.func) if isinstance(node, ast.Call) else None
            method = inspect.getattr_static(cls, name, None) if name else None
            if name in seen or not inspect.isfunction(method) \
                    or (method.__module__ or "").startswith("torch."):
                continue
            seen.add(name)
            if (found := function_tree(method)) is not None:
                trees.append(found)
        index += 1
    return trees


def _own_attribute(node: ast.AST) -> str | None:
    """``attr`` of ``self.attr``; None for anything else."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "self":
        return node.attr
    return None


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local name -> the attribute it only ever holds (``layer = self.block``): what the
    code does with the name it does with the attribute."""
    held: dict[str, str | None] = {}
    plain: set[int] = set()  # the targets of ``name = ...``
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            name, attribute = node.targets[0].id, _own_attribute(node.value)
            held[name] = attribute if held.get(name, attribute) == attribute else None
            plain.add(id(node.targets[0]))
    # A name bound any other way too (a loop, ``with``, ``+=``, a tuple, an argument) holds
    # more.
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) \
                and id(node) not in plain:
            held[node.id] = None
        elif isinstance(node, ast.arg):
            held[node.arg] = None
    return {name: attribute for name, attribute in held.items() if attribute is not None}


def _read(tree: ast.AST, uses: dict[str, AttributeUse]) -> None:
    aliases = _aliases(tree)

    def use_of(node: ast.AST) -> AttributeUse | None:
        attribute = _own_attribute(node)
        if attribute is None and isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            attribute = aliases.get(node.id)
        return uses.get(attribute) if attribute is not None else None

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            _read_call(node, use_of)
        elif isinstance(node, ast.Subscript) and (use := use_of(node.value)) is not None:
            use.indexed = True
        elif isinstance(node, (ast.For, ast.comprehension)) \
                and (use := use_of(node.iter)) is not None:
            use.iterated = True
        elif isinstance(node, ast.Attribute) and (use := use_of(node.value)) is not None:
            if node.attr not in use.attributes:
                use.attributes.append(node.attr)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
            for side in (node.left, node.right):
                if (use := use_of(side)) is not None:
                    use.number = True
        elif isinstance(node, ast.Slice):
            for part in (node.lower, node.upper, node.step):
                if part is not None and (use := use_of(part)) is not None:
                    use.number = True
        if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            _tested(node.test, use_of)
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot))
                                                   for op in node.ops):
            _tested(node, use_of)
        elif isinstance(node, ast.BoolOp):
            for value in node.values:
                _tested(value, use_of)


def _read_call(node: ast.Call, use_of: Any) -> None:
    if (use := use_of(node.func)) is not None:
        spelled = [a for a in node.args if not isinstance(a, ast.Starred)]
        use.calls.append((len(spelled), tuple(k.arg for k in node.keywords if k.arg),
                          len(spelled) < len(node.args)
                          or any(k.arg is None for k in node.keywords)))
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else (
        function.id if isinstance(function, ast.Name) else None)
    given = [*node.args, *(k.value for k in node.keywords)]
    for argument in given:
        if (use := use_of(argument)) is None:
            continue
        if name in _INT_TAKING:
            use.number = True
        elif name in _ITERATING:
            use.iterated = True
        elif name in _TESTING:
            use.tested = True


def _tested(test: ast.AST, use_of: Any) -> None:
    """Mark the attributes a condition tests (``self.act``, ``self.act is not None``)."""
    for node in ast.walk(test):
        if (use := use_of(node)) is not None:
            use.tested = True


def fits(value: Any, use: AttributeUse) -> bool:
    """Whether ``value`` can be used as ``forward`` uses the attribute."""
    if value is None or isinstance(value, str):
        return False
    if use.calls and not all(_takes(value, *call[:2]) for call in use.calls):
        return False
    if use.indexed and not hasattr(type(value), "__getitem__"):
        return False
    if use.iterated and not hasattr(type(value), "__iter__"):
        return False
    if not all(hasattr(value, attribute) for attribute in use.attributes):
        return False
    return not (use.number and (isinstance(value, torch.nn.Module) or callable(value)))


def _takes(value: Any, positional: int, keywords: tuple[str, ...]) -> bool:
    """Whether ``value`` can be called with that many positional arguments and keywords
    (what a call's ``*args``/``**kwargs`` hold is taken as empty)."""
    if not callable(value) or isinstance(value, (int, float, bool)):
        return False
    if isinstance(value, torch.nn.Identity):
        return positional == 1 and not keywords
    function = value.forward if isinstance(value, torch.nn.Module) else value
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return True  # a builtin: not known
    try:
        signature.bind(*range(positional), **dict.fromkeys(keywords))
    except TypeError:
        return False
    return True


#: A number for a parameter ``forward`` takes as one and nothing else gives one.
USED_NUMBER = 2


def fitting(values: list[Any], use: AttributeUse) -> list[Any]:
    """``values`` that fit ``use``, best first; where none does, ``USED_NUMBER`` for a number
    and ``nn.Identity()`` for a module called with one positional argument and nothing else;
    else empty: no value fits."""
    kept = [value for value in values if fits(value, use)]
    if kept:
        return kept
    if use.number and not (use.calls or use.indexed or use.iterated or use.attributes):
        return [USED_NUMBER]
    if use.calls and all(call[:2] == (1, ()) for call in use.calls) and not (
            use.indexed or use.iterated or use.number) and fits(torch.nn.Identity(), use):
        return [torch.nn.Identity()]
    return []


def of_forward_use(cls: type, name: str, values: list[Any]) -> list[Any]:
    """``values`` for the constructor parameter ``name`` of ``cls`` that fit what ``forward``
    does with it (``fitting``); all of them where ``forward`` does nothing judged with it."""
    use = parameter_uses(cls).get(name)
    return values if use is None else fitting(values, use[1])


def unfit_default(cls: type, name: str, default: Any) -> bool:
    """Whether the default of the constructor parameter ``name`` does not fit what
    ``forward`` does with it (``attn=1`` that it calls)."""
    use = parameter_uses(cls).get(name)
    return use is not None and not fits(default, use[1])


def misfit(cls: type, model: torch.nn.Module) -> ForwardMisfit | None:
    """Why ``model``'s attribute kept from a constructor parameter does not fit what
    ``forward`` does with it (the first such); None when each fits."""
    for parameter, (attribute, use) in parameter_uses(cls).items():
        try:
            value = getattr(model, attribute)
        except Exception:  # a property of the user's may raise anything: not judged
            continue
        if not fits(value, use):
            return ForwardMisfit(f"No constructor value found for {parameter}: "
                                 f"{use.described(attribute)}")
    return None


def misfit_reason(cls: type, key: str, error: ForwardMisfit) -> str:
    """The reason a class has no verdict when no value of its constructor parameter fits
    what ``forward`` does with it; ``key``: its ``pkg.module:Class``."""
    return (f"{error}. Give the arguments in pyproject.toml: [tool.fx-lsp.modules.\"{key}\"] "
            f"call = \"{cls.__name__}(...)\", or name a factory there.")
