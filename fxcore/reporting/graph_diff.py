"""What a change did to the graphs (``fx-lsp diff``): each class's verdict per capture mode at
two revisions, reduced to what can be compared (``ClassState``), and their differences
(``ClassChange``), the ones that got worse marked as regressions."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from fxcore.model.results import CODES, ModuleResult
from fxcore.rules.compile import is_graph_break

#: Verdicts from best to worst: a change to a later one is a regression.
VERDICTS = ("traceable", "graph breaks", "failed", "not checkable")
#: Graph nodes that are no operator: what a class takes, returns and reads.
_NOT_OPERATORS = frozenset({"placeholder", "output", "get_attr"})
#: A problem is named by its code and its message's first words, not its line, so that code
#: moved by the change does not read as one problem fixed and another new.
_WORDS = 6

#: (path relative to the repository, class name, capture mode).
ClassKey = tuple[str, str, str]


@dataclass(frozen=True)
class Problem:
    code: str
    line: int
    words: str

    @property
    def name(self) -> tuple[str, str]:
        return self.code, self.words


@dataclass
class ClassState:
    """One class's verdict in one capture mode, as the diff compares it."""

    verdict: str
    problems: list[Problem] = field(default_factory=list)
    #: Graphs made (compile goes on past a graph break); None where the mode says nothing.
    graphs: int | None = None
    nodes: int | None = None
    operators: frozenset[str] = frozenset()


def verdict_of(module: ModuleResult) -> str:
    if module.status == "traceable":
        return "traceable"
    if module.status != "failed" or all(failure.code == CODES["constructor"]
                                        for failure in module.failures):
        return "not checkable"  # nothing was captured: not traced, or not built
    if module.graph_count is not None and all(is_graph_break(failure.code)
                                              for failure in module.failures):
        return "graph breaks"
    return "failed"


def state_of(module: ModuleResult) -> ClassState:
    problems = [Problem(failure.code, failure.line,
                        " ".join(failure.message.split()[:_WORDS]))
                for failure in module.failures]
    operators = frozenset(node.target for nodes in module.line_nodes.values()
                          for node in nodes if node.op not in _NOT_OPERATORS)
    return ClassState(verdict_of(module), problems, module.graph_count, module.node_count,
                      operators)


def states(modules: list[ModuleResult], root: str) -> dict[ClassKey, ClassState]:
    """The states of ``modules``, keyed by path relative to ``root``, their repository's
    checkout, so that two checkouts' classes meet."""
    return {(os.path.relpath(module.path, root), module.class_name, module.mode):
            state_of(module) for module in modules}


@dataclass
class ClassChange:
    key: ClassKey
    before: ClassState | None
    after: ClassState | None
    new: list[Problem]
    fixed: list[Problem]

    @property
    def operators_added(self) -> list[str]:
        return sorted(_operators(self.after) - _operators(self.before))

    @property
    def operators_removed(self) -> list[str]:
        return sorted(_operators(self.before) - _operators(self.after))

    @property
    def regressed(self) -> bool:
        """Worse verdict, more graphs or more problems (a class that appears or goes is no
        regression of its own)."""
        if self.before is None or self.after is None:
            return False
        return (VERDICTS.index(self.after.verdict) > VERDICTS.index(self.before.verdict)
                or (self.after.graphs or 1) > (self.before.graphs or 1)
                or len(self.after.problems) > len(self.before.problems))


def _operators(state: ClassState | None) -> frozenset[str]:
    return state.operators if state is not None else frozenset()


def _unmatched(ours: list[Problem], theirs: list[Problem]) -> list[Problem]:
    """The problems of ``ours`` that ``theirs`` lacks, counting repeats."""
    left = Counter(problem.name for problem in theirs)
    unmatched = []
    for problem in ours:
        if left[problem.name]:
            left[problem.name] -= 1
        else:
            unmatched.append(problem)
    return unmatched


def diff(before: dict[ClassKey, ClassState], after: dict[ClassKey, ClassState]
         ) -> list[ClassChange]:
    """The classes whose state differs, in path, class and mode order."""
    changes = []
    for key in sorted(before.keys() | after.keys()):
        old, new = before.get(key), after.get(key)
        old_problems = old.problems if old else []
        new_problems = new.problems if new else []
        change = ClassChange(key, old, new, _unmatched(new_problems, old_problems),
                             _unmatched(old_problems, new_problems))
        same = (old is not None and new is not None and old.verdict == new.verdict
                and old.graphs == new.graphs and old.nodes == new.nodes
                and old.operators == new.operators)
        if not (same and not change.new and not change.fixed):
            changes.append(change)
    return changes


def change_json(change: ClassChange) -> dict[str, object]:
    path, class_name, mode = change.key

    def side(state: ClassState | None) -> dict[str, object] | None:
        return None if state is None else {"verdict": state.verdict, "graphs": state.graphs,
                                           "nodes": state.nodes}

    def problems(found: list[Problem]) -> list[dict[str, object]]:
        return [{"code": p.code, "line": p.line, "message": p.words} for p in found]

    return {"path": path, "class": class_name, "mode": mode, "before": side(change.before),
            "after": side(change.after), "new_problems": problems(change.new),
            "fixed_problems": problems(change.fixed),
            "operators_added": change.operators_added,
            "operators_removed": change.operators_removed, "regression": change.regressed}
