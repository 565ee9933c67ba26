"""Values that make a constructor's own checks true (``fxcore.worker.building.init_checks``):
``in_channels != out_channels`` raising asks for them equal, ``in_channels == 2 *
out_channels`` for one twice the other, ``groups == in_channels == out_channels`` for three
equal, ``len(dims) in (2, 3)`` for a tuple of two or three.

A small search, not algebra: each argument a rule names gets a few candidate values (its
guess first, then the others' guesses, the rule's constants, their doubles and halves,
multiples of 16, 32 and 64, tuples of the lengths a spatial size takes, and for a tuple the
indices ``(0, 1)``, ``(0, 1, 2)``: the levels of another sequence); the search changes
as few arguments as it can, one, then two, ..., and among those prefers the values listed
first. Bounded by ``MAX_EVALUATIONS`` rule evaluations and ``SOLVE_SECONDS``.
"""

from __future__ import annotations

import ast
import builtins
import itertools
import math
from collections.abc import Iterable
from typing import Any

from fxcore.worker.building.init_checks import InitChecks
from fxcore.worker.running.budget_clock import Budget

#: How many argument sets the solver gives, fewest changes first.
MAX_SOLUTIONS = 3
#: How many assignments are evaluated at most, and for how long (CPU time: the sets found
#: do not depend on the machine's load).
MAX_EVALUATIONS = 4000
SOLVE_SECONDS = 0.5
#: How many candidate values an argument gets.
MAX_DOMAIN = 10
#: Widths that fit most layers' rules (``GroupNorm(32, c)``, heads that divide the width).
_ROUND_WIDTHS = (16, 32, 64)
#: Values for a float argument a rule reads (a divisor never zero), the likeliest first.
_ROUND_FLOATS = (1.0, 0.5, 2.0, 4.0)


def solutions(checks: InitChecks, values: dict[str, Any], fixed: dict[str, Any],
              extra_rules: Iterable[ast.expr] = (),
              tuple_lengths: Iterable[int] = ()) -> list[dict[str, Any]]:
    """Argument sets, changed from ``values`` (the arguments being guessed) as little as
    possible, that make every rule of ``checks`` and ``extra_rules`` true; ``fixed``: the
    other arguments (their defaults). Empty when ``values`` already do, or nothing found."""
    rules = [*checks.rules, *extra_rules]
    compiled = [compile(ast.Expression(body=rule), "<check>", "eval") for rule in rules]
    evaluate = _Evaluator(checks, fixed)
    # Rules that read something unknown (a name the constructor computes otherwise) say
    # nothing the search can satisfy.
    compiled = [code for code in compiled if evaluate.known(code, values)]
    if not compiled or evaluate.all_true(compiled, values):
        return []
    variables = [name for name in values if any(_reads(rule, name, checks) for rule in rules)]
    domains = {name: _domain(name, values, rules, tuple_lengths) for name in variables}
    solving = Budget(SOLVE_SECONDS)
    budget = MAX_EVALUATIONS
    for changed in range(1, len(variables) + 1):
        found: list[tuple[int, dict[str, Any]]] = []
        for names in itertools.combinations(variables, changed):
            for picked in itertools.product(*(range(1, len(domains[n])) for n in names)):
                budget -= 1
                if budget < 0 or solving.over():
                    return [kwargs for _, kwargs in sorted(found, key=lambda f: f[0])]
                changes = {n: domains[n][i] for n, i in zip(names, picked, strict=True)}
                candidate = {**values, **changes}
                if evaluate.all_true(compiled, candidate):
                    found.append((sum(picked), candidate))
        if found:
            return [kwargs for _, kwargs in sorted(found, key=lambda f: f[0])][:MAX_SOLUTIONS]
    return []


class _Evaluator:
    """Evaluates compiled rules on argument values, with ``__init__``'s globals and the
    simple locals it assigns before them."""

    def __init__(self, checks: InitChecks, fixed: dict[str, Any]) -> None:
        self.namespace = {**checks.namespace, "__builtins__": builtins}
        self.fixed = fixed
        self.assigned = [(name, compile(ast.Expression(body=value), "<local>", "eval"))
                         for name, value in checks.assigned]

    def _locals(self, values: dict[str, Any]) -> dict[str, Any]:
        scope = {**self.fixed, **values}
        for name, code in self.assigned:
            try:
                scope[name] = eval(code, self.namespace, scope)  # safe parts only
            except Exception:
                scope.pop(name, None)
        return scope

    def known(self, code: Any, values: dict[str, Any]) -> bool:
        try:
            eval(code, self.namespace, self._locals(values))
        except NameError:
            return False
        except Exception:  # false for these values: the search may make it true
            return True
        return True

    def all_true(self, codes: list[Any], values: dict[str, Any]) -> bool:
        scope = self._locals(values)
        try:
            return all(bool(eval(code, self.namespace, scope)) for code in codes)
        except Exception:  # ``len(3)``: the constructor would raise too
            return False


def _reads(rule: ast.expr, name: str, checks: InitChecks) -> bool:
    """True when ``rule`` reads the argument ``name``, directly or through a local."""
    through = {name} | {local for local, value in checks.assigned
                        if any(isinstance(n, ast.Name) and n.id == name
                               for n in ast.walk(value))}
    return any(isinstance(node, ast.Name) and node.id in through for node in ast.walk(rule))


def _domain(name: str, values: dict[str, Any], rules: list[ast.expr],
            tuple_lengths: Iterable[int]) -> list[Any]:
    """The candidate values of one argument, its guess first."""
    guess = values[name]
    if isinstance(guess, bool):
        return [guess, not guess]
    others = [v for key, v in values.items() if key != name and _is_int(v)]
    constants = [node.value for rule in rules for node in ast.walk(rule)
                 if isinstance(node, ast.Constant) and _is_int(node.value)
                 and 0 < node.value <= 4096]
    pool = [*others, *constants, *_ROUND_WIDTHS]
    pool += [value * 2 for value in pool] + [value // 2 for value in pool if value % 2 == 0]
    pool += [a * b for a, b in itertools.combinations(others, 2) if a * b <= 1024]
    integers = [value for value in dict.fromkeys(pool) if value > 0 and value != guess]
    base = guess if _is_int(guess) else 16

    def preference(value: int) -> tuple[bool, bool, float]:
        return (value % 16 != 0, value not in others, abs(math.log(value / max(base, 1))))

    integers.sort(key=preference)
    lengths = list(dict.fromkeys([*tuple_lengths, 2, 3]))
    element = guess[0] if isinstance(guess, tuple) and guess and _is_int(guess[0]) else (
        guess if _is_int(guess) else 16)
    tuples = [tuple([element] * length) for length in lengths if length > 0]
    if isinstance(guess, (tuple, list)):  # indices (levels, stages): 0, 1, ... as short as fit
        tuples += [tuple(range(length)) for length in lengths if length > 0]
    if _is_int(guess):
        candidates = [guess, *integers[:MAX_DOMAIN - 3], *tuples[:2]]
    elif guess is None or isinstance(guess, (tuple, list)):
        candidates = [guess, *tuples, *integers[:MAX_DOMAIN - 1 - len(tuples)]]
    elif isinstance(guess, float):  # a rate the table gives 0.0 that a rule divides by
        candidates = [guess, *_ROUND_FLOATS]
    else:
        candidates = [guess]
    unique: list[Any] = []
    for value in candidates:
        if not any(type(value) is type(other) and value == other for other in unique):
            unique.append(value)
    return unique[:MAX_DOMAIN]


def _is_int(value: Any) -> bool:
    return type(value) is int
