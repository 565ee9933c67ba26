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
import hashlib
import re
import threading

from fxcore.workspace.notebook.cells import (
    CellPosition,
    DroppedCode,
    NotebookCells,
    NotebookModule,
    split_cell_lines,
)
from fxcore.workspace.parsing import ast_of

#: Builtins whose call with kept arguments builds a value and does nothing else.
_VALUE_BUILTINS = frozenset({"dict", "list", "tuple", "set", "frozenset", "range", "int",
                             "float", "complex", "str", "bytes", "bool", "slice"})
#: Functions of the standard library that only build a value from their arguments.
_VALUE_FUNCTIONS = frozenset({"partial", "functools.partial", "namedtuple",
                              "collections.namedtuple", "OrderedDict",
                              "collections.OrderedDict"})
#: IPython syntax that is not Python, by line: ``%magic``, ``!shell``, ``?name``, ``name?``,
#: and ``x = %magic`` / ``x = !shell``.
_IPYTHON_LINE = re.compile(r"^\s*([%!?]|[\w.]+\?\??\s*$|[\w.,\s()\[\]]+=\s*[%!])")


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
        tree = ast_of(text, "<cell>", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
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
