"""What is worth knowing about a class as a whole, read from its verdict on the host: it was
not traced (FX103), or it was traced with guessed constructor arguments (FX104). Each is a
``Hint`` on the class's name, so the report silences, selects and shows it as any other code.
"""

from __future__ import annotations

from fxcore.model.instance_trust import describe
from fxcore.model.results import CODES, Hint, ModuleResult


def _note(module: ModuleResult, kind: str, message: str) -> Hint:
    return Hint(**module.span(), code=CODES[kind], kind=kind, message=message)


def notes(module: ModuleResult) -> list[Hint]:
    """The notes of one class's verdict, on its name."""
    found = []
    if module.status == "not-traced":
        found.append(_note(module, "not-traced",
                           f"{module.class_name} was not traced: {module.reason}"))
    if module.arguments is not None and module.arguments.origin == "guessed":
        found.append(_note(module, "guessed-arguments",
                           f"{module.class_name} was traced with {describe(module.arguments)}. "
                           "Its verdict holds for those; configure the real ones in "
                           "[tool.fx-lsp.modules] if they differ."))
    return found
