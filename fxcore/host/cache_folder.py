"""The result cache's folder, ``<workspace>/.fx-lsp-cache``, and its files: made and written
without following a symbolic link planted in it, and marked, when made, as a cache that git
and backups leave out (``ResultCache`` writes its entries through here, and ``fx-lsp diff``
makes the folder for its checkouts)."""

from __future__ import annotations

import contextlib
import os
import secrets

CACHE_FOLDER = ".fx-lsp-cache"
FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def write_entry(folder: int, name: str, data: bytes) -> None:
    """Write then rename inside ``folder``, so a reader never sees half an entry and a
    symbolic link planted under the entry's name is replaced, not followed."""
    temporary = f".{name}.{secrets.token_hex(8)}"
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW,
                         0o600, dir_fd=folder)
    try:
        with open(descriptor, "wb") as handle:
            handle.write(data)
        os.replace(temporary, name, src_dir_fd=folder, dst_dir_fd=folder)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary, dir_fd=folder)
        raise


def make_cache_folder(root: str) -> None:
    """``<root>/.fx-lsp-cache`` when it is not there yet, marked as the cache marks the
    folders it makes: another writer below it (``fx-lsp diff``'s checkouts) then leaves no
    folder git would list."""
    descriptor = os.open(os.path.abspath(root), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(CACHE_FOLDER, dir_fd=descriptor)
            mark_cache_folder(descriptor)
    finally:
        os.close(descriptor)


def mark_cache_folder(root: int) -> None:
    """Keep the new cache folder out of git and backups."""
    folder = os.open(CACHE_FOLDER, FOLDER_FLAGS, dir_fd=root)
    try:
        for name, text in ((".gitignore", "# Created by fx-lsp automatically.\n*\n"),
                           ("CACHEDIR.TAG", "Signature: 8a477f597d28d172789f06886806bc55\n"
                            "# This file is a cache directory tag created by fx-lsp.\n")):
            write_entry(folder, name, text.encode("ascii"))
    finally:
        os.close(folder)
