"""The libcst pieces every source fix uses: one parse per text, dotted names and import aliases,
the module's imports, an import added after its header, and a transformer that edits the one
node at a position. torch.fx's fixes (``fixes``) and export's and compile's (``pt2_fixes``)
build on them."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from typing import Any

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

#: Parses by source text. libcst trees are immutable, so the fixes offered for one version of a
#: file (and the edits they compute) share one parse: a 20,000-line file takes seconds.
parse_source = functools.lru_cache(maxsize=4)(cst.parse_module)


def dotted_name(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def alias_name(alias: cst.ImportAlias) -> str | None:
    """The ``as`` name of an import alias, or None."""
    if alias.asname is None:
        return None
    name = alias.asname.name
    return name.value if isinstance(name, cst.Name) else None


def module_imports(module: cst.Module) -> Iterator[cst.Import | cst.ImportFrom]:
    """The module's imports at module scope, in order; those under ``if`` or ``try`` and in
    functions do not count."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, (cst.Import, cst.ImportFrom)):
                yield small


def _is_import_line(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, (cst.Import, cst.ImportFrom)) for small in statement.body
    )


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def header_end(body: list[cst.BaseStatement]) -> int:
    """Index just after the leading docstring and import lines of a module body."""
    end = 0
    for index, statement in enumerate(body):
        if _is_import_line(statement) or (index == 0 and _is_docstring(statement)):
            end = index + 1
        else:
            break
    return end


def add_import(module: cst.Module, statement: str) -> cst.Module:
    """The module with the import ``statement`` after its docstring and imports."""
    body = list(module.body)
    end = header_end(body)
    body.insert(end, cst.parse_statement(statement))
    following = body[end + 1] if end + 1 < len(body) else None
    if isinstance(following, (cst.FunctionDef, cst.ClassDef)) and not following.leading_lines:
        # PEP 8's two blank lines between the new import and a definition right after it.
        body[end + 1] = following.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    return module.with_changes(body=body)


class EditAtPosition(cst.CSTTransformer):
    """Replaces the one node that a subclass's ``leave_*`` accepts at a 1-based line and
    character column (libcst's columns are 0-based); ``changed`` once it has."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: cst.Module, line: int, column: int) -> None:
        super().__init__()
        self.module = module
        self.line = line
        self.column = column
        self.changed = False

    def starts_here(self, node: cst.CSTNode) -> bool:
        where: CodeRange = self.get_metadata(PositionProvider, node)
        return (where.start.line, where.start.column + 1) == (self.line, self.column)

    def covers_here(self, node: cst.CSTNode) -> bool:
        where: CodeRange = self.get_metadata(PositionProvider, node)
        return (where.start.line, where.start.column + 1) <= (self.line, self.column) < (
            where.end.line, where.end.column + 1)


def edit_at(source: str, transformer_type: type[EditAtPosition], line: int, column: int,
            *arguments: Any) -> str:
    """``source`` with the edit of ``transformer_type`` (made with ``arguments`` after the
    position) at ``line``/``column``; ``source`` itself when it finds nothing to edit there."""
    module = parse_source(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    transformer = transformer_type(module, line, column, *arguments)
    result = wrapper.visit(transformer)
    return result.code if transformer.changed else source
