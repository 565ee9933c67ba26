"""The literal constructor calls of Python text: a module, blocks read in order as one scope
(a README's code blocks, a notebook's cells), and the ``>>>`` examples of docstrings."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

from fxcore.model.job_spec import CallSite
from fxcore.workspace.call_sites.bindings import bound_names, substitute
from fxcore.workspace.call_sites.literals import (
    called_constructor,
    has_literal_arguments,
    is_literal_call_argument,
)
from fxcore.workspace.call_sites.parametrize import parametrized_bindings
from fxcore.workspace.call_sites.reading_budget import ReadingBudget
from fxcore.workspace.parsing import parse_module

_DOCTEST_LINE = re.compile(r"^\s*(>>>|\.\.\.) ?(.*)$")


def calls_in_source(text: str, site_of: str, first_line: int = 1, partial: bool = False,
                    budget: ReadingBudget | None = None) -> list[tuple[str, CallSite]]:
    """(class name, call site) for every literal constructor call in Python ``text``; with
    ``partial``, also the literal keywords of the calls whose other arguments are not
    literals (``CallSite.partial``). With ``budget``, raises ``ReadingBudgetSpent`` when it
    runs out on the way."""
    return calls_in_blocks([(first_line, text)], lambda line: f"{site_of}:{line}", partial,
                           budget)


def calls_in_blocks(blocks: list[tuple[int, str]], site_at: Callable[[int], str],
                    partial: bool = False,
                    budget: ReadingBudget | None = None) -> list[tuple[str, CallSite]]:
    """The literal constructor calls of Python ``blocks`` ((line of the first line, text)),
    read in order as one scope, as a reader reads a README's code blocks or a notebook's
    cells: a name bound in one block is read in the next. Each block is parsed alone, so one
    that does not parse loses only itself. ``site_at`` names the site of a line."""
    statements: list[ast.stmt] = []
    found: list[tuple[int, str, CallSite]] = []
    for first_line, text in blocks:
        if budget is not None:
            budget.take(text)
        try:
            block = ast.increment_lineno(parse_module(text), first_line - 1)
        except SyntaxError:
            continue
        statements += block.body
        found += _doctest_calls(block, site_at)
    found += _calls_in_tree(ast.Module(body=statements, type_ignores=[]), site_at, partial,
                            budget)
    return [(name, site) for _line, name, site in sorted(found, key=lambda call: call[0])]


#: How many nodes of a tree are looked at between two looks at the budget.
_NODES_PER_LOOK = 512


def _calls_in_tree(tree: ast.Module, site_at: Callable[[int], str], partial: bool = False,
                   budget: ReadingBudget | None = None) -> list[tuple[int, str, CallSite]]:
    """(line, class name, call site) of the literal constructor calls of ``tree``, a bare name
    argument read as what it was last bound to (``bound_names``), a parameter of a
    parametrized test as each of its values (``parametrized_bindings``)."""
    check = budget.check if budget is not None else lambda: None
    check()
    bound_at = bound_names(tree)
    check()
    parametrized = parametrized_bindings(tree)
    found = []
    unfinished = _filled_afterwards(tree)
    for count, node in enumerate(ast.walk(tree)):
        if count % _NODES_PER_LOOK == 0:
            check()
        if not isinstance(node, ast.Call) or id(node) in unfinished:
            continue
        called = called_constructor(node)
        if called is None or not (node.args or node.keywords):
            continue
        name, method = called
        if partial and method is None and not has_literal_arguments(node):
            keywords = tuple((keyword.arg, ast.unparse(keyword.value)) for keyword in node.keywords
                             if keyword.arg and is_literal_call_argument(keyword.value))
            if keywords:
                found.append((node.lineno, name, CallSite(site_at(node.lineno), (), keywords,
                                                          partial=True)))
        seen: set[tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = set()
        for bindings in parametrized.get(id(node), [bound_at]):
            substituted = substitute(node, bindings)
            call = substituted.expression
            if call is not node and not substituted.within_bounds():
                continue
            # The call itself may be a classmethod's (``Net.from_name(...)``), which no
            # nested argument may be.
            if not isinstance(call, ast.Call) or called_constructor(call) is None \
                    or not has_literal_arguments(call):
                continue
            arguments = (tuple(ast.unparse(argument) for argument in call.args),
                         tuple((keyword.arg or "", ast.unparse(keyword.value))
                               for keyword in call.keywords))
            if arguments in seen:  # a combination of parameters the call does not read
                continue
            seen.add(arguments)
            found.append((node.lineno, name,
                          CallSite(site_at(node.lineno), *arguments, method=method)))
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
