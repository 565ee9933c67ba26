"""The benchmarks' edits of a model file: ``around`` leaves every class as it is (a comment line
above, a module constant below: per-class reuse answers every class from its kept verdicts);
``class`` changes the first class's body (a class attribute added as its first statement,
after a docstring), as a save of an edited class does, so that it is traced again."""

from __future__ import annotations

import ast

EDITS = ("around", "class")


def edited(text: str, edit: int, how: str = "class") -> str:
    """``text`` after edit number ``edit`` of the kind ``how`` (``EDITS``)."""
    if how == "around":
        return f"# edit {edit}\n{text}\n_EDIT_NUMBER = {edit}\n"
    first = next(node for node in ast.parse(text).body if isinstance(node, ast.ClassDef))
    body = first.body
    documented = isinstance(body[0], ast.Expr) and isinstance(
        getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str)
    after = body[0] if documented and len(body) > 1 else None
    lines = text.splitlines(keepends=True)
    # Before the first statement that is not the docstring, with its indentation.
    statement = body[1] if after is not None else body[0]
    indent = " " * statement.col_offset
    at = statement.lineno - 1
    decorators = getattr(statement, "decorator_list", [])
    if decorators:
        at = min(decorator.lineno for decorator in decorators) - 1
    return "".join([*lines[:at], f"{indent}_edit_number = {edit}\n", *lines[at:]])
