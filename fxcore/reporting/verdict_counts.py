"""How many classes a run traced, per capture mode: traceable, failed (graph breaks apart),
not built, not fitting fx-lsp's instance or inputs, not traced, and on guessed arguments; and
the summary line that ``fx-lsp check`` ends its report with."""

from __future__ import annotations

from dataclasses import dataclass, field

from fxcore.model.instance_trust import does_not_fit, on_guessed_arguments
from fxcore.model.results import CODES, FileResult, ModuleResult
from fxcore.rules.compile import is_graph_break


@dataclass
class ModeCounts:
    """One capture mode's verdicts."""

    traceable: int = 0
    failed: int = 0
    not_traced: int = 0
    #: Of ``failed``, the verdicts whose only problems are graph breaks (compile): the class
    #: still compiles, in several graphs, so the summary does not call it failed.
    broken: int = 0
    #: The verdicts of classes whose constructor raised (FX101 only): nothing was captured,
    #: so they are neither traced nor failed.
    not_built: int = 0
    #: The verdicts of classes whose instance, built from defaults or guesses, or whose
    #: inferred inputs do not fit them (FX105, FX406, FX504): not traced, and counted apart
    #: from the classes fx-lsp could not build or skipped.
    not_fitting: int = 0
    #: Of ``traced``, the verdicts on an instance built from guessed arguments, its own or a
    #: parent's (``fxcore.model.instance_trust``); the others are on real instances.
    guessed: int = 0

    @property
    def real(self) -> int:
        return self.traced - self.guessed

    @property
    def traced(self) -> int:
        return self.traceable + self.failed

    def add(self, module: ModuleResult) -> None:
        if module.status == "traceable":
            self.traceable += 1
        elif only_constructor_failures(module):
            self.not_built += 1
        elif module.status == "failed":
            self.failed += 1
            self.broken += only_graph_breaks(module)
        elif does_not_fit(module):
            self.not_fitting += 1
        else:
            self.not_traced += 1
        if is_traced(module):
            self.guessed += on_guessed_arguments(module.arguments)

    def words(self) -> str:
        untraced = untraced_words(self.not_built, self.not_fitting, self.not_traced)
        if self.broken:
            return (f"{self.traced} traced, {self.traceable} whole, {self.broken} with graph "
                    f"breaks, {self.failed - self.broken} failed{untraced}"
                    f"{guessed_words(self.guessed, ', ')}")
        return (f"{self.traced} traced, {self.traceable} traceable, {self.failed} failed"
                f"{untraced}{guessed_words(self.guessed, ', ')}")


def untraced_words(not_built: int, not_fitting: int, not_traced: int) -> str:
    """``, 1 could not be built, 2 that fx-lsp's instance or inputs do not fit, 3 not traced``:
    the first two said only when there are some, so that a summary without them reads as it
    always did."""
    not_built_words = f", {not_built} could not be built" if not_built else ""
    not_fitting_words = (f", {not_fitting} that fx-lsp's instance or inputs do not fit"
                         if not_fitting else "")
    return f"{not_built_words}{not_fitting_words}, {not_traced} not traced"


def guessed_words(guessed: int, separator: str) -> str:
    """``; 12 on guessed arguments``: said only when some verdict is on a guessed instance,
    so that a summary without guesses reads as it always did."""
    return f"{separator}{guessed} on guessed arguments" if guessed else ""


def is_traced(module: ModuleResult) -> bool:
    """A verdict that captured something: traceable, or failed past the constructor."""
    return module.status == "traceable" or (module.status == "failed"
                                            and not only_constructor_failures(module))


def only_constructor_failures(module: ModuleResult) -> bool:
    """A verdict whose failures all say the constructor raised (FX101): no capture ran."""
    return module.status == "failed" and bool(module.failures) and all(
        failure.code == CODES["constructor"] for failure in module.failures)


def only_graph_breaks(module: ModuleResult) -> bool:
    """A compile verdict whose failures are all graph breaks."""
    return module.graph_count is not None and bool(module.failures) and all(
        is_graph_break(failure.code) for failure in module.failures)


def _over_modes(count: str) -> property:
    """A ``ModeCounts`` count added up over a ``Summary``'s modes."""
    return property(lambda summary: sum(getattr(counts, count)
                                        for counts in summary.by_mode.values()))


@dataclass
class Summary:
    files: int = 0
    file_errors: int = 0
    cached: int = 0
    config_problems: list[str] = field(default_factory=list)
    #: Verdicts per capture mode, in the order the modes first gave one.
    by_mode: dict[str, ModeCounts] = field(default_factory=dict)
    #: The classes with a verdict, whatever their number of modes.
    classes: set[tuple[str, str]] = field(default_factory=set)

    traceable = _over_modes("traceable")
    failed = _over_modes("failed")
    not_traced = _over_modes("not_traced")
    not_built = _over_modes("not_built")
    not_fitting = _over_modes("not_fitting")
    guessed = _over_modes("guessed")

    @property
    def traced(self) -> int:
        return self.traceable + self.failed

    @property
    def real(self) -> int:
        return self.traced - self.guessed

    def add(self, result: FileResult) -> None:
        self.files += 1
        self.file_errors += len(result.errors)
        self.cached += result.from_cache
        for module in result.modules:
            self.by_mode.setdefault(module.mode, ModeCounts()).add(module)
            self.classes.add((module.path, module.class_name))

    def line(self, suppressed: int = 0, baselined: int = 0) -> str:
        if len(self.by_mode) > 1:
            # Several verdicts per class: count classes, and each mode's verdicts apart.
            classes = len(self.classes)
            counts = f"{classes} class{'es' * (classes != 1)}; " + "; ".join(
                f"{mode}: {counts.words()}" for mode, counts in self.by_mode.items())
        else:
            counts = (f"{self.traced} modules traced, {self.traceable} traceable, "
                      f"{self.failed} failed"
                      f"{untraced_words(self.not_built, self.not_fitting, self.not_traced)}")
        return (
            f"Checked {self.files} file{'s' if self.files != 1 else ''}: "
            + counts
            + (f", {self.file_errors} files could not be imported" if self.file_errors else "")
            + ("" if len(self.by_mode) > 1 else guessed_words(self.guessed, "; "))
            + (f"; {suppressed} suppressed" if suppressed else "")
            + (f"; {baselined} in the baseline, subtracted" if baselined else "")
            + "."
        )
