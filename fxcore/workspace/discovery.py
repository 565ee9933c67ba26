"""Where classes are in a source file, found with ``ast`` (runs no user code); a file's text
and parse, read and parsed once per job (``ParsedFile``)."""

from __future__ import annotations

import ast
import functools
import re
from dataclasses import dataclass

from fxcore.model.results import Range
from fxcore.workspace.parsing import parse_module
from fxcore.workspace.paths import source_text


@dataclass
class ClassSource:
    """Source ranges of one top-level class: its name, its ``def forward``, and the
    ``self.<name> = ...`` assignments in its methods (where submodules are made)."""

    name: str
    name_span: Range
    forward: Range | None
    attribute_spans: dict[str, Range]
    #: Its ``forward`` only raises ``NotImplementedError`` (after a docstring, if any): a
    #: base whose subclasses implement it, with nothing to trace.
    forward_not_implemented: bool = False


def _name_span(lines: list[str], line: int, keyword: str, name: str) -> Range:
    """The range of ``name`` after ``keyword`` on a line (character columns)."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    match = re.search(rf"\b{keyword}\s+({re.escape(name)})\b", text)
    if match is None:
        return Range(line, 1, line, len(text.rstrip("\r\n")) + 1)
    return Range(line, match.start(1) + 1, line, match.end(1) + 1)


def char_span(lines: list[str], node: ast.expr) -> Range:
    def char(line: int, byte_column: int) -> int:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return len(text.encode("utf-8")[:byte_column].decode("utf-8", errors="replace")) + 1

    end_line = node.end_lineno or node.lineno
    return Range(node.lineno, char(node.lineno, node.col_offset), end_line,
                char(end_line, node.end_col_offset or 0))


def top_level_classes(text: str) -> dict[str, ClassSource]:
    """Top-level classes of a module, by name. Raises ``SyntaxError`` (also for source too
    complex for Python's parser: ``fxcore.workspace.parsing``)."""
    return _classes(parse_module(text), text)


def _classes(tree: ast.Module, text: str) -> dict[str, ClassSource]:
    lines = text.splitlines()
    classes: dict[str, ClassSource] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        forward = None
        not_implemented = False
        attributes: dict[str, Range] = {}
        for item in node.body:
            if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            if item.name == "forward":
                forward = _name_span(lines, item.lineno, "def", "forward")
                not_implemented = _only_raises_not_implemented(item.body)
            for statement in ast.walk(item):
                targets: list[ast.expr] = []
                if isinstance(statement, ast.Assign):
                    targets = statement.targets
                elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
                    targets = [statement.target]
                for target in targets:
                    if (
                        isinstance(target, ast.Attribute)
                        and isinstance(target.value, ast.Name)
                        and target.value.id == "self"
                        and target.attr not in attributes
                    ):
                        attributes[target.attr] = char_span(lines, target)
            # `self.register_parameter("w", ...)` / `register_buffer` / `add_module`
            for call in ast.walk(item):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr in {"register_parameter", "register_buffer", "add_module"}
                    and call.args
                    and isinstance(call.args[0], ast.Constant)
                    and isinstance(call.args[0].value, str)
                ):
                    attributes.setdefault(call.args[0].value, char_span(lines, call))
        classes[node.name] = ClassSource(
            name=node.name,
            name_span=_name_span(lines, node.lineno, "class", node.name),
            forward=forward,
            attribute_spans=attributes,
            forward_not_implemented=not_implemented,
        )
    return classes


def _only_raises_not_implemented(body: list[ast.stmt]) -> bool:
    """``raise NotImplementedError`` or ``raise NotImplementedError(...)``, after a docstring
    if any, is the whole body."""
    if len(body) > 1 and isinstance(body[0], ast.Expr) \
            and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.Raise):
        return False
    raised = body[0].exc
    if isinstance(raised, ast.Call):
        raised = raised.func
    return isinstance(raised, ast.Name) and raised.id == "NotImplementedError"


class ParsedFile:
    """One file's text (its unsaved buffer if any, else the file read through
    ``fxcore.workspace.file_access``) and its parse: what a job reads and parses of it, once."""

    def __init__(self, path: str, text: str | None) -> None:
        self.path = path
        #: None when the file cannot be read (``fxcore.workspace.paths.source_text``).
        self.text = text
        #: Why the text does not parse (None when it parses or was not read).
        self.syntax_error: SyntaxError | None = None
        self.tree: ast.Module | None = None
        if text is not None:
            try:
                self.tree = parse_module(text)
            except SyntaxError as error:
                self.syntax_error = error

    @functools.cached_property
    def classes(self) -> dict[str, ClassSource]:
        """``top_level_classes`` of the text; empty when it does not parse."""
        if self.tree is None or self.text is None:
            return {}
        return _classes(self.tree, self.text)


def parsed_file(path: str, overlays: dict[str, str]) -> ParsedFile:
    """The file at ``path`` (absolute), read and parsed."""
    return ParsedFile(path, source_text(path, overlays))


def has_module_level_class(tree: ast.Module) -> bool:
    """True when a ``class`` statement runs on import and binds a module attribute, the only
    classes tracing can reach: in the module's body or the blocks of its top-level ``if``,
    ``try``, ``with``, ``for``, ``while`` and ``match`` statements; not in a function's or a
    class's body, nor under ``if __name__ == "__main__":`` (not run on import). A script whose
    classes are all inside functions (``def main(): class Net(nn.Module): ...``) has none."""
    pending: list[ast.stmt] = list(tree.body)
    while pending:
        statement = pending.pop()
        if isinstance(statement, ast.ClassDef):
            return True
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(statement, ast.If) and is_main_guard(statement.test):
            pending += statement.orelse
            continue
        for child in ast.iter_child_nodes(statement):
            if isinstance(child, (ast.excepthandler, ast.match_case)):
                pending += child.body
            elif isinstance(child, ast.stmt):
                pending.append(child)
    return False


def is_main_guard(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides) and any(
        isinstance(side, ast.Constant) and side.value == "__main__" for side in sides)
