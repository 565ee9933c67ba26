"""A running job's verdicts so far (``fxcore.model.partial_result``): gathered from the engine's
children as they send them (``fxcore.host.trace_handle.VerdictListener``), on the thread that
reads them, and taken by an editor whenever it chooses to show them.

Only what the job's final result says the same way is given: a class once every mode judged
it (the first verdict in each, as the engine keeps), and not while a parent-built instance's
verdict could still replace its own (``parent_arguments.may_take_parent``: the root that builds
it may come later). The verdicts kept from an earlier trace (``fxcore.host.class_cache``) are
given with them, in the file's class order, as ``kept_verdicts.with_kept`` orders the final
result. A notebook's verdicts get their final words from its file-level data
(``preparation.explain_notebook_names``): none are given before the end.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from fxcore.checking.kept_verdicts import with_kept
from fxcore.model.job_spec import TraceJob
from fxcore.model.partial_result import PartialResult
from fxcore.model.results import FileResult, ModuleResult
from fxcore.reporting.parent_arguments import may_take_parent
from fxcore.workspace.discovery import ParsedFile


def _final(modules: list[ModuleResult]) -> bool:
    return not any(may_take_parent(module) for module in modules)


class PartialVerdicts:
    """A job's verdicts as they arrive; ``ready`` is called (on the reading thread) when there
    are new ones, once until the next ``snapshot``: a file of 10,000 classes wakes its
    editor as often as the editor takes what came, not once per class."""

    def __init__(self, job: TraceJob, parsed: ParsedFile, kept: dict[str, list[ModuleResult]],
                 ready: Callable[[], None]) -> None:
        self._path = os.path.abspath(job.path)
        self._modes = job.config.modes
        self._parsed = parsed
        self._kept = {name: modules for name, modules in kept.items() if _final(modules)}
        self._kept_names = set(kept)
        self._ready = ready
        self._lock = threading.Lock()
        self._announced: dict[str, None] = {}
        #: Each class's verdicts by mode, in the order they came.
        self._verdicts: dict[str, dict[str, ModuleResult]] = {}
        #: The classes judged in every mode, in the order they were.
        self._judged: list[str] = []
        self._signalled = False

    def announced(self, names: list[str]) -> None:
        with self._lock:
            self._announced.update(dict.fromkeys(names))

    def judged(self, module: ModuleResult) -> None:
        with self._lock:
            modes = self._verdicts.setdefault(module.class_name, {})
            if module.mode in modes:
                return  # judged again by a later child: the engine keeps the first
            modes[module.mode] = module
            if not all(mode in modes for mode in self._modes):
                return
            self._judged.append(module.class_name)
            if self._signalled:
                return
            self._signalled = True
        self._ready()

    def snapshot(self) -> PartialResult:
        """The verdicts so far; ``ready`` is called again when more come."""
        with self._lock:
            self._signalled = False
            judged = {name: list(self._verdicts[name].values()) for name in self._judged}
            announced = list(self._announced)
        shown = {name: modules for name, modules in judged.items() if _final(modules)}
        result = with_kept(FileResult(path=self._path), {**self._kept, **shown}, self._parsed)
        # The classes the job has and ``result`` lacks: not judged yet, or not finally.
        classes = {*announced, *self._kept_names}
        unjudged = sum(1 for name in classes if name not in shown and name not in self._kept)
        return PartialResult(result, unjudged)
