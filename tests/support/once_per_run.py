"""A value computed once per pytest run, however many pytest-xdist processes ask for it: the
first to ask computes it and writes it to a file of the run (``PYTEST_XDIST_TESTRUNUID``
names it); the others wait on the file's lock and read it. A session fixture alone is
computed once per xdist process, and ``--dist loadfile`` puts the modules that share one in
different processes."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock


def once_per_run(name: str, compute: Callable[[], Any]) -> Any:
    """``compute()`` as JSON gives it back (the same in every process), computed by the first
    of this run's pytest-xdist processes to ask; without xdist, computed here."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    if run is None:
        return json.loads(json.dumps(compute()))
    path = Path(tempfile.gettempdir()) / f"fx-lsp-{run}-{name}.json"
    with FileLock(f"{path}.lock"):
        if not path.exists():
            path.write_text(json.dumps(compute()), encoding="utf-8")
        return json.loads(path.read_text(encoding="utf-8"))
