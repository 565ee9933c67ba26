"""dynamo's errors as the modes that run dynamo read them (``compile``, and the strict pass of
``export``): the user stack dynamo attaches to an error (``real_stack``, a
``traceback.StackSummary``; its traceback holds only dynamo's frames), the graph-break type
it names (``gb_type`` -> PyTorch's ``GBnnnn``), and the parts of its message.
"""

from __future__ import annotations

import re
from typing import Any

from fxcore.rules import BY_CODE
from fxcore.rules.compile import CODE_OF_GRAPH_BREAK_TYPE
from fxcore.worker.source.locate import RawPosition, is_plumbing, traceback_positions


def stack_summary_positions(stack: Any) -> list[RawPosition]:
    """A ``traceback.StackSummary`` (outermost first) as raw positions, plumbing removed (as
    ``locate`` removes it from live stacks and tracebacks): strict export's starts in
    dynamo's own wrapper of the model."""
    return [RawPosition(frame.filename, frame.name, frame.lineno or 0,
                        getattr(frame, "end_lineno", None), getattr(frame, "colno", None),
                        getattr(frame, "end_colno", None))
            for frame in stack or () if not is_plumbing(frame.filename)]


def has_user_stack(error: BaseException) -> bool:
    """Whether dynamo attached the user's stack to ``error`` (private to torch: a release
    may stop doing so, and then only the traceback, dynamo's own frames, is left)."""
    return bool(getattr(error, "real_stack", None))


def error_positions(error: BaseException) -> list[RawPosition]:
    """The user stack dynamo attached to ``error``, else its traceback."""
    if has_user_stack(error):
        return stack_summary_positions(error.real_stack)  # type: ignore[attr-defined]
    return traceback_positions(error.__traceback__)


def graph_break_type(error: BaseException) -> str:
    """The graph-break type of ``error``: its ``gb_type`` (torch 2.11 on), else the first
    line of its message, where torch 2.10's ``format_graph_break_message`` puts it."""
    text = str(error).strip()
    return getattr(error, "gb_type", None) or (text.splitlines()[0].strip() if text else "")


def graph_break_code(error: BaseException) -> str | None:
    """PyTorch's ``GBnnnn`` of the graph break ``error`` is, when this torch's registry
    knows its type; None for another error."""
    code = CODE_OF_GRAPH_BREAK_TYPE.get(graph_break_type(error))
    return code if code in BY_CODE else None


def summary(text: str) -> tuple[str, str, list[str]]:
    """The first line of dynamo's message of a break or error, its "Explanation:" line
    (empty if none) and its "Hint:" lines, formatted for this break (the registry's are
    templates), without the debug context and stack it also carries."""
    lines = [line.strip() for line in text.strip().splitlines()]
    explanation = next((line.removeprefix("Explanation:").strip() for line in lines
                        if line.startswith("Explanation:")), "")
    hints = [line.removeprefix("Hint:").strip() for line in lines if line.startswith("Hint:")]
    return (lines[0] if lines else ""), explanation, hints


def sentences(parts: list[str]) -> str:
    """Parts of a message joined as sentences, each ending with its own stop."""
    return " ".join(part if part.endswith((".", "?", "!")) else part + "." for part in parts)


#: The error of an operation dynamo ran on fake tensors, inside its wrapping
#: ``TorchRuntimeError: ... Dynamo failed to run FX node with fake tensors: call_function
#: <op>(*(FakeTensor(...), ...)): got RuntimeError('a and b must have same reduction dim')``.
_FAKE_RUN_ERROR = re.compile(
    r"Dynamo failed to run FX node with fake tensors: .*: got "
    r"(?P<type>\w+)\((?P<quote>['\"])(?P<message>.*)(?P=quote)\)\)?$", re.MULTILINE)


def fake_run_error(text: str) -> str | None:
    """``RuntimeError: a and b must have same reduction dim ...`` out of dynamo's wrapping of
    an operation that failed on fake tensors (the user's own error, such as a shape mismatch:
    eager code raises it too), or None for any other message."""
    match = _FAKE_RUN_ERROR.search(text)
    return f"{match['type']}: {match['message']}" if match else None
