"""What the registry says of one diagnostic code."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Severity = Literal["error", "warning", "hint"]


@dataclass(frozen=True)
class Rule:
    """A diagnostic code, declared once: everything that reports, documents or selects it
    reads this."""

    code: str
    #: The ``kind`` of the failures and hints it reports (``Failure.kind``); FX102 has two.
    kinds: tuple[str, ...]
    #: Its severity in reports and editors, unless one of the two below applies to a
    #: problem (``fxcore.reporting.report.severity``).
    severity: Severity
    #: Markdown: a bold first sentence (the title), examples, and "Fix: ...".
    docs: str
    #: The capture mode whose failures it reports, or "any".
    mode: str = "any"
    #: The message of a failure of this kind, ``{detail}`` filled by the detector.
    message: str | None = None
    #: Information about a class rather than a problem in its code (FX103, FX104): an editor
    #: shows it with the Information severity; a report leaves it out unless ``select`` names
    #: the code in full, or its caller shows it by default (``fxcore.reporting.report.Selection``).
    information: bool = False
    #: The page documenting it elsewhere (PyTorch's graph-break site for ``GBnnnn``), for
    #: editors' links; None when this project's own documentation is the page.
    url: str | None = None
    #: Its severity on an instance built from guessed arguments (``fxcore.model.instance_trust``),
    #: for a code whose problems may be the guess's rather than the code's (FX300: sizes).
    severity_on_guessed_instance: Severity | None = None
    #: Its severity when the example inputs were configured rather than inferred (FX300).
    severity_with_configured_inputs: Severity | None = None

    @property
    def title(self) -> str:
        """The first sentence, such as "Control flow on a traced value."."""
        bold = re.match(r"\*\*((?:`[^`]*`|[^`*])+)\*\*", self.docs)
        title = " ".join((bold.group(1) if bold else self.docs.split("\n\n")[0]).split())
        return title.rstrip(":.") + "."


def fx_rule(code: str, kind: str, severity: Severity, docs: str,
            message: str | None = None) -> Rule:
    """A code of the fx mode that reports one kind (most of them)."""
    return Rule(code=code, kinds=(kind,), severity=severity, docs=docs, mode="fx",
                message=message)


def not_checkable_rule(code: str, mode: str, docs: str) -> Rule:
    """A capture mode's information that a line needs what only real tensors have (FX404,
    FX503): a hint, never a failure, worded the same in every mode."""
    return Rule(code=code, kinds=(f"{mode}-not-checkable",), severity="hint", information=True,
                mode=mode, docs=docs,
                message=f"Not checkable under torch.{mode} without real data: {{detail}}")


def not_fitting_rule(code: str, mode: str, error_code: str, others: str) -> Rule:
    """A capture mode's hint that its error came from what fx-lsp chose, not from the capture
    (FX406, FX504; FX105 is torch.fx's), worded the same in every mode: ``error_code`` is the
    mode's own error, which the hint replaces; ``others`` names the same hint in other modes."""
    docs = f"""\
**Hint: the inputs or the instance fx-lsp chose do not fit ({mode})**: torch.{mode} failed
on example inputs fx-lsp inferred, or on an instance it built from the class's defaults or
guessed arguments, and the module raises the same error at the same line when it simply runs
on them (eagerly, on the meta device). The error is about fx-lsp's choice, not about
torch.{mode}: the class is "does not fit" in the summary, neither passing nor failing, like
{others}.

```python
class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(512, 10)
    def forward(self, x):
        return self.proj(x.flatten(1))  # {code} on inferred inputs not 512 wide once flattened
```

An error on inputs or an instance that came from the configuration, annotations, a builder,
a call site or the parent's run stays {error_code}: those are the code's own.

Fix: give the class's real inputs (`inputs = {{x = "float32[1, 512]"}}`) or arguments
(`kwargs`, `call`, `factory`) under `[tool.fx-lsp.modules."pkg.mod:Head"]`.
"""
    return Rule(code=code, kinds=(f"{mode}-does-not-fit",), severity="hint", mode=mode,
                docs=docs,
                message=("What fx-lsp chose does not fit the class: {detail}, and the module "
                         f"raises the same error when run eagerly on them, so torch.{mode} "
                         "is not what fails."))


def raises_everywhere_rule(code: str, mode: str, others: str) -> Rule:
    """A capture mode's error that ``forward`` raised the same error on every input fx-lsp
    tried (FX408, FX509, FX606), worded the same in every mode; ``others`` names the same
    error in the other modes."""
    docs = f"""\
**forward raises on every input tried ({mode})**: fx-lsp looked for example inputs to run
torch.{mode} on, and the module raised the same error, at the same line, on every input it
tried of different shapes (or on every one its own `assert` or `raise` on the input's shape
let through), and no input could change that: the failing lines read nothing derived from
`forward`'s arguments (a `raise` under a test of a value the class set itself, a function an
installed package lacks, such as one removed from a newer release). The class cannot run
here on any input, so torch.{mode} cannot either, and that error is the verdict, reported at
its line, rather than "no example inputs". An error on a line that reads the inputs (a rank
unpacked, a real tensor given to `torch.istft`) may be the inputs' fault: the class then has
no verdict (information, FX103), never this error. The benchmark of libraries counts it as a
verdict only where real torch, on the CPU, on the same instance and the first of those
inputs, raises the same error at the same line. The same error is {others}.

```python
class Window(nn.Module):
    def forward(self, x):
        window = scipy.signal.blackmanharris(64)  # {code}: gone from SciPy 1.13
        return x * torch.as_tensor(window)
```

An error about the meta device or fake tensors, fx-lsp's own way of running, never makes it:
the class stays "no example inputs".

Fix: install a release of the package that has the function, or change the code to what the
installed torch accepts; where the inputs fx-lsp tried are simply not the class's, give them
(`inputs = {{x = "float32[1, 512]"}}`) under `[tool.fx-lsp.modules."pkg.mod:Window"]`.
"""
    return Rule(code=code, kinds=(f"{mode}-raises-everywhere",), severity="error", mode=mode,
                docs=docs)
