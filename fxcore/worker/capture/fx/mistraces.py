"""Silent mis-traces: torch.fx traced without an error, but the graph does not mean what the
code says. Each is a hint (FX201-FX205), found on the traced class's own source and graph;
the sixth, FX206 (a draw from ``random`` decided the graph), is ``capture.random_draws``.

- FX201 ``arg is None`` / ``is not None`` on a ``forward`` argument: the argument is a Proxy
  while tracing, never ``None``, so the graph holds one branch only.
- FX202 ``self.training`` changed the graph: traced in the other mode, the graph differs.
- FX203 activation checkpointing: tracing runs the checkpointed function inline, so the graph
  keeps every activation the checkpoint was there to drop.
- FX204 a ``forward`` argument the graph never uses.
- FX205 ``concrete_args``: the graph holds for those values only (which branches they fixed).
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable, Iterable

import torch
from torch import fx

from fxcore.model.results import CODES, Hint, Range
from fxcore.worker.source.locate import SourceIndex
from fxcore.workspace.discovery import ClassSource, char_span


def _hint(kind: str, message: str, where: Range, path: str, member: str = "") -> Hint:
    return Hint(**where.at(path), code=CODES[kind], kind=kind, message=message, member=member)


def forward_node(tree: ast.Module | None, class_name: str) -> ast.FunctionDef | None:
    for node in tree.body if tree is not None else []:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "forward":
                    return item
    return None


def _placeholders(graph: fx.Graph) -> dict[str, fx.Node]:
    return {str(node.target).lstrip("*"): node for node in graph.nodes
            if node.op == "placeholder"}


def none_checks(forward: ast.FunctionDef, graph: fx.Graph, lines: list[str], path: str,
                concrete: Iterable[str]) -> list[Hint]:
    """FX201: ``arg is None`` on an argument that was a Proxy while tracing."""
    traced = set(_placeholders(graph)) - set(concrete)
    hints = []
    for node in ast.walk(forward):
        if not (isinstance(node, ast.Compare) and len(node.ops) == 1
                and isinstance(node.ops[0], (ast.Is, ast.IsNot))
                and isinstance(node.left, ast.Name) and node.left.id in traced
                and isinstance(node.comparators[0], ast.Constant)
                and node.comparators[0].value is None):
            continue
        name = node.left.id
        hints.append(_hint(
            "none-check",
            f"`{name}` is a Proxy while tracing, never None: the graph holds only the case "
            f"where `{name}` is given, whatever is passed later. To trace the None case, "
            f"trace with concrete_args={{'{name}': None}} (`concrete-none = [\"{name}\"]`).",
            char_span(lines, node), path, member=name))  # the argument, for the fix
    return hints


def unused_arguments(forward: ast.FunctionDef, graph: fx.Graph, lines: list[str],
                     path: str) -> list[Hint]:
    """FX204: placeholders no node uses."""
    placeholders = _placeholders(graph)
    arguments = [*forward.args.posonlyargs, *forward.args.args, *forward.args.kwonlyargs]
    hints = []
    for argument in arguments[1:] if arguments else []:
        node = placeholders.get(argument.arg)
        if node is not None and not node.users:
            hints.append(_hint(
                "unused-argument",
                f"forward's argument `{argument.arg}` is never used by the traced graph: "
                "callers pass it for nothing (or the code that used it was not traced).",
                char_span(lines, argument), path))
    return hints


def _calls_checkpoint(node: ast.Call) -> bool:
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else \
        function.id if isinstance(function, ast.Name) else ""
    return name in {"checkpoint", "checkpoint_sequential"}


@functools.lru_cache(maxsize=16)
def _checkpoint_calls(tree: ast.AST) -> dict[int, list[ast.Call]]:
    """The file's calls of ``torch.utils.checkpoint`` by line, found once per file: walking
    the whole file for each of its classes made a file of thousands of classes quadratic."""
    calls: dict[int, list[ast.Call]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _calls_checkpoint(node):
            calls.setdefault(node.lineno, []).append(node)
    return calls


def checkpoints(traced_lines: Iterable[tuple[str, int]], sources: SourceIndex) -> list[Hint]:
    """FX203: calls of ``torch.utils.checkpoint`` on lines that produced graph nodes."""
    hints = []
    by_path: dict[str, set[int]] = {}
    for path, line in traced_lines:
        by_path.setdefault(path, set()).add(line)
    for path, lines_here in by_path.items():
        tree = sources.tree(path)
        if tree is None:
            continue
        calls = _checkpoint_calls(tree)
        found = [node for line in sorted(lines_here & calls.keys()) for node in calls[line]]
        if not found:
            continue
        text = sources.lines(path)
        hints += [_hint(
            "checkpoint",
            "Activation checkpointing is gone from the traced graph: tracing runs the "
            "checkpointed function inline, so a graph module keeps every activation "
            "for backward. Re-apply checkpointing to the graph, or mark the "
            "checkpointed submodule as a leaf module.",
            char_span(text, node), path) for node in found]
    return hints


def concrete_arguments(forward: ast.FunctionDef, concrete: dict[str, object], name_span: Range,
                       lines: list[str], path: str) -> list[Hint]:
    """FX205: what ``concrete_args`` fixed."""
    if not concrete:
        return []
    fixed = sorted({node.lineno for node in ast.walk(forward)
                    if isinstance(node, (ast.If, ast.IfExp, ast.While))
                    for name in ast.walk(node.test)
                    if isinstance(name, ast.Name) and name.id in concrete})
    values = ", ".join(f"{name}={value!r}" for name, value in concrete.items())
    branches = (f" It fixed the branches at line{'s' * (len(fixed) > 1)} "
                f"{', '.join(map(str, fixed))}." if fixed else "")
    return [_hint("concrete-args",
                  f"Traced with concrete_args {values}: the graph holds for these values "
                  f"only.{branches}", name_span, path)]


def _first_difference(one: fx.Graph, other: fx.Graph,
                      origin_of: Callable[[fx.Node], tuple[str, int] | None]
                      ) -> tuple[str, int] | None:
    for mine, theirs in zip(one.nodes, other.nodes, strict=False):
        if (mine.op, mine.target) != (theirs.op, theirs.target):
            return origin_of(mine)
    return None


def training_difference(model: torch.nn.Module, graph: fx.Graph,
                        retrace: Callable[[], fx.Graph],
                        origin_of: Callable[[fx.Node], tuple[str, int] | None],
                        source: ClassSource, path: str, sources: SourceIndex) -> list[Hint]:
    """FX202: the graph traced in the other mode (``train()``/``eval()``) differs. Only
    checked when a traced-through forward reads ``training``."""
    readers = [type(m) for m in model.modules()
               if "training" in getattr(getattr(type(m).forward, "__code__", None),
                                        "co_names", ())
               and not type(m).__module__.startswith("torch.nn")]
    if not readers:
        return []
    mode = model.training
    try:
        model.train(not mode)
        other = retrace()
    except Exception:
        return []
    finally:
        model.train(mode)
    same = [(n.op, n.target) for n in graph.nodes] == [(n.op, n.target) for n in other.nodes]
    if same:
        return []
    traced, untraced = ("train", "eval") if mode else ("eval", "train")
    where = _first_difference(graph, other, origin_of)
    span, file = source.name_span, path
    if where is not None:
        file, line = where
        text = sources.line(file, line).rstrip("\r\n")
        indent = len(text) - len(text.lstrip())
        span = Range(line, indent + 1, line, len(text) + 1)
    return [_hint("training",
                  f"The graph depends on self.training: it was traced in {traced}() mode, and "
                  f"in {untraced}() mode it differs from here on. Trace the module in the mode "
                  "it will run in (model.eval() before tracing for inference).",
                  span, file)]
