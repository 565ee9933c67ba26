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

from fxcore.model.job_spec import TraceJob
from fxcore.model.partial_result import PartialResult
from fxcore.model.results import FileResult, ModuleResult
from fxcore.reporting.parent_arguments import may_take_parent


def _final(modules: list[ModuleResult]) -> bool:
    return not any(may_take_parent(module) for module in modules)


class PartialVerdicts:
    """A job's verdicts as they arrive; ``ready`` is called (on the reading thread) when there
    are new ones, once until the next ``snapshot``: a file of 10,000 classes wakes its
    editor as often as the editor takes what came, not once per class."""

    def __init__(self, job: TraceJob, kept: dict[str, list[ModuleResult]],
                 ready: Callable[[], None]) -> None:
        self._path = os.path.abspath(job.path)
        self._modes = job.config.modes
        self._ready = ready
        self._lock = threading.Lock()
        #: The job's classes: those its children announced, and those kept.
        self._classes: set[str] = set(kept)
        #: Each class's verdicts by mode, in the order they came.
        self._verdicts: dict[str, dict[str, ModuleResult]] = {}
        #: The verdicts of the classes judged in every mode whose verdicts are final, the kept
        #: ones first, then in the order they were judged (the file's, mostly).
        self._shown = [modules for modules in kept.values() if _final(modules)]
        self._signalled = False

    def announced(self, names: list[str]) -> None:
        with self._lock:
            self._classes.update(names)

    def judged(self, module: ModuleResult) -> None:
        with self._lock:
            modes = self._verdicts.setdefault(module.class_name, {})
            if module.mode in modes:
                return  # judged again by a later child: the engine keeps the first
            modes[module.mode] = module
            if not all(mode in modes for mode in self._modes):
                return
            verdicts = list(modes.values())
            if _final(verdicts):
                self._shown.append(verdicts)
            if self._signalled:
                return
            self._signalled = True
        self._ready()

    def snapshot(self) -> PartialResult:
        """The verdicts so far; ``ready`` is called again when more come."""
        with self._lock:
            self._signalled = False
            shown = list(self._shown)
            classes = len(self._classes)
        # In the file's class order, by the line each verdict is on (its class's name, kept
        # ones moved to this text): ``with_kept``'s order, without a parse on the caller's
        # thread (an editor's event loop).
        shown.sort(key=lambda verdicts: verdicts[0].line)
        result = FileResult(path=self._path,
                            modules=[module for verdicts in shown for module in verdicts])
        # The classes the job has and ``result`` lacks: not judged yet, or not finally.
        return PartialResult(result, max(0, classes - len(shown)), classes)
