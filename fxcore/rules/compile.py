"""Graph breaks and errors of ``torch.compile`` (compile mode): each graph break as PyTorch's
own ``GBnnnn`` code, generated at import from the graph-break registry that torch ships
(``torch/_dynamo/graph_break_registry.json``: type, explanation, hints, and a page on
PyTorch's graph-break site); FX501 for a break whose type that registry does not know, FX502
for a compile error that is not a graph break.

The registry is feature-detected: a torch without it gives only FX501 and FX502.
"""

from __future__ import annotations

import json
import os
from importlib.util import find_spec

from fxcore.rules.graph_break_fixes import QUICK_FIXES
from fxcore.rules.rule import Rule, not_checkable_rule, not_fitting_rule, raises_everywhere_rule

#: PyTorch's page of a graph break, as ``torch._dynamo.exc.get_gbid_documentation_link``
#: builds it (``GB0170`` -> ``.../gb/gb0170.html``).
GRAPH_BREAK_SITE = "https://meta-pytorch.github.io/compile-graph-break-site/gb/"
GRAPH_BREAK_PREFIX = "graph-break-"


def graph_break_kind(code: str) -> str:
    """The failure kind of graph break ``code`` (``GB0170`` -> ``graph-break-gb0170``)."""
    return GRAPH_BREAK_PREFIX + code.lower()


def _registry() -> dict[str, list[dict[str, object]]]:
    """torch's graph-break registry, read without importing torch (the server and CLI never
    import it); empty when this torch ships none."""
    spec = find_spec("torch")
    if spec is None or spec.origin is None:
        return {}
    path = os.path.join(os.path.dirname(spec.origin), "_dynamo", "graph_break_registry.json")
    try:
        with open(path, encoding="utf-8") as file:
            registry = json.load(file)
    except (OSError, ValueError):
        return {}
    return registry if isinstance(registry, dict) else {}


def _current_entry(entries: list[dict[str, object]]) -> dict[str, object]:
    """The entry to document among a code's versions: the registry keeps a break's past
    wordings too, some of them unformatted source (``"_explanation"``); the one with the most
    hints and a plain explanation is the current text."""
    def plain(entry: dict[str, object]) -> bool:
        explanation = str(entry.get("Explanation", ""))
        return bool(explanation) and explanation[0] not in "_\"'" and "+" not in explanation
    return max(entries, key=lambda entry: (plain(entry), len(entry.get("Hints") or ())))


def _graph_break_rule(code: str, entries: list[dict[str, object]]) -> Rule:
    entry = _current_entry(entries)
    gb_type = str(entry.get("Gb_type", code))
    explanation = str(entry.get("Explanation", "")).strip()
    hints = [str(hint).strip() for hint in entry.get("Hints") or () if str(hint).strip()]
    url = f"{GRAPH_BREAK_SITE}gb{code.removeprefix('GB')}.html"
    fix = (" ".join(hints) if hints else
           "keep this code out of the compiled region (`torch.compiler.disable`).")
    quick_fix = QUICK_FIXES.get(code)
    if quick_fix is not None:
        fix += f"\n\nfx-lsp's quick fix: {quick_fix}"
    docs = f"**Graph break: {gb_type}.**\n\n{explanation}\n\nFix: {fix}\n\nPyTorch's page: {url}\n"
    message = ("torch.compile graph break (" + gb_type.replace("{", "{{").replace("}", "}}")
               + "): {detail}")
    return Rule(code=code, kinds=(graph_break_kind(code),), severity="warning",
                docs=docs, mode="compile", message=message, url=url)


_REGISTRY = _registry()
#: One rule per ``GBnnnn`` in torch's registry (none without it).
GRAPH_BREAK_RULES: tuple[Rule, ...] = tuple(
    _graph_break_rule(code, entries) for code, entries in sorted(_REGISTRY.items())
    if code.startswith("GB") and isinstance(entries, list) and entries
)
#: The registry's break types (current and past wordings) -> their code.
CODE_OF_GRAPH_BREAK_TYPE: dict[str, str] = {
    str(entry.get("Gb_type")): code for code, entries in sorted(_REGISTRY.items())
    if isinstance(entries, list) for entry in entries if isinstance(entry, dict)
}

FX501 = Rule(
    code="FX501",
    kinds=("graph-break-unknown",),
    severity="warning", mode="compile",
    message="torch.compile graph break ({detail})",
    docs="""\
**A graph break of a type PyTorch's graph-break registry does not list.** `torch.compile`
splits the graph here and runs this instruction in Python; the message keeps the break's own
type and reason, as `TORCH_LOGS=graph_breaks` prints them.

Fix: as the reason says; a break at a call into a library or a C function is usually avoided
by keeping that call outside the compiled region (`torch.compiler.disable`).
""",
)

FX502 = Rule(
    code="FX502",
    kinds=("compile-error",),
    severity="error", mode="compile",
    message="torch.compile failed: {detail}",
    docs="""\
**`torch.compile` raised an error that is not a graph break.** Either the code fails on these
inputs whatever runs it (a shape mismatch: eager code raises the same error), or only
compiling fails: for example a `try`/`except` around an operation that fails while tracing
makes dynamo raise instead of running the `except` branch.

Fix: as the error says; for an error only compiling raises, move the code in question out of
the compiled region (`torch.compiler.disable`) or remove the construct dynamo rejects.
""",
)

def is_graph_break(code: str) -> bool:
    """A graph break, known to PyTorch's registry (``GBnnnn``) or not (FX501): the class still
    compiles, in several graphs."""
    return code.startswith("GB") or code == FX501.code


FX503 = not_checkable_rule("FX503", "compile", """\
**Information: not checkable without real data (compile).** fx-lsp builds the class on the
meta device, without weights, and compiles it on tensors without data; at a graph break the
instruction runs eagerly on those meta tensors. At this line torch needs what only real
tensors have, where `torch.compile` on the CPU with real tensors goes on: an operator without
a meta kernel (`torch.bincount`, `torch.unique`, `torch.masked_select`, `torch.geqrf` after
the graph break real torch makes there too), a meta tensor's data (`t.cpu()`,
`torch.repeat_interleave(x, counts)`), or a meta tensor beside CPU ones (`torch.arange(4.0)`
against a meta input). This is no verdict: the class is "not checked" under compile; the
graph breaks found before this line are reported, nothing after it was checked. Shown as FX404
is under export: information in the editor, a note on the class from `fx-lsp check`, and
reported there only when `select` names it in full.

```python
counts = torch.bincount(x.long().flatten())   # GB0036, then FX503: no meta kernel
```

An error that real torch raises too stays FX502: a `torch.library.custom_op` without
`register_fake`, for example.

Fix: nothing is wrong with the code; run `torch.compile` on real inputs to check the rest.
""")

#: How the documentation site's ``codes/GBnnnn`` page documents the generated family: one
#: page, not hundreds.
GRAPH_BREAK_FAMILY_DOCS = """\
**A `torch.compile` graph break, under PyTorch's own code** (compile mode). `torch.compile`
with `fullgraph=False` splits the graph at each place dynamo cannot trace and runs that
instruction in Python; fx-lsp reports every break at the user's line under the `GBnnnn` code of
PyTorch's graph-break registry (shipped in torch as `torch/_dynamo/graph_break_registry.json`),
with that registry's explanation and hints as the message, and a link to the break's page on
PyTorch's graph-break site (`https://meta-pytorch.github.io/compile-graph-break-site/`).
`fx-lsp explain GBnnnn` prints one of them. They are warnings: a class with graph breaks still
runs, only slower. The codes are those of the installed torch; a break of a type the registry
does not know is FX501.
"""

FX504 = not_fitting_rule("FX504", "compile", "FX502",
                         "FX105 under torch.fx and FX406 under torch.export")


FX509 = raises_everywhere_rule("FX509", "compile",
                               "FX408 under torch.export and FX606 under torch.onnx")


RULES = (*GRAPH_BREAK_RULES, FX501, FX502, FX503, FX504, FX509)
