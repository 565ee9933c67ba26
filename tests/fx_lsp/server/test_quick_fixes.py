"""Each quick fix end to end: apply its edit, let the server re-trace, and check that the
diagnostic it was attached to is gone and that no new failure appeared."""

from __future__ import annotations

import pathlib
import re
from collections import Counter

import pytest
from editor_edits import apply_workspace_edit, code_actions_for
from lsprotocol import types

from lsp_support import session, wait_for


def _failures(diagnostics: list[types.Diagnostic]) -> Counter[tuple[str, str]]:
    """Failures by code and message; line numbers in messages move when a fix adds lines."""
    return Counter(
        (str(d.code), re.sub(r":\d+\)", ")", d.message))
        for d in diagnostics
        if d.severity == types.DiagnosticSeverity.Error
    )


CASES = [
    # (which diagnostic: a line of net.py it starts on, the fix's title starts with, file edited)
    ("return x * len(x)", 'Wrap len for tracing: torch.fx.wrap("len")', "net.py"),
    ("return x * len(x)", "Replace len(x) with .size(0)", "net.py"),
    ("if x.mean() > 0:", "Decorate helper() with @torch.fx.wrap", "net.py"),
    ("class UsesBlock", "Treat Block as a leaf module", "pyproject.toml"),
    ("if flag:", "Trace UsesFlag with flag = false", "pyproject.toml"),
]


@pytest.mark.slow  # over 12 s in the loaded fast tier
@pytest.mark.parametrize(("line_text", "title", "edited"), CASES, ids=[c[1][:24] for c in CASES])
async def test_quick_fix_makes_the_trace_pass(
    workspace: pathlib.Path, line_text: str, title: str, edited: str
) -> None:
    net = workspace / "pkg" / "net.py"
    (line,) = [i for i, text in enumerate(net.read_text().splitlines()) if line_text in text]
    async with session(workspace) as client:
        uri = client.open(net)
        before = await client.diagnostics_for(uri, version=1)
        (target,) = [d for d in before if d.range.start.line == line and d.severity == 1]
        actions = await code_actions_for(client, uri, target)
        (action,) = [a for a in actions if a.title.startswith(title)]
        assert action.kind == types.CodeActionKind.QuickFix
        assert list(action.diagnostics) == [target]
        (edit,) = [c for c in action.edit.document_changes if isinstance(c, types.TextDocumentEdit)]
        assert edit.text_document.uri.endswith(edited)

        mark = len(client.published)
        await apply_workspace_edit(client, action.edit)
        after = await client.diagnostics_for(uri, after=mark)
        assert target.message not in {d.message for d in after if d.range == target.range}
        new_failures = _failures(after) - _failures(before)
        assert not new_failures, new_failures
        assert _failures(after).total() < _failures(before).total()

        # The fix is not offered again where it was applied (fxcore.fixing.fixes is idempotent too).
        again = [
            action
            for d in after
            if d.range == target.range
            for action in await code_actions_for(client, uri, d)
            if action.title.startswith(title)
        ]
        assert again == []
        traced_text = (workspace / "pkg" / "net.py").read_text()
        if title.startswith("Wrap len"):
            assert traced_text.count('torch.fx.wrap("len")') == 1
        await wait_for(lambda: client.statuses[-1]["state"] == "idle", 10, "idle")
