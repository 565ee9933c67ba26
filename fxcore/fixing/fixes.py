"""Source transforms behind torch.fx's quick fixes: plain text in, text out, idempotent.

Python sources are edited with libcst (``libcst_edits``) so that formatting and comments
survive. Every function returns its input unchanged when the fix is already there, so offering
a fix twice never doubles it. Export's and compile's edits are ``pt2_fixes``; the
``[tool.fx-lsp]`` ones ``pyproject_fixes``.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from fxcore.fixing.libcst_edits import (
    EditAtPosition,
    add_import,
    alias_name,
    dotted_name,
    edit_at,
    header_end,
    module_imports,
    parse_source,
)

# ---------------------------------------------------------------------------------------------
# How the file spells torch.fx.wrap


def wrap_spelling(module: cst.Module) -> str | None:
    """The expression that names ``torch.fx.wrap`` given the module-level imports, or None.

    ``import torch`` alone does not count: it only makes ``torch.fx`` reachable as a side effect
    of torch's own imports, so the fixes add an explicit ``import torch.fx`` instead.
    """
    for small in module_imports(module):
        if isinstance(small, cst.Import):
            for alias in small.names:
                if dotted_name(alias.name) == "torch.fx":
                    return f"{alias_name(alias)}.wrap" if alias.asname else "torch.fx.wrap"
        elif not small.relative and small.module:
            source = dotted_name(small.module)
            if isinstance(small.names, cst.ImportStar):
                continue
            for alias in small.names:
                name = dotted_name(alias.name)
                local = alias_name(alias) or name
                if source == "torch" and name == "fx":
                    return f"{local}.wrap"
                if source == "torch.fx" and name == "wrap":
                    return local
    return None


def _ensure_wrap(module: cst.Module) -> tuple[cst.Module, str]:
    """The module with an import that makes torch.fx.wrap reachable, and its spelling."""
    spelling = wrap_spelling(module)
    if spelling is not None:
        return module, spelling
    return add_import(module, "import torch.fx\n"), "torch.fx.wrap"


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
        called = dotted_name(value.func)
        first = value.args[0].value
        if called is not None and called.split(".")[-1] == "wrap" \
                and isinstance(first, cst.SimpleString):
            found.add(str(first.evaluated_value))
    return found


def wrap_global(source: str, name: str) -> str:
    """Add ``torch.fx.wrap("<name>")`` after the module's imports (spelled as the file imports
    fx): while tracing, the module-level function or builtin ``name`` is recorded as one
    call node wherever this module calls it."""
    module = parse_source(source)
    if any(name in _wrapped_names(statement) for statement in module.body):
        return source
    module, spelling = _ensure_wrap(module)
    body = list(module.body)
    call = cst.parse_statement(f'{spelling}("{name}")\n')  # an identifier: no escaping
    at = header_end(body)
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


class _LenToSize(EditAtPosition):
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.changed or dotted_name(original_node.func) != "len" \
                or len(original_node.args) != 1 or not self.starts_here(original_node):
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
    return edit_at(source, _LenToSize, line, column)


# ---------------------------------------------------------------------------------------------
# Helper functions: @torch.fx.wrap


def module_function_names(source: str) -> list[str]:
    """Names of the functions defined at module scope (candidates for ``@torch.fx.wrap``)."""
    module = parse_source(source)
    return [s.name.value for s in module.body if isinstance(s, cst.FunctionDef)]


def wrap_function(source: str, function: str) -> str:
    """Decorate the module-level ``def function`` with ``@torch.fx.wrap``."""
    module = parse_source(source)
    target = next(
        (s for s in module.body if isinstance(s, cst.FunctionDef) and s.name.value == function),
        None,
    )
    if target is None:
        return source
    for decorator in target.decorators:
        name = dotted_name(decorator.decorator)
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
    module = parse_source(source)
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
                    annotation = dotted_name(param.annotation.annotation)
                    if annotation in _PLAIN_ANNOTATIONS:
                        found[param.name.value] = _PLAIN_ANNOTATIONS[annotation]
            return found
    return {}
