"""The texts a request or a job reads: the workspace's folders and roots, open buffers (a
notebook's module in place of its JSON), and files on disk.

``WorkspaceTexts`` reads pygls's workspace (the buffers and notebooks the client synced) and
the session's open notebook modules; it keeps no state but the lines of files read from disk.
"""

from __future__ import annotations

import os

from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fx_lsp.features import positions
from fx_lsp.server import notebooks
from fx_lsp.server.documents import Document
from fxcore.workspace.kept_bytes import as_on_disk, universal_newlines
from fxcore.workspace.paths import find_workspace_root, source_text


class WorkspaceTexts:
    def __init__(self, server: LanguageServer,
                 open_notebooks: dict[str, notebooks.NotebookModule]) -> None:
        #: pygls's server: its workspace exists once the client has initialized.
        self._server = server
        #: The open notebooks' modules, by the notebook's path (the session's).
        self._notebooks = open_notebooks
        #: Lines of files on disk, by path, with the modification time they were read at.
        self._disk_lines: dict[str, tuple[float, list[str]]] = {}

    def workspace_folders(self) -> list[str] | None:
        """The folders the client opened (``workspaceFolders``, else ``rootUri``), or None
        when it opened none (a single file)."""
        workspace = self._server.workspace
        folders = [to_fs_path(f.uri) for f in workspace.folders.values()]
        found = [f for f in folders if f] or [workspace.root_path]
        return [f for f in found if f] or None

    def root_of(self, path: str) -> str:
        """The workspace root of ``path``, never above the folder the client opened: quick fixes
        edit its ``pyproject.toml`` and the cache lives there."""
        return find_workspace_root(path, self.workspace_folders())

    def buffer_text(self, document: Document) -> str:
        """An open document's text: its buffer's, a notebook's module's (what its results'
        lines are lines of)."""
        notebook = self._notebooks.get(document.path)
        if notebook is not None:
            return notebook.text
        return self._server.workspace.get_text_document(document.uri).source

    def overlay_text(self, document: Document) -> str:
        """What a job gets for an open document: its buffer, a notebook's JSON (the worker
        builds its module from it as from the file: ``fxcore.workspace.paths.source_text``)."""
        notebook = self._notebooks.get(document.path)
        if notebook is not None:
            return notebook.json
        return self._server.workspace.get_text_document(document.uri).source

    def open_text(self, path: str) -> str | None:
        """The text of an open buffer for ``path`` (any language), else None."""
        notebook = self._notebooks.get(path)
        if notebook is not None:
            return notebook.text
        workspace = self._server.workspace
        for document in workspace.text_documents.values():
            # A notebook cell's document has the notebook's path: it is not the file's text.
            if document.path == path and workspace.get_notebook_document(
                    cell_uri=document.uri) is None:
                return document.source
        return None

    def text_of(self, path: str) -> str | None:
        """The buffer if open, else the file on disk (None unless UTF-8: fixes write it back),
        its line ends read as ``\n``, as fixes are planned on it (``edited_text`` has them)."""
        text = self.open_text(path)
        return universal_newlines(text) if text is not None \
            else source_text(path, {}, strict=True)

    def edited_text(self, path: str) -> str | None:
        """What an edit of ``path`` is applied to: the buffer if open, else the file on disk
        with its line ends (and without its byte order mark, as editors show it)."""
        text = self.open_text(path)
        if text is not None:
            return text
        disk = source_text(path, {}, strict=True)
        return as_on_disk(path, disk) if disk is not None else None

    def disk_lines(self, path: str) -> list[str]:
        """The lines of ``path`` as read (read again when the file's modification time
        changes); one empty line when it cannot be read."""
        try:
            mtime = os.path.getmtime(path)
        except OSError:
            return [""]
        cached = self._disk_lines.get(path)
        if cached is None or cached[0] != mtime:
            cached = (mtime, positions.split_lines(self.text_of(path) or ""))
            self._disk_lines[path] = cached
        return cached[1]

    def cell_of(self, uri: str) -> tuple[notebooks.NotebookModule, int] | None:
        """The open notebook whose code cell ``uri`` is, and the cell's index, if it is one."""
        notebook = self._server.workspace.get_notebook_document(cell_uri=uri)
        module = self._notebooks.get(to_fs_path(notebook.uri) or "") if notebook else None
        index = module.cell_index(uri) if module is not None else None
        return None if module is None or index is None else (module, index)

    def cell_words(self, path: str, line: int) -> str | None:
        """``cell 3:5`` for line ``line`` of an open notebook's module, as ``fx-lsp check``
        counts cells and lines (from 1)."""
        notebook = self._notebooks.get(path)
        place = notebook.place_of(line - 1) if notebook is not None else None
        return None if place is None else f"cell {place[0] + 1}:{place[1] + 1}"
