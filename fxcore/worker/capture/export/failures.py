"""torch.export's failures as fx-lsp failures: the data-dependent sites the guesser recovered
from (FX401, FX402) and the error that ended the export, sorted by what it means (FX401 and
FX402 when the guesser could not go on, FX499 for anything else)."""

from __future__ import annotations

from fxcore.model.guard_checks import PYTHON_CONDITION, checks_sentence
from fxcore.model.results import Failure
from fxcore.worker.capture.export.guesses import Guess
from fxcore.worker.capture.export.torch_hooks import GuardOnDataDependentSymNode
from fxcore.worker.job.capture_target import RecordedFailure
from fxcore.worker.job.job_context import describe_exception


def guess_failure(guess: Guess, earlier: list[Guess]) -> RecordedFailure:
    """The failure of a data-dependent site, saying what was assumed to go on and which
    guesses came before it."""
    if guess.is_condition:
        kind = "export-data-dependent"
        what = f", {PYTHON_CONDITION}," if guess.python_condition else ""
        checks = checks_sentence(*guess.checks) if len(guess.checks) == 2 \
            else "state what holds with torch._check."
        message = (f"Control flow depends on tensor data: torch.export cannot decide "
                   f"`{guess.expression}`{what} without real values, so export stops here. "
                   f"Use torch.cond or torch.where, or {checks} "
                   f"fx-lsp assumed it {guess.assumed} to check the rest.")
    else:
        kind = "export-python-data"
        message = (f"A tensor's value is turned into a Python number (`{guess.expression}`), "
                   f"which torch.export cannot know without real data. Keep it a tensor, "
                   f"or take it with torch.sym_int/torch.sym_float instead of int()/float() "
                   f"so that it stays symbolic. fx-lsp assumed {guess.assumed} to check the "
                   f"rest.")
    lines = sorted({other.site[1] for other in earlier if other.site[1] != guess.site[1]})
    if lines:
        message += f" Checked after guesses at line{'s' if len(lines) > 1 else ''} " \
            f"{', '.join(map(str, lines))}."
    return RecordedFailure(kind, message, guess.stack)


def ending_kind(error: BaseException) -> str:
    """The kind of the error that ended an export."""
    text = describe_exception(error)  # a user exception's own __str__ may raise
    if GuardOnDataDependentSymNode is not None and \
            isinstance(error, GuardOnDataDependentSymNode):
        return "export-python-data" if "specialized integer" in text \
            else "export-data-dependent"
    if isinstance(error, RuntimeError) and ".numpy() is not supported" in text:
        return "export-python-data"
    return "export-error"


_PREFIX = {
    "export-data-dependent": "torch.export stopped at a data-dependent guard: ",
    "export-python-data": "torch.export stopped where a tensor becomes Python data: ",
    "export-error": "torch.export failed: ",
}


def ending_prefix(kind: str) -> str:
    return _PREFIX[kind]


def mark_after_guesses(failure: Failure, guesses: list[Guess]) -> None:
    """An error raised after a guess may only follow from that guess."""
    if not guesses:
        return
    lines = ", ".join(str(line) for line in sorted({g.site[1] for g in guesses}))
    failure.possible_consequence = True
    failure.message = (f"(May be a consequence of the values fx-lsp assumed at line(s) {lines} "
                       f"to go on.) {failure.message}")
