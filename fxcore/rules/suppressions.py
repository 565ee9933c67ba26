"""Suppression comments that silence nothing (FX900)."""

from fxcore.rules.rule import Rule

FX900 = Rule(
    code="FX900",
    kinds=("unused-suppression",),
    severity="warning",
    docs="""\
**A suppression comment that silences nothing**: a `# noqa: FX...` or `# fx-lsp: ignore[...]`
whose codes are not reported on its line (or on the lines it governs, a backslash
continuation's or a multi-line string's, or through the call on it), or a `# fx-lsp: skip`
on a line that declares no class. Only comments inside the classes traced in the same run
are reported, and a bare `# noqa` or one naming only other tools' codes never is.

Fix: remove the comment or the codes it no longer needs (a quick fix does it).
""",
)


RULES = (FX900,)
