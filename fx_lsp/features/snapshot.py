"""What a request about an open document is answered from: a ``DocumentSnapshot``, which the
session builds from its state when the request arrives (``fx_lsp.server.session.Session.snapshot``,
the one place), so that ``hover``, ``code_actions``, ``code_lens`` and ``inlay_hints`` are plain
functions of it and of the request's own parameters, testable without a server."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

from fx_lsp.features import positions
from fx_lsp.features.diagnostics import CellWords, Entry, LinesOf, no_cells
from fx_lsp.features.initialization_options import Options
from fxcore.fixing.fix import RootOf, Run, TextOf, run_here
from fxcore.model.results import FileResult

#: Version of an open document, None for a file that is not open.
VersionOf = Callable[[str], "int | None"]


@dataclass(frozen=True)
class Files:
    """The workspace's files as the server sees them: an open buffer, else the file on disk.
    Read when a feature needs them (quick fixes read other files), not copied into snapshots."""

    #: A file's text (None unless UTF-8: fixes write it back).
    text_of: TextOf
    lines_of: LinesOf
    version_of: VersionOf
    #: The workspace root of a file (where its ``pyproject.toml`` is).
    root_of: RootOf
    #: Runs the parses of quick-fix planning and edits (the server: in its parse process).
    run: Run = run_here
    #: ``cell 3:5`` for a line of an open notebook's module, as messages name it (None for
    #: any other file's line).
    cell_words: CellWords = no_cells
    #: The text an edit of a file is applied to, its line ends as they are (``text_of``
    #: reads them as ``\n``): its open buffer, else the file (None: ``text_of``'s own).
    edited_text_of: TextOf = lambda path: None


@dataclass(frozen=True)
class DocumentSnapshot:
    """An open document and what is known of it when a request arrived."""

    uri: str
    path: str
    #: The buffer's version and text.
    version: int
    text: str
    #: The client's position encoding.
    encoding: str
    #: The settings in force for the document.
    options: Options
    #: The latest accepted result and the buffer version it is of.
    result: FileResult | None
    result_version: int | None
    #: The result (or, without one, the nothing) is of the buffer's current text.
    current: bool
    #: The diagnostics last published for it.
    entries: tuple[Entry, ...]
    #: The other open documents' latest results, and those of them traced with this text
    #: (their lines in this document are the current ones).
    others: tuple[FileResult, ...]
    traced_with: tuple[FileResult, ...]
    files: Files

    @functools.cached_property
    def lines(self) -> list[str]:
        """The buffer's lines (split when first needed: most requests never need them)."""
        return positions.split_lines(self.text)

    def outdated(self) -> bool:
        """The buffer changed since (a request that waited in a queue is answered for the new
        text when the client asks again)."""
        return self.files.version_of(self.path) != self.version
