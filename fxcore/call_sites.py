"""Constructor calls with literal arguments written anywhere in a workspace.

READMEs, docs, docstrings, doctests, tests, examples and ``if __name__ == "__main__":``
blocks usually show how a model is built: ``ViT(image_size=256, patch_size=32, dim=1024)``.
This module reads them statically, with ``ast`` only: the file holding a call is never run,
so it is safe in the CLI and server processes. A call counts when every argument is a literal
(``ast.literal_eval``) or a call of the same kind (``GPT(GPTConfig(n_layer=2))``), or a bare
name last bound in the same scope to one of those (``model = GPT(...).cuda()`` then
``Wrapper(model)``: ``_bound_names``), or a parameter of a test that pytest parametrizes with
literal values, read as each of them (``_parametrized_bindings``). A README's code blocks, and
a notebook's code cells, are read in order as one scope. The worker evaluates the nested calls
with the names of the class's module and packages (``fxcore.arguments.class_namespace``).
"""

from __future__ import annotations

import ast
import bisect
import itertools
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from fxcore.file_access import MAX_FILE_BYTES, read_text
from fxcore.job_spec import CallSite
from fxcore.notebook import (
    MAX_NOTEBOOK_BYTES,
    NOTEBOOK_SUFFIX,
    NotebookCells,
    cell_python,
    is_notebook,
)
from fxcore.parsing import parse_expression, parse_module
from fxcore.workspace import SKIPPED_FOLDERS

#: A Markdown code fence (CommonMark): up to three spaces, three or more backticks or tildes,
#: then the info string, whose first word is the block's language.
_MARKDOWN_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})[ \t]*([^`\s]*)[^\n]*$")
#: Languages of the fenced blocks read as Python; a block without one is read too.
_PYTHON_LANGUAGES = frozenset({"", "python", "py", "python3", "pycon"})
#: Markdown files read besides the Python ones.
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".rst")
_DOCTEST_LINE = re.compile(r"^\s*(>>>|\.\.\.) ?(.*)$")


def is_literal_call_argument(node: ast.expr) -> bool:
    """A literal, or a call of a CapWords name whose arguments are all such."""
    if isinstance(node, ast.Call):
        return _called_name(node) is not None and all(
            is_literal_call_argument(argument) for argument in node.args
        ) and all(keyword.arg is not None and is_literal_call_argument(keyword.value)
                  for keyword in node.keywords)
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _called_name(call: ast.Call) -> str | None:
    function = call.func
    name = function.id if isinstance(function, ast.Name) else (
        function.attr if isinstance(function, ast.Attribute) else None)
    return name if name and name[:1].isupper() else None


def calls_in_source(text: str, site_of: str, first_line: int = 1) -> list[tuple[str, CallSite]]:
    """(class name, call site) for every literal constructor call in Python ``text``."""
    return calls_in_blocks([(first_line, text)], lambda line: f"{site_of}:{line}")


def calls_in_blocks(blocks: list[tuple[int, str]],
                    site_at: Callable[[int], str]) -> list[tuple[str, CallSite]]:
    """The literal constructor calls of Python ``blocks`` ((line of the first line, text)),
    read in order as one scope, as a reader reads a README's code blocks or a notebook's
    cells: a name bound in one block is read in the next. Each block is parsed alone, so one
    that does not parse loses only itself. ``site_at`` names the site of a line."""
    statements: list[ast.stmt] = []
    found: list[tuple[int, str, CallSite]] = []
    for first_line, text in blocks:
        try:
            block = ast.increment_lineno(parse_module(text), first_line - 1)
        except SyntaxError:
            continue
        statements += block.body
        found += _doctest_calls(block, site_at)
    found += _calls_in_tree(ast.Module(body=statements, type_ignores=[]), site_at)
    return [(name, site) for _line, name, site in sorted(found, key=lambda call: call[0])]


def _calls_in_tree(tree: ast.Module,
                   site_at: Callable[[int], str]) -> list[tuple[int, str, CallSite]]:
    """(line, class name, call site) of the literal constructor calls of ``tree``, a bare name
    argument read as what it was last bound to (``_bound_names``), a parameter of a
    parametrized test as each of its values (``_parametrized_bindings``)."""
    bound_at = _bound_names(tree)
    parametrized = _parametrized_bindings(tree)
    found = []
    unfinished = _filled_afterwards(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or id(node) in unfinished:
            continue
        name = _called_name(node)
        if name is None or not (node.args or node.keywords):
            continue
        seen: set[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = set()
        for bindings in parametrized.get(id(node), [bound_at]):
            substituted = _substituted(node, bindings)
            call = substituted.expression
            if call is not node and not substituted.within_bounds():
                continue
            if not is_literal_call_argument(call):
                continue
            assert isinstance(call, ast.Call)
            arguments = (tuple(ast.unparse(argument) for argument in call.args),
                         tuple((keyword.arg or "", ast.unparse(keyword.value))
                               for keyword in call.keywords))
            if arguments in seen:  # a combination of parameters the call does not read
                continue
            seen.add(arguments)
            found.append((node.lineno, name, CallSite(site_at(node.lineno), *arguments)))
    return found


#: Methods that add to a container after it was built (``nn.Sequential``, ``nn.ModuleList``,
#: ``nn.ModuleDict`` and their subclasses).
_FILLING_METHODS = frozenset({"add_module", "register_module", "append", "extend", "insert",
                              "update"})


def _filled_afterwards(tree: ast.AST) -> set[int]:
    """The ids of calls whose result is assigned and then filled in the same function (or
    module): ``self.branches = Concurrent(axis=1)`` followed by ``self.branches.add_module(...)``
    or ``self.branches["a"] = ...``. Such a call builds an unfinished container, so it does not
    show how the class is built."""
    unfinished = set()
    for scope in ast.walk(tree):
        if not isinstance(scope, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nodes = [node for statement in scope.body for node in ast.walk(statement)]
        filled: list[tuple[str, int]] = []  # (the container's expression, line)
        for node in nodes:
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in _FILLING_METHODS:
                filled.append((ast.unparse(node.func.value), node.lineno))
            elif isinstance(node, ast.Assign):
                filled += [(ast.unparse(target.value), node.lineno) for target in node.targets
                           if isinstance(target, ast.Subscript)]
        for node in nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and any(
                    container == ast.unparse(target) and line > node.lineno
                    for target in node.targets for container, line in filled):
                unfinished.add(id(node.value))
    return unfinished


#: Methods of ``nn.Module`` that return the module itself: ``model = Net(...).cuda()`` binds
#: ``model`` to the ``Net`` call.
_SELF_RETURNING_METHODS = frozenset({"cuda", "cpu", "eval", "train", "to", "float", "half",
                                     "double", "bfloat16", "requires_grad_"})
#: The most nodes, and the deepest nesting of calls, a call may have once its bare names are
#: replaced by what they are bound to: each replacement copies a whole expression, so a chain
#: of bindings that each use the one before twice would otherwise double the text at every
#: step, and a long chain (``a1 = Net(a0)``, ``a2 = Net(a1)``, ...) would nest deeper than
#: ``ast.unparse`` and the worker's evaluation recurse.
MAX_SUBSTITUTED_NODES = 2000
MAX_SUBSTITUTED_DEPTH = 16
#: Statements that open a scope of their own: their bodies bind apart from the code around.
_SCOPE_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
#: Expressions whose names are their own (comprehension variables, lambda parameters).
_SCOPE_EXPRESSIONS = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class _Substituted(NamedTuple):
    """An expression with its bare names replaced (``_substituted``)."""

    expression: ast.expr
    nodes: int
    #: How deeply calls nest in it: 0 for a literal, 1 for a call of literals.
    depth: int

    def within_bounds(self) -> bool:
        return self.nodes <= MAX_SUBSTITUTED_NODES and self.depth <= MAX_SUBSTITUTED_DEPTH


#: The expression a name is bound to, by ``id`` of each ``ast.Name`` that reads it.
_Bindings = dict[int, _Substituted]


def _bound_names(tree: ast.Module) -> _Bindings:
    """For each bare name read in ``tree`` (a module, a README block, a docstring's examples)
    whose latest plain assignment earlier in the same scope (module, function or class body)
    gave it a literal or a literal call: that expression, its own bare names replaced the same
    way (``model = TransformerWrapper(...)`` then ``AutoregressiveWrapper(model)``). Any other
    binding of the name (``for``, ``with``, augmented, tuple targets, ``del``) forgets it."""
    bound_at: _Bindings = {}
    _bind_in_block(tree.body, {}, bound_at)
    return bound_at


def _bind_in_block(statements: list[ast.stmt], bound: dict[str, _Substituted],
                   bound_at: _Bindings) -> None:
    for statement in statements:
        if isinstance(statement, _SCOPE_STATEMENTS):
            _bind_in_block(statement.body, {}, bound_at)
            bound.pop(statement.name, None)
            continue
        # A compound statement's header (an ``if`` test, ``for`` target, ``with`` item,
        # ``except`` clause, ``case`` pattern) binds before its blocks run, in order.
        blocks: list[tuple[str | None, list[ast.stmt]]] = []  # (the name it binds, block)
        headers: list[ast.AST] = []
        for _field, value in ast.iter_fields(statement):
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, ast.stmt):
                    if not blocks or blocks[-1][1] is not value:
                        blocks.append((None, value))
                elif isinstance(item, ast.ExceptHandler):
                    headers += [part for part in (item.type,) if part is not None]
                    blocks.append((item.name, item.body))
                elif isinstance(item, ast.match_case):
                    headers += [part for part in (item.pattern, item.guard) if part is not None]
                    blocks.append((None, item.body))
                elif isinstance(item, ast.AST):
                    headers.append(item)
        for header in headers:
            _note_reads(header, bound, bound_at)
        if blocks:
            for header in headers:
                _forget_stored(header, bound)
            for name, block in blocks:
                bound.pop(name or "", None)
                _bind_in_block(block, bound, bound_at)
        else:
            _bind_statement(statement, bound, bound_at)


def _note_reads(node: ast.AST, bound: dict[str, _Substituted],
                bound_at: _Bindings) -> None:
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, _SCOPE_EXPRESSIONS):
            continue
        if (isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load)
                and current.id in bound):
            bound_at[id(current)] = bound[current.id]
        else:
            pending.extend(ast.iter_child_nodes(current))


def _forget_stored(node: ast.AST, bound: dict[str, _Substituted]) -> None:
    """Forget every name ``node`` binds (targets, ``as`` names, match captures)."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
            bound.pop(inner.id, None)
        for captured in (getattr(inner, "name", None), getattr(inner, "rest", None)):
            if isinstance(captured, str):
                bound.pop(captured, None)


def _bind_statement(statement: ast.stmt, bound: dict[str, _Substituted],
                    bound_at: _Bindings) -> None:
    targets: list[ast.expr] = []
    value: ast.expr | None = None
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.simple:
        targets, value = [statement.target], statement.value
    if value is not None and targets and all(isinstance(target, ast.Name)
                                             for target in targets):
        substituted = _substituted(_without_self_returning_calls(value), bound_at)
        if substituted.within_bounds() and is_literal_call_argument(substituted.expression):
            for target in targets:
                assert isinstance(target, ast.Name)
                bound[target.id] = substituted
            return
    _forget_stored(statement, bound)


def _without_self_returning_calls(value: ast.expr) -> ast.expr:
    """``Net(...)`` for ``Net(...).cuda().eval()``: the module those methods return."""
    inner = value
    while (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
           and inner.func.attr in _SELF_RETURNING_METHODS):
        inner = inner.func.value
    return inner if isinstance(inner, ast.Call) and _called_name(inner) else value


def _substituted(node: ast.expr, bound_at: _Bindings) -> _Substituted:
    """``node`` with each bare name given as an argument of a call (at any depth of nested
    calls) replaced by the expression it is bound to, with its size; ``node`` itself when
    nothing is replaced."""
    if isinstance(node, ast.Name) and id(node) in bound_at:
        return bound_at[id(node)]
    if not isinstance(node, ast.Call):
        return _Substituted(node, sum(1 for _ in ast.walk(node)), 0)
    args = [_substituted(argument, bound_at) for argument in node.args]
    values = [_substituted(keyword.value, bound_at) for keyword in node.keywords]
    nodes = (1 + sum(1 for _ in ast.walk(node.func)) + sum(part.nodes for part in args)
             + sum(1 + part.nodes for part in values))
    depth = 1 + max((part.depth for part in [*args, *values]), default=0)
    if all(new.expression is old for new, old in zip(args, node.args, strict=True)) and all(
            new.expression is keyword.value
            for new, keyword in zip(values, node.keywords, strict=True)):
        return _Substituted(node, nodes, depth)
    call = ast.Call(func=node.func, args=[new.expression for new in args],
                    keywords=[ast.keyword(arg=keyword.arg, value=new.expression)
                              for new, keyword in zip(values, node.keywords, strict=True)])
    return _Substituted(ast.copy_location(call, node), nodes, depth)


#: The most combinations of its parameters' values a call in a parametrized test is read
#: with: one call site each.
MAX_PARAMETER_COMBINATIONS = 8
#: The most combinations of several ``parametrize`` decorators' values looked at to choose them.
_MAX_COMBINATIONS_LOOKED_AT = 4096
#: Marks of a ``pytest.param`` entry that say the combination does not work.
_FAILING_MARKS = re.compile(r"\b(skip|skipif|xfail)\b")


def _parametrized_bindings(tree: ast.Module) -> dict[int, list[_Bindings]]:
    """For each call in the body of a test function that pytest parametrizes
    (``@pytest.mark.parametrize("depth", (4, 5))``, or through a module-level alias
    ``param = pytest.mark.parametrize``): its names' bindings for each chosen combination of
    the parameters' literal values (``_parameter_combinations``), a parameter bound to its
    value as an assignment at the top of the body would bind it. A parameter that is a
    fixture, or whose value is not literal, stays unbound."""
    aliases = {target.id for statement in tree.body if isinstance(statement, ast.Assign)
               and _names_parametrize(statement.value, set())
               for target in statement.targets if isinstance(target, ast.Name)}
    found: dict[int, list[_Bindings]] = {}
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        combinations = _parameter_combinations(function, aliases)
        if not combinations:
            continue
        calls = [id(node) for node in _own_scope_nodes(function.body)
                 if isinstance(node, ast.Call)]
        for combination in combinations:
            bound_at: _Bindings = {}
            _bind_in_block(function.body, dict(combination), bound_at)
            for call in calls:
                found.setdefault(call, []).append(bound_at)
    return found


def _own_scope_nodes(statements: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of ``statements`` outside the functions and classes they define."""
    nodes: list[ast.AST] = []
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        nodes.append(node)
        if not isinstance(node, _SCOPE_STATEMENTS):
            pending.extend(ast.iter_child_nodes(node))
    return nodes


def _names_parametrize(function: ast.expr, aliases: set[str]) -> bool:
    """Whether ``function`` is ``parametrize`` as pytest spells it: an attribute chain ending
    in ``parametrize`` (``pytest.mark.parametrize``, ``mark.parametrize``) or an alias."""
    return (isinstance(function, ast.Attribute) and function.attr == "parametrize") or (
        isinstance(function, ast.Name) and function.id in aliases)


def _parameter_combinations(function: ast.FunctionDef | ast.AsyncFunctionDef,
                            aliases: set[str]) -> list[dict[str, _Substituted]]:
    """Up to ``MAX_PARAMETER_COMBINATIONS`` combinations of the values ``function``'s
    ``parametrize`` decorators give its parameters, as pytest combines them (the product of
    the decorators, in their order). Each chosen combination is the one that adds most values
    not yet chosen, ties to the earlier: every value of each decorator is read before any is
    read twice, so ``(False, True)`` gives its ``True`` whatever the other decorators hold."""
    parameters = {argument.arg for argument in (*function.args.posonlyargs,
                                                *function.args.args,
                                                *function.args.kwonlyargs)}
    decorators = [entries for decorator in function.decorator_list
                  if (entries := _parametrize_entries(decorator, aliases, parameters))]
    if not decorators:
        return []
    remaining = list(itertools.islice(
        itertools.product(*(range(len(entries)) for entries in decorators)),
        _MAX_COMBINATIONS_LOOKED_AT))
    chosen: list[tuple[int, ...]] = []
    seen: set[tuple[int, int]] = set()  # (decorator, entry)
    while remaining and len(chosen) < MAX_PARAMETER_COMBINATIONS:
        best = max(range(len(remaining)), key=lambda position: (
            len(set(enumerate(remaining[position])) - seen), -position))
        combination = remaining.pop(best)
        chosen.append(combination)
        seen |= set(enumerate(combination))
    return [{name: value for decorator, entry in enumerate(combination)
             for name, value in decorators[decorator][entry].items()}
            for combination in chosen]


def _parametrize_entries(decorator: ast.expr, aliases: set[str],
                         parameters: set[str]) -> list[dict[str, _Substituted]]:
    """The entries of a ``parametrize(argnames, argvalues)`` decorator, each as its literal
    values by parameter name; none for another decorator, an ``indirect`` one (its values go
    to fixtures) or one whose names or values are not written out. ``pytest.param(...)``
    entries are unwrapped, those marked ``skip``, ``skipif`` or ``xfail`` left out."""
    if not (isinstance(decorator, ast.Call) and _names_parametrize(decorator.func, aliases)):
        return []
    arguments = dict(zip(("argnames", "argvalues"), decorator.args, strict=False))
    arguments.update({keyword.arg: keyword.value for keyword in decorator.keywords
                      if keyword.arg is not None})
    names = _literal_or_none(arguments.get("argnames"))
    if isinstance(names, str):
        names = [name.strip() for name in names.split(",") if name.strip()]
    indirect = _literal_or_none(arguments.get("indirect", ast.Constant(False)))
    values = arguments.get("argvalues")
    if not (isinstance(names, (list, tuple)) and names
            and all(isinstance(name, str) for name in names)
            and isinstance(values, (ast.List, ast.Tuple)) and indirect is not True
            and isinstance(indirect, (bool, list, tuple))):
        return []
    direct = parameters - (set(indirect) if isinstance(indirect, (list, tuple)) else set())
    entries = []
    for entry in values.elts:
        if isinstance(entry, ast.Call) and isinstance(entry.func, ast.Attribute) \
                and entry.func.attr == "param":
            if any(keyword.arg == "marks" and _FAILING_MARKS.search(ast.unparse(keyword.value))
                   for keyword in entry.keywords):
                continue
            written = list(entry.args)
        elif len(names) == 1:
            written = [entry]
        else:
            written = list(entry.elts) if isinstance(entry, (ast.List, ast.Tuple)) else []
        if len(written) != len(names):
            continue
        entries.append({name: _substituted(value, {}) for name, value in zip(
            names, written, strict=True) if name in direct and is_literal_call_argument(value)})
    return entries


def _literal_or_none(node: ast.expr | None) -> object:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _doctest_calls(tree: ast.AST,
                   site_at: Callable[[int], str]) -> list[tuple[int, str, CallSite]]:
    """Calls in the ``>>>`` examples of docstrings; the examples of one docstring are read as
    one block (a name bound in one is read in the next), each parsed alone so that one that
    does not parse loses only itself."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef)):
            continue
        docstring = ast.get_docstring(node, clean=False)
        if not docstring or ">>>" not in docstring:
            continue
        start = node.body[0].lineno if node.body else 1
        statements: list[ast.stmt] = []
        for offset, source in _doctest_examples(docstring):
            try:
                example = parse_module(source)
            except SyntaxError:
                continue
            statements += ast.increment_lineno(example, start - 1 + offset).body
        found += _calls_in_tree(ast.Module(body=statements, type_ignores=[]), site_at)
    return found


def _doctest_examples(docstring: str) -> list[tuple[int, str]]:
    """(line offset in the docstring, source) of each ``>>>`` example with its ``...``
    continuation lines."""
    examples: list[tuple[int, list[str]]] = []
    continues = False
    for offset, line in enumerate(docstring.splitlines()):
        match = _DOCTEST_LINE.match(line)
        if match is None:
            continues = False
        elif match.group(1) == ">>>" or not continues:
            examples.append((offset, [match.group(2)]))
            continues = True
        else:
            examples[-1][1].append(match.group(2))
    return [(offset, "\n".join(lines) + "\n") for offset, lines in examples]


def markdown_python_blocks(text: str) -> list[tuple[int, str]]:
    """(line of the block's first line, its text) for each fenced block of Python. Fences are
    paired as Markdown pairs them: a block closes only at a fence of the same character at
    least as long, with no info string, so the closing fence of a ```bash block is never
    taken for the opening of the next one."""
    blocks = []
    lines = text.splitlines()
    opened: tuple[str, str, int] | None = None  # (fence, language, index of its first line)
    for index, line in enumerate(lines):
        match = _MARKDOWN_FENCE.match(line)
        if match is None:
            continue
        fence, language = match.group(1), match.group(2).lower()
        if opened is None:
            if not (fence[0] == "`" and "`" in line[line.index(fence) + len(fence):]):
                opened = (fence, language, index + 1)
        elif (fence[0] == opened[0][0] and len(fence) >= len(opened[0])
              and line.strip() == fence):
            if opened[1] in _PYTHON_LANGUAGES:
                blocks.append((opened[2] + 1, "\n".join(lines[opened[2]:index]) + "\n"))
            opened = None
    return blocks


def calls_in_markdown(text: str, site_of: str) -> list[tuple[str, CallSite]]:
    """The calls in a Markdown file's Python blocks, read in order as one scope."""
    return calls_in_blocks(markdown_python_blocks(text), lambda line: f"{site_of}:{line}")


@dataclass
class _IndexedFile:
    """The calls of one file, read when its size and modification time were ``stamp``."""

    stamp: tuple[int, int]
    calls: list[tuple[str, CallSite]]


@dataclass
class CallSiteIndex:
    """Every literal constructor call of one workspace, by class name. Built by one walk of
    the workspace; then each file is read again only when it is named by ``update`` (a file
    event) or found changed by ``rescan``."""

    root: str
    files: dict[str, _IndexedFile] = field(default_factory=dict)
    #: Class name -> its calls, by file then as found in the file; merged from ``files`` on
    #: the first look-up after a change.
    _calls: dict[str, list[CallSite]] | None = None

    def for_class(self, name: str) -> CallSite | None:
        """The first call of ``name`` (by file, then line): the one a reader meets first."""
        sites = self._merged().get(name)
        return sites[0] if sites else None

    def for_class_all(self, name: str) -> list[CallSite]:
        """Every call of ``name``, by file then line."""
        return self._merged().get(name, [])

    def _merged(self) -> dict[str, list[CallSite]]:
        if self._calls is None:
            self._calls = {}
            for path in sorted(self.files):
                for name, site in self.files[path].calls:
                    self._calls.setdefault(name, []).append(site)
        return self._calls

    def rescan(self) -> set[str]:
        """Walk the workspace: read new and changed files, forget deleted ones. The names of
        the classes whose calls may have changed."""
        found = _workspace_files(self.root)
        changed = {name for path in set(self.files) - set(found) for name in self._forget(path)}
        for path in found:
            changed |= self._read(path, force=False)
        return changed

    def update(self, path: str) -> set[str]:
        """``path`` was created, changed or deleted (a file or a folder): bring its calls up
        to date. The names of the classes whose calls may have changed."""
        if path == self.root or self.root.startswith(path + os.sep):
            return self.rescan()  # the whole workspace, or a folder around it
        if os.path.isdir(path):
            inside = set(_workspace_files(path)) if self._indexed(path, folder=True) else set()
            below = {known for known in self.files if known.startswith(path + os.sep)}
            changed = {name for known in below - inside for name in self._forget(known)}
            for found in inside:
                changed |= self._read(found, force=True)
            return changed
        if self._indexed(path, folder=False) and os.path.isfile(path):
            return self._read(path, force=True)
        below = [known for known in self.files
                 if known == path or known.startswith(path + os.sep)]
        return {name for known in below for name in self._forget(known)}

    def _indexed(self, path: str, folder: bool) -> bool:
        """Whether the walk of the workspace reads ``path`` (or walks into the folder)."""
        relative = os.path.relpath(path, self.root)
        if relative == os.curdir:
            return folder
        parts = relative.split(os.sep)
        if parts[0] == os.pardir:
            return False
        folders = parts if folder else parts[:-1]
        if any(part.startswith(".") or part in SKIPPED_FOLDERS for part in folders):
            return False
        return folder or _is_indexed_name(parts[-1])

    def _forget(self, path: str) -> set[str]:
        indexed = self.files.pop(path, None)
        if indexed is None:
            return set()
        self._calls = None
        return {name for name, _site in indexed.calls}

    def _read(self, path: str, force: bool) -> set[str]:
        """Read ``path`` again unless ``force`` is off and its size and modification time
        are those it was read at."""
        try:
            status = os.stat(path)
        except OSError:
            return self._forget(path)
        stamp = (status.st_size, status.st_mtime_ns)
        known = self.files.get(path)
        if known is not None and known.stamp == stamp and not force:
            return set()
        calls = _file_calls(path, self.root)
        self.files[path] = _IndexedFile(stamp, calls)
        self._calls = None
        before = {name for name, _site in known.calls} if known is not None else set()
        return before | {name for name, _site in calls}


def calls_in_notebook(text: str, site_of: str) -> list[tuple[str, CallSite]]:
    """The calls in a notebook's code cells, all of them (data loading and training cells
    too: they are read, never run), read in order as one scope, each cell's at
    ``nb.ipynb:cell 12:<line>``."""
    try:
        cells = NotebookCells.from_json(text)
    except (ValueError, RecursionError):
        return []
    blocks: list[tuple[int, str]] = []
    cell_numbers: list[int] = []
    next_line = 1
    for index, cell in enumerate(cells.cells):
        source = cell_python(cell.source) if cell.kind == "code" and cells.python else None
        if source is not None:
            blocks.append((next_line, source))
            cell_numbers.append(index + 1)
            next_line += len(source.splitlines()) + 1

    def site_at(line: int) -> str:
        # The cells are read one after another, each from the line after the one before.
        position = bisect.bisect_right([first for first, _source in blocks], line) - 1
        return f"{site_of}:cell {cell_numbers[position]}:{line - blocks[position][0] + 1}"

    return calls_in_blocks(blocks, site_at)


def _is_indexed_name(name: str) -> bool:
    return name.endswith(".py") or name.lower().endswith((*_MARKDOWN_SUFFIXES,
                                                          NOTEBOOK_SUFFIX))


def _workspace_files(root: str) -> list[str]:
    """Python and Markdown files below ``root``, skipping what ``python_files`` skips, in one
    walk."""
    files = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders
                         if not name.startswith(".") and name not in SKIPPED_FOLDERS]
        files += [os.path.join(folder, name) for name in names if _is_indexed_name(name)]
    return sorted(files)


def _file_calls(path: str, root: str) -> list[tuple[str, CallSite]]:
    """The literal constructor calls written in one file, named by its path below ``root``."""
    try:
        text = read_text(path, limit=MAX_NOTEBOOK_BYTES if is_notebook(path)
                         else MAX_FILE_BYTES)
    except OSError:  # gone, or not a regular file of bounded size: no calls from it
        return []
    site_of = os.path.relpath(path, root)
    if is_notebook(path):
        return calls_in_notebook(text, site_of)
    return (calls_in_markdown(text, site_of)
            if path.lower().endswith(_MARKDOWN_SUFFIXES)
            else calls_in_source(text, site_of))


def build_index(root: str) -> CallSiteIndex:
    index = CallSiteIndex(root=root)
    index.rescan()
    return index


def most_varied(sites: list[CallSite], most: int) -> tuple[CallSite, ...]:
    """The first of ``sites`` (the call a reader meets first), then up to ``most - 1`` others,
    each the one that adds most not yet seen among those chosen: first keywords and nested
    classes (``alibi_pos_bias``, ``attn_layers=Decoder``: the variants that build other
    submodules), then literal values; ties go to the earlier call. Later calls are built only
    for the submodule classes they hold, so calls that differ in what they turn on cover more
    of a library than the first few written."""
    if not sites or most < 1:
        return ()
    chosen = [sites[0]]
    seen_variants, seen_values = _call_features(sites[0])
    remaining = [(site, *_call_features(site)) for site in sites[1:]]
    while remaining and len(chosen) < most:
        best = max(range(len(remaining)), key=lambda position: (
            len(remaining[position][1] - seen_variants),
            len(remaining[position][2] - seen_values), -position))
        site, variants, values = remaining.pop(best)
        chosen.append(site)
        seen_variants |= variants
        seen_values |= values
    return tuple(chosen)


def _call_features(site: CallSite) -> tuple[set[str], set[str]]:
    """What a call turns on: (its keywords and the classes of its nested calls, each by its
    place: ``attn_layers.rel_pos_bias``, ``attn_layers=Decoder``; its literal values by place:
    ``heads=8``)."""
    variants: set[str] = set()
    values: set[str] = set()
    arguments = [(f"[{position}]", source) for position, source in enumerate(site.args)]
    arguments += [(name, source) for name, source in site.kwargs]
    for place, source in arguments:
        if not place.startswith("["):
            variants.add(place)
        try:
            node = parse_expression(source).body
        except SyntaxError:
            continue
        _argument_features(place, node, variants, values)
    return variants, values


def _argument_features(place: str, node: ast.expr, variants: set[str],
                       values: set[str]) -> None:
    if not isinstance(node, ast.Call):
        values.add(f"{place}={ast.unparse(node)}")
        return
    variants.add(f"{place}={_called_name(node)}")
    for position, argument in enumerate(node.args):
        _argument_features(f"{place}[{position}]", argument, variants, values)
    for keyword in node.keywords:
        variants.add(f"{place}.{keyword.arg}")
        _argument_features(f"{place}.{keyword.arg}", keyword.value, variants, values)


class CallSiteIndexes:
    """One index per workspace root, shared by every job of an engine. Each is built on its
    first use and then kept current by ``changed`` (the server's file events) and by
    ``rescan_before_next_use`` (a workspace trace, a client without file events): a job
    never walks the workspace, so a run's cost stays linear in its files."""

    def __init__(self) -> None:
        self._indexes: dict[str, CallSiteIndex] = {}
        self._lock = threading.Lock()
        #: Set from the event loop, consumed by the next job: never waits for ``_lock``.
        self._rescan = threading.Event()

    def first_calls(self, root: str, names: Iterable[str]) -> dict[str, CallSite]:
        """Class name -> its first call in the workspace at ``root``, for those of ``names``
        that have one (under the lock: the server's file events update the index meanwhile)."""
        return {name: sites[0] for name, sites in self.calls(root, names, 1).items()}

    def calls(self, root: str, names: Iterable[str],
              most: int) -> dict[str, tuple[CallSite, ...]]:
        """Class name -> up to ``most`` of its calls in the workspace at ``root`` with different
        arguments (its first by file, then line; then the most varied: ``most_varied``), for
        those of ``names`` that have one."""
        root = os.path.abspath(root)
        with self._lock:
            if self._rescan.is_set():
                self._rescan.clear()
                for index in self._indexes.values():
                    index.rescan()
            index = self._indexes.get(root)
            if index is None:
                index = self._indexes[root] = build_index(root)
            found = {}
            for name in names:
                # A call repeated with the same arguments builds the same instance again.
                distinct: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], CallSite] = {}
                for site in index.for_class_all(name):
                    distinct.setdefault((site.args, site.kwargs), site)
                if distinct:
                    found[name] = most_varied(list(distinct.values()), most)
            return found

    def changed(self, paths: list[str]) -> dict[str, set[str]]:
        """Files (or folders) created, changed or deleted: update every built index that holds
        them. Workspace root -> the names of the classes whose calls may have changed."""
        found: dict[str, set[str]] = {}
        with self._lock:
            for path in map(os.path.abspath, paths):
                for root, index in self._indexes.items():
                    names = index.update(path)
                    if names:
                        found.setdefault(root, set()).update(names)
        return found

    def rescan_before_next_use(self) -> None:
        """Have the next job walk each built index's workspace once for changes no event
        announced (files changed outside the editor, with a client that sends no events)."""
        self._rescan.set()
