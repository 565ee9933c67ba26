"""A result cache, like ruff's: ``<workspace>/.fx-lsp-cache/``, ignored by git.

A file's result depends on its text, the configuration, the engine and torch versions, and
the text of every workspace file its import loaded (a submodule's file, a helper's file).
The first four are known before tracing and make the entry's key (the file's text as it was
when the job started); the imported files are only known after, so each entry stores the
hashes of the texts the worker actually imported (computed in the worker, right after the
import) and is used only while all of them still match (unsaved buffers count as the file's
text). A file edited while it is traced, or one that rewrites itself, thus never vouches
for a result under its new text.

Entries are JSON, rebuilt into the model's dataclasses and checked on load: the CLI and the
server never unpickle anything from the workspace, and a corrupt entry is just a miss.

Results that a time-out or a crash produced are not stored: the next run may go better.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import sys
import tempfile
from dataclasses import asdict
from typing import Any

from fxcore.job_spec import TraceJob
from fxcore.results import (
    Arguments,
    ExampleInputs,
    Failure,
    FileResult,
    Frame,
    GraphNode,
    GraphNodeInfo,
    Hint,
    ModuleResult,
    Range,
)
from fxcore.version import VERSION
from fxcore.workspace import source_text

CACHE_FOLDER = ".fx-lsp-cache"
_TRANSIENT_KINDS = frozenset({"timeout", "crash"})


def _engine_fingerprint() -> str:
    """Changes whenever fxcore's code, torch or Python changes."""
    digest = hashlib.sha256()
    package = os.path.dirname(os.path.abspath(__file__))
    for folder, subfolders, names in os.walk(package):
        subfolders.sort()  # the worker's code is in subpackages: every one counts
        for name in sorted(names):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, "rb") as handle:
                    digest.update(os.path.relpath(path, package).encode() + handle.read())
    # The version from the package metadata: importing torch here would cost the CLI and
    # the server, which never run torch themselves, more than a second.
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        digest.update(importlib.metadata.version("torch").encode())
    digest.update(sys.version.encode())
    digest.update(VERSION.encode())
    return digest.hexdigest()


_FINGERPRINT = _engine_fingerprint()


def _absolute_overlays(job: TraceJob) -> dict[str, str]:
    return {os.path.abspath(path): text for path, text in job.overlays.items()}


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", errors="surrogatepass")).hexdigest()


def _text_hash(path: str, overlays: dict[str, str]) -> str | None:
    text = source_text(path, overlays)
    return None if text is None else text_hash(text)


def _failure(data: dict[str, Any]) -> Failure:
    return Failure(**{**data, "frames": [Frame(**frame) for frame in data["frames"]]})


def _module(data: dict[str, Any]) -> ModuleResult:
    forward, arguments, inputs = data["forward"], data["arguments"], data["inputs"]
    return ModuleResult(**{
        **data,
        "forward": Range(**forward) if forward is not None else None,
        "arguments": Arguments(**arguments) if arguments is not None else None,
        "failures": [_failure(failure) for failure in data["failures"]],
        "shape_errors": [_failure(failure) for failure in data["shape_errors"]],
        "inputs": ExampleInputs(**inputs) if inputs is not None else None,
        "hints": [Hint(**hint) for hint in data["hints"]],
        "graph": [GraphNode(**node) for node in data["graph"]],
        "line_nodes": {(path, line): [GraphNodeInfo(**node) for node in nodes]
                       for path, line, nodes in data["line_nodes"]},
    })


def result_to_json(result: FileResult) -> dict[str, Any]:
    """``asdict`` of the result, with each ``line_nodes`` as ``[path, line, nodes]`` rows:
    JSON object keys can only be strings."""
    data = asdict(result)
    for module in (*data["modules"], *data["derived_modules"]):
        module["line_nodes"] = [[path, line, nodes]
                                for (path, line), nodes in module["line_nodes"].items()]
    return data


def result_from_json(data: Any) -> FileResult:
    """Rebuild a ``FileResult`` from ``result_to_json`` output; ``TypeError``/``KeyError``/
    ``AttributeError``/``ValueError`` when the data does not have the model's shape."""
    result = FileResult(**{
        **data,
        "modules": [_module(module) for module in data["modules"]],
        "derived_modules": [_module(module) for module in data["derived_modules"]],
        "errors": [_failure(failure) for failure in data["errors"]],
    })
    if not (isinstance(result.path, str) and isinstance(result.output, str)
            and all(isinstance(module.class_name, str) and isinstance(module.line, int)
                    for module in result.modules)):
        raise TypeError("not a FileResult")
    return result


class ResultCache:
    """Results of ``TraceJob``s stored below each job's workspace root."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _folder(job: TraceJob) -> str:
        return os.path.join(os.path.abspath(job.workspace_root), CACHE_FOLDER)

    @staticmethod
    def key(job: TraceJob) -> str | None:
        """The entry's key, from the job and its file's current text (``None``: unreadable)."""
        path = os.path.abspath(job.path)
        text_hash = _text_hash(path, _absolute_overlays(job))
        if text_hash is None:
            return None
        digest = hashlib.sha256()
        for part in (_FINGERPRINT, path, text_hash, repr(asdict(job.config)),
                     repr(sorted(job.only_classes)), repr(sorted(job.call_sites.items()))):
            digest.update(part.encode("utf-8") + b"\0")
        return digest.hexdigest()

    def seconds(self, job: TraceJob) -> float | None:
        """How long the cached trace of the job's current text took, if there is one (its
        imports are not checked: an estimate of the cost, for splitting work)."""
        key = self.key(job)
        if key is None:
            return None
        try:
            with open(os.path.join(self._folder(job), key[:2], key), "rb") as handle:
                seconds = json.loads(handle.read())["result"]["seconds"]
        except (OSError, ValueError, TypeError, KeyError):
            return None
        return float(seconds) if isinstance(seconds, (int, float)) else None

    def get(self, job: TraceJob) -> FileResult | None:
        key = self.key(job)
        entry_path = os.path.join(self._folder(job), key[:2], key) if key else None
        try:
            if entry_path is None:
                raise FileNotFoundError
            with open(entry_path, "rb") as handle:
                entry = json.loads(handle.read())
            if entry["key"] != key:
                raise KeyError("key")
            dependencies = entry["dependencies"]
            result = result_from_json(entry["result"])
            overlays = _absolute_overlays(job)
            current = all(isinstance(digest, str) and _text_hash(dependency, overlays) == digest
                          for dependency, digest in dependencies.items())
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
            current = False  # missing, corrupt or of another shape: trace again
        if not current:
            self.misses += 1
            return None
        self.hits += 1
        result.from_cache = True
        return result

    def put(self, job: TraceJob, result: FileResult, key: str | None = None) -> None:
        """Store ``result`` under ``key``: ``self.key(job)`` taken before the job ran (the
        engine does), so the entry is for the text that was traced even if the file changed
        meanwhile; by default the key of the file's text now."""
        key = key if key is not None else self.key(job)
        failures = [*result.errors,
                    *(f for m in [*result.modules, *result.derived_modules] for f in m.failures)]
        if key is None or any(failure.kind in _TRANSIENT_KINDS for failure in failures):
            return
        path = os.path.abspath(job.path)
        dependencies = dict(result.imported_hashes)
        if not dependencies and not result.imported_files:
            # Not imported (no class to trace): the verdict depends on this file's text only.
            dependencies = {path: _text_hash(path, _absolute_overlays(job))}
        if path not in dependencies or not set(result.imported_files) <= set(dependencies):
            return  # the worker could not say what it imported: nothing to vouch for it
        folder = self._folder(job)
        try:
            self._prepare(folder)
            target_folder = os.path.join(folder, key[:2])
            os.makedirs(target_folder, exist_ok=True)
            # Write then rename, so a reader never sees half an entry.
            entry = {"key": key, "dependencies": dependencies, "result": result_to_json(result)}
            with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=target_folder,
                                             delete=False) as handle:
                json.dump(entry, handle)
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
