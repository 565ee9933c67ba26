"""Source transforms behind the quick fixes: plain text in, text out, idempotent.

Python sources are edited with libcst so that formatting and comments survive; ``pyproject.toml``
with tomlkit for the same reason. Every function returns its input unchanged when the fix is
already there, so offering a fix twice never doubles it.
"""

from __future__ import annotations

import functools
from typing import Any

import libcst as cst
import tomlkit
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

# ---------------------------------------------------------------------------------------------
# How the file spells torch.fx.wrap


#: Parses by source text. libcst trees are immutable, so the fixes offered for one version of a
#: file (and the edits they compute) share one parse: a 20,000-line file takes seconds.
_parse = functools.lru_cache(maxsize=4)(cst.parse_module)


def _dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr.value}"
    return None


def _alias_name(alias: cst.ImportAlias) -> str | None:
    if alias.asname is None:
        return None
    name = alias.asname.name
    return name.value if isinstance(name, cst.Name) else None


def wrap_spelling(module: cst.Module) -> str | None:
    """The expression that names ``torch.fx.wrap`` given the module-level imports, or None.

    ``import torch`` alone does not count: it only makes ``torch.fx`` reachable as a side effect
    of torch's own imports, so the fixes add an explicit ``import torch.fx`` instead.
    """
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    if _dotted(alias.name) == "torch.fx":
                        return f"{_alias_name(alias)}.wrap" if alias.asname else "torch.fx.wrap"
            elif isinstance(small, cst.ImportFrom) and not small.relative and small.module:
                source = _dotted(small.module)
                if isinstance(small.names, cst.ImportStar):
                    continue
                for alias in small.names:
                    name = _dotted(alias.name)
                    local = _alias_name(alias) or name
                    if source == "torch" and name == "fx":
                        return f"{local}.wrap"
                    if source == "torch.fx" and name == "wrap":
                        return local
    return None


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


def _header_end(body: list[cst.BaseStatement]) -> int:
    """Index just after the leading docstring and import lines of a module body."""
    end = 0
    for index, statement in enumerate(body):
        if _is_import_line(statement) or (index == 0 and _is_docstring(statement)):
            end = index + 1
        else:
            break
    return end


def _add_import(module: cst.Module, statement: str) -> cst.Module:
    """The module with the import ``statement`` after its docstring and imports."""
    body = list(module.body)
    end = _header_end(body)
    body.insert(end, cst.parse_statement(statement))
    following = body[end + 1] if end + 1 < len(body) else None
    if isinstance(following, (cst.FunctionDef, cst.ClassDef)) and not following.leading_lines:
        # PEP 8's two blank lines between the new import and a definition right after it.
        body[end + 1] = following.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    return module.with_changes(body=body)


def _ensure_wrap(module: cst.Module) -> tuple[cst.Module, str]:
    """The module with an import that makes torch.fx.wrap reachable, and its spelling."""
    spelling = wrap_spelling(module)
    if spelling is not None:
        return module, spelling
    return _add_import(module, "import torch.fx\n"), "torch.fx.wrap"


# ---------------------------------------------------------------------------------------------
# FX002 and FX008: torch.fx.wrap("len"), torch.fx.wrap("rearrange") at module scope


def _wrapped_names(statement: cst.BaseStatement) -> set[str]:
    """The names a module-level line marks with ``torch.fx.wrap("<name>")``."""
    if not isinstance(statement, cst.SimpleStatementLine):
        return set()
    found = set()
    for small in statement.body:
        value = small.value if isinstance(small, (cst.Expr, cst.Assign)) else None
        if not isinstance(value, cst.Call) or not value.args:
            continue
        called = _dotted(value.func)
        first = value.args[0].value
        if called is not None and called.split(".")[-1] == "wrap" \
                and isinstance(first, cst.SimpleString):
            found.add(str(first.evaluated_value))
    return found


def wrap_global(source: str, name: str) -> str:
    """Add ``torch.fx.wrap("<name>")`` after the module's imports (spelled as the file imports
    fx): while tracing, the module-level function or builtin ``name`` is recorded as one
    call node wherever this module calls it."""
    module = _parse(source)
    if any(name in _wrapped_names(statement) for statement in module.body):
        return source
    module, spelling = _ensure_wrap(module)
    body = list(module.body)
    call = cst.parse_statement(f'{spelling}("{name}")\n')  # an identifier: no escaping
    at = _header_end(body)
    if at < len(body) and _wrapped_names(body[at]):
        # After the wrap calls already there, as one block.
        while at < len(body) and _wrapped_names(body[at]):
            at += 1
    else:
        # A blank line keeps the call visually apart from the import block.
        call = call.with_changes(leading_lines=[cst.EmptyLine()])
    body.insert(at, call)
    return module.with_changes(body=body).code


def wrap_len(source: str) -> str:
    """Add ``torch.fx.wrap("len")`` after the module's imports."""
    return wrap_global(source, "len")


# ---------------------------------------------------------------------------------------------
# FX002 alternative: len(x) -> x.size(0)


class _LenToSize(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int, column: int) -> None:
        super().__init__()
        self.line = line
        self.column = column
        self.changed = False

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.changed or _dotted(original_node.func) != "len" or len(original_node.args) != 1:
            return updated_node
        where: CodeRange = self.get_metadata(PositionProvider, original_node)
        # Engine columns are 1-based characters; libcst's are 0-based characters.
        if (where.start.line, where.start.column + 1) != (self.line, self.column):
            return updated_node
        argument = updated_node.args[0].value
        if not isinstance(argument, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)):
            # `len(a + b)` must become `(a + b).size(0)`.
            argument = argument.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
        self.changed = True
        return cst.Call(
            func=cst.Attribute(value=argument, attr=cst.Name("size")),
            args=[cst.Arg(cst.Integer("0"))],
        )


def len_to_size(source: str, line: int, column: int) -> str:
    """Replace the ``len(x)`` call starting at 1-based ``line``/character ``column``."""
    wrapper = MetadataWrapper(_parse(source), unsafe_skip_copy=True)
    transformer = _LenToSize(line, column)
    result = wrapper.visit(transformer)
    return result.code if transformer.changed else source


# ---------------------------------------------------------------------------------------------
# Helper functions: @torch.fx.wrap


def module_function_names(source: str) -> list[str]:
    """Names of the functions defined at module scope (candidates for ``@torch.fx.wrap``)."""
    module = _parse(source)
    return [s.name.value for s in module.body if isinstance(s, cst.FunctionDef)]


def wrap_function(source: str, function: str) -> str:
    """Decorate the module-level ``def function`` with ``@torch.fx.wrap``."""
    module = _parse(source)
    target = next(
        (s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == function),
        None,
    )
    if target is None:
        return source
    for decorator in target.decorators:
        name = _dotted(decorator.decorator)
        if name is not None and (name == "wrap" or name.endswith(".wrap")):
            return source
    module, spelling = _ensure_wrap(module)
    body = [
        s.with_changes(decorators=[*s.decorators, cst.Decorator(cst.parse_expression(spelling))])
        if isinstance(s, cst.FunctionDef) and s.name.value == function
        else s
        for s in module.body
    ]
    return module.with_changes(body=body).code


# ---------------------------------------------------------------------------------------------
# Plain forward arguments (candidates for concrete-args)


def _literal(node: cst.BaseExpression) -> tuple[bool, Any]:
    """(True, value) for a literal TOML can hold, else (False, None)."""
    if isinstance(node, cst.Name) and node.value in ("True", "False"):
        return True, node.value == "True"
    if isinstance(node, (cst.Integer, cst.Float, cst.SimpleString)):
        return True, node.evaluated_value
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        ok, value = _literal(node.expression)
        if ok and isinstance(value, (int, float)):
            return True, -value
    return False, None


_PLAIN_ANNOTATIONS = {"bool": False, "int": 0, "float": 0.0, "str": ""}


def plain_forward_arguments(source: str, class_name: str) -> dict[str, Any]:
    """``forward`` parameters of ``class_name`` that are plain values, with the value to fix.

    A parameter counts when its default is a bool/number/string literal or its annotation is
    ``bool``/``int``/``float``/``str``; the value is the default, else the annotation's zero.
    """
    module = _parse(source)
    for statement in module.body:
        if not (isinstance(statement, cst.ClassDef) and statement.name.value == class_name):
            continue
        body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else []
        for item in body:
            if not (isinstance(item, cst.FunctionDef) and item.name.value == "forward"):
                continue
            found: dict[str, Any] = {}
            params = [*item.params.params, *item.params.kwonly_params]
            for param in params[1:] if item.params.params else params:
                if param.default is not None:
                    ok, value = _literal(param.default)
                    if ok:
                        found[param.name.value] = value
                        continue
                if param.annotation is not None:
                    annotation = _dotted(param.annotation.annotation)
                    if annotation in _PLAIN_ANNOTATIONS:
                        found[param.name.value] = _PLAIN_ANNOTATIONS[annotation]
            return found
    return {}


# ---------------------------------------------------------------------------------------------
# pyproject.toml: [tool.fx-lsp]


def _fx_table(document: tomlkit.TOMLDocument) -> Any:
    """The ``[tool.fx-lsp]`` table, created (without an empty ``[tool]`` header) when missing."""
    if "tool" not in document:
        document["tool"] = tomlkit.table(is_super_table=True)
    tool = document["tool"]
    if "fx-lsp" not in tool:
        tool["fx-lsp"] = tomlkit.table()
    return tool["fx-lsp"]


def _add_to_list(pyproject: str, key: str, name: str) -> str:
    document = tomlkit.parse(pyproject)
    table = _fx_table(document)
    if key not in table:
        table[key] = tomlkit.array()
    names = table[key]
    if name in names:
        return pyproject
    names.append(name)
    return tomlkit.dumps(document)


def add_leaf_module(pyproject: str, name: str) -> str:
    """Add ``name`` to ``leaf-modules`` under ``[tool.fx-lsp]``."""
    return _add_to_list(pyproject, "leaf-modules", name)


def add_autowrap_function(pyproject: str, name: str) -> str:
    """Add ``name`` (``pkg.mod:function``) to ``autowrap-functions`` under ``[tool.fx-lsp]``."""
    return _add_to_list(pyproject, "autowrap-functions", name)


def add_autowrap_module(pyproject: str, name: str) -> str:
    """Add the module ``name`` (``einops``) to ``autowrap-modules`` under ``[tool.fx-lsp]``."""
    return _add_to_list(pyproject, "autowrap-modules", name)


def _module_table(document: Any, qualified_name: str) -> Any:
    """``[tool.fx-lsp.modules."<class>"]``, made if missing."""
    table = _fx_table(document)
    if "modules" not in table:
        table["modules"] = tomlkit.table(is_super_table=True)
    modules = table["modules"]
    if qualified_name not in modules:
        modules[qualified_name] = tomlkit.table()
    return modules[qualified_name]


def add_concrete_none(pyproject: str, qualified_name: str, argument: str) -> str:
    """Add ``argument`` to ``concrete-none`` under ``[tool.fx-lsp.modules."<class>"]``: traced
    as None (TOML has no null for ``concrete-args``)."""
    document = tomlkit.parse(pyproject)
    module = _module_table(document, qualified_name)
    if "concrete-none" not in module:
        module["concrete-none"] = tomlkit.array()
    names = module["concrete-none"]
    if argument in names:
        return pyproject
    names.append(argument)
    return tomlkit.dumps(document)


def _dim_name(value: Any) -> Any:
    """The name of one ``dynamic`` dimension: ``"batch"`` or ``{name = "batch", ...}``."""
    return value.get("name") if isinstance(value, dict) else value


def apply_dynamic_suggestion(pyproject: str, qualified_name: str, class_name: str, name: str,
                             bounds: tuple[int | None, int | None] | None) -> str:
    """torch.export's suggested fix of the dynamic dimension ``name`` in ``dynamic`` under
    ``[tool.fx-lsp.modules."<class>"]`` (or the bare class name's table, as the
    configuration reads it): with ``bounds`` (min, max) the bounds torch gives replace the
    configured ones (a bound it does not give stays); with None the dimension is made static
    (removed, and the argument's table and ``dynamic`` with it when empty)."""
    document = tomlkit.parse(pyproject)
    modules = document.get("tool", {}).get("fx-lsp", {}).get("modules", {})
    module = modules.get(qualified_name, modules.get(class_name))
    dynamic = module.get("dynamic") if isinstance(module, dict) else None
    if not isinstance(dynamic, dict):
        return pyproject
    given = {} if bounds is None else {
        key: bound for key, bound in zip(("min", "max"), bounds, strict=True)
        if bound is not None}
    for argument in list(dynamic):
        dims = dynamic[argument]
        if not isinstance(dims, dict):
            continue
        for index in list(dims):
            if _dim_name(dims[index]) != name:
                continue
            if bounds is None:
                del dims[index]
                continue
            if not isinstance(dims[index], dict):
                dims[index] = tomlkit.inline_table()
                dims[index]["name"] = name
            dims[index].update(given)
        if not dims:
            del dynamic[argument]
    if not dynamic:
        del module["dynamic"]
    fixed = tomlkit.dumps(document)
    return fixed if tomlkit.parse(fixed) != tomlkit.parse(pyproject) else pyproject


def add_concrete_arg(pyproject: str, qualified_name: str, argument: str, value: Any) -> str:
    """Set ``concrete-args = {argument = value}`` under ``[tool.fx-lsp.modules."<class>"]``."""
    document = tomlkit.parse(pyproject)
    module = _module_table(document, qualified_name)
    if "concrete-args" not in module:
        module["concrete-args"] = tomlkit.inline_table()
    concrete = module["concrete-args"]
    if argument in concrete and concrete[argument] == value:
        return pyproject
    concrete[argument] = value
    return tomlkit.dumps(document)


# ---------------------------------------------------------------------------------------------
# torch.export and torch.compile: edits at a failure's position that call into torch
#
# They spell torch as the module imports it, or ``torch`` when it does not: then
# ``ensure_torch_import`` (the fix's ``import_edit``) adds ``import torch``, after every edit
# located by position, so that the new line moves none of them.


def torch_spelling(module: cst.Module) -> str | None:
    """The name a module-level import binds torch to (``import torch``, ``import torch.nn``,
    ``import torch as th``), or None."""
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if not isinstance(small, cst.Import):
                continue
            for alias in small.names:
                name = _dotted(alias.name)
                if name == "torch" and alias.asname is not None:
                    return _alias_name(alias)
                if name is not None and name.split(".")[0] == "torch" and alias.asname is None:
                    return "torch"
    return None


def ensure_torch_import(source: str) -> str:
    """Add ``import torch`` after the module's imports unless a module-level import binds it."""
    module = _parse(source)
    if torch_spelling(module) is not None:
        return source
    return _add_import(module, "import torch\n").code


def _torch(module: cst.Module, attribute: str) -> cst.BaseExpression:
    """``torch.<attribute>`` as the module spells torch."""
    return cst.parse_expression(f"{torch_spelling(module) or 'torch'}.{attribute}")


class _AtPosition(cst.CSTTransformer):
    """Replaces the one node that a subclass's ``replace`` accepts at a 1-based line and
    character column (libcst's columns are 0-based)."""

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


def _edit_at(source: str, transformer_type: type[_AtPosition], line: int, column: int) -> str:
    module = _parse(source)
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    transformer = transformer_type(module, line, column)
    result = wrapper.visit(transformer)
    return result.code if transformer.changed else source


def is_plain_string(node: cst.BaseExpression) -> bool:
    """A string literal without formatting (``"a"``, ``"a" "b"``), not bytes."""
    if isinstance(node, cst.SimpleString):
        return isinstance(node.evaluated_value, str)
    if isinstance(node, cst.ConcatenatedString):
        return is_plain_string(node.left) and is_plain_string(node.right)
    return False


# FX401: assert <tensor condition>[, "message"] -> torch._assert_async(<condition>[, "message"])


class _AssertToAssertAsync(_AtPosition):
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
    return _edit_at(source, _AssertToAssertAsync, line, column)


# FX402: int(t.item()) -> torch.sym_int(t.item()), float(t.item()) -> torch.sym_float(t.item())

#: The casts of a Python number that have a symbolic counterpart in torch.
SYMBOLIC_CASTS = {"int": "sym_int", "float": "sym_float"}


def is_item_call(node: cst.BaseExpression) -> bool:
    """``<expression>.item()``."""
    return isinstance(node, cst.Call) and not node.args and \
        isinstance(node.func, cst.Attribute) and node.func.attr.value == "item"


class _CastToSymbolic(_AtPosition):
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
    return _edit_at(source, _CastToSymbolic, line, column)


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


class _SkipWhenCompiling(_AtPosition):
    def leave_SimpleStatementLine(self, original_node: cst.SimpleStatementLine,
                                  updated_node: cst.SimpleStatementLine
                                  ) -> cst.BaseStatement:
        if self.changed or not self.covers_here(original_node) or len(updated_node.body) != 1:
            return updated_node
        statement = updated_node.body[0]
        if not (isinstance(statement, cst.Expr) and is_logging_call(statement.value)):
            return updated_node
        self.changed = True
        return cst.If(
            test=cst.parse_expression(f"not {torch_spelling(self.module) or 'torch'}"
                                      ".compiler.is_compiling()"),
            body=cst.IndentedBlock(body=[updated_node.with_changes(leading_lines=[])]),
            leading_lines=updated_node.leading_lines,
        )


def skip_when_compiling(source: str, line: int, column: int) -> str:
    """Put the print/logging call statement at ``line``/``column`` under ``if not
    torch.compiler.is_compiling():``: it runs as before in eager code, and torch.compile
    leaves it out instead of breaking the graph there."""
    return _edit_at(source, _SkipWhenCompiling, line, column)
