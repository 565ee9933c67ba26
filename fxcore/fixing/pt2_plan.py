"""Which quick fixes fit an export or compile failure: a rewrite of the construct it is on, or
torch's own suggestion, planned from the failure and the sources (``fix_plan`` asks here for
every code of those modes).

- FX401 on an ``assert`` on a tensor: ``torch._assert_async`` (``pt2_fixes``);
- FX401 on a condition the user's code decides on Python numbers, where the message names the
  guard in the user's names (``fxcore.model.guard_checks``): ``torch._check(<guard>)`` before
  its statement, as torch's non-strict export suggests for a data-dependent guard: the one
  fx-lsp assumed to check the rest (preferred), and for an ``if`` its negation too;
- FX401 or GB0170 on an ``if`` of a shape ``cond_rewrite`` rewrites (or GB7000 there, the
  loop's break): ``torch.cond`` (after the ``torch._check`` of a guard on Python numbers);
- FX402 on ``int(t.item())``/``float(t.item())``: ``torch.sym_int``/``torch.sym_float``;
- a graph break at a print or logging call: ``if not torch.compiler.is_compiling():``;
- FX403: torch's suggested ``Dim`` bounds (or a static size) in the class's ``dynamic``;
- a graph break at a call dynamo skips, or a deepcopy of a tensor: ``skipped_call_fixes``.
- a graph break at a value compiled code cannot keep (``.item()``, a dynamic shape, a
  conditional expression or an early ``break`` on tensor data): ``value_plan``'s.

Every one but ``torch.sym_int``/``sym_float`` is unsafe in ruff's sense.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from fxcore.fixing import cond_rewrite, pt2_fixes, pyproject_fixes, skipped_call_fixes, value_plan
from fxcore.fixing.fix import Fix, RootOf, Run, TextOf, pyproject
from fxcore.model.guard_checks import on_python_numbers, suggested_checks
from fxcore.model.results import Failure, ModuleResult, Range
from fxcore.rules.compile import GRAPH_BREAK_PREFIX, graph_break_kind
from fxcore.workspace.parsing import parse_expression, parse_module
from fxcore.workspace.paths import split_lines


@dataclass(frozen=True)
class Site:
    """A construct a fix of the export and compile modes rewrites: what it is, where
    (1-based lines, character columns, end exclusive) and how a title names it."""

    kind: Literal["assert", "int", "float", "logging", "requires-grad"]
    #: The assert's condition, the int()/float() call, the logging call's statement, the
    #: statement marking a tensor ``requires_grad``.
    range: Range
    label: str


def pt2_sites(source: str) -> tuple[Site, ...] | None:
    """The constructs the export and compile fixes rewrite, from one ``ast`` parse (None
    when the file does not parse): asserts with no message or a plain string one,
    ``int(x.item())`` and ``float(x.item())``, and print/logging call statements and
    ``x.requires_grad = ...`` statements alone on their lines."""
    try:
        tree = parse_module(source)
    except SyntaxError:
        return None
    lines = split_lines(source)

    def column(line: int, offset: int) -> int:
        # ast's columns count UTF-8 bytes; fx-lsp's count characters, from 1.
        return len(lines[line - 1].encode()[:offset].decode(errors="replace")) + 1

    def range_of(node: ast.expr | ast.stmt) -> Range:
        end_line = node.end_lineno or node.lineno
        return Range(node.lineno, column(node.lineno, node.col_offset), end_line,
                     column(end_line, node.end_col_offset or 0))

    found: list[Site] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and (node.msg is None or (
                isinstance(node.msg, ast.Constant) and isinstance(node.msg.value, str))):
            found.append(Site("assert", range_of(node.test), "assert"))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in pt2_fixes.SYMBOLIC_CASTS and len(node.args) == 1
              and not node.keywords and _is_item_call(node.args[0])):
            kind: Literal["int", "float"] = "int" if node.func.id == "int" else "float"
            found.append(Site(kind, range_of(node), f"{node.func.id}()"))
        elif isinstance(node, ast.Expr) and (label := _logging_label(node.value)) is not None \
                and _alone_on_its_lines(node, lines):
            found.append(Site("logging", range_of(node), label))
        elif _marks_requires_grad(node) and _alone_on_its_lines(node, lines):
            found.append(Site("requires-grad", range_of(node), "requires_grad"))
    return tuple(found)


def _is_item_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and not node.args and not node.keywords and \
        isinstance(node.func, ast.Attribute) and node.func.attr == "item"


def _marks_requires_grad(node: ast.AST) -> bool:
    """``x.requires_grad = <value>`` (``pt2_fixes.marks_requires_grad``)."""
    return isinstance(node, ast.Assign) and len(node.targets) == 1 and \
        isinstance(node.targets[0], ast.Attribute) and node.targets[0].attr == "requires_grad"


def _logging_label(node: ast.expr) -> str | None:
    """``print()`` or ``log.warning()`` for a call of ``pt2_fixes.is_logging_call``'s kind."""
    if not isinstance(node, ast.Call):
        return None
    if isinstance(node.func, ast.Name) and node.func.id == "print":
        return "print()"
    if isinstance(node.func, ast.Attribute) and node.func.attr in pt2_fixes.LOGGING_METHODS:
        receiver = _dotted_name(node.func.value)
        return f"{receiver}.{node.func.attr}()" if receiver else f"{node.func.attr}()"
    return None


def _dotted_name(node: ast.expr) -> str | None:
    """``self.logger`` for a Name/Attribute chain, else None."""
    attributes = []
    while isinstance(node, ast.Attribute):
        attributes.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(attributes)]) if isinstance(node, ast.Name) else None


def _alone_on_its_lines(statement: ast.stmt, lines: list[str]) -> bool:
    """No other statement (``a; print(a)``) nor a block's header (``if v: print(v)``) shares
    the statement's lines: it can be put in a block of its own."""
    first = lines[statement.lineno - 1].encode()
    last = lines[(statement.end_lineno or statement.lineno) - 1].encode()
    after = last[statement.end_col_offset or 0:].strip()
    return not first[:statement.col_offset].strip() and (not after or after.startswith(b"#"))


#: An FX403 message as the export capture words it (``constraint_message``): the dimension,
#: then the fixes torch suggests, "; "-separated, before the guard's place.
_DYNAMIC_SUGGESTION = re.compile(
    r"^The dynamic dimension '(?P<name>\w+)' .* torch suggests: (?P<fixes>.+?)\.(?: \(|$)",
    re.DOTALL)


def _suggested_bounds(name: str, fixes_text: str
                      ) -> tuple[bool, tuple[int | None, int | None] | None]:
    """(found, bounds) of torch's fix for ``name``: ``name = 4`` makes it static (bounds
    None), ``name = Dim('name', min=2, max=16)`` gives its range. Derived dimensions
    (``name = 2*_name``) are not fixed here."""
    for suggestion in fixes_text.split("; "):
        target, _, value = suggestion.partition(" = ")
        if target != name:
            continue
        try:
            tree = parse_expression(value).body
        except SyntaxError:
            return False, None
        if isinstance(tree, ast.Constant) and isinstance(tree.value, int):
            return True, None
        if (isinstance(tree, ast.Call) and isinstance(tree.func, ast.Name)
                and tree.func.id == "Dim" and len(tree.args) == 1
                and isinstance(tree.args[0], ast.Constant) and tree.args[0].value == name):
            bounds = {keyword.arg: keyword.value for keyword in tree.keywords}
            if set(bounds) <= {"min", "max"} and all(
                    isinstance(v, ast.Constant) and type(v.value) is int
                    for v in bounds.values()):
                low, high = (bounds.get(key) for key in ("min", "max"))
                return True, (low.value if isinstance(low, ast.Constant) else None,
                              high.value if isinstance(high, ast.Constant) else None)
    return False, None


def _dynamic_fix(failure: Failure, module: ModuleResult, root_of: RootOf) -> list[Fix]:
    """FX403: torch.export's own suggestion, made in the class's ``dynamic`` option."""
    match = _DYNAMIC_SUGGESTION.match(failure.message)
    if match is None:
        return []
    name = match.group("name")
    found, bounds = _suggested_bounds(name, match.group("fixes"))
    if not found:
        return []
    if bounds is None:
        title = f"Make '{name}' static, as torch suggests (dynamic, pyproject.toml)"
    else:
        shown = ", ".join(f"{key}={bound}" for key, bound in zip(("min", "max"), bounds,
                                                                 strict=True)
                          if bound is not None)
        title = f"Give '{name}' the bounds torch suggests: {shown} (dynamic, pyproject.toml)"
    return [Fix(title, pyproject(module, root_of),
                functools.partial(pyproject_fixes.apply_dynamic_suggestion,
                                  qualified_name=module.qualified_name,
                                  class_name=module.class_name, name=name, bounds=bounds),
                True, safe=False)]  # the export is then checked for that range only


def _pt2_fix(title: str, path: str, edit: Callable[..., str], start: tuple[int, int],
             safe: bool = True, preferred: bool = True) -> Fix:
    """The fix that makes ``edit`` (a ``pt2_fixes`` edit) at ``start``, adding ``import
    torch`` when the file's new code needs it."""
    return Fix(title, path, functools.partial(edit, line=start[0], column=start[1]), preferred,
               safe=safe, position=start, import_edit=pt2_fixes.ensure_torch_import)


def _rewrites(failure: Failure, source: str, run: Run) -> list[Fix]:
    """A rewrite of the construct the failure is on."""
    where = failure.range
    for site in run(pt2_sites, source) or ():
        start = (site.range.line, site.range.column)
        if failure.kind == "export-data-dependent" and site.kind == "assert" \
                and site.range == where and not on_python_numbers(failure.message):
            # torch._assert_async takes a tensor: an assert on Python numbers gets _check.
            return [_pt2_fix("Replace assert with torch._assert_async (a check torch.export "
                             "keeps)", failure.path, pt2_fixes.assert_to_assert_async, start,
                             safe=False)]  # AssertionError -> RuntimeError, kept under -O
        if failure.kind == "export-python-data" and site.kind in ("int", "float") \
                and site.range == where:
            symbolic = pt2_fixes.SYMBOLIC_CASTS[site.kind]
            return [_pt2_fix(f"Replace {site.label} with torch.{symbolic}() (symbolic under "
                             "torch.export)", failure.path, pt2_fixes.cast_to_symbolic, start)]
        inside = start <= (where.line, where.column) < (site.range.end_line,
                                                        site.range.end_column)
        if failure.kind.startswith(GRAPH_BREAK_PREFIX) and site.kind == "logging" and inside:
            return [_pt2_fix(f"Run {site.label} only outside torch.compile (if not "
                             "torch.compiler.is_compiling())", failure.path,
                             pt2_fixes.skip_when_compiling, start,
                             safe=False)]  # compiled, it no longer prints or logs
        if failure.kind in _REQUIRES_GRAD_BREAKS and site.kind == "requires-grad" and inside:
            return [_pt2_fix("Mark requires_grad only outside torch.compile (if not "
                             "torch.compiler.is_compiling()): the same values, but compiled "
                             "code leaves the tensor unmarked (what reentrant gradient "
                             "checkpointing of an input needs)", failure.path,
                             pt2_fixes.skip_when_compiling, start, safe=False)]
    return []


@dataclass(frozen=True)
class CheckSite:
    """The statement a ``torch._check`` goes before: where it starts (1-based line,
    character column) and whether it is an ``assert`` (whose negation is no fix)."""

    line: int
    column: int
    is_assert: bool


#: Where a guard is evaluated only sometimes, or in a scope of its own: a check before the
#: statement would state it where the code does not need it, or name what is not bound there.
_SCOPES = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _contains(node: ast.AST, position: tuple[int, int]) -> bool:
    start = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
    end = (getattr(node, "end_lineno", None) or start[0],
           getattr(node, "end_col_offset", None) or 0)
    return start <= position < end


def _guard_is_conditional(part: ast.AST, position: tuple[int, int]) -> bool:
    for node in ast.walk(part):
        if isinstance(node, ast.NamedExpr) or (isinstance(node, _SCOPES)
                                               and _contains(node, position)):
            return True
        if isinstance(node, ast.IfExp) and (_contains(node.body, position)
                                            or _contains(node.orelse, position)):
            return True
        if isinstance(node, ast.BoolOp) and any(_contains(value, position)
                                                for value in node.values[1:]):
            return True
    return False


def check_site(source: str, line: int, column: int) -> CheckSite | None:
    """The statement before which ``torch._check`` states the guard at ``line``/``column``
    (a character column): the ``if`` whose condition it is in (not an ``elif``), or the
    simple statement it is in, alone on its lines; None for a loop's header, a guard that
    the statement evaluates only sometimes (after ``and``, in one arm of ``a if c else b``),
    inside a lambda or comprehension, or beside a ``:=``."""
    try:
        tree = parse_module(source)
    except SyntaxError:
        return None
    lines = split_lines(source)
    if not 0 < line <= len(lines):
        return None
    position = (line, len(lines[line - 1][:column - 1].encode()))
    containing = [node for node in ast.walk(tree)
                  if isinstance(node, ast.stmt) and _contains(node, position)]
    if not containing:
        return None
    statement = containing[-1]  # ast.walk goes level by level: the innermost comes last
    first = lines[statement.lineno - 1].encode()
    if first[:statement.col_offset].strip():
        return None  # `a = 1; b = ...`, `if c: return ...`: no line of its own
    if isinstance(statement, ast.If):
        if first[statement.col_offset:].startswith(b"elif") or \
                not _contains(statement.test, position):
            return None
        part: ast.AST = statement.test
    elif hasattr(statement, "body") or not _alone_on_its_lines(statement, lines):
        return None  # a loop's, a with's or a def's header
    else:
        part = statement
    if _guard_is_conditional(part, position):
        return None
    return CheckSite(statement.lineno,
                     len(first[:statement.col_offset].decode(errors="replace")) + 1,
                     isinstance(statement, ast.Assert))


def _check_fixes(failure: Failure, source: str, run: Run) -> list[Fix]:
    """FX401 on Python numbers: ``torch._check`` of the guard torch could not decide, in the
    user's names as the message gives it, before its statement."""
    guards = suggested_checks(failure.message)
    if failure.kind != "export-data-dependent" or not guards:
        return []
    site = run(check_site, source, failure.line, failure.column)
    if site is None:
        return []
    found = []
    for index, guard in enumerate(guards[:1] if site.is_assert else guards):
        assumed = " (what fx-lsp assumed)" if index == 0 else ""
        found.append(_pt2_fix(f"Insert torch._check({guard}) before this line{assumed}",
                              failure.path, functools.partial(pt2_fixes.insert_check,
                                                              guard=guard),
                              (site.line, site.column), safe=False, preferred=index == 0))
    # Unsafe: the code then raises where the guard does not hold.
    return found


#: The graph break at marking a tensor ``requires_grad`` (``x.requires_grad = True``).
_REQUIRES_GRAD_BREAKS = frozenset({graph_break_kind("GB0206")})
#: The graph breaks of a branch on tensor data: its own, and the loop's it is in (GB7000 at
#: the ``if``: dynamo then runs the whole frame eagerly, and reports only that one).
_DATA_DEPENDENT_BRANCH = frozenset(graph_break_kind(code) for code in ("GB0170", "GB7000"))


def _cond_fix(failure: Failure, source: str, run: Run) -> list[Fix]:
    """FX401, GB0170 or GB7000 on a condition of an ``if`` ``cond_rewrite`` rewrites. On a guard on
    Python numbers the ``torch._check`` torch suggests comes first: a torch.cond branch that
    reads such a number (``x[:, :n]``) fails to export ("Attempted to wrap unbacked
    SymInt")."""
    if failure.kind != "export-data-dependent" and failure.kind not in _DATA_DEPENDENT_BRANCH:
        return []
    for site in run(cond_rewrite.cond_sites, source) or ():
        if site.covers(failure.line, failure.column):
            kept = "both branches" if site.branches == 2 else f"all {site.branches} branches"
            assigned = f"assigns {', '.join(site.names)}" if site.names else "returns"
            return [_pt2_fix(f"Rewrite {site.label()} as torch.cond (the graph keeps {kept}; "
                             f"it {assigned} from lambdas)", failure.path,
                             cond_rewrite.if_to_cond, (site.line, site.column), safe=False,
                             preferred=not on_python_numbers(failure.message))]
    return []


def fixes_of(failure: Failure, module: ModuleResult | None, text_of: TextOf,
             root_of: RootOf, run: Run) -> list[Fix]:
    """The fixes of an export or compile failure, the one ``--fix`` makes first."""
    if failure.kind == "export-dynamic-constraint":
        return _dynamic_fix(failure, module, root_of) if module is not None else []
    source = text_of(failure.path)
    if source is None:
        return []
    checks, cond = _check_fixes(failure, source, run), _cond_fix(failure, source, run)
    first = [*checks, *cond] if on_python_numbers(failure.message) else [*cond, *checks]
    return [*first, *_rewrites(failure, source, run),
            *value_plan.fixes_of(failure, module, source, text_of, run),
            *skipped_call_fixes.fixes_of(failure, text_of, run)]
