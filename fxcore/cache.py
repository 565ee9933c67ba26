"""A result cache, like ruff's: ``<workspace>/.fx-lsp-cache/``, ignored by git.

A file's result depends on its text, the configuration, the engine and torch versions, and
the text of every workspace file its import loaded (a submodule's file, a helper's file).
The first four are known before tracing and make the entry's key; the imported files are
only known after, so each entry stores their content hashes and is used only while all of
them still match (unsaved buffers count as the file's text).

Results that a time-out or a crash produced are not stored: the next run may go better.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import pickle
import sys
import tempfile
from dataclasses import asdict, dataclass

from fxcore.model import FileResult, TraceJob
from fxcore.workspace import source_text

CACHE_FOLDER = ".fx-lsp-cache"
_TRANSIENT_KINDS = frozenset({"timeout", "crash"})


def _engine_fingerprint() -> str:
    """Changes whenever fxcore's code, torch or Python changes."""
    digest = hashlib.sha256()
    package = os.path.dirname(os.path.abspath(__file__))
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            with open(os.path.join(package, name), "rb") as handle:
                digest.update(name.encode() + handle.read())
    # The version from the package metadata: importing torch here would cost the CLI and
    # the server, which never run torch themselves, more than a second.
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        digest.update(importlib.metadata.version("torch").encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()


_FINGERPRINT = _engine_fingerprint()


def _absolute_overlays(job: TraceJob) -> dict[str, str]:
    return {os.path.abspath(path): text for path, text in job.overlays.items()}


def _text_hash(path: str, overlays: dict[str, str]) -> str | None:
    text = source_text(path, overlays)
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class _Entry:
    dependencies: dict[str, str | None]
    result: FileResult


class ResultCache:
    """Results of ``TraceJob``s stored below each job's workspace root."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _folder(job: TraceJob) -> str:
        return os.path.join(os.path.abspath(job.workspace_root), CACHE_FOLDER)

    @staticmethod
    def _key(job: TraceJob) -> str | None:
        path = os.path.abspath(job.path)
        text_hash = _text_hash(path, _absolute_overlays(job))
        if text_hash is None:
            return None
        digest = hashlib.sha256()
        for part in (_FINGERPRINT, path, text_hash, repr(asdict(job.config)),
                     repr(sorted(job.only_classes)), repr(sorted(job.call_sites.items()))):
            digest.update(part.encode("utf-8") + b"\0")
        return digest.hexdigest()

    def get(self, job: TraceJob) -> FileResult | None:
        key = self._key(job)
        entry_path = os.path.join(self._folder(job), key[:2], key) if key else None
        try:
            if entry_path is None:
                raise FileNotFoundError
            with open(entry_path, "rb") as handle:
                entry: _Entry = pickle.load(handle)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
            self.misses += 1
            return None
        overlays = _absolute_overlays(job)
        if any(_text_hash(dependency, overlays) != digest
               for dependency, digest in entry.dependencies.items()):
            self.misses += 1
            return None
        self.hits += 1
        entry.result.from_cache = True
        return entry.result

    def put(self, job: TraceJob, result: FileResult) -> None:
        failures = [*result.errors,
                    *(f for m in [*result.modules, *result.derived_modules] for f in m.failures)]
        if any(failure.kind in _TRANSIENT_KINDS for failure in failures):
            return
        key = self._key(job)
        if key is None:
            return
        overlays = _absolute_overlays(job)
        dependencies = {path: _text_hash(path, overlays)
                        for path in {*result.imported_files, os.path.abspath(job.path)}}
        folder = self._folder(job)
        try:
            self._prepare(folder)
            target_folder = os.path.join(folder, key[:2])
            os.makedirs(target_folder, exist_ok=True)
            # Write then rename, so a reader never sees half an entry.
            with tempfile.NamedTemporaryFile("wb", dir=target_folder, delete=False) as handle:
                pickle.dump(_Entry(dependencies, result), handle)
            os.replace(handle.name, os.path.join(target_folder, key))
        except OSError:
            pass  # a read-only workspace just goes without a cache

    @staticmethod
    def _prepare(folder: str) -> None:
        if os.path.isdir(folder):
            return
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, ".gitignore"), "w") as handle:
            handle.write("# Created by fx-lsp automatically.\n*\n")
        with open(os.path.join(folder, "CACHEDIR.TAG"), "w") as handle:
            handle.write("Signature: 8a477f597d28d172789f06886806bc55\n"
                         "# This file is a cache directory tag created by fx-lsp.\n")
