"""Which workspace files show how its classes are called: the ``.py`` files under a ``tests``,
``test``, ``examples`` or ``example`` folder, and ``test_*.py`` / ``*_test.py`` files. The
worker reads them for example inputs (``fxcore.worker.inputs.given.calling_files``) and the host's
call-site index reads them early (``fxcore.workspace.call_sites.index``)."""

from __future__ import annotations

from collections.abc import Iterable

#: Folders whose files show how a workspace's classes are called.
CALLING_FOLDERS = frozenset({"tests", "test", "examples", "example"})


def is_calling_file(folders: Iterable[str], name: str) -> bool:
    """Whether the ``.py`` file ``name``, in the folders ``folders`` below the workspace root,
    shows how classes are called."""
    return name.endswith(".py") and (bool(CALLING_FOLDERS & set(folders))
                                     or name.startswith("test_") or name.endswith("_test.py"))
