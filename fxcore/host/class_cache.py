"""Verdicts kept per class, beside the file entries of ``fxcore.host.cache``: a save that
changes a file's text but not what one of its classes depends on
(``fxcore.workspace.class_keys``) reuses that class's verdicts, moved to where the class is now
(``fxcore.model.line_shift``); the child imports the file still (an import error must still
be found) and traces only the other classes (``TraceJob.reused_classes``).

A class's entry (in ``.fx-lsp-cache/classes/``) holds its verdicts of the job's modes, under
a key of the job (engine, distributions, path, configuration, modes:
``fxcore.host.cache.job_parts``), the class's key in its file's text, and the workspace's
calls of it (a call site in its own file counted from the class's first line); and the
hashes of the other workspace files the import compiled, which must still match, as a file
entry's must.

What is kept is what a fresh trace would give again whatever the file's other classes are:

- only results that hold no verdict of a submodule instance (``derived_modules``): which
  classes a root traces as its submodules depends on what the file's earlier roots traced;
- no verdict traced on inputs learned from how the workspace calls the class (origin
  ``example``): the calling files are not among the hashes;
- no time-out, crash or unreached class, nothing of a job that names the classes it traces
  or of a file with file-level errors, and nothing of a notebook;
- a verdict that names a line of its file without the file (``line 12``) serves only a class
  that has not moved.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from dataclasses import dataclass, field

from fxcore.host.cache import ResultCache, job_parts, still_current
from fxcore.model.job_spec import TraceJob
from fxcore.model.line_shift import Unmovable, shifted
from fxcore.model.not_reached import is_not_reached
from fxcore.model.results import FileResult, ModuleResult
from fxcore.protocol import result_codec
from fxcore.workspace.class_keys import ClassKey, class_keys
from fxcore.workspace.discovery import ParsedFile
from fxcore.workspace.file_access import text_hash
from fxcore.workspace.notebook.cells import is_notebook

_TRANSIENT_KINDS = frozenset({"timeout", "crash"})
#: The cache's subfolder of class entries (``.fx-lsp-cache/classes/``).
KIND = "classes"


@dataclass
class ClassEntry:
    """What a class entry's body holds, decoded field by field by
    ``fxcore.protocol.result_codec``."""

    key: str
    #: The class's first line when it was traced: its verdicts' lines are moved from there.
    first_line: int
    #: The other workspace files the import compiled: absolute path -> content hash.
    dependencies: dict[str, str]
    missing_modules: dict[str, list[str]]
    #: Its verdicts, one per mode of the job, in the order they came.
    modules: list[ModuleResult]


@dataclass
class Reuse:
    """A job's classes as keyed before it runs, and the verdicts kept for some of them."""

    #: Class name -> its entry's key and where it starts in the text the job traces.
    keys: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: Class name -> its kept verdicts, moved to where the class is now.
    kept: dict[str, list[ModuleResult]] = field(default_factory=dict)


def _site_in_file(site: str, relative: str, first_line: int) -> str:
    """A call site in the class's own file counted from the class's first line."""
    match = re.fullmatch(rf"{re.escape(relative)}:(\d+)", site)
    return f"{relative}:+{int(match.group(1)) - first_line}" if match else site


def _entry_key(job: TraceJob, name: str, key: ClassKey) -> str:
    relative = os.path.relpath(job.path, job.workspace_root).replace(os.sep, "/")
    sites = [job.call_sites.get(name), *job.other_call_sites.get(name, ())]
    calls = [None if site is None else (_site_in_file(site.site, relative, key.first_line),
                                        site.args, site.kwargs, site.method, site.partial)
             for site in sites]
    builders = [(builder.function, builder.line - key.first_line, builder.passes_pretrained)
                for builder in job.builders.get(name, ())]
    digest = hashlib.sha256()
    for part in ("class", *job_parts(job), name, key.digest, repr(calls), repr(builders),
                 repr(sorted(job.keyword_values.get(name, {}).items()))):
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()


def _keepable(modules: list[ModuleResult], modes: tuple[str, ...]) -> bool:
    """A verdict per mode, each one a fresh trace gives again."""
    return sorted(module.mode for module in modules) == sorted(modes) and not any(
        is_not_reached(module)
        or (module.inputs is not None and module.inputs.origin == "example")
        or any(failure.kind in _TRANSIENT_KINDS for failure in module.failures)
        for module in modules)


class ClassCache:
    """Per-class entries, stored and signed as ``files``' are."""

    def __init__(self, files: ResultCache) -> None:
        self.files = files
        #: Verdicts reused, and classes looked up without one to reuse.
        self.hits = 0
        self.misses = 0

    def reuse(self, job: TraceJob, parsed: ParsedFile) -> Reuse:
        """The keys of the job's classes in ``parsed`` (the text it traces) and the verdicts
        kept for those unchanged; nothing for a job whose classes are all traced again."""
        if is_notebook(job.path) or job.only_classes or job.reused_classes \
                or parsed.tree is None or parsed.text is None:
            return Reuse()
        reuse = Reuse()
        for name, key in class_keys(parsed.text, parsed.tree).items():
            if name not in parsed.classes:
                continue
            entry_key = _entry_key(job, name, key)
            reuse.keys[name] = (entry_key, key.first_line)
            kept = self._kept(job, entry_key, key.first_line)
            if kept is None:
                self.misses += 1
            else:
                self.hits += 1
                reuse.kept[name] = kept
        return reuse

    def _kept(self, job: TraceJob, key: str, first_line: int) -> list[ModuleResult] | None:
        try:
            body = self.files.read_signed(job, key, KIND)
            entry = None if body is None \
                else result_codec.decode(ClassEntry, result_codec.loads(body))
            if entry is None or entry.key != key \
                    or not still_current(job, entry.dependencies, entry.missing_modules):
                return None
            return [shifted(module, job.path, first_line - entry.first_line)
                    for module in entry.modules]
        except Unmovable:
            return None
        except Exception:  # whatever goes wrong with an entry, trace again
            return None

    def put(self, job: TraceJob, parsed: ParsedFile, reuse: Reuse, result: FileResult) -> None:
        """Keep the verdicts of each keyed class that ``result`` traced (not reused) from the
        text in ``parsed``."""
        path = job.path
        if result.errors or result.derived_modules or parsed.text is None \
                or result.imported_hashes.get(path) != text_hash(parsed.text) \
                or not set(result.imported_files) <= set(result.imported_hashes):
            return  # not the text keyed, or not a result to vouch for per class
        dependencies = {other: digest for other, digest in result.imported_hashes.items()
                        if other != path}
        by_class: dict[str, list[ModuleResult]] = {}
        for module in result.modules:
            by_class.setdefault(module.class_name, []).append(module)
        for name, modules in by_class.items():
            if name not in reuse.keys or name in reuse.kept \
                    or not _keepable(modules, job.config.modes):
                continue
            key, first_line = reuse.keys[name]
            with contextlib.suppress(Exception):  # an entry not written is traced again
                self.files.write_signed(job, key, result_codec.dumps(ClassEntry(
                    key, first_line, dependencies, result.missing_modules, modules)), KIND)
