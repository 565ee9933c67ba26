"""A verdict moved with its class: every line of one file in it, as a class moved as a whole
by whole lines would have it traced again (``fxcore.host.class_cache`` reuses verdicts so).

Lines are fields (a span's, a range's inside a located object of the file, a graph node's,
``line_nodes``' keys) and text: ``net.py:42`` in a message, a note or a call site is moved
when it names the file, a function Dynamo resumes in
(``torch_dynamo_resume_in_forward_at_42``) when its located object is in the file;
``line 42`` in a text, which names no file, cannot be told apart from another file's line,
so such a verdict is not moved at all.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, TypeVar

from fxcore.model.results import Range

T = TypeVar("T")

#: A line named without its file: which file it is in is not known.
_BARE_LINE = re.compile(r"\blines? \d+")
#: The function Dynamo resumes a frame in after a graph break, named for the line it resumes
#: at in its frame's file: moved with the located object it is in.
_RESUMED = re.compile(r"(\btorch_dynamo_resume_in_\w+?_at_)(\d+)\b")
#: Each field that holds a line of the located object's file.
_LINE_FIELDS = ("line", "end_line")


class Unmovable(Exception):
    """A verdict names a line that cannot be moved with its class."""


class _Mover:
    def __init__(self, path: str, lines: int) -> None:
        self.path = path
        self.lines = lines
        name = re.escape(os.path.basename(path))
        # ``dir/net.py:42`` or ``net.py:42``, not ``other_net.py:42``.
        self.named = re.compile(rf"(?<![\w.\-])((?:[\w.\-]+/)*{name}):(\d+)")

    def text(self, text: str, in_file: bool) -> str:
        if _BARE_LINE.search(text):
            raise Unmovable(text)
        if in_file:
            text = _RESUMED.sub(lambda match: f"{match.group(1)}"
                                f"{int(match.group(2)) + self.lines}", text)

        def moved(match: re.Match[str]) -> str:
            written = match.group(1)
            if not self.path.replace(os.sep, "/").endswith("/" + written) \
                    and written != os.path.basename(self.path):
                raise Unmovable(text)  # another file of the same name
            return f"{written}:{int(match.group(2)) + self.lines}"

        return self.named.sub(moved, text)

    def value(self, value: Any, in_file: bool) -> Any:
        """``value`` moved; ``in_file``: the located object it belongs to is in the file."""
        if isinstance(value, str):
            return self.text(value, in_file)
        if isinstance(value, list):
            return [self.value(item, in_file) for item in value]
        if isinstance(value, tuple):
            if len(value) == 2 and value[0] == self.path and isinstance(value[1], int):
                return (value[0], value[1] + self.lines)  # a ``line_nodes`` key
            return tuple(self.value(item, in_file) for item in value)
        if isinstance(value, dict):
            return {self.value(key, in_file): self.value(item, in_file)
                    for key, item in value.items()}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self.located(value, in_file)
        return value

    def located(self, value: Any, in_file: bool) -> Any:
        path = getattr(value, "path", None)
        # A range has no path of its own: it is in its located object's file.
        here = path == self.path if path is not None or not isinstance(value, Range) \
            else in_file
        changes = {field.name: self.value(getattr(value, field.name), here)
                   for field in dataclasses.fields(value)}
        if here:
            for name in _LINE_FIELDS:
                if isinstance(changes.get(name), int):
                    changes[name] += self.lines
        return dataclasses.replace(value, **changes)


def shifted(result: T, path: str, lines: int) -> T:
    """``result`` (a verdict, a failure, any of the model's dataclasses) with each of its lines
    in the file at ``path`` moved by ``lines``; raises ``Unmovable`` when a text of it names a
    line without its file."""
    if lines == 0:
        return result
    moved: T = _Mover(path, lines).value(result, False)
    return moved
