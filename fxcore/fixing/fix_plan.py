"""Which quick fixes fit a failure: planned from the result and the sources, no editor types.

The transforms are in ``fxcore.fixing.fixes`` (torch.fx's), ``pt2_fixes`` (export's and
compile's) and ``pyproject_fixes`` (``[tool.fx-lsp]``), all idempotent; a ``Fix`` pairs one with
the file it edits, and its new text is computed only when asked for (``Fix.texts``). The
language server turns fixes into code actions (``fx_lsp.code_actions``); a command line can
apply the same ones. Whole-file parses go through ``run``, so that a server can run them in a
process of its own (``fx_lsp.parse_process``) and cache them per text.
"""

from __future__ import annotations

import ast
import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from fxcore.fixing import fixes, pt2_fixes, pyproject_fixes
from fxcore.model.results import Failure, Frame, Hint, ModuleResult, Range
from fxcore.rules import BY_CODE
from fxcore.rules.compile import GRAPH_BREAK_PREFIX
from fxcore.workspace import suppressions, traced_libraries
from fxcore.workspace.file_access import UnsafeWrite, inside_workspace
from fxcore.workspace.parsing import outline, parse_expression, parse_module
from fxcore.workspace.paths import import_location, leaf_module_frames, split_lines
from fxcore.workspace.suppressions import Directive

T = TypeVar("T")

#: ``run(function, *args)``: ``function(*args)``, wherever it is computed.
Run = Callable[..., Any]


def run_here(function: Callable[..., T], *args: Any) -> T:
    """Compute in this process, uncached (the command line, tests)."""
    return function(*args)


#: Text of a file by absolute path (the open buffer, else the disk), None when it does not exist.
TextOf = Callable[[str], "str | None"]
#: The workspace root of a file (its ``pyproject.toml`` takes the project-level fixes).
RootOf = Callable[[str], str]


@dataclass
class Fix:
    title: str
    path: str
    #: The fixed text of ``path`` from its current text ("" when the file does not exist yet).
    transform: Callable[[str], str]
    preferred: bool = False
    #: Safe fixes change neither what the code does when run nor what a traced graph computes:
    #: a leaf module, ``torch.fx.wrap``, ``torch.sym_int``. ``fx-lsp check --fix`` applies
    #: only these unless given ``--unsafe-fixes``.
    safe: bool = True
    #: (line, column) the edit is made at, for edits located by position (which must be
    #: applied before edits that move lines); None for edits located by name.
    position: tuple[int, int] | None = None
    #: An import the edit's new code needs, added by name once the edit is made: after
    #: every edit located by position, when several are made in one pass.
    import_edit: Callable[[str], str] | None = None

    def texts(self, text_of: TextOf, run: Run = run_here) -> tuple[str | None, str]:
        """(current text or None, fixed text): the expensive part, done on resolve."""
        old = text_of(self.path)
        new = run(self.transform, old or "")
        if self.import_edit is not None and new != (old or ""):
            new = run(self.import_edit, new)
        return old, new


def _location_frame(failure: Failure) -> Frame | None:
    """The frame the failure is reported at (its innermost workspace frame)."""
    for frame in reversed(failure.frames):
        if frame.path == failure.path and frame.line == failure.line:
            return frame
    return failure.frames[-1] if failure.frames else None


def _enclosing_class(source: str, line: int, run: Run) -> str | None:
    found = run(outline, source)
    for name, first, last in found.classes if found is not None else ():
        if first <= line <= last:
            return name
    return None


def _span_text(source: str, failure: Failure) -> str:
    lines = split_lines(source)
    if failure.line != failure.end_line or not 0 < failure.line <= len(lines):
        return ""
    return lines[failure.line - 1][failure.column - 1 : failure.end_column - 1]


def _names(expression: str) -> set[str]:
    try:
        tree = parse_expression(expression.strip())
    except SyntaxError:
        return set()
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}


def _len_fixes(failure: Failure, text_of: TextOf) -> list[Fix]:
    source = text_of(failure.path)
    if source is None:
        return []
    line, column = failure.line, failure.column
    return [
        Fix('Wrap len for tracing: torch.fx.wrap("len")', failure.path, fixes.wrap_len, True),
        Fix(
            f"Replace {_span_text(source, failure) or 'len(x)'} with .size(0)",
            failure.path,
            functools.partial(fixes.len_to_size, line=line, column=column),
            safe=False,  # len() of a list or a tuple has no .size()
            position=(line, column),
        ),
    ]


def _library_fixes(failure: Failure, module: ModuleResult | None, text_of: TextOf,
                   root_of: RootOf, run: Run) -> list[Fix]:
    """FX008 on a call of an einops function that takes and gives one tensor: record it as
    one graph node. By name (``from einops import rearrange``): ``torch.fx.wrap`` in the
    calling file, which patches that file's global wherever it is called from. As an
    attribute (``einops.rearrange``): the tracer's ``autowrap_modules``, which patches the
    library module itself. The layers get the leaf-module fix (``_leaf_fix``)."""
    source = text_of(failure.path)
    if source is None:
        return []
    call = traced_libraries.call_at(run(traced_libraries.library_calls, source), failure.range)
    if call is None or not call.has_fix:
        return []
    if call.imported_name is not None:
        name = call.imported_name
        return [Fix(f'Trace {name}() as one call: torch.fx.wrap("{name}")', failure.path,
                    functools.partial(fixes.wrap_global, name=name), True)]
    if module is None:
        return []
    return [Fix(f"Trace {call.library}'s functions as calls (autowrap-modules, pyproject.toml)",
                _pyproject(module, root_of),
                functools.partial(pyproject_fixes.add_autowrap_module, name=call.library), True)]


def _helper_fix(failure: Failure, module: ModuleResult | None, text_of: TextOf,
                root_of: RootOf, run: Run) -> list[Fix]:
    frame = _location_frame(failure)
    source = text_of(failure.path)
    if frame is None or source is None or frame.function == "forward":
        return []
    function = frame.function
    found = run(outline, source)
    if found is None or function not in found.functions:
        return []
    index = failure.frames.index(frame)
    caller = failure.frames[index - 1] if index > 0 else None
    if caller is not None and caller.path != frame.path and module is not None:
        # torch.fx.wrap patches the name in the defining module only; a caller that imported
        # the function into its own module keeps calling the original. The tracer's
        # autowrap_functions patches it wherever a traced forward's globals hold it.
        return [_project_list_fix(
            f"Trace {function}() as one call (autowrap-functions, pyproject.toml)", module,
            root_of, pyproject_fixes.add_autowrap_function, frame.path, function,
            failure.kind != "len")]
    return [
        Fix(
            f"Decorate {function}() with @torch.fx.wrap (traced as one call)",
            failure.path,
            functools.partial(fixes.wrap_function, function=function),
            failure.kind != "len",
        )
    ]


def _pyproject(module: ModuleResult, root_of: RootOf) -> str:
    return os.path.join(root_of(module.path), "pyproject.toml")


def _project_list_fix(title: str, module: ModuleResult, root_of: RootOf,
                      add: Callable[..., str], path: str, name: str,
                      preferred: bool = False) -> Fix:
    """Add ``module.name:name`` of the file ``path`` to a list in ``[tool.fx-lsp]``."""
    qualified = f"{import_location(path).module_name}:{name}"
    return Fix(title, _pyproject(module, root_of), functools.partial(add, name=qualified),
               preferred)


def _leaf_fix(
    failure: Failure, module: ModuleResult, text_of: TextOf, root_of: RootOf, run: Run
) -> list[Fix]:
    """A failure inside the forward of a submodule's class: make that class a leaf."""
    for frame in leaf_module_frames(failure.frames[1:]):
        source = text_of(frame.path)
        name = _enclosing_class(source, frame.line, run) if source is not None else None
        if name is None or (frame.path == module.path and name == module.class_name):
            continue
        return [_project_list_fix(f"Treat {name} as a leaf module (pyproject.toml)", module,
                                  root_of, pyproject_fixes.add_leaf_module, frame.path, name)]
    return []


def _concrete_fixes(
    failure: Failure, module: ModuleResult, text_of: TextOf, root_of: RootOf, run: Run
) -> list[Fix]:
    """Control flow on a plain ``forward`` argument of the traced class: make it concrete."""
    if failure.kind != "control-flow" or failure.path != module.path:
        return []
    source = text_of(module.path)
    if source is None or _enclosing_class(source, failure.line, run) != module.class_name:
        return []
    plain = run(fixes.plain_forward_arguments, source, module.class_name)
    found = []
    path = _pyproject(module, root_of)
    qualified = module.qualified_name
    for name in sorted(_names(_span_text(source, failure)) & plain.keys()):
        value = plain[name]
        shown = repr(value) if not isinstance(value, bool) else str(value).lower()
        found.append(
            Fix(
                f"Trace {module.class_name} with {name} = {shown} (concrete-args, pyproject.toml)",
                path,
                functools.partial(
                    pyproject_fixes.add_concrete_arg, qualified_name=qualified, argument=name,
                    value=value,
                ),
                True,
                safe=False,  # the graph then holds for this value of the argument only
            )
        )
    return found


def _none_fix(hint: Hint, module: ModuleResult, root_of: RootOf) -> list[Fix]:
    """FX201: trace the argument as None (the case the graph lacks) with ``concrete-none``."""
    if not hint.member:
        return []
    return [Fix(f"Trace {module.class_name} with {hint.member} = None (concrete-none, "
                "pyproject.toml)", _pyproject(module, root_of),
                functools.partial(pyproject_fixes.add_concrete_none,
                                  qualified_name=module.qualified_name, argument=hint.member),
                True, safe=False)]  # the graph then holds for the None case only


# ---------------------------------------------------------------------------------------------
# torch.export and torch.compile


@dataclass(frozen=True)
class Site:
    """A construct a fix of the export and compile modes rewrites: what it is, where
    (1-based lines, character columns, end exclusive) and how a title names it."""

    kind: Literal["assert", "int", "float", "logging"]
    #: The assert's condition, the int()/float() call, the logging call's statement.
    range: Range
    label: str


def pt2_sites(source: str) -> tuple[Site, ...] | None:
    """The constructs the export and compile fixes rewrite, from one ``ast`` parse (None
    when the file does not parse): asserts with no message or a plain string one,
    ``int(x.item())`` and ``float(x.item())``, and print/logging call statements alone on
    their lines."""
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
    return tuple(found)


def _is_item_call(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and not node.args and not node.keywords and \
        isinstance(node.func, ast.Attribute) and node.func.attr == "item"


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
    return [Fix(title, _pyproject(module, root_of),
                functools.partial(pyproject_fixes.apply_dynamic_suggestion,
                                  qualified_name=module.qualified_name,
                                  class_name=module.class_name, name=name, bounds=bounds),
                True, safe=False)]  # the export is then checked for that range only


def _pt2_fix(title: str, path: str, edit: Callable[..., str], start: tuple[int, int],
             safe: bool = True) -> Fix:
    """The preferred fix that makes ``edit`` (a ``pt2_fixes`` edit) at ``start``, adding
    ``import torch`` when the file's new code needs it."""
    return Fix(title, path, functools.partial(edit, line=start[0], column=start[1]), True,
               safe=safe, position=start, import_edit=pt2_fixes.ensure_torch_import)


def _pt2_fixes(failure: Failure, text_of: TextOf, run: Run) -> list[Fix]:
    """The fixes of an export or compile failure: a rewrite of the construct it is on."""
    source = text_of(failure.path)
    sites = run(pt2_sites, source) if source is not None else None
    where = failure.range
    for site in sites or ():
        start = (site.range.line, site.range.column)
        if failure.kind == "export-data-dependent" and site.kind == "assert" \
                and site.range == where:
            return [_pt2_fix("Replace assert with torch._assert_async (a check torch.export "
                             "keeps)", failure.path, pt2_fixes.assert_to_assert_async, start,
                             safe=False)]  # AssertionError -> RuntimeError, kept under -O
        if failure.kind == "export-python-data" and site.kind in ("int", "float") \
                and site.range == where:
            symbolic = pt2_fixes.SYMBOLIC_CASTS[site.kind]
            return [_pt2_fix(f"Replace {site.label} with torch.{symbolic}() (symbolic under "
                             "torch.export)", failure.path, pt2_fixes.cast_to_symbolic, start)]
        if failure.kind.startswith(GRAPH_BREAK_PREFIX) and site.kind == "logging" \
                and start <= (where.line, where.column) < (site.range.end_line,
                                                           site.range.end_column):
            return [_pt2_fix(f"Run {site.label} only outside torch.compile (if not "
                             "torch.compiler.is_compiling())", failure.path,
                             pt2_fixes.skip_when_compiling, start,
                             safe=False)]  # compiled, it no longer prints or logs
    return []


def plan(
    failure: Failure | Hint | None,
    module: ModuleResult | None,
    text_of: TextOf,
    root_of: RootOf,
    run: Run = run_here,
) -> list[Fix]:
    """The fixes that fit a failure (of ``module``'s trace), their edits not computed yet
    (cheap but for one parse per text, which ``run`` does)."""
    if failure is None:
        return []
    return _fixes(failure, module, text_of, root_of, run)


def in_workspace(fixes: list[Fix], root_of: RootOf) -> tuple[list[Fix], list[str]]:
    """The fixes whose file lies in its workspace once links are followed, and why each other
    one is not made: a link committed to a repository (``pyproject.toml -> ~/.bashrc``) must
    not point a fix elsewhere. The editor and ``--fix`` both offer only the first."""
    kept, refused = [], []
    for fix in fixes:
        try:
            inside_workspace(fix.path, root_of(fix.path))
        except UnsafeWrite as error:
            refused.append(str(error))
        else:
            kept.append(fix)
    return kept, refused


def _fixes(failure: Failure | Hint, module: ModuleResult | None, text_of: TextOf,
           root_of: RootOf, run: Run) -> list[Fix]:
    found: list[Fix] = []
    if isinstance(failure, Hint):
        return _none_fix(failure, module, root_of) if failure.kind == "none-check" and \
            module is not None else []
    try:
        rule = BY_CODE.get(failure.code)
        if rule is not None and rule.mode in ("export", "compile"):
            # torch.fx's fixes (torch.fx.wrap, leaf modules, concrete arguments) change
            # nothing that torch.export or torch.compile does.
            if failure.kind == "export-dynamic-constraint":
                return _dynamic_fix(failure, module, root_of) if module is not None else []
            return _pt2_fixes(failure, text_of, run)
        if failure.kind == "len":
            found += _len_fixes(failure, text_of)
        if failure.kind == "einops":
            found += _library_fixes(failure, module, text_of, root_of, run)
        found += _helper_fix(failure, module, text_of, root_of, run)
        if module is not None:
            found += _leaf_fix(failure, module, text_of, root_of, run)
            found += _concrete_fixes(failure, module, text_of, root_of, run)
    except Exception:
        # libcst rejects some sources Python accepts (and the reverse): offer nothing then.
        return []
    return found


def ignore_fix(code: str, path: str, line: int) -> Fix:
    """"Ignore FX002 on this line": a ``# fx-lsp: ignore[FX002]`` comment (the editor offers it
    for every failure; ``--fix`` never applies it)."""
    return Fix(f"Ignore {code} on this line", path,
               functools.partial(suppressions.add_ignore, line=line, code=code))


def unused_suppression_fix(path: str, directive: Directive,
                           unused: frozenset[str] | None) -> Fix:
    """Remove what an FX900 reports: the ``unused`` codes of a suppression (None: all of it)."""
    return Fix("Remove unused suppression", path,
               functools.partial(suppressions.remove_unused, line=directive.range.line,
                                 directive=directive, unused=unused), True)
