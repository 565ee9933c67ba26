"""Reading and writing workspace files that may have been committed by someone else.

A repository can hold a symbolic link to ``/dev/zero``, a named pipe or a huge file under an
ordinary name (``NOTES.md``, ``model.py``, ``pyproject.toml``). Every read of a workspace file
goes through ``read_bytes``: only a regular file (checked with ``fstat`` on the opened
descriptor, opened without blocking, so a FIFO or a device is neither waited on nor read) of at
most ``MAX_FILE_BYTES``.

Every write goes through ``replace_bytes``: the new content is written to a new file in the same
folder and renamed over the path, so a symbolic link planted there is replaced, never written
through. Before that, a file fx-lsp edits in place (a fix, ``pyproject.toml``) must lie inside
its workspace once every link is followed (``inside_workspace``), and a file the user named
(a report, a graph page) may not be reached through a link (``check_output_path``): either way
a link in the way is an ``UnsafeWrite``, whose message says so, and nothing is written.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import secrets
import stat
from collections.abc import Callable

#: A file's text by absolute path as the user sees it (an editor's buffer, else the
#: disk); None when it cannot be read or does not exist.
TextOf = Callable[[str], "str | None"]

#: The most fx-lsp reads of one workspace file (a source, a Markdown file, a
#: ``pyproject.toml``): many times any hand-written module, and quick to parse. A larger file is
#: unreadable ("too large to check").
MAX_FILE_BYTES = 4 * 1024 * 1024

#: Opening a FIFO for reading waits for a writer unless non-blocking (no effect on files).
_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)


class UnreadableFile(OSError):
    """A file fx-lsp will not read; the message says why, for the user."""


class UnsafeWrite(OSError):
    """A file fx-lsp will not write, because a symbolic link would take the write elsewhere;
    the message says so, for the user."""


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "something else"


def read_bytes(path: str, limit: int = MAX_FILE_BYTES, *, dir_fd: int | None = None,
               follow_symlinks: bool = True) -> bytes:
    """The bytes of the regular file at ``path`` (relative to the folder open as ``dir_fd``
    if given; symbolic links followed unless ``follow_symlinks`` is false), at most ``limit``.

    Raises ``UnreadableFile`` for anything else (a device, a FIFO, a folder, a larger file) and
    ``OSError`` when it cannot be opened (a link, without ``follow_symlinks``).
    """
    flags = _READ_FLAGS if follow_symlinks else _READ_FLAGS | os.O_NOFOLLOW
    descriptor = os.open(path, flags | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise UnreadableFile(f"not a regular file but {_kind(status.st_mode)}")
        if status.st_size > limit:
            raise UnreadableFile(too_large_reason(limit))
        with open(descriptor, "rb", closefd=False) as stream:
            # One byte more than allowed tells a file that grew since fstat from one that fits.
            data = stream.read(limit + 1)
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise UnreadableFile(too_large_reason(limit))
    return data


def too_large_reason(limit: int) -> str:
    """Why a file over ``limit`` bytes is not read."""
    return f"too large to check (more than the {limit:,} bytes fx-lsp reads of a file)"


def read_text(path: str, errors: str = "replace", limit: int = MAX_FILE_BYTES) -> str:
    """``read_bytes`` as ``decode_text`` makes it text. Raises ``UnicodeDecodeError`` with
    ``errors="strict"``."""
    return decode_text(read_bytes(path, limit), errors)


#: The UTF-8 byte order mark some editors put at the start of a file.
UTF8_BOM = b"\xef\xbb\xbf"


def decode_text(data: bytes, errors: str = "replace") -> str:
    """``data`` as UTF-8 text with universal newlines, as ``open(path)`` reads it, and
    without a byte order mark at its start, as Python's own import reads a source: an editor
    shows none, so the file's first line is the user's. ``fxcore.workspace.kept_bytes`` puts
    both back when an edit is written."""
    with io.TextIOWrapper(io.BytesIO(data.removeprefix(UTF8_BOM)), encoding="utf-8",
                          errors=errors) as stream:
        return stream.read()


def replace_bytes(path: str, data: bytes) -> None:
    """Make ``data`` the content of the file at ``path``.

    Written to a new file in the same folder, then renamed over ``path``: a symbolic link
    there is replaced by the file, never followed, and a reader sees the old text or the new,
    never half of it. A regular file's permission bits are kept; a new file gets the umask's.
    """
    path = os.path.abspath(path)
    folder, name = os.path.split(path)
    try:
        status = os.lstat(path)
        kept_mode = stat.S_IMODE(status.st_mode) if stat.S_ISREG(status.st_mode) else None
    except FileNotFoundError:
        kept_mode = None
    temporary = os.path.join(folder, f".{name}.{secrets.token_hex(6)}.fx-lsp-tmp")
    descriptor = os.open(temporary,
                         os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                         0o666)
    try:
        with open(descriptor, "wb") as stream:
            if kept_mode is not None:
                os.fchmod(descriptor, kept_mode)
            stream.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def _within(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


def outside_target(path: str, workspace_root: str) -> str | None:
    """Where ``path`` really is, when a symbolic link (the file, or a folder above it) takes it
    out of the real path of its workspace root; None for a file inside it. Such a file is
    never imported, read or written for the workspace, however it was found (a folder walked,
    the editor's workspace trace, a path named, a revision's files): a committed link must not
    make a check run code from elsewhere, nor a fix write there."""
    real = os.path.realpath(path)
    return None if _within(real, os.path.realpath(workspace_root)) else real


def inside_workspace(path: str, root: str) -> str:
    """The real path of ``path``, a workspace file fx-lsp edits in place, when it lies inside
    the real path of its workspace ``root``: a link inside the workspace is followed to its
    target, so the link stays a link. Raises ``UnsafeWrite`` when a link in ``path`` (the file
    or a folder above it) leads out of the workspace, where a committed link could point a fix
    at any file its user can write."""
    real = os.path.realpath(path)
    if not _within(real, os.path.realpath(root)):
        raise UnsafeWrite(f"{path} is a symbolic link, or lies in a linked folder, that leads "
                          f"out of the workspace {root}: fx-lsp does not write there")
    return real


def check_output_path(path: str) -> bool:
    """Raise ``UnsafeWrite`` when writing the file the user named at ``path`` (a report, a graph
    page) would go through a symbolic link to a file: the file itself being one, or, for a
    relative path, any folder of it below the current folder (a link committed to the
    repository being checked). Links the user's own absolute path goes through (``/tmp`` on
    some systems) are theirs to choose. Returns whether ``path`` is a link that may be
    followed: one to a device or a pipe (``/dev/stdout``), which no write can harm."""
    names = os.path.normpath(path).split(os.sep)
    if os.path.isabs(path):
        folders = []
    else:
        folders = [os.path.join(*names[:end]) for end in range(1, len(names))
                   if names[end - 1] not in ("", ".", "..")]
    for folder in folders:
        if os.path.islink(folder):
            raise UnsafeWrite(f"{path}: {folder} is a symbolic link, and fx-lsp does not "
                              "write through links; remove it or name another file")
    if not os.path.islink(path):
        return False
    try:
        target = os.stat(path)
    except OSError:
        target = None
    if target is not None and not stat.S_ISREG(target.st_mode) \
            and not stat.S_ISDIR(target.st_mode):
        return True
    raise UnsafeWrite(f"{path} is a symbolic link, and fx-lsp does not write through links; "
                      "remove it or name another file")


def write_output_text(path: str, text: str) -> None:
    """Write ``text`` to the file the user named at ``path``, never through a link to a file
    (``check_output_path``). Opened in place rather than replaced by rename: the path may name
    a device or a pipe (``/dev/stdout``), which a rename would replace."""
    follow = check_output_path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC
    descriptor = os.open(path, flags if follow else flags | os.O_NOFOLLOW, 0o666)
    with open(descriptor, "w", encoding="utf-8") as stream:
        stream.write(text)


def text_hash(text: str) -> str:
    """The hash of an unsaved buffer: of its UTF-8 bytes, as the import compiles them."""
    return content_hash(text.encode("utf-8", errors="surrogatepass"))


def content_hash(data: bytes) -> str:
    """The hash by which a cache entry names the content of a file it depends on."""
    return hashlib.sha256(data).hexdigest()
