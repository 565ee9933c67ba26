"""The one way fx-lsp reads a workspace file that it takes something from without checking it
(a test or example that calls a class, a file ``fx-lsp diff`` looks for imports in, a README or
notebook giving constructor calls): under the rules it checks every workspace file by.

- **Links.** A file that a symbolic link (its own name, or a folder above it) takes out of the
  workspace is refused, as a checked file is (``fxcore.checking.preparation.linked_out``): the
  same file is never read for one purpose while its own check says it is not read.
- **Special files and size.** Only a regular file of at most ``limit`` bytes, opened without
  blocking (``fxcore.workspace.file_access.read_bytes``): a FIFO or a device is neither waited
  on nor read.
- **Encoding.** UTF-8, a leading byte-order mark accepted and left out (as Python's import does
  and editors do), universal newlines; other bytes refuse the file.
- **Parsing.** ``fxcore.workspace.parsing.parse_module`` turns every way Python's parser gives
  up (a 100,000-term expression's ``RecursionError``, ``MemoryError``, a NUL byte) into a
  ``SyntaxError``.

A refusal is an ``UnreadableFile`` whose message completes "This file is ...", the words of
the FX100 a checked file gets for it.
"""

from __future__ import annotations

from fxcore.workspace.file_access import (
    MAX_FILE_BYTES,
    UnreadableFile,
    decode_text,
    outside_target,
    read_bytes,
)


def linked_out_reason(root: str, real: str) -> str:
    """Why a file whose real path ``real`` lies out of workspace ``root`` is not read."""
    return (f"a symbolic link, or lies in a linked folder, that leads out of the workspace "
            f"{root} (to {real})")


def read_workspace_text(path: str, root: str, limit: int = MAX_FILE_BYTES) -> str:
    """The text of the workspace file at ``path`` (of workspace ``root``). Raises
    ``UnreadableFile`` saying why a file is refused (a link out of the workspace, not a regular
    file, over ``limit`` bytes, not UTF-8) and ``OSError`` when it cannot be opened."""
    real = outside_target(path, root)
    if real is not None:
        raise UnreadableFile(linked_out_reason(root, real))
    try:
        return decode_text(read_bytes(path, limit), errors="strict")
    except UnicodeDecodeError:
        raise UnreadableFile("not UTF-8 text") from None
