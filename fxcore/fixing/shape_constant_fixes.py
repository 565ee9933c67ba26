"""A graph break at a call dynamo skips (a C extension's function, ``zlib.crc32``,
``hashlib.md5``) whose value depends on shapes only, computed in a helper torch.compile takes
as a constant, with libcst; idempotent.

``key = zlib.crc32(str(x.shape).encode())`` becomes ``key = _shape_constant_1a2b3c(x.shape)``
and, at module level::

    @torch.compiler.assume_constant_result
    def _shape_constant_1a2b3c(shape):
        return zlib.crc32(str(shape).encode())

Dynamo calls the helper while it traces, on the shapes it has specialised on, and keeps its
result as a constant of the graph; a new shape recompiles, and so computes it again. Its
arguments must be constants then: where a size is dynamic (after a recompilation for a new
size), dynamo breaks the graph at the call instead, as it did before the fix; the value is
right either way. Made on the largest expressions of the statement the break is at that read
only shapes (``<name>.shape``, ``.size()``, ``.size(<int>)``, ``.ndim``, ``.dim()``), literals,
plain builtins and the file's imports, at least one of them called from an import that is
not torch: a function of its shapes.
"""

from __future__ import annotations

import functools
import hashlib

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from fxcore.fixing.libcst_edits import dotted_name, module_imports, parse_source
from fxcore.fixing.pt2_fixes import ensure_torch_import, torch_spelling
from fxcore.fixing.scoped_options import torch_text
from fxcore.fixing.statement_edits import code

#: Builtins whose result depends on their arguments only.
_PURE_BUILTINS = frozenset({
    "str", "repr", "tuple", "list", "int", "float", "bool", "len", "hash", "sum", "max", "min",
    "abs", "sorted", "format", "ord", "bytes", "divmod", "pow", "round"})
#: Reads of a tensor's shape, as attributes and as methods with no or one int argument.
_SHAPE_ATTRIBUTES = frozenset({"shape", "ndim"})
_SHAPE_METHODS = frozenset({"size", "dim"})


@functools.cache
def has_constant_result() -> bool:
    """Whether the torch the workers import offers ``torch.compiler.assume_constant_result``
    (read from its source: the host never imports torch)."""
    text = torch_text("compiler", "__init__.py")
    return text is not None and "def assume_constant_result(" in text


def _imported(module: cst.Module) -> set[str]:
    """The names module-level imports bind, torch's left out."""
    found = set()
    for small in module_imports(module):
        names = small.names if not isinstance(small.names, cst.ImportStar) else ()
        origin = dotted_name(small.module) if isinstance(small, cst.ImportFrom) and \
            small.module else None
        for alias in names:
            full = dotted_name(alias.name) or ""
            bound = alias.asname.name if alias.asname else alias.name
            local = dotted_name(bound) if isinstance(bound, (cst.Name, cst.Attribute)) else None
            if local and (origin or full).split(".")[0] != "torch":
                found.add(local.split(".")[0])
    return found


def _shape_read(node: cst.BaseExpression) -> bool:
    """``x.shape``, ``self.h.ndim``, ``x.size()``, ``x.size(0)``, ``x.dim()``."""
    if isinstance(node, cst.Attribute):
        return node.attr.value in _SHAPE_ATTRIBUTES and dotted_name(node.value) is not None
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
            node.func.attr.value in _SHAPE_METHODS and dotted_name(node.func.value) is not None:
        return all(isinstance(arg.value, cst.Integer) and arg.keyword is None and not arg.star
                   for arg in node.args) and len(node.args) <= 1
    return False


class _Reads(cst.CSTVisitor):
    """Whether an expression reads only shapes, literals, pure builtins and imports, and
    whether it calls into an import; its shape reads in order."""

    def __init__(self, imported: set[str]) -> None:
        super().__init__()
        self.imported = imported
        self.shapes: list[cst.BaseExpression] = []
        self.pure = True
        self.calls_import = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.BaseExpression) and _shape_read(node):
            self.shapes.append(node)
            return False
        if isinstance(node, (cst.Lambda, cst.BaseComp, cst.NamedExpr, cst.Await, cst.Yield)):
            self.pure = False
        if isinstance(node, cst.Call) and _head(node.func) in self.imported:
            self.calls_import = True
        if isinstance(node, (cst.Attribute, cst.Arg)):
            node.value.visit(self)
            return False  # an attribute's name, a keyword, is no read
        if isinstance(node, cst.Name) and node.value not in self.imported and \
                node.value not in _PURE_BUILTINS:
            self.pure = False
        return True


def _head(node: cst.BaseExpression) -> str | None:
    name = dotted_name(node)
    return name.split(".")[0] if name else None


def _reads(node: cst.BaseExpression, imported: set[str]) -> _Reads:
    reads = _Reads(imported)
    node.visit(reads)
    return reads


class _Extract(cst.CSTTransformer):
    """The largest shape-only expressions of the statement starting on ``line`` as calls of
    helpers, whose definitions it collects."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int, imported: set[str], torch: str) -> None:
        super().__init__()
        self.line = line
        self.imported = imported
        self.torch = torch
        self.inside = False
        self.helpers: dict[str, str] = {}

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> bool:
        self.inside = self.get_metadata(PositionProvider, node).start.line == self.line
        return self.inside

    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine
                                  ) -> cst.SimpleStatementLine:
        self.inside = False
        return updated_node

    def on_visit(self, node: cst.CSTNode) -> bool:
        if not super().on_visit(node):
            return False
        if not self.inside or not isinstance(node, cst.BaseExpression) or \
                isinstance(node, (cst.Name, cst.Attribute)):
            return True
        reads = _reads(node, self.imported)
        # Taken whole: nothing inside it is visited, so the largest one is the one taken.
        return not (reads.pure and reads.calls_import and reads.shapes)

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode
                 ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        left = super().on_leave(original_node, updated_node)
        if not self.inside or not isinstance(original_node, cst.BaseExpression) or \
                isinstance(original_node, (cst.Name, cst.Attribute)):
            return left
        reads = _reads(original_node, self.imported)
        if not (reads.pure and reads.calls_import and reads.shapes):
            return left
        return self._helper_call(original_node, reads.shapes)

    def _helper_call(self, node: cst.BaseExpression, shapes: list[cst.BaseExpression]
                     ) -> cst.BaseExpression:
        names = ["shape" if index == 0 else f"shape_{index}" for index in range(len(shapes))]
        body = node.visit(_Substitute(dict(zip(shapes, names, strict=True))))
        assert isinstance(body, cst.BaseExpression)
        returned = code(body.with_changes(lpar=[], rpar=[]))
        digest = hashlib.sha1(returned.encode()).hexdigest()[:6]
        name = f"_shape_constant_{digest}"
        self.helpers[name] = (f"@{self.torch}.compiler.assume_constant_result\n"
                              f"def {name}({', '.join(names)}):\n"
                              "    # A function of shapes only: computed once per shape.\n"
                              f"    return {returned}\n")
        arguments = ", ".join(code(shape) for shape in shapes)
        return cst.parse_expression(f"{name}({arguments})").with_changes(
            lpar=node.lpar, rpar=node.rpar)


class _Substitute(cst.CSTTransformer):
    def __init__(self, names: dict[cst.BaseExpression, str]) -> None:
        super().__init__()
        self.names = names

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode
                 ) -> cst.CSTNode | cst.RemovalSentinel | cst.FlattenSentinel[cst.CSTNode]:
        name = self.names.get(original_node)  # type: ignore[call-overload]
        return cst.Name(name) if name is not None else updated_node


def _extracted(source: str, line: int) -> tuple[str, dict[str, str]]:
    """(``source`` with the statement's shape-only expressions as helper calls, the helpers'
    definitions by name); ``(source, {})`` when it has none."""
    try:
        module = parse_source(source)
    except cst.ParserSyntaxError:
        return source, {}
    extract = _Extract(line, _imported(module), torch_spelling(module) or "torch")
    edited = MetadataWrapper(module, unsafe_skip_copy=True).visit(extract)
    return (edited.code, extract.helpers) if extract.helpers else (source, {})


def shape_constant_calls(source: str, line: int) -> str:
    """The statement starting on ``line`` with its shape-only expressions (see above) as calls
    of the helpers ``shape_constant_helpers`` names; ``source`` itself when it has none. The
    statement's lines only: the helpers are defined by name (the fix's ``import_edit``)."""
    return _extracted(source, line)[0]


def shape_constant_helpers(source: str, line: int) -> tuple[tuple[str, str], ...]:
    """(name, definition) of each helper ``shape_constant_calls`` calls at ``line``."""
    return tuple(_extracted(source, line)[1].items())


def define_helpers(source: str, helpers: tuple[tuple[str, str], ...]) -> str:
    """Each helper not defined yet, at module level before the first statement that calls it,
    and ``import torch``; unchanged when all are."""
    module = parse_source(source)
    body = list(module.body)
    defined = {statement.name.value for statement in body
               if isinstance(statement, cst.FunctionDef)}
    spacing = [cst.EmptyLine(), cst.EmptyLine()]
    missing = [(name, text) for name, text in helpers if name not in defined]
    for name, text in missing:
        at = next((index for index, statement in enumerate(body)
                   if name in module.code_for_node(statement)), len(body))
        following = [body[at].with_changes(leading_lines=spacing)] if at < len(body) else []
        body[at:at + 1] = [parse_source(text).body[0].with_changes(leading_lines=spacing),
                           *following]
    return ensure_torch_import(module.with_changes(body=body).code if missing else source)


def shape_constants(source: str, line: int) -> str:
    """``shape_constant_calls`` and its helpers defined: the whole edit."""
    called, helpers = _extracted(source, line)
    return define_helpers(called, tuple(helpers.items())) if helpers else source
