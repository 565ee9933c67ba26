"""From Python frames to precise source ranges in the user's code.

Python 3.11+ records, for every bytecode instruction, the source range it came from
(``code.co_positions()``); tracebacks use the same table. Columns there are UTF-8 byte
offsets, so they are converted to characters here. Some instructions carry the range of a
whole statement (``GET_ITER`` of a ``for`` loop spans the loop, a comprehension spans the
comprehension); the AST narrows those to the expression a user would fix.
"""

from __future__ import annotations

import ast
import io
import linecache
import os
import sys
import sysconfig
from collections.abc import Iterable
from dataclasses import dataclass
from types import CodeType, FrameType, TracebackType

from fxcore.model.results import Frame
from fxcore.workspace.parsing import parse_module
from fxcore.workspace.paths import is_workspace_file

#: fx-lsp's own package: its frames are plumbing, never the user's.
_FXCORE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_STDLIB_DIRS = tuple(
    os.path.abspath(sysconfig.get_paths()[key]) + os.sep for key in ("stdlib", "platstdlib")
)


def _torch_dir() -> str | None:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return None
    return os.path.dirname(os.path.abspath(torch.__file__)) + os.sep


_TORCH_DIR = _torch_dir()
#: Public parts of torch that are tracing machinery, not calls a user makes: torch.fx and
#: torch.export (the frames between the capture call and the user's forward) and
#: ``nn.Module.__call__``'s and ``__torch_function__``'s plumbing.
_TORCH_MACHINERY = ("fx/", "export/", "nn/modules/module.py", "overrides.py")


def _is_torch_plumbing(path: str) -> bool:
    """torch's machinery, and every private module of torch (a path part that starts with
    ``_``: dynamo, fake tensors, decompositions, meta kernels, ``torch/__init__.py``'s
    ``_check``...). What stays is torch's public API the user's code called, such as
    ``nn.Linear.forward`` or ``torch.functional``."""
    if _TORCH_DIR is None or not path.startswith(_TORCH_DIR):
        return False
    relative = path[len(_TORCH_DIR):].replace(os.sep, "/")
    return relative.startswith(_TORCH_MACHINERY) or any(
        part.startswith("_") for part in relative.split("/"))


def is_plumbing(filename: str) -> bool:
    """Frames hidden from the call chain: torch's machinery and private modules, the stdlib
    and fxcore itself. Third-party libraries (site-packages) stay visible."""
    if filename.startswith("<"):
        return True
    path = os.path.abspath(filename)
    if path.startswith(_FXCORE_DIR + os.sep):
        return True
    if _is_torch_plumbing(path):
        return True
    return path.startswith(_STDLIB_DIRS) and "site-packages" not in path


@dataclass
class RawPosition:
    """A frame's position as Python reports it: byte columns, 0-based; ``None`` if unknown."""

    filename: str
    function: str
    line: int
    end_line: int | None
    column: int | None
    end_column: int | None


def instruction_position(code: CodeType, lasti: int, fallback_line: int) -> RawPosition:
    """Where the instruction at byte offset ``lasti`` of ``code`` came from."""
    if sys.version_info >= (3, 11) and lasti >= 0:
        positions = list(code.co_positions())
        index = lasti // 2
        if index < len(positions):
            line, end_line, column, end_column = positions[index]
            if line is not None:
                return RawPosition(
                    code.co_filename, code.co_name, line, end_line, column, end_column
                )
    return RawPosition(code.co_filename, code.co_name, fallback_line, None, None, None)


def stack_positions(frame: FrameType | None) -> list[RawPosition]:
    """Positions of a live stack, outermost first, plumbing removed."""
    positions: list[RawPosition] = []
    while frame is not None:
        if not is_plumbing(frame.f_code.co_filename):
            positions.append(instruction_position(frame.f_code, frame.f_lasti, frame.f_lineno))
        frame = frame.f_back
    positions.reverse()
    return positions


def traceback_positions(tb: TracebackType | None) -> list[RawPosition]:
    """Positions of an exception's traceback, outermost first, plumbing removed."""
    positions: list[RawPosition] = []
    while tb is not None:
        code = tb.tb_frame.f_code
        if not is_plumbing(code.co_filename):
            positions.append(instruction_position(code, tb.tb_lasti, tb.tb_lineno))
        tb = tb.tb_next
    return positions


class SourceIndex:
    """Source text and parsed trees of files, preferring unsaved editor buffers."""

    def __init__(self, overlays: dict[str, str] | None = None) -> None:
        self._overlays = overlays or {}
        self._lines: dict[str, list[str]] = {}
        self._trees: dict[str, ast.Module | None] = {}

    def lines(self, path: str) -> list[str]:
        if path not in self._lines:
            if path in self._overlays:
                self._lines[path] = self._overlays[path].splitlines(keepends=True)
            else:
                self._lines[path] = linecache.getlines(path)
        return self._lines[path]

    def add(self, path: str, text: str, tree: ast.Module | None) -> None:
        """A file already read and parsed (``fxcore.workspace.discovery.ParsedFile``): its lines and
        tree are those, not read or parsed again."""
        if path not in self._overlays:
            # Split as a text file's lines are (linecache's): at line ends only.
            self._lines[path] = io.StringIO(text).readlines()
        self._trees[path] = tree

    def line(self, path: str, number: int) -> str:
        lines = self.lines(path)
        return lines[number - 1] if 0 < number <= len(lines) else ""

    def tree(self, path: str) -> ast.Module | None:
        if path not in self._trees:
            try:
                self._trees[path] = parse_module("".join(self.lines(path)))
            except SyntaxError:
                self._trees[path] = None
        return self._trees[path]

    def char_column(self, path: str, line: int, byte_column: int) -> int:
        """A UTF-8 byte offset in a line, as a character offset."""
        encoded = self.line(path, line).encode("utf-8")
        return len(encoded[:byte_column].decode("utf-8", errors="replace"))


def _narrow(tree: ast.Module, position: RawPosition) -> tuple[int, int, int, int]:
    """The expression a user would fix inside an instruction's range (byte columns)."""
    start = (position.line, position.column)
    end = (position.end_line, position.end_column)
    best: ast.AST | None = None
    for node in ast.walk(tree):
        if not hasattr(node, "end_lineno") or node.lineno != position.line:
            continue
        node_end = (node.end_lineno, node.end_col_offset)
        if (node.lineno, node.col_offset) == start and node_end == end:
            best = node
            break
    if isinstance(best, (ast.For, ast.AsyncFor)):
        best = best.iter
    elif isinstance(best, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
        best = best.generators[0].iter
    elif isinstance(best, (ast.If, ast.While, ast.Assert)):
        best = best.test
    # The line stays the instruction's, as Python's tracebacks and dynamo's logs give it: a
    # comprehension or condition whose part is on a later line is not moved there.
    if best is None or best.lineno != position.line:
        assert position.end_line is not None and position.end_column is not None
        assert position.column is not None
        return position.line, position.column, position.end_line, position.end_column
    return best.lineno, best.col_offset, best.end_lineno or best.lineno, best.end_col_offset or 0


def to_frame(position: RawPosition, sources: SourceIndex) -> Frame:
    """A user-facing frame: character columns, 1-based, end exclusive; the whole line when
    Python gives no columns (3.10). A relative file name is a compiled extension's source as
    it names it (``numpy/random/mtrand.pyx``), kept as it is: joined to the working folder it
    would name a file of the workspace that does not exist."""
    path = position.filename if not os.path.isabs(position.filename) \
        else os.path.abspath(position.filename)
    if position.column is None or position.end_line is None or position.end_column is None:
        text = sources.line(path, position.line)
        stripped = text.rstrip("\r\n")
        indent = len(stripped) - len(stripped.lstrip())
        return Frame(path, position.line, indent + 1, position.line, len(stripped) + 1,
                     position.function)
    line, column, end_line, end_column = position.line, position.column, position.end_line, \
        position.end_column
    tree = sources.tree(path)
    if tree is not None:
        line, column, end_line, end_column = _narrow(tree, position)
    return Frame(
        path=path,
        line=line,
        column=sources.char_column(path, line, column) + 1,
        end_line=end_line,
        end_column=sources.char_column(path, end_line, end_column) + 1,
        function=position.function,
    )


def innermost_workspace_frame(frames: Iterable[Frame], workspace_root: str) -> Frame | None:
    """The last frame of the chain that lies in the user's workspace."""
    found = None
    for frame in frames:
        if is_workspace_file(frame.path, workspace_root):
            found = frame
    return found
