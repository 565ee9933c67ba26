"""What a running trace publishes before a phase ends (``fx_lsp.server.documents``): the
verdicts its children sent so far that the phase's result keeps (``CheckHandle.partial``), with
the trace's finished phases, each class as the final publish will show it. A file of thousands
of classes, which takes up to its ``file-timeout``, shows them as they come."""

from __future__ import annotations

import dataclasses
import functools

from fx_lsp.server.document_state import Document
from fxcore.api.session import ParentVerdicts
from fxcore.model.partial_result import PartialResult
from fxcore.model.results import FileResult
from fxcore.reporting.mode_phases import merge_phases

#: The least time between two publishes of a running trace's verdicts so far, and from the
#: start of its stage to the first: a file of thousands of classes shows its verdicts as they
#: come without flooding the client, and a file traced quicker gets its result alone.
PARTIAL_SECONDS = 1.0
#: The fewest classes a job has whose verdicts so far are published: a file of a few classes,
#: however slow, gets its result alone (a client may take a document's first publish as
#: its trace's), one of many shows them as they come.
PARTIAL_CLASSES = 20


def verdicts_so_far(document: Document, phase: tuple[int, int], partial: PartialResult,
                    parent_verdicts: ParentVerdicts) -> FileResult:
    """The running ``phase``'s ``partial`` verdicts merged in phase order with the trace's
    finished phases (those published: not a held phase still waiting), with parent verdicts
    (the file's own derived verdicts, not in yet, remembered only from its final result)."""
    results = {key: result for key, result in document.phase_results.items()
               if key not in document.waiting_phases}
    results[phase] = partial.result
    result = parent_verdicts.apply(
        functools.reduce(merge_phases, [results[key] for key in sorted(results)]),
        remember=False)
    if not result.imported_files and document.result is not None:
        # What its last trace imported: a change of one of them outdates this trace too.
        result = dataclasses.replace(result, imported_files=document.result.imported_files)
    return result
