"""Which quick fixes fit a recompilation of torch.compile (the FX505-FX510 hints of compile
mode's loop of calls; ``fix_plan`` asks here for them): only what PyTorch names and what,
applied to the corpus (``tests/fxcore/fixing/test_recompile_fixes.py``), makes real
torch.compile compile fewer frames with the same calls.

- FX505 whose guard carries torch's hint naming a config option (an integer attribute of the
  module that ``forward`` changes: ``torch._dynamo.config.allow_unspec_int_on_nn_module =
  True``): that option, set after the file's imports (``recompile_fixes``);
- FX506 at a statement with ``torch.tensor(list(range(...)))`` (or ``range(...)``): that call
  as ``torch.arange(...)``, which keeps the size symbolic;
- FX506 at a cache keyed by a size (``if n not in self.tables: self.tables[n] = ...``): the
  value computed on every call, without the key (``size_cache_fixes``);
- FX510 at a submodule swapped in ``forward``: both modules called and one selected by a
  tensor flag that the swap, under ``torch.compiler.disable``, returns
  (``swapped_module_fixes``);
- FX506 on the first dimension at a loop over a tensor's steps: the loop's body applied to
  the whole tensor once (``step_list_fixes``); FX508 at a loop over a list of steps gets none,
  with why (the list's length is guarded whatever ``forward`` does with it).

The last three read what recompiles from the hint's ``recompile`` field (``RecompileSubject``:
the attribute swapped, the container, the dimension), which the worker fills, never from the
message's words. Each only where it computes what the code computed; where the pattern is
there but the rewrite would change outputs, ``why_no_fix`` says why, and ``--fix`` says it.

Not offered, because real torch then compiles as many frames or stops compiling the frame at
all (measured on the corpus with torch 2.13): ``dynamic=True`` or
``torch._dynamo.mark_dynamic`` for FX506/FX507 (the code specialises the size or number
again, a marked dimension raises instead), and a tensor buffer for an FX505 counter (a counter
read as a Python int, a slice bound, leaves no graph; one read by a branch breaks the graph).
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Callable

from fxcore.fixing import (
    pt2_fixes,
    recompile_fixes,
    size_cache_fixes,
    step_list_fixes,
    swapped_module_fixes,
)
from fxcore.fixing.fix import Fix, Run, TextOf
from fxcore.fixing.method_rewrites import NoFix, Rewritten, fixed_text
from fxcore.model.results import Hint
from fxcore.workspace.discovery import char_span
from fxcore.workspace.parsing import parse_module
from fxcore.workspace.paths import split_lines

#: A boolean config option as torch's recompile hints name it
#: (``torch._dynamo.config.allow_unspec_int_on_nn_module = True``).
_NAMED_OPTION = re.compile(
    r"\b(?P<option>torch\.(?:_dynamo|compiler)\.config\.[A-Za-z_]\w*) = (?P<value>True|False)\b")


def _torch_names(tree: ast.Module) -> set[str]:
    """The names module-level imports bind torch to (``import torch``, ``import torch as th``)."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {alias.asname or "torch" for alias in node.names
                      if alias.name == "torch" or (alias.name.startswith("torch.")
                                                   and alias.asname is None)}
    return names


def _is_range(node: ast.expr) -> bool:
    """``list(range(...))`` or ``range(...)`` with one to three positional arguments."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "list" and len(node.args) == 1 and not node.keywords:
        node = node.args[0]
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
        node.func.id == "range" and 1 <= len(node.args) <= 3 and not node.keywords and \
        not any(isinstance(arg, ast.Starred) for arg in node.args)


def arange_sites(source: str) -> tuple[tuple[int, int], ...] | None:
    """Where (1-based line, character column) each ``torch.tensor(list(range(...)))`` that
    ``recompile_fixes.range_tensor_to_arange`` rewrites starts; None when the file does not
    parse."""
    try:
        tree = parse_module(source)
    except SyntaxError:
        return None
    torch_names, lines = _torch_names(tree), split_lines(source)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "tensor" and isinstance(node.func.value, ast.Name) and \
                node.func.value.id in torch_names and len(node.args) == 1 and \
                _is_range(node.args[0]) and all(
                    keyword.arg in recompile_fixes.ARANGE_KEYWORDS for keyword in node.keywords):
            span = char_span(lines, node)  # ast's byte columns as fx-lsp's characters
            found.append((span.line, span.column))
    return tuple(sorted(found))


def _option_fix(hint: Hint) -> list[Fix]:
    named = _NAMED_OPTION.search(hint.message)
    if named is None:
        return []
    option, value = named.group("option"), named.group("value") == "True"
    return [Fix(f"Set {option} = {value} after the imports, as torch's hint says (for every "
                "torch.compile in the process)", hint.path,
                functools.partial(recompile_fixes.set_config_option, option=option,
                                  value=value),
                True, safe=False,  # a process-wide setting: every compiled module sees it
                import_edit=pt2_fixes.ensure_torch_import)]


def _arange_fix(hint: Hint, text_of: TextOf, run: Run) -> list[Fix]:
    source = text_of(hint.path)
    start, end = (hint.line, hint.column), (hint.end_line, hint.end_column)
    for site in run(arange_sites, source) if source is not None else ():
        if start <= site < end:
            return [Fix("Replace torch.tensor(list(range(...))) with torch.arange(...) (its "
                        "size stays symbolic)", hint.path,
                        functools.partial(recompile_fixes.range_tensor_to_arange,
                                          line=site[0], column=site[1]),
                        True, safe=False,  # of an empty range without dtype: int64, not float32
                        position=site)]
    return []


#: A rewrite of the method at a line: (source, line, *arguments) -> ``Rewritten``.
Rewrite = Callable[..., Rewritten]


def _rewrites_of(hint: Hint) -> list[tuple[str, Rewrite, tuple[str, ...]]]:
    """(title, rewrite, its arguments after the line) of each rewrite that may fit the hint,
    the one to try first first."""
    about = hint.recompile  # what the worker found recompiling; never read from the message
    if about is None:
        return []
    if hint.kind == "recompiles-every-size" and about.kind == "size":
        found: list[tuple[str, Rewrite, tuple[str, ...]]] = [
            ("Compute the cached value on every call, without the size as a dict key (no guard "
             "on the key)", size_cache_fixes.compute_without_key, ())]
        if about.dimension == 0:
            found.append(("Apply the loop's body to the whole tensor once, not to each step "
                          "(no size specialised)", step_list_fixes.vectorise_steps, ()))
        return found
    if hint.kind == "recompiles-swapped-module" and about.kind == "module":
        return [(f"Call both modules self.{about.name} may name and select with a tensor flag "
                 "the swap returns under torch.compiler.disable (no guard on which module it "
                 "is; the swap breaks the graph)",
                 swapped_module_fixes.select_with_flag, (about.name,))]
    if hint.kind == "recompiles-every-length" and about.kind == "length":
        # Never a fix, only why there is none.
        return [("", step_list_fixes.list_loop_no_fix, (about.name,))]
    return []


def _rewritten(hint: Hint, text_of: TextOf, run: Run) -> tuple[str, Rewrite, tuple[str, ...],
                                                                  Rewritten] | None:
    """The first rewrite that finds its pattern at the hint's line, and what it made of it."""
    source = text_of(hint.path)
    for title, rewrite, arguments in _rewrites_of(hint) if source is not None else ():
        found = run(rewrite, source, hint.line, *arguments)
        if found is not None:
            return title, rewrite, arguments, found
    return None


def _rewrite_fix(hint: Hint, text_of: TextOf, run: Run) -> list[Fix]:
    found = _rewritten(hint, text_of, run)
    if found is None or not isinstance(found[3], str):
        return []
    title, rewrite, arguments, _ = found
    return [Fix(title, hint.path,
                functools.partial(fixed_text, rewrite=rewrite, line=hint.line,
                                  arguments=arguments),
                True, safe=False,  # the same outputs, but other state and other graphs
                position=(hint.line, hint.column), import_edit=pt2_fixes.ensure_torch_import)]


def why_no_fix(hint: Hint, text_of: TextOf, run: Run) -> str | None:
    """Why a recompile whose pattern has a standard fix gets none here (``NoFix``): the
    rewrite would change outputs, or, for a list that ``forward`` takes, no rewrite inside the
    class stops the guard; None when a fix is offered or the pattern is not there."""
    found = _rewritten(hint, text_of, run)
    return found[3].reason if found is not None and isinstance(found[3], NoFix) else None


def fixes_of(hint: Hint, text_of: TextOf, run: Run) -> list[Fix]:
    """The fixes of a recompile hint, the one ``--fix`` makes first."""
    if hint.kind == "recompiles-every-call":
        return _option_fix(hint)
    if hint.kind == "recompiles-every-size":
        return _arange_fix(hint, text_of, run) or _rewrite_fix(hint, text_of, run)
    return _rewrite_fix(hint, text_of, run)
