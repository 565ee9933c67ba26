"""FX008: a failure inside einops (or einx) called on a traced value, whatever it raised.

einops asks for the tensor's backend by its type (``Tensor type unknown to einops``) and its
layers look up a recipe by ``input.ndim`` (a ``KeyError`` on a Proxy); any failure whose
frames below the user's innermost one include the library is this one problem, and the
advice depends on how the user's line calls it (``fxcore.workspace.traced_libraries``).
"""

from __future__ import annotations

from fxcore.model.results import CODES
from fxcore.rules import BY_CODE
from fxcore.worker.capture.fx.tracer import MESSAGES
from fxcore.worker.job.capture_target import RecordedFailure
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.source.locate import to_frame
from fxcore.workspace.traced_libraries import LibraryCall, call_at, calls_in, traced_library

KIND = "einops"


def on_library(item: RecordedFailure, context: JobContext, cause: str) -> RecordedFailure:
    """``item`` as FX008 when it happened inside einops or einx, else unchanged. ``cause``
    is what went wrong there (the exception, or the recorded failure's title)."""
    library = traced_library([position.filename for position in item.stack],
                             context.is_workspace_path)
    if library is None:
        return item
    call = _user_call(item, context)
    layer = None if call is not None else context.third_party_layer(
        [to_frame(position, context.sources) for position in item.stack])
    if call is not None:
        called, advice = f"{library}.{call.function}()", _advice(call)
    elif layer is not None:
        # JobContext.failure advises making it a leaf module, as for any library layer.
        called, advice = f"The {library} layer `{layer.replace(':', '.')}`", ""
    else:
        called, advice = library, _advice(None)
    message = MESSAGES[KIND].format(detail=f"{called} was given a traced value ({cause})")
    return RecordedFailure(kind=KIND, message=message + advice, stack=item.stack)


def recorded_cause(item: RecordedFailure) -> str:
    """What a failure the tracer recovered from is, in words: its code's title."""
    return f"{BY_CODE[CODES[item.kind]].title.rstrip('.')} inside it"


def _user_call(item: RecordedFailure, context: JobContext) -> LibraryCall | None:
    """The library call on the user's innermost line, found from the file's imports."""
    for position in reversed(item.stack):
        if context.is_workspace_path(position.filename):
            frame = to_frame(position, context.sources)
            tree = context.sources.tree(frame.path)
            if tree is None:
                return None
            return call_at(calls_in(tree, context.sources.lines(frame.path)), frame.range)
    return None


def _advice(call: LibraryCall | None) -> str:
    """The fix for the way the line calls the library."""
    if call is None or not call.has_fix:
        return (" Move the call into a module-level function marked with torch.fx.wrap, "
                "which the graph calls as one node.")
    if call.imported_name is not None:
        return (f' Call torch.fx.wrap("{call.imported_name}") at module scope of this file (a '
                f"quick fix does it): {call.function}() still runs as before, and the graph "
                "calls it as one node.")
    return (f' Add autowrap-modules = ["{call.library}"] under [tool.fx-lsp] (a quick fix '
            f"does it) to record {call.library}'s functions as graph nodes; a tracer of your "
            f"own needs the same: torch.fx.Tracer(autowrap_modules=(math, {call.library})).")
