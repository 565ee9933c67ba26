"""The settings in force for each file: the client's, overlaid by the ``[tool.fx-lsp]`` table of
the file's workspace folder (its open buffer when there is one), read once per change.

Values are parsed by ``fx_lsp.features.initialization_options`` (editor keys) and
``fxcore.workspace.config`` (engine keys); this module only merges and caches them, and hands
each read's problems to ``warn`` together with where they were found (the server makes one
pop-up of them).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from fx_lsp.features.initialization_options import Options, client_settings, parse_options
from fxcore.model.capture_modes import modes_problem
from fxcore.model.job_spec import EngineConfig
from fxcore.model.module_modes import module_mode_problem
from fxcore.model.results import CODES
from fxcore.reporting.report import Selection
from fxcore.rules import RULES
from fxcore.workspace.config import ProjectConfig, is_valid_timeout, read_project_config

#: The information codes an editor shows as it shows any other code (FX104; FX103 too with
#: ``showNotTraced``), where ``fx-lsp check`` needs them named in ``select``.
INFORMATION = frozenset(rule.code for rule in RULES if rule.information)
#: Where the client's own settings' problems are said to be.
CLIENT_SETTINGS = "the editor's fx-lsp settings"


class Settings:
    def __init__(
        self,
        open_text: Callable[[str], str | None],
        root_of: Callable[[str], str],
        warn: Callable[[list[str], str], None],
    ) -> None:
        self._open_text = open_text
        self._root_of = root_of
        #: ``warn(problems, where)``: one read's problems, and the file (or settings) read.
        self._warn = warn
        self._client: dict[str, Any] = {}
        #: The client's options (``trusted`` only ever comes from here).
        self.options = Options()
        #: Per workspace root: its ``[tool.fx-lsp]`` and the options overlaid by it, read
        #: together so that one read of the file reports all its problems at once.
        self._roots: dict[str, tuple[ProjectConfig, Options]] = {}

    def apply(self, raw: Any) -> None:
        """New client settings. ``trusted`` keeps its value when they omit it: settings rebuilt
        from defaults must not trust a workspace the user has not trusted."""
        self._client = client_settings(raw)
        options, errors = parse_options(self._client)
        if "trusted" not in self._client:
            options = replace(options, trusted=self.options.trusted)
        self.options = options
        self._warn(errors, CLIENT_SETTINGS)
        self._roots.clear()

    def _root(self, root: str) -> tuple[ProjectConfig, Options]:
        """``<root>/pyproject.toml``'s ``[tool.fx-lsp]``, from its buffer when it is open
        (unsaved edits apply to every key at once), and the options it gives; read once per
        change."""
        if root not in self._roots:
            path = os.path.join(root, "pyproject.toml")
            found = read_project_config(root, self._open_text(path))
            options, problems = parse_options(self._client, found.table, path)
            self._warn(found.problems + problems, path)
            self._roots[root] = (found, replace(options, trusted=self.options.trusted))
        return self._roots[root]

    def project_config(self, root: str) -> ProjectConfig:
        """``<root>/pyproject.toml``'s ``[tool.fx-lsp]``."""
        return self._root(root)[0]

    def options_for(self, path: str) -> Options:
        """Client settings overlaid by the ``[tool.fx-lsp]`` of the file's workspace folder."""
        return self._root(self._root_of(path))[1]

    def engine_config(self, root: str) -> EngineConfig:
        """The project's engine config; its ``timeout``, ``modes``, ``export-strict`` and
        ``module-mode`` if it sets valid ones, else the client's."""
        project = self.project_config(root)
        engine = project.engine
        if not is_valid_timeout(project.table.get("timeout")):
            engine = replace(engine, timeout=self.options_for(root).timeout)
        if "modes" not in project.table or modes_problem(project.table["modes"]) is not None:
            engine = replace(engine, modes=self.options_for(root).modes)
        if not isinstance(project.table.get("export-strict"), bool):
            engine = replace(engine, export_strict=self.options_for(root).export_strict)
        if module_mode_problem(project.table.get("module-mode")) is not None:
            engine = replace(engine, module_mode=self.options_for(root).module_mode)
        return engine

    def selection(self, path: str) -> Selection:
        """Which codes are shown for ``path``: its project's select/ignore, and the
        information codes, FX103 only with ``showNotTraced``."""
        root = self._root_of(path)
        shown = INFORMATION if self.options_for(path).show_not_traced \
            else INFORMATION - {CODES["not-traced"]}
        return Selection(self.project_config(root).report, root, shown)

    def forget(self, root: str) -> None:
        """``<root>/pyproject.toml`` changed: read it again when next needed."""
        self._roots.pop(root, None)
