"""A Jupyter notebook as one Python module: its code cells in order, keeping only what defines
things, with a map between the module's lines and the cells' lines.

What is kept (judged with ``ast`` in the host; nothing is run here): imports, ``def``,
``class``, ``torch.fx.wrap(...)`` calls, ``try`` blocks made only of those (``try: import apex
except ImportError: apex = None``), and module-level assignments whose value is a literal, a
lambda, or a call of a class (a notebook class, a CapWords name of an import such as
``nn.Linear`` or ``BertConfig``, ``dict``, ``functools.partial``) whose arguments are kept
values in turn (constants, ``nn.Module`` configs). Everything else is left out, so checking a
notebook never trains a model, reads data or runs a shell command: data loading, training
loops, ``print``, calls of functions, IPython's ``!`` shell and ``%`` line magics, ``%%`` cell
magics, top-level ``await``, and cells that do not parse.

The notebook's module then goes through the same job pipeline as a ``.py`` file: the job's
path is the ``.ipynb`` file, ``fxcore.workspace.paths.source_text`` of it is the module's text (an
editor's overlay of it is the notebook's JSON, ``NotebookCells.to_json``), and every location
in results is a line of that text, which ``NotebookModule.to_cell_position`` maps to a cell.
"""

from __future__ import annotations

import ast
import builtins
import collections
import difflib
import hashlib
import json
import re
import threading
from dataclasses import dataclass, field

from fxcore.model.results import CODES, FileResult

NOTEBOOK_SUFFIX = ".ipynb"
#: Notebooks hold their outputs (plots as base64): they may be far larger than a source file.
MAX_NOTEBOOK_BYTES = 64 * 1024 * 1024

#: Builtins whose call with kept arguments builds a value and does nothing else.
_VALUE_BUILTINS = frozenset({"dict", "list", "tuple", "set", "frozenset", "range", "int",
                             "float", "complex", "str", "bytes", "bool", "slice"})
#: Functions of the standard library that only build a value from their arguments.
_VALUE_FUNCTIONS = frozenset({"partial", "functools.partial", "namedtuple",
                              "collections.namedtuple", "OrderedDict",
                              "collections.OrderedDict"})
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
#: IPython syntax that is not Python, by line: ``%magic``, ``!shell``, ``?name``, ``name?``,
#: and ``x = %magic`` / ``x = !shell``.
_IPYTHON_LINE = re.compile(r"^\s*([%!?]|[\w.]+\?\??\s*$|[\w.,\s()\[\]]+=\s*[%!])")


def is_notebook(path: str) -> bool:
    return path.lower().endswith(NOTEBOOK_SUFFIX)


@dataclass(frozen=True)
class NotebookCell:
    """One cell: its text, its kind (``code``, ``markdown``, ``raw``) and its nbformat id."""

    source: str
    kind: str = "code"
    id: str | None = None


@dataclass(frozen=True)
class NotebookCells:
    """A notebook's cells in order, as read from its JSON or sent by an editor."""

    cells: tuple[NotebookCell, ...]
    #: The notebook's language is Python (``metadata.language_info.name`` or the kernel's
    #: language, when it says): another language's code cells are not read.
    python: bool = True

    @classmethod
    def from_json(cls, text: str) -> NotebookCells:
        """Raises ``ValueError`` when ``text`` is not a notebook's JSON."""
        data = json.loads(text)
        if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
            raise ValueError("not a Jupyter notebook: no list of cells")
        cells = []
        for raw in data["cells"]:
            if not isinstance(raw, dict):
                raise ValueError("not a Jupyter notebook: a cell is not an object")
            source = raw.get("source", "")
            if isinstance(source, list):
                source = "".join(part for part in source if isinstance(part, str))
            cell_id = raw.get("id")
            cells.append(NotebookCell(source if isinstance(source, str) else "",
                                      str(raw.get("cell_type", "code")),
                                      cell_id if isinstance(cell_id, str) else None))
        metadata = data.get("metadata")
        language = None
        if isinstance(metadata, dict):
            info, kernel = metadata.get("language_info"), metadata.get("kernelspec")
            if isinstance(info, dict) and isinstance(info.get("name"), str):
                language = info["name"]
            elif isinstance(kernel, dict) and isinstance(kernel.get("language"), str):
                language = kernel["language"]
        return cls(tuple(cells), python=language is None or language.lower() == "python")

    def to_json(self) -> str:
        """Minimal notebook JSON of these cells: what an editor puts in a job's overlays for
        the notebook's path (outputs and metadata do not matter to checking)."""
        return json.dumps({
            "cells": [{"cell_type": cell.kind, "source": cell.source,
                       **({"id": cell.id} if cell.id is not None else {})}
                      for cell in self.cells],
            "metadata": {} if self.python else {"language_info": {"name": "other"}},
            "nbformat": 4, "nbformat_minor": 5})


@dataclass(frozen=True)
class CellPosition:
    """A place in a notebook: ``cell`` is the 0-based index into all its cells (markdown
    included, as the JSON's ``cells`` and LSP's ``NotebookDocument.cells`` count), ``line``
    and ``column`` 1-based in that cell's text. Shown as ``cell {cell + 1}`` (ruff's way)."""

    cell: int
    line: int
    column: int

    @property
    def cell_number(self) -> int:
        return self.cell + 1


@dataclass(frozen=True)
class DroppedCode:
    """A statement (or IPython line, or cell) left out of the module, and why."""

    #: Where it starts (column 1).
    start: CellPosition
    end_line: int
    #: ``runs code``, ``magic``, ``shell``, ``cell magic``, ``syntax error``.
    reason: str
    #: The names it would have bound at module level.
    names: tuple[str, ...] = ()
    #: Its first line, as written.
    text: str = ""


@dataclass
class NotebookModule:
    """The module built from a notebook's code cells, and the maps between its lines and the
    cells'. Lines of the module are the kept cells' lines as written (an IPython line inside a
    kept ``def`` reads ``pass``), so columns are the same in both."""

    text: str
    #: ``line_map[module_line - 1]`` is (cell index, cell line), both as ``CellPosition``.
    line_map: list[tuple[int, int]] = field(default_factory=list)
    dropped: list[DroppedCode] = field(default_factory=list)
    cells: NotebookCells | None = None

    def __post_init__(self) -> None:
        self._module_lines = {place: line for line, place in enumerate(self.line_map, 1)}

    def to_cell_position(self, line: int, column: int) -> CellPosition | None:
        """The cell place of a module place; None for a line outside the module. The line
        after the module's last maps to the line after the last kept line (an edit that
        appends goes there)."""
        if 1 <= line <= len(self.line_map):
            cell, cell_line = self.line_map[line - 1]
            return CellPosition(cell, cell_line, column)
        if line == len(self.line_map) + 1 and self.line_map:
            cell, cell_line = self.line_map[-1]
            return CellPosition(cell, cell_line + 1, column)
        return None

    def to_module_position(self, cell: int, line: int, column: int) -> tuple[int, int] | None:
        """The module (line, column) of a cell place; None when that line was left out."""
        found = self._module_lines.get((cell, line))
        return None if found is None else (found, column)

    def dropped_definition(self, name: str) -> DroppedCode | None:
        """The last left-out code that binds ``name``, if any."""
        return next((code for code in reversed(self.dropped) if name in code.names), None)

    def describe_dropped(self, name: str) -> str | None:
        """Why ``name`` is not defined in the module, for a message: which cell defines it and
        why fx-lsp left that code out; None when no left-out code defines it."""
        code = self.dropped_definition(name)
        if code is None:
            return None
        why = {
            "runs code": "it runs code (only imports, def, class and assignments of literals "
                         "or of calls of classes are kept)",
            "syntax error": "that cell does not parse",
            "magic": "it is an IPython magic",
            "shell": "it is a shell command",
            "cell magic": "the cell is a %% cell magic",
        }.get(code.reason, code.reason)
        return (f"`{name}` is defined in cell {code.start.cell_number}, line {code.start.line} "
                f"(`{code.text.strip()}`), which fx-lsp leaves out of the notebook's module: "
                f"{why}. Checking a notebook never runs its data loading or training; define "
                f"`{name}` with a literal (or a call of a class) in a cell, or pass it in.")


_NAME_ERROR = re.compile(r"NameError: name '([A-Za-z_][A-Za-z0-9_]*)' is not defined")


def split_cell_lines(text: str) -> list[str]:
    """A cell's lines as LSP counts them."""
    return _LINE_BREAK.split(text)


def unreadable_notebook_reason(text: str) -> str | None:
    """Why a notebook's JSON text cannot be read as a notebook (None when it can)."""
    try:
        NotebookCells.from_json(text)
    except (ValueError, RecursionError) as error:
        return str(error)
    return None


#: The modules of the last notebooks read, by the SHA-256 of their JSON: one text has many
#: readers in a run (the job, the cache, the report), and a notebook's outputs can make its
#: text large, so the texts themselves are not kept.
_MODULES_READ: collections.OrderedDict[str, NotebookModule | None] = collections.OrderedDict()
_MODULES_KEPT = 32
_MODULES_LOCK = threading.Lock()


def notebook_module_of_json(text: str) -> NotebookModule | None:
    """The module of a notebook's JSON text; None when it is not a notebook's JSON."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    with _MODULES_LOCK:  # the server reads from several threads
        if digest in _MODULES_READ:
            _MODULES_READ.move_to_end(digest)
            return _MODULES_READ[digest]
    try:
        module: NotebookModule | None = build_notebook_module(NotebookCells.from_json(text))
    except (ValueError, RecursionError):
        module = None
    with _MODULES_LOCK:
        _MODULES_READ[digest] = module
        while len(_MODULES_READ) > _MODULES_KEPT:
            _MODULES_READ.popitem(last=False)
    return module


def build_notebook_module(cells: NotebookCells) -> NotebookModule:
    """The module of ``cells``: what defines things, in cell order."""
    builder = _ModuleBuilder()
    if cells.python:
        for index, cell in enumerate(cells.cells):
            if cell.kind == "code":
                builder.add_cell(index, cell.source)
    return NotebookModule(text="".join(line + "\n" for line in builder.lines),
                          line_map=builder.line_map, dropped=builder.dropped, cells=cells)


class _ModuleBuilder:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.line_map: list[tuple[int, int]] = []
        self.dropped: list[DroppedCode] = []
        #: Names bound by kept code so far; and which of them name kept classes.
        self.defined: set[str] = set()
        self.classes: set[str] = set()

    def add_cell(self, index: int, source: str) -> None:
        lines = split_cell_lines(source)
        first = lines[0].strip() if lines else ""
        if first.startswith("%%"):
            self.dropped.append(DroppedCode(CellPosition(index, 1, 1), len(lines), "cell magic",
                                            _bound_names_in_text(lines[1:]), lines[0]))
            return
        tree = _parse_cell("\n".join(lines))
        if tree is None:
            replaced, numbers = _without_ipython(lines)
            for number in numbers:
                line = lines[number - 1]
                reason = "shell" if "!" in line.split("=")[-1].lstrip()[:1] else "magic"
                self.dropped.append(DroppedCode(CellPosition(index, number, 1), number,
                                                reason, _assigned_names(line), line))
            tree = _parse_cell("\n".join(replaced)) if numbers else None
            if tree is None:
                self.dropped.append(DroppedCode(CellPosition(index, 1, 1), len(lines),
                                                "syntax error", _bound_names_in_text(lines),
                                                lines[0] if lines else ""))
                return
            lines = replaced
        # Judged in order, each against what the statements before it bound. A line holding
        # parts of several statements (``import os; run()``) is kept only when every
        # statement on it is: such statements are judged as one group.
        for group in _line_groups(tree.body):
            if all(isinstance(statement, ast.Pass) for statement in group):
                continue  # nothing to keep or to tell (an IPython line reads `pass` here)
            before = set(self.defined), set(self.classes)
            if all(self._keep_and_bind(statement) for statement in group):
                start = _first_line(group[0])
                for number in range(start, _last_line(group[-1]) + 1):
                    self.lines.append(lines[number - 1])
                    self.line_map.append((index, number))
                continue
            self.defined, self.classes = before
            for statement in group:
                start = _first_line(statement)
                self.dropped.append(DroppedCode(
                    CellPosition(index, start, 1), _last_line(statement), "runs code",
                    tuple(sorted(_bound_names(statement))), lines[start - 1]))

    # -- what is kept ------------------------------------------------------------------------

    def _keeps(self, statement: ast.stmt) -> bool:
        if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
            return not self.lines  # only valid as the module's first statement
        if isinstance(statement, (ast.Import, ast.ImportFrom, ast.FunctionDef,
                                  ast.AsyncFunctionDef, ast.ClassDef, ast.Pass)):
            return True
        if isinstance(statement, ast.Expr):
            return self._is_wrap_call(statement.value) or (
                isinstance(statement.value, ast.Constant) and isinstance(statement.value.value,
                                                                         str))
        if isinstance(statement, ast.Assign):
            return all(_is_name_target(target) for target in statement.targets) \
                and self._is_value(statement.value)
        if isinstance(statement, ast.AnnAssign):
            return isinstance(statement.target, ast.Name) and (
                statement.value is None or self._is_value(statement.value))
        if isinstance(statement, ast.Try):
            # Judged as a whole: the names its handlers bind count once the body's are bound.
            before = set(self.defined), set(self.classes)
            parts = [*statement.body, *(s for h in statement.handlers for s in h.body),
                     *statement.orelse, *statement.finalbody]
            keeps = all(isinstance(h.type, (ast.Name, ast.Attribute, ast.Tuple, type(None)))
                        for h in statement.handlers) and all(self._keep_and_bind(s)
                                                             for s in parts)
            self.defined, self.classes = before
            return keeps
        return False

    def _keep_and_bind(self, statement: ast.stmt) -> bool:
        if self._keeps(statement):
            self._bind(statement)
            return True
        return False

    def _bind(self, statement: ast.stmt) -> None:
        self.defined |= _bound_names(statement)
        if isinstance(statement, ast.ClassDef):
            self.classes.add(statement.name)
        elif isinstance(statement, ast.Try):
            for part in [*statement.body, *(s for h in statement.handlers for s in h.body),
                         *statement.orelse, *statement.finalbody]:
                self._bind(part)

    @staticmethod
    def _is_wrap_call(value: ast.expr) -> bool:
        """``torch.fx.wrap("len")``, ``fx.wrap(name)``, ``wrap("f")``: what fx-lsp's own
        fixes add next to the imports."""
        if not isinstance(value, ast.Call):
            return False
        name = _dotted(value.func)
        return name is not None and (name == "wrap" or name.endswith(".wrap")) \
            and all(isinstance(arg, (ast.Constant, ast.Name)) for arg in value.args)

    def _is_value(self, value: ast.expr) -> bool:
        """A value that building runs no code of the notebook's but classes' constructors."""
        if isinstance(value, ast.Constant):
            return True
        if isinstance(value, ast.Lambda):
            return True  # defines, runs nothing
        if isinstance(value, (ast.Tuple, ast.List, ast.Set)):
            return all(self._is_value(element) for element in value.elts)
        if isinstance(value, ast.Starred):
            return self._is_value(value.value)
        if isinstance(value, ast.Dict):
            return all(key is None or self._is_value(key) for key in value.keys) \
                and all(self._is_value(item) for item in value.values)
        if isinstance(value, ast.UnaryOp):
            return self._is_value(value.operand)
        if isinstance(value, ast.BinOp):
            return self._is_value(value.left) and self._is_value(value.right)
        if isinstance(value, ast.JoinedStr):
            return all(isinstance(part, ast.Constant) or (
                isinstance(part, ast.FormattedValue) and self._is_value(part.value))
                for part in value.values)
        if isinstance(value, ast.Name):
            return value.id in self.defined or value.id in _VALUE_BUILTINS \
                or (value.id in dir(builtins) and value.id[:1].isupper())
        if isinstance(value, ast.Attribute):
            return self._is_value(value.value)
        if isinstance(value, ast.Subscript):
            return self._is_value(value.value) and self._is_value(value.slice)
        if isinstance(value, ast.Slice):
            return all(part is None or self._is_value(part)
                       for part in (value.lower, value.upper, value.step))
        if isinstance(value, ast.Call):
            return self._is_class_call(value.func) \
                and all(self._is_value(arg) for arg in value.args) \
                and all(self._is_value(keyword.value) for keyword in value.keywords)
        return False

    def _is_class_call(self, function: ast.expr) -> bool:
        name = _dotted(function)
        if name is None:
            return False
        root, _, _ = name.partition(".")
        last = name.rsplit(".", 1)[-1]
        if name in _VALUE_FUNCTIONS:
            return root in self.defined  # imported: `from functools import partial`
        if "." not in name:
            return name in self.classes or name in _VALUE_BUILTINS \
                or (name in self.defined and _is_cap_words(name))
        return root in self.defined and _is_cap_words(last)


def _is_cap_words(name: str) -> bool:
    """``Linear``, ``BertConfig``: a class by PEP 8's naming (``CONSTANT`` is not)."""
    return name[:1].isupper() and not name.isupper()


def _dotted(node: ast.expr) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def _is_name_target(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return True
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_is_name_target(element) for element in target.elts)
    return False


def _without_ipython(lines: list[str]) -> tuple[list[str], list[int]]:
    """The lines with each IPython line (``%magic``, ``!shell``) read as ``pass`` at its
    indentation, and the numbers of those lines."""
    replaced = list(lines)
    numbers = []
    for number, line in enumerate(lines, 1):
        if _IPYTHON_LINE.match(line):
            replaced[number - 1] = f"{line[:len(line) - len(line.lstrip())]}pass"
            numbers.append(number)
    return replaced, numbers


def cell_python(source: str) -> str | None:
    """A code cell's text as Python, to read (never to run): its IPython lines read as
    ``pass``, line numbers kept; None for a ``%%`` cell magic or a cell that does not parse."""
    lines = split_cell_lines(source)
    if lines[0].strip().startswith("%%"):
        return None
    if _parse_cell(source) is not None:
        return source
    replaced, numbers = _without_ipython(lines)
    text = "\n".join(replaced)
    return text if numbers and _parse_cell(text) is not None else None


def _line_groups(statements: list[ast.stmt]) -> list[list[ast.stmt]]:
    """The statements in order, those that share a line grouped."""
    groups: list[list[ast.stmt]] = []
    for statement in statements:
        if groups and _first_line(statement) <= _last_line(groups[-1][-1]):
            groups[-1].append(statement)
        else:
            groups.append([statement])
    return groups


def _last_line(statement: ast.stmt) -> int:
    return statement.end_lineno or statement.lineno


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(decorator.lineno for decorator in decorators)])


def _parse_cell(text: str) -> ast.Module | None:
    """A cell's tree (top-level ``await`` allowed, as IPython allows it); None when it does
    not parse."""
    try:
        tree = compile(text, "<cell>", "exec",
                       flags=ast.PyCF_ONLY_AST | ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
                       dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    assert isinstance(tree, ast.Module)
    return tree


def _bound_names(statement: ast.stmt) -> set[str]:
    """The module-level names a statement binds (not those of the functions and classes it
    defines, nor of comprehensions)."""
    names: set[str] = set()
    pending: list[ast.AST] = [statement]
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            pending.extend(node.decorator_list)
            continue
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)):
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((alias.asname or alias.name).split(".")[0] for alias in node.names
                         if alias.name != "*")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        pending.extend(ast.iter_child_nodes(node))
    return names


def _assigned_names(line: str) -> tuple[str, ...]:
    """``files = !ls`` binds ``files``."""
    target, equals, _ = line.partition("=")
    if not equals:
        return ()
    return tuple(name for name in re.split(r"[\s,()\[\]]+", target) if name.isidentifier())


def _bound_names_in_text(lines: list[str]) -> tuple[str, ...]:
    """The names a cell that is not kept as Python binds, as far as its text parses."""
    tree = _parse_cell("\n".join(lines))
    if tree is None:
        return ()
    return tuple(sorted({name for statement in tree.body for name in _bound_names(statement)}))


def explain_dropped_names(result: FileResult, module: NotebookModule) -> None:
    """Make each failure of a notebook's result that is a ``NameError`` of a name only
    left-out code defines (data loaded in a later cell, a constant computed by a call), or
    an assignment that raised on import (``result.failed_assignments``), an FX100 that names
    the cell defining it and why it is missing: the class needs the notebook to run code
    that checking never runs, whatever its arguments."""
    failed = {name: assignment for assignment in result.failed_assignments
              for name in assignment.names}

    def explain(name: str) -> str | None:
        assignment = failed.get(name)
        place = module.to_cell_position(assignment.line, 1) if assignment else None
        if assignment is None or place is None:
            return module.describe_dropped(name)
        text = module.text.splitlines()[assignment.line - 1].strip()
        return (f"`{name}` is assigned in cell {place.cell_number}, line {place.line} "
                f"(`{text}`), which raised {assignment.error} when fx-lsp loaded the "
                "notebook's definitions: it was skipped, as a cell that fails defines "
                f"nothing. Define `{name}` with a value that needs no data, or pass it in.")

    for failure in result.errors:
        match = _NAME_ERROR.search(failure.message)
        explanation = explain(match.group(1)) if match else None
        if explanation is not None:
            failure.message = f"{failure.message} {explanation}"
    for found in [*result.modules, *result.derived_modules]:
        for failure in found.failures:
            match = _NAME_ERROR.search(failure.message)
            explanation = explain(match.group(1)) if match else None
            if match is None or explanation is None:
                continue
            failure.code, failure.kind = CODES["import"], "import"
            failure.message = f"{found.class_name} needs a name the notebook's checked " \
                f"definitions lack ({match.group(0)}): {explanation}"
            if found.status == "not-traced":
                found.status = "failed"
                found.reason = failure.message


# -- writing an edit of the module back into the cells ---------------------------------------


class NotebookEditError(ValueError):
    """An edit of a notebook's module that cannot be put into its cells; the message says
    why."""


def edit_notebook_json(raw: str, new_module_text: str) -> str:
    """The notebook JSON ``raw`` with the cells changed as ``new_module_text`` changes its
    module (``build_notebook_module``): every changed line goes into the cell it came from,
    inserted lines after the line before them (a ``torch.fx.wrap`` after the imports goes into
    the imports cell). Only the changed cells' ``source`` values are rewritten, in the shape
    they had (a list of lines or one string, laid out as before); outputs, metadata and the
    rest of the text stay byte for byte."""
    module = notebook_module_of_json(raw)
    if module is None or module.cells is None:
        raise NotebookEditError("the file is not a notebook's JSON")
    old_lines = module.text.splitlines()
    new_lines = new_module_text.splitlines()
    statement_starts = _statement_starts(new_module_text)
    cell_lines = {index: split_cell_lines(cell.source)
                  for index, cell in enumerate(module.cells.cells)}
    # (cell, first cell line replaced (1-based), how many replaced, the new lines)
    changes: list[tuple[int, int, int, list[str]]] = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        inserted = new_lines[j1:j2]
        if i1 == i2:  # an insertion: after the line before it, else before the first line
            if 0 < i1 < len(old_lines) and module.line_map[i1 - 1][0] != module.line_map[i1][0] \
                    and statement_starts.get(j2 + 1, j2 + 1) <= j1 + 1:
                # Lines that open the statement after them (a decorator on a ``def`` that
                # starts a cell) go into that statement's cell, before it.
                cell, line = module.line_map[i1]
                changes.append((cell, line, 0, inserted))
            elif i1 > 0:
                cell, line = module.line_map[i1 - 1]
                changes.append((cell, line + 1, 0, inserted))
            elif module.line_map:
                cell, line = module.line_map[0]
                changes.append((cell, line, 0, inserted))
            else:
                raise NotebookEditError("the notebook has no code that is checked")
            continue
        places = module.line_map[i1:i2]
        cell, first = places[0]
        if any(place != (cell, first + offset) for offset, place in enumerate(places)):
            raise NotebookEditError(
                f"an edit spans lines that are apart in the notebook (cell {cell + 1})")
        if any(cell_lines[cell][line - 1] != old_lines[module_line - 1]
               for module_line, (_, line) in enumerate(places, i1 + 1)):
            raise NotebookEditError(f"an edit changes an IPython line of cell {cell + 1}")
        changes.append((cell, first, len(places), inserted))
    if not changes:
        return raw
    for cell, first, count, inserted in sorted(changes, key=lambda change: change[:2],
                                               reverse=True):
        cell_lines[cell][first - 1:first - 1 + count] = inserted
    changed = {cell for cell, *_ in changes}
    return _replace_sources(raw, {cell: "\n".join(cell_lines[cell]) for cell in changed})


def _statement_starts(text: str) -> dict[int, int]:
    """For each top-level statement of ``text``, the line of its ``def``/``class`` keyword (or
    its first line) -> the first line of the whole statement, its decorators included; empty
    when ``text`` does not parse."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return {}
    starts: dict[int, int] = {}
    for statement in tree.body:
        decorators = getattr(statement, "decorator_list", [])
        starts[statement.lineno] = min([statement.lineno]
                                       + [decorator.lineno for decorator in decorators])
    return starts


def _replace_sources(raw: str, sources: dict[int, str]) -> str:
    """``raw`` with ``cells[index].source`` of each index replaced by the text given."""
    spans = _source_spans(raw)
    ensure_ascii = not re.search(r"[^\x00-\x7f]", raw)
    for index in sorted(sources, reverse=True):
        if index not in spans:
            raise NotebookEditError(f"cell {index + 1} has no source to edit")
        start, end = spans[index]
        raw = raw[:start] + _source_json(raw[start:end], sources[index], ensure_ascii) \
            + raw[end:]
    return raw


def _source_json(old: str, source: str, ensure_ascii: bool) -> str:
    """``source`` as a cell's ``source`` value laid out as ``old`` was: one string, or a list
    of lines (each but the last ending with a newline, as nbformat writes them) on their own
    lines indented as before, or on one line."""
    if not old.startswith("["):
        return json.dumps(source, ensure_ascii=ensure_ascii)
    lines = source.splitlines(keepends=True)
    items = [json.dumps(line, ensure_ascii=ensure_ascii) for line in lines]
    layout = re.match(r"\[(\s*)", old)
    opening = layout.group(1) if layout else ""
    if "\n" not in opening:
        return "[" + ", ".join(items) + "]"
    closing = re.search(r"(\s*)\]$", old)
    return "[" + opening + ("," + opening).join(items) + (closing.group(1) if closing else "") \
        + "]"


def _source_spans(raw: str) -> dict[int, tuple[int, int]]:
    """Where each cell's ``source`` value is in the notebook JSON ``raw``: index -> (start,
    end) character offsets, found by walking the JSON with the standard decoder."""
    decoder = json.JSONDecoder()
    whitespace = re.compile(r"\s*")

    def skip(position: int) -> int:
        match = whitespace.match(raw, position)
        return match.end() if match else position

    def members(position: int) -> list[tuple[str, int, int]]:
        """The (key, value start, value end) of the object starting at ``position``."""
        if raw[position] != "{":
            raise NotebookEditError("the notebook's JSON is not laid out as expected")
        found = []
        position = skip(position + 1)
        if raw[position] == "}":
            return found
        while True:
            key, position = decoder.raw_decode(raw, position)
            position = skip(skip(position) + 1)  # the colon
            _, end = decoder.raw_decode(raw, position)
            found.append((key, position, end))
            position = skip(end)
            if raw[position] == "}":
                return found
            position = skip(position + 1)  # the comma

    spans: dict[int, tuple[int, int]] = {}
    for key, start, _ in members(skip(0)):
        if key != "cells":
            continue
        position = skip(start + 1)
        index = 0
        while raw[position] != "]":
            cell_end = decoder.raw_decode(raw, position)[1]
            for cell_key, value_start, value_end in members(position):
                if cell_key == "source":
                    spans[index] = (value_start, value_end)
            index += 1
            position = skip(cell_end)
            if raw[position] == ",":
                position = skip(position + 1)
    return spans
