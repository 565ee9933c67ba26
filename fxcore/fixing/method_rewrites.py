"""What the rewrites of a recompiling method (``size_cache_fixes``, ``swapped_module_fixes``,
``step_list_fixes``) share: the class method a diagnostic's line is in, the names an expression
reads and a method assigns, and a transformer that replaces the nodes an analysis found, by
identity, in one pass. The analysis and the edit use one libcst parse, so that the nodes found
are the nodes replaced."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from fxcore.fixing.libcst_edits import parse_source
from fxcore.fixing.pt2_fixes import torch_spelling


@dataclass(frozen=True)
class Method:
    """A method of a module-level class, in a parsed file with the positions of its nodes."""

    module: cst.Module
    positions: Mapping[cst.CSTNode, CodeRange]
    cls: cst.ClassDef
    function: cst.FunctionDef

    @property
    def torch(self) -> str:
        """torch as the file's imports spell it (``import torch`` is the fix's import edit)."""
        return torch_spelling(self.module) or "torch"

    def line_of(self, node: cst.CSTNode) -> int:
        return self.positions[node].start.line

    def statements(self) -> Sequence[cst.BaseStatement]:
        """The function's top-level statements."""
        body = self.function.body
        return body.body if isinstance(body, cst.IndentedBlock) else ()

    def methods(self) -> list[cst.FunctionDef]:
        body = self.cls.body
        return [statement for statement in body.body if isinstance(statement, cst.FunctionDef)] \
            if isinstance(body, cst.IndentedBlock) else []

    def fresh_method_name(self, wanted: str) -> str:
        taken = {method.name.value for method in self.methods()}
        while wanted in taken:
            wanted += "_"
        return wanted

    def fresh_local_name(self, wanted: str) -> str:
        taken = assigned_names(self.function) | read_names(self.function)
        while wanted in taken:
            wanted += "_"
        return wanted


@functools.lru_cache(maxsize=4)
def _positions(source: str) -> tuple[cst.Module, Mapping[cst.CSTNode, CodeRange]]:
    """The parse of ``source`` and its nodes' positions: the planner asks for them once per
    recompile diagnostic, and the ``help:`` line and ``--fix`` again."""
    module = parse_source(source)
    return module, MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)


def method_at(source: str, line: int) -> Method | None:
    """The method of a module-level class whose lines hold ``line``; None when there is none
    or libcst cannot parse the file."""
    try:
        module, positions = _positions(source)
    except cst.ParserSyntaxError:
        return None
    for cls in module.body:
        if not isinstance(cls, cst.ClassDef) or not isinstance(cls.body, cst.IndentedBlock):
            continue
        for function in cls.body.body:
            if isinstance(function, cst.FunctionDef) and \
                    positions[function].start.line <= line <= positions[function].end.line:
                return Method(module, positions, cls, function)
    return None


class _Reads(cst.CSTVisitor):
    """The plain names an expression reads, and the ``self.<name>`` attributes, in order (an
    attribute's own name and a keyword's name are not reads)."""

    def __init__(self, devices_apart: bool) -> None:
        super().__init__()
        self.names: list[str] = []
        self.self_attributes: list[str] = []
        #: The names read only as ``<name>.device``, when kept apart from ``names``.
        self.devices: list[str] = []
        self.devices_apart = devices_apart

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        if isinstance(node.value, cst.Name) and node.value.value == "self":
            self.self_attributes.append(node.attr.value)
        elif self.devices_apart and isinstance(node.value, cst.Name) and \
                node.attr.value == "device":
            self.devices.append(node.value.value)
        else:
            node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False

    def visit_Param(self, node: cst.Param) -> bool:
        return False

    def visit_Name(self, node: cst.Name) -> bool:
        self.names.append(node.value)
        return False


def reads(node: cst.CSTNode, devices_apart: bool = False) -> _Reads:
    """What ``node`` reads; with ``devices_apart``, ``x.device`` counts in ``devices``, not as a
    read of ``x``."""
    found = _Reads(devices_apart)
    node.visit(found)
    return found


def read_names(node: cst.CSTNode) -> set[str]:
    return set(reads(node).names)


class _Assigned(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def _target(self, target: cst.BaseExpression) -> None:
        if isinstance(target, cst.Name):
            self.names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value)
        elif isinstance(target, cst.StarredElement):
            self._target(target.value)

    def visit_Param(self, node: cst.Param) -> None:
        self.names.add(node.name.value)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._target(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)

    def visit_AsName(self, node: cst.AsName) -> None:
        self._target(node.name)


def assigned_names(node: cst.CSTNode) -> set[str]:
    """The names ``node`` binds: parameters, assignment, loop and ``with`` targets."""
    found = _Assigned()
    node.visit(found)
    return found.names


def code(node: cst.CSTNode) -> str:
    return cst.Module(body=[]).code_for_node(node).strip()


def self_attribute(node: cst.BaseExpression) -> str | None:
    """``name`` of ``self.name``, else None."""
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and \
            node.value.value == "self":
        return node.attr.value
    return None


#: A replacement: a node, several statements in place of one, or the node removed.
Replacement = cst.CSTNode | cst.FlattenSentinel | cst.RemovalSentinel
#: What a node becomes, given the node with its own children's edits made.
Edit = Callable[[cst.CSTNode], Replacement]


def becomes(replacement: Replacement) -> Edit:
    """The edit that puts ``replacement`` in place of the node, whatever its children became."""
    return lambda _updated: replacement


def followed_by(statements: Sequence[cst.BaseStatement]) -> Edit:
    """The edit that keeps the statement (with its children's edits) and adds ``statements``
    after it."""
    return lambda updated: cst.FlattenSentinel([updated, *statements])  # type: ignore[list-item]


class _EditNodes(cst.CSTTransformer):
    def __init__(self, edits: Mapping[int, Edit]) -> None:
        super().__init__()
        self.edits = edits

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode
                 ) -> Replacement:  # type: ignore[override]
        edit = self.edits.get(id(original_node))
        return updated_node if edit is None else edit(updated_node)


def edited(module: cst.Module, edits: Mapping[int, Edit]) -> str:
    """The module's code with each edit made at its node (keyed by ``id`` of the parsed node,
    so that what an analysis of this parse found is what is edited), in one pass."""
    return module.visit(_EditNodes(edits)).code


def new_method(text: str) -> cst.BaseStatement:
    """A method from its source (a ``def`` at column 0), a blank line before it."""
    return cst.parse_statement(text).with_changes(leading_lines=[cst.EmptyLine(indent=False)])


@dataclass(frozen=True)
class NoFix:
    """Why a recompile's pattern, found, gets no fix: the rewrite would change outputs."""

    reason: str


#: What a rewrite finds: the new source, why there is none, or None when the pattern it
#: rewrites is not at the line.
Rewritten = str | NoFix | None


def fixed_text(source: str, rewrite: Callable[..., Rewritten], line: int,
               arguments: tuple[str, ...]) -> str:
    """A fix's transform: ``rewrite``'s new source, or ``source`` itself when it finds nothing
    to rewrite (so that a fix made twice is made once)."""
    rewritten = rewrite(source, line, *arguments)
    return rewritten if isinstance(rewritten, str) else source


class _Nodes(cst.CSTVisitor):
    def __init__(self, kind: type[cst.CSTNode]) -> None:
        super().__init__()
        self.kind = kind
        self.found: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, self.kind):
            self.found.append(node)
        return True


def nodes_of(root: cst.CSTNode, kind: type[cst.CSTNode]) -> list[cst.CSTNode]:
    """Every node of ``kind`` under ``root`` (itself included), in source order."""
    found = _Nodes(kind)
    root.visit(found)
    return found.found
