"""A graph break at the test of a ``while`` loop, and what real data makes of it.

Real torch.compile resumes after such a break in a function of its own
(``torch_dynamo_resume_in_<function>_at_<line>``), which holds the rest of the loop; its next
iteration breaks at the test again and resumes in a new such frame, called from the last. The
frames nest, one per iteration, so a loop that real data runs about as many times as Python's
recursion limit ends in ``RecursionError`` under torch.compile, where eagerly it runs (a
fixed-point iteration that does not converge on the instance's weights, capped at 1000 steps).
On tensors without data fx-lsp runs such a loop at most once (``values_read``: a condition on
data is true the first time at a line, false after) and cannot know how often real data runs
it: the break's message says so, so that a user who meets the RecursionError knows its cause.
"""

from __future__ import annotations

import ast
import functools
import linecache

from fxcore.worker.job.capture_target import RecordedFailure


@functools.lru_cache(maxsize=64)
def _while_test_lines(filename: str) -> frozenset[int]:
    """The lines of the tests of the ``while`` loops of the file, as Python reads it now."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except (SyntaxError, ValueError):
        return frozenset()
    return frozenset(line for node in ast.walk(tree) if isinstance(node, ast.While)
                     for line in range(node.test.lineno,
                                       (node.test.end_lineno or node.test.lineno) + 1))


def while_test_note(failure: RecordedFailure) -> str | None:
    """What the message of a break at a ``while`` loop's test adds (the module's docstring);
    None for a break elsewhere."""
    if not failure.stack:
        return None
    innermost = failure.stack[-1]
    if innermost.line not in _while_test_lines(innermost.filename):
        return None
    return (" (fx-lsp: the break is at the test of a `while` loop; real torch.compile resumes "
            "each iteration after it in a new frame nested in the last, so where real data runs "
            "the loop about as many times as Python's recursion limit (1000 by default), "
            "compiling it ends in RecursionError although it runs eagerly. On tensors without "
            "data fx-lsp ran the loop at most once: how often real data runs it is unknown "
            "here.)")
