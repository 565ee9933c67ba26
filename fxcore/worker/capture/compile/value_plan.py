"""Values for meta tensors' ``.item()`` and ``.tolist()`` that the code's own checks and
conditions on them accept, for the compile capture's stand-ins (``meta.values_read``).

After an ``.item()`` graph break dynamo compiles the rest of ``forward`` with the number as a
constant, so a ``torch._check(n > 2)``, an ``assert n > 2`` or an ``if n > 2`` on it is decided
on the value the stand-in gave: with a fixed one, the check fails where real data passes it
(a compile error and an "Observed exception" break real torch has not), and an ``if`` takes the
branch real data would not. What the code says of its values is read by running ``forward``
once eagerly on fake CPU tensors with a shape environment, as non-strict torch.export runs it,
where each ``.item()`` gives a symbol of its own (unbacked): ``torch._check`` records what it
states (a runtime assert, a value range), and a condition torch cannot decide is assumed true
the first time at a place and false after (export's ``DataDependentGuesser``, as
``meta.values_read`` assumes of a condition on a meta tensor). Then each symbol, in the order they
were made, gets the value nearest one that every fact on it accepts.

What is read of the shape environment is private to torch (a SymNode's ``expr``, the
environment's ``deferred_runtime_asserts``, ``var_to_range`` and ``replace``): each is looked
for, and without one the plan knows fewer facts, or, without symbols, none (the stand-ins'
ones stay, as before this module); the plan says so. A value the code makes a Python number of
(``int(n)``) before it checks it is decided there, as one, by the guesser: the check after it
cannot move it (``torch.sym_int(n)``, FX402's fix, keeps it a symbol). The fake run is the
module's own code run once more: state it keeps between calls has changed by then.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
from sympy.core.relational import Relational

from fxcore.worker.capture.export import torch_hooks
from fxcore.worker.capture.export.fake import fake_inputs, faked_weights, new_mode
from fxcore.worker.capture.export.guesses import DataDependentGuesser
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.meta.values_read import Place, asking_line, replaced_tensor_methods
from fxcore.worker.running.time_limit import OutOfTime, time_limit

#: The methods whose values are planned: a Python number per element.
_ASKED = ("item", "tolist")
#: torch's symbolic Python numbers: a value only real data has.
_SYMBOLIC = (torch.SymInt, torch.SymFloat, torch.SymBool)
#: Where torch's shape environment keeps what ``torch._check`` states (private to torch).
_FACT_TABLES = ("deferred_runtime_asserts", "var_to_range")
#: How many of a line's values a note shows.
_SHOWN = 4
#: Distances from a fact's boundary tried as values, integers then others.
_INTEGER_STEPS = (-1, 0, 1)
_REAL_STEPS = (-1, -0.5, 0, 0.5, 1)


@dataclass
class _Asked:
    """One call of ``.item()``/``.tolist()`` in the fake run: where, and its values (torch's
    symbolic numbers, or Python numbers it knew), flattened."""

    place: Place
    values: list[Any]


@dataclass
class ValuePlan:
    """Per asking line, the values its calls give, in order; for each line given something
    other than one, a note saying so; or why this torch gives no plan."""

    values: dict[Place, list[Any]] = field(default_factory=dict)
    taken: list[str] = field(default_factory=list)
    missing: str | None = None

    @staticmethod
    def without(reason: str) -> ValuePlan:
        return ValuePlan(missing=f"the numbers read from tensor data on meta are one, whatever "
                                 f"the code checks of them afterwards: {reason}")


def _flat(value: Any) -> list[Any]:
    return [item for part in value for item in _flat(part)] if isinstance(value, list) \
        else [value]


def _recorder(asked: list[_Asked]) -> Callable[[str, Callable[..., Any]], Callable[..., Any]]:
    """Tensor methods that record the calls whose values torch does not know (symbols): on
    meta, the stand-ins answer those, where a tensor the code makes on the CPU answers
    itself."""
    # A fake tensor's ``tolist`` asks each element's ``item``: one call, the outer one.
    depth = [0]

    def make(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def method(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            depth[0] += 1
            try:
                value = original(self, *args, **kwargs)
            finally:
                depth[0] -= 1
            values = _flat(value)
            if not depth[0] and any(isinstance(item, _SYMBOLIC) for item in values):
                asked.append(_Asked(asking_line(), values))
            return value

        method.__name__ = name
        return method

    return make


def _expression(value: Any) -> sympy.Basic | None:
    """A symbolic number's expression, or a Python number's; None for anything else."""
    if isinstance(value, (bool, int, float)):
        return sympy.sympify(value)
    expression = getattr(getattr(value, "node", None), "expr", None)
    return expression if isinstance(expression, sympy.Basic) else None


def _finite(bound: Any) -> bool:
    # torch's int_oo is a sympy Number that says it is finite.
    return isinstance(bound, (sympy.Integer, sympy.Rational, sympy.Float))


def _facts(shape_env: Any, guesser: DataDependentGuesser) -> list[sympy.Basic]:
    """What the fake run established: the guesser's assumptions, ``torch._check``'s runtime
    asserts and the value ranges torch refined."""
    facts = [guess.fact for guess in guesser.guesses]
    asserts = getattr(shape_env, "deferred_runtime_asserts", None) or {}
    facts += [getattr(entry, "expr", sympy.true) for entries in asserts.values()
              for entry in entries]
    for symbol, bounds in (getattr(shape_env, "var_to_range", None) or {}).items():
        lower, upper = getattr(bounds, "lower", None), getattr(bounds, "upper", None)
        if _finite(lower):
            facts.append(sympy.Ge(symbol, lower))
        if _finite(upper):
            facts.append(sympy.Le(symbol, upper))
    replace = getattr(shape_env, "replace", None)
    return [replace(fact) if callable(replace) else fact for fact in facts]


def _holds(fact: sympy.Basic, symbol: sympy.Symbol, value: sympy.Basic) -> bool | None:
    """Whether ``fact`` holds with ``symbol`` at ``value``; None when sympy cannot say."""
    try:
        decided = fact.subs(symbol, value)
    except Exception:  # sympy and torch's sympy functions may raise anything: undecided
        return None
    if decided == sympy.true:
        return True
    return False if decided == sympy.false else None


def _boundaries(fact: sympy.Basic, symbol: sympy.Symbol) -> set[sympy.Basic]:
    """Where ``fact`` may change truth in ``symbol``: its numbers, and the roots of its
    polynomial relations."""
    points = {number for number in fact.atoms(sympy.Number) if _finite(number)}
    relations = [fact] if isinstance(fact, Relational) else []
    for relation in [*relations, *fact.atoms(Relational)]:
        difference = relation.lhs - relation.rhs
        if not difference.is_polynomial(symbol):
            continue
        with contextlib.suppress(Exception):  # sympy may fail on any expression: no roots
            points.update(root for root in sympy.solve(difference, symbol)
                          if _finite(root))
    return points


def _candidates(symbol: sympy.Symbol, facts: list[sympy.Basic],
                default: sympy.Basic) -> list[sympy.Basic]:
    """Values to try for ``symbol``: ``default`` first, then around each boundary of its
    facts, nearest ``default`` first."""
    integer = bool(symbol.is_integer)
    found: set[sympy.Basic] = set()
    for point in set().union(*(_boundaries(fact, symbol) for fact in facts)):
        if integer:
            for base in {math.floor(point), math.ceil(point)}:
                found.update(sympy.Integer(base + step) for step in _INTEGER_STEPS)
        else:
            found.update(sympy.Float(float(point) + step) for step in _REAL_STEPS)
    return [default, *sorted(found - {default}, key=lambda value: (abs(value - default),
                                                                   value))]


def _known(expression: sympy.Basic, chosen: dict[sympy.Symbol, sympy.Basic]) -> sympy.Basic:
    """``expression`` with its chosen symbols at their values (only its own looked up: a
    loop's ``.item()`` makes many)."""
    return expression.xreplace({symbol: chosen[symbol] for symbol in expression.free_symbols
                                if symbol in chosen})


def _choose(symbol: sympy.Symbol, facts: list[sympy.Basic],
            chosen: dict[sympy.Symbol, sympy.Basic]) -> sympy.Basic:
    """The value nearest one that every fact on ``symbol`` (and the symbols chosen before it)
    accepts; one when none does."""
    default = sympy.Integer(1) if symbol.is_integer else sympy.Float(1.0)
    relevant = []
    for fact in facts:
        with contextlib.suppress(Exception):  # a fact sympy cannot substitute says nothing
            fact = _known(fact, chosen)
            if fact.free_symbols == {symbol}:
                relevant.append(fact)
    for value in _candidates(symbol, relevant, default):
        if all(_holds(fact, symbol, value) is not False for fact in relevant):
            return value
    return default


def _made(symbol: sympy.Symbol) -> tuple[str, int]:
    """The order torch made its symbols in (``u2`` before ``u10``)."""
    stem = symbol.name.rstrip("0123456789")
    return stem, int(symbol.name[len(stem):] or 0)


def _python(value: Any, expression: sympy.Basic, chosen: dict[sympy.Symbol, sympy.Basic]
            ) -> Any:
    """``value``'s Python number with the symbols at their chosen values."""
    decided = _known(expression, chosen)
    if isinstance(value, (torch.SymBool, bool)):
        return bool(decided == sympy.true)
    if isinstance(value, (torch.SymInt, int)):
        return int(decided)
    return float(decided)


def _plan(asked: list[_Asked], facts: list[sympy.Basic],
          replace: Callable[[sympy.Basic], sympy.Basic]) -> ValuePlan:
    chosen: dict[sympy.Symbol, sympy.Basic] = {}
    # Each symbol's facts, looked up once: a loop's ``.item()`` makes many symbols.
    on_symbol: dict[sympy.Symbol, list[sympy.Basic]] = {}
    for fact in facts:
        for symbol in fact.free_symbols:
            on_symbol.setdefault(symbol, []).append(fact)
    plan = ValuePlan()
    for call in asked:
        expressions = [_expression(value) for value in call.values]
        if any(expression is None for expression in expressions):
            return ValuePlan.without("torch's symbolic numbers have no SymNode.expr")
        expressions = [replace(expression) for expression in expressions]
        for expression in expressions:
            for symbol in sorted(expression.free_symbols - set(chosen), key=_made):
                chosen[symbol] = _choose(symbol, on_symbol.get(symbol, []), chosen)
        plan.values.setdefault(call.place, []).extend(
            _python(value, expression, chosen)
            for value, expression in zip(call.values, expressions, strict=True))
    for (_, line), values in plan.values.items():
        if any(value != 1 for value in values):
            shown = ", ".join(map(str, values[:_SHOWN])) + (", ..." if values[_SHOWN:] else "")
            taken = f"number read from tensor data at line {line} was taken as {shown}" \
                if len(values) == 1 else \
                f"numbers read from tensor data at line {line} were taken as {shown}"
            plan.taken.append(
                f"On meta, the {taken}, so that the code's checks pass and its conditions "
                "hold the first time, as fx-lsp assumes of conditions on tensor data.")
    return plan


def plan_values(target: CaptureTarget, inputs: InputsDecision,
                is_workspace_path: Callable[[str], bool], seconds: float) -> ValuePlan:
    """The values ``target``'s ``.item()``/``.tolist()`` calls take, read from one eager run
    of its ``forward`` on fake CPU tensors of ``inputs`` (what the compile capture calls it
    with); an empty plan, saying why, where this torch cannot run it."""
    missing = torch_hooks.missing_fake_tensors() or torch_hooks.missing_guess_hook()
    if missing is not None:
        return ValuePlan.without(missing)
    mode = new_mode()
    guesser = DataDependentGuesser(is_workspace_path)
    asked: list[_Asked] = []
    tensors = fake_inputs(mode, inputs.specs or {})
    with faked_weights(target.module, mode), guesser.installed(), \
            replaced_tensor_methods(_recorder(asked), _ASKED), mode, torch.no_grad(), \
            contextlib.suppress(Exception, OutOfTime), time_limit(seconds):
        # The facts met before the code raises still hold: what it raises is the compile
        # capture's to find.
        target.module(**tensors, **inputs.fresh_values())
    replace = getattr(mode.shape_env, "replace", None)
    try:
        plan = _plan(asked, _facts(mode.shape_env, guesser),
                     replace if callable(replace) else _unchanged)
    except Exception as error:  # sympy may raise anything on torch's expressions
        return ValuePlan.without(f"no value could be worked out ({type(error).__name__}: "
                                 f"{error})")
    absent = [name for name in _FACT_TABLES if not hasattr(mode.shape_env, name)]
    if absent and plan.missing is None:
        plan.missing = ("what torch._check states of numbers read from tensor data on meta is "
                        f"known only in part: torch's ShapeEnv has no {', '.join(absent)}")
    return plan


def _unchanged(expression: sympy.Basic) -> sympy.Basic:
    return expression
