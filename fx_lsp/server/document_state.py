"""The state of one open document in the server: its buffer's version, the running stage of
its trace (one job per phase, the names of what is still to publish, the phases held back
until the others of their stage are published) and the result last accepted
(``fx_lsp.server.documents`` schedules the traces)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fxcore.api.session import CheckHandle
from fxcore.model.results import FileResult

if TYPE_CHECKING:
    from fx_lsp.features.diagnostics import Entry


@dataclass
class Document:
    """An open Python buffer and the state of its traces."""

    uri: str
    path: str
    version: int
    #: Bumped whenever a trace of this document becomes outdated.
    generation: int = 0
    timer: asyncio.TimerHandle | None = None
    #: The running jobs of the current trace's stage, one per phase.
    handles: list[CheckHandle] = field(default_factory=list)
    #: The latest result accepted for this document, the version it was for, and the versions
    #: of the other open buffers it was traced with.
    result: FileResult | None = None
    result_version: int | None = None
    overlay_versions: dict[str, int] = field(default_factory=dict)
    #: The engine's own results of the current trace's phases that have finished (before the
    #: parent verdicts are applied), by (stage, phase): merged in that order.
    phase_results: dict[tuple[int, int], FileResult] = field(default_factory=dict)
    #: The diagnostics last published for it.
    entries: list[Entry] = field(default_factory=list)
    #: The names of the current trace's running phases (``mode_phases.phase_names``), by
    #: (stage, phase), and of its later stages' phases, not started yet.
    running_names: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    later_names: list[str] = field(default_factory=list)
    #: The running stage's phases whose results wait for the stage's other phases to be
    #: published (``mode_phases.Phase.held``: compile's loop of calls beside the single calls).
    held_phases: set[tuple[int, int]] = field(default_factory=set)
    #: The generation of the trace that last had a stage accepted.
    accepted_generation: int | None = None
    #: How many classes of a running phase the result lacks: still to judge (a publish of
    #: the phase's verdicts so far), 0 once the phase's result is in.
    unjudged: int = 0
    #: The event loop's time before which no verdicts so far are published.
    partial_after: float = 0.0

    @property
    def busy(self) -> bool:
        """A trace of its current text is planned or running."""
        return bool(self.handles) or self.timer is not None

    @property
    def pending_stages(self) -> list[str]:
        """The modes (``compile-loop``: compile's loop of calls) whose results the current
        trace has yet to publish, in stage order."""
        running = [name for key in sorted(self.running_names) for name in self.running_names[key]]
        return list(dict.fromkeys([*running, *self.later_names]))

    @property
    def waiting_phases(self) -> set[tuple[int, int]]:
        """Held phases that finished while their stage's other phases still run."""
        return {key for key in self.held_phases & self.phase_results.keys() if any(
            other[0] == key[0] and other not in self.held_phases for other in self.running_names)}

    @property
    def stage_published(self) -> bool:
        """A stage of its current trace has been published (a trace planned or running
        otherwise publishes the verdicts of an older text first)."""
        return self.accepted_generation == self.generation


@dataclass
class StartedStage:
    """The jobs of one stage of a trace, one per phase in phase order, each phase's names,
    the names of the later stages' phases, and which phases are held (published only after
    the others of the stage)."""

    handles: list[CheckHandle]
    names: list[list[str]]
    later: list[str]
    held: list[bool] = field(default_factory=list)
