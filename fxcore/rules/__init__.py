"""The one registry of diagnostic codes.

Each family module declares its codes as ``Rule``s: the failure kinds a code reports, its
severity, the capture mode it belongs to, its message and its documentation. Everything else
reads them from here: the codes of results (``fxcore.model.results.CODES``), the report's
severities, ``fx-lsp explain``, SARIF rules, and the documentation site's page of each code,
generated as the site is built (``fxcore.rules.documentation``).
Adding a code: a ``Rule`` in its family here, and the module that detects it.
"""

from __future__ import annotations

from fxcore.rules import (
    compile,
    export,
    files,
    hints,
    onnx,
    recompiles,
    shapes,
    suppressions,
    tracing,
)
from fxcore.rules.rule import Rule, Severity

RULES: tuple[Rule, ...] = (*tracing.RULES, *files.RULES, *hints.RULES, *shapes.RULES,
                           *suppressions.RULES, *export.RULES, *compile.RULES,
                           *recompiles.RULES, *onnx.RULES)
BY_CODE: dict[str, Rule] = {rule.code: rule for rule in RULES}
#: How the codes start: this project's own, and PyTorch's graph breaks (compile mode).
CODE_PREFIXES: tuple[str, ...] = ("FX", "GB")
#: Failure or hint kind -> its code.
CODE_OF_KIND: dict[str, str] = {kind: rule.code for rule in RULES for kind in rule.kinds}

__all__ = ["BY_CODE", "CODE_OF_KIND", "CODE_PREFIXES", "RULES", "Rule", "Severity"]
