"""Which quick fixes fit a failure: planned from the result and the sources, no editor types.

The transforms are in ``fxcore.fixing.fixes`` (torch.fx's), ``pt2_fixes`` and ``cond_rewrite``
(export's and compile's, planned by ``pt2_plan``), ``recompile_fixes`` (torch.compile's
recompilations, planned by ``recompile_plan``) and ``pyproject_fixes`` (``[tool.fx-lsp]``),
all idempotent; a ``Fix`` (``fxcore.fixing.fix``) pairs one with the file it edits, and its new
text is computed only when asked for (``Fix.texts``). The language server turns fixes into
code actions (``fx_lsp.features.code_actions``); a command line can apply the same ones. Whole-file
parses go through ``run``, so that a server can run them in a process of its own
(``fx_lsp.features.parse_process``) and cache them per text.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Callable

from fxcore.fixing import fixes, onnx_plan, pt2_plan, pyproject_fixes, recompile_plan
from fxcore.fixing.fix import Fix, RootOf, Run, TextOf, pyproject, run_here
from fxcore.model.results import Failure, Frame, Hint, ModuleResult
from fxcore.rules import BY_CODE
from fxcore.workspace import suppressions, traced_libraries
from fxcore.workspace.file_access import UnsafeWrite, inside_workspace
from fxcore.workspace.parsing import outline, parse_expression
from fxcore.workspace.paths import import_location, leaf_module_frames, split_lines
from fxcore.workspace.suppressions import Directive

#: What planners and the command line import from here.
__all__ = ["Fix", "RootOf", "Run", "TextOf", "ignore_fix", "in_workspace", "plan", "run_here",
           "unused_suppression_fix", "why_no_fix"]

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
                pyproject(module, root_of),
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
            root_of, text_of, pyproject_fixes.add_autowrap_function, frame.path, function,
            failure.kind != "len")]
    return [
        Fix(
            f"Decorate {function}() with @torch.fx.wrap (traced as one call)",
            failure.path,
            functools.partial(fixes.wrap_function, function=function),
            failure.kind != "len",
        )
    ]


def _project_list_fix(title: str, module: ModuleResult, root_of: RootOf, text_of: TextOf,
                      add: Callable[..., str], path: str, name: str,
                      preferred: bool = False) -> Fix:
    """Add ``module.name:name`` of the file ``path`` to a list in ``[tool.fx-lsp]``: the
    module's name as the worker imported it, from the texts it imported."""
    qualified = f"{import_location(path, text_of).module_name}:{name}"
    return Fix(title, pyproject(module, root_of), functools.partial(add, name=qualified),
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
                                  root_of, text_of, pyproject_fixes.add_leaf_module,
                                  frame.path, name)]
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
    path = pyproject(module, root_of)
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
                "pyproject.toml)", pyproject(module, root_of),
                functools.partial(pyproject_fixes.add_concrete_none,
                                  qualified_name=module.qualified_name, argument=hint.member),
                True, safe=False)]  # the graph then holds for the None case only


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


def why_no_fix(failure: Failure | Hint | None, text_of: TextOf, run: Run = run_here
               ) -> str | None:
    """Why a failure whose pattern has a standard fix gets none (the rewrite would change
    outputs), for ``--fix`` and the ``help:`` line to say; None otherwise."""
    if not isinstance(failure, Hint) or failure.kind == "none-check":
        return None
    try:
        return recompile_plan.why_no_fix(failure, text_of, run)
    except Exception:
        return None  # libcst rejects some sources Python accepts: nothing to say then


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
        if failure.kind == "none-check":
            return _none_fix(failure, module, root_of) if module is not None else []
        return recompile_plan.fixes_of(failure, text_of, run)
    try:
        rule = BY_CODE.get(failure.code)
        if rule is not None and rule.mode in ("export", "compile"):
            # torch.fx's fixes (torch.fx.wrap, leaf modules, concrete arguments) change
            # nothing that torch.export or torch.compile does.
            return pt2_plan.fixes_of(failure, module, text_of, root_of, run)
        if rule is not None and rule.mode == "onnx":
            return onnx_plan.fixes_of(failure, module, root_of)
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
