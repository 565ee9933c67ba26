"""A file's result from a child that traced only its changed classes, and the verdicts kept
for the others (``fxcore.host.class_cache``): every class's verdicts in the file's class
order, as a trace of the whole file sends them."""

from __future__ import annotations

import dataclasses

from fxcore.model.results import FileResult, ModuleResult
from fxcore.workspace.discovery import ParsedFile


def with_kept(result: FileResult, kept: dict[str, list[ModuleResult]],
              parsed: ParsedFile) -> FileResult:
    """``result`` with the verdicts ``kept`` (class name -> its verdicts, moved to the text in
    ``parsed``), each class's together, ordered by the line of its ``class``."""
    by_class: dict[str, list[ModuleResult]] = {name: list(modules)
                                               for name, modules in kept.items()}
    for module in result.modules:
        by_class.setdefault(module.class_name, []).append(module)
    classes = parsed.classes

    def line(name: str) -> int:
        source = classes.get(name)
        return source.name_span.line if source is not None else 0

    ordered = sorted(by_class, key=line)
    return dataclasses.replace(result, modules=[module for name in ordered
                                                for module in by_class[name]])
