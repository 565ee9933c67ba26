"""Each workspace's ``[tool.fx-lsp]`` as ``fx-lsp mcp``'s tool calls read it: parsed again only
when the bytes of its ``pyproject.toml`` change, as the language server keeps its settings
between saves. Parsing the TOML and checking every value is about 0.6 ms of a warm ``check``
of one file (under load on 2 cores), paid on every call before.

Keyed by the file's bytes, read on every call, not by its modification time: an agent that
rewrites ``pyproject.toml`` within the clock tick of a check (file times move in ticks of a
few milliseconds) would otherwise be answered with the settings it just replaced.
"""

from __future__ import annotations

import os

from fxcore.workspace.config import ProjectConfig, read_project_config
from fxcore.workspace.file_access import UnreadableFile, read_bytes


class ProjectConfigs:
    """``read_project_config`` of each workspace root, with what it read kept (a
    ``fxcore.api.check.ConfigReader``). The configs it returns are shared between calls:
    callers copy before they change one (``fxcore.api.check.Projects``)."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[bytes, ProjectConfig]] = {}

    def __call__(self, root: str) -> ProjectConfig:
        try:
            data = read_bytes(os.path.join(root, "pyproject.toml"))
            text = data.decode("utf-8")
        except (OSError, UnreadableFile, UnicodeDecodeError):
            # No file, or one fx-lsp cannot read: said by the reader, as it always says it.
            self._kept.pop(root, None)
            return read_project_config(root)
        kept = self._kept.get(root)
        if kept is not None and kept[0] == data:
            return kept[1]
        # Parsed from the bytes compared next time, not from a second read of the file.
        project = read_project_config(root, text)
        self._kept[root] = (data, project)
        return project
