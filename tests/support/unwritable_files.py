"""A workspace file that no process of the test's user can replace: root ignores permission
bits, so as root the file is made immutable (``chattr +i``: renaming over it fails with
EPERM), and otherwise its folder is made read-only (a new file cannot be made in it: EACCES).
A real process then meets the write failure a user meets."""

from __future__ import annotations

import contextlib
import errno
import os
import pathlib
import shutil
import subprocess
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def unwritable(path: pathlib.Path) -> Iterator[str]:
    """``path`` unwritable for the block; yields the reason a write is refused
    (``os.strerror``), as fx-lsp says it."""
    if os.geteuid() != 0:
        folder = path.parent
        mode = folder.stat().st_mode
        folder.chmod(0o555)
        try:
            yield os.strerror(errno.EACCES)
        finally:
            folder.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(path)], capture_output=True,
                                        check=False).returncode != 0:
        pytest.skip("as root, a file is made unwritable with chattr +i, which is missing "
                    "or refused here (no CAP_LINUX_IMMUTABLE, or a file system without it)")
    try:
        yield os.strerror(errno.EPERM)
    finally:
        subprocess.run([chattr, "-i", str(path)], check=True)
