"""Give a class the verdict of the instance a traced root built, when it has no better one.

Workers trace, after each root, the workspace classes the root holds as submodules
(``FileResult.derived_modules``, ``arguments.origin == "parent"``). Which verdict a class
shows is decided here, over all the results of a run, because a class and the roots that
build it usually live in different files. Pure data in and out: no torch, no user code.
"""

from __future__ import annotations

import dataclasses

from fxcore.model.instance_trust import describe, does_not_fit, parent_rank
from fxcore.model.results import ArgumentOrigin, FileResult, ModuleResult

#: A class's own verdict with arguments from these sources is replaced by a parent's.
REPLACEABLE_ORIGINS: frozenset[ArgumentOrigin] = frozenset(
    {"call-site", "config-class", "guessed"}
)
def needs_parent(module: ModuleResult, derived: ModuleResult) -> bool:
    """True when the parent-built instance's verdict is to be shown instead of the class's own.

    A class that has an instance of its own (built from found or guessed arguments) keeps
    its verdict where the parent's instance fails it (``_worse_fit``): a child taken from a
    guessed parent must not lose what its own instance gets to one that does not fit, has no
    inputs, or whose tracing the worker was stopped in (how far a parent got before its time
    ran out must not decide a verdict). Else the parent's replaces the class's own when that
    does not fit it (FX105), or when the class had no configured or default arguments (it
    was not traced for want of arguments, or was traced with found or guessed ones) and the
    parent's own arguments came from a source at least as trusted as the class's: an
    instance a guessed root built is no better than the class's own guess, and worse than
    its literal call site."""
    if module.arguments is not None and _worse_fit(derived, module):
        return False
    if does_not_fit(module):
        return True
    if module.arguments is not None:
        assert derived.arguments is not None
        return module.arguments.origin in REPLACEABLE_ORIGINS and (
            parent_rank(derived.arguments.parent_origin) <= parent_rank(module.arguments.origin))
    return module.status == "not-traced"


def may_take_parent(module: ModuleResult) -> bool:
    """True when some parent-built instance's verdict could replace the class's own
    (``needs_parent`` for some derived verdict): the class's own verdict is then not final
    until every root that could build it has been traced."""
    if does_not_fit(module):
        return True
    if module.arguments is not None:
        return module.arguments.origin in REPLACEABLE_ORIGINS
    return module.status == "not-traced"


def _worse_fit(derived: ModuleResult, own: ModuleResult) -> bool:
    """True when the parent-built instance is no verdict on the class where its own may be:
    stopped (a time-out or crash, FX102), not traced (does not fit, FX105/FX406/FX504, or no
    inputs, FX103), or with shapes that do not propagate (FX300) where the own ones do."""
    return _stopped(derived) or derived.status == "not-traced" \
        or bool(derived.shape_errors and not own.shape_errors)


def _stopped(module: ModuleResult) -> bool:
    """True when the worker was stopped (time-out, crash) while tracing the instance."""
    return any(failure.kind in {"timeout", "crash"} for failure in module.failures)


def _parent_preference(module: ModuleResult) -> tuple[bool, bool, int, bool, str, str]:
    arguments = module.arguments
    assert arguments is not None
    return (_stopped(module), does_not_fit(module), parent_rank(arguments.parent_origin),
            bool(module.shape_errors), arguments.parent or "", arguments.path or "")


def parent_candidates(results: list[FileResult]) -> dict[tuple[str, str, str], ModuleResult]:
    """Per (file, class name, capture mode), the derived verdict to use: one that finished
    tracing and fits, from the parent built from the best argument source, then one whose
    shapes propagate, then the first by name and path."""
    best: dict[tuple[str, str, str], ModuleResult] = {}
    for result in results:
        for derived in result.derived_modules:
            if derived.arguments is None:
                continue
            key = (derived.path, derived.class_name, derived.mode)
            if key not in best or _parent_preference(derived) < _parent_preference(best[key]):
                best[key] = derived
    return best


def apply_parent_arguments(results: list[FileResult]) -> list[FileResult]:
    """The results with each class that needs it given a parent-built verdict
    (``needs_parent``).

    New ``FileResult`` objects are returned for the files that change; the inputs are not
    modified (they may be cached or shared)."""
    candidates = parent_candidates(results)
    if not candidates:
        return results
    merged = []
    for result in results:
        modules = []
        for module in result.modules:
            derived = candidates.get((module.path, module.class_name, module.mode))
            if derived is not None and needs_parent(module, derived):
                module = dataclasses.replace(derived, qualified_name=module.qualified_name)
            modules.append(module)
        changed = any(new is not old for new, old in zip(modules, result.modules, strict=True))
        merged.append(dataclasses.replace(result, modules=modules) if changed else result)
    return merged


def parent_description(module: ModuleResult) -> str | None:
    """``ViT.transformer.layers.0`` for a verdict traced as built by a parent, else None."""
    arguments = module.arguments
    if arguments is None or arguments.origin != "parent" or not arguments.parent:
        return None
    parent_class = arguments.parent.rpartition(":")[2]
    return f"{parent_class}.{arguments.path}" if arguments.path else parent_class


def traced_instance(module: ModuleResult) -> tuple[bool, str] | None:
    """Which instance a verdict is about, when it is not the class as configured or built
    with its defaults: (True, ``ViT.blocks.0``) when a traced parent built it, (False, the
    arguments' words) when found or guessed arguments did; None otherwise."""
    built_by = parent_description(module)
    if built_by is not None:
        return True, built_by
    found = describe(module.arguments)
    return None if found is None else (False, found)
