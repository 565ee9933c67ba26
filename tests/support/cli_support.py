"""``fx-lsp`` command lines run in the test process, on one warm engine per test process.

A real ``python -m fx_lsp`` costs a new interpreter, a torch import and a new zygote before
it traces anything; most CLI tests only read what a command prints and returns. ``fx_lsp``
gives them that from ``fx_lsp.cli.main`` on ``shared_engine()`` (its zygote started once),
with the working folder, environment, stdout and stderr that the subprocess would have had.
Tests of what only a process shows (signals, the entry point, a refused torch, a terminal)
keep starting one.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from fx_lsp.cli.main import main
from fxcore.api.session import EngineSession
from fxcore.host.engine import Engine

_engine: Engine | None = None


def shared_engine() -> Engine:
    """This test process's engine: one child at a time (pytest-xdist runs four processes on
    two cores, most of whose tests wait on a worker or a server)."""
    global _engine
    if _engine is None:
        _engine = Engine(workers=1)
    return _engine


def close_shared_engine() -> None:
    global _engine
    if _engine is not None:
        _engine.close()
        _engine = None


@contextlib.contextmanager
def _no_root_handlers() -> Iterator[None]:
    """The root logger without pytest's handlers, as in a new process: a warning with no
    handler to take it goes to stderr (logging's last resort) unless ``-v`` adds one."""
    root = logging.getLogger()
    handlers = root.handlers[:]
    for handler in handlers:
        root.removeHandler(handler)
    try:
        yield
    finally:
        for handler in handlers:
            root.addHandler(handler)


@contextlib.contextmanager
def process_state(cwd: Path | str, env: Mapping[str, str] | None) -> Iterator[None]:
    """The working folder and (if given) the whole environment of a subprocess, put back
    afterwards."""
    folder, environment = os.getcwd(), dict(os.environ)
    os.chdir(cwd)
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    try:
        yield
    finally:
        os.chdir(folder)
        os.environ.clear()
        os.environ.update(environment)


def fx_lsp(*arguments: str, cwd: Path | str, env: Mapping[str, str] | None = None,
           engine: Engine | None = None) -> subprocess.CompletedProcess[str]:
    """What ``python -m fx_lsp ARGUMENTS`` run in ``cwd`` with environment ``env`` (the
    test process's if ``None``) returns and prints, its exit status included. Another
    ``PYTHONPATH`` takes a new interpreter (its ``sys.path`` is made at start): then it is
    one. ``engine``: a test's own warm engine instead of the shared one-worker engine (a
    real library's hundred classes, checked again and again, want more workers)."""
    if env is not None and env.get("PYTHONPATH") != os.environ.get("PYTHONPATH"):
        return subprocess.run([sys.executable, "-m", "fx_lsp", *arguments], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=300)
    stdout, stderr = io.StringIO(), io.StringIO()
    with process_state(cwd, env), _no_root_handlers(), contextlib.redirect_stdout(stdout), \
            contextlib.redirect_stderr(stderr):
        try:
            # A session of the command's own, as in the subprocess, on the warm engine.
            with EngineSession(engine=engine or shared_engine()) as session:
                status = main(list(arguments), session=session)
        except SystemExit as stop:  # argparse's usage errors, --help, --version
            status = stop.code if isinstance(stop.code, int) else 1 if stop.code else 0
    return subprocess.CompletedProcess(["fx-lsp", *arguments], status, stdout.getvalue(),
                                       stderr.getvalue())
