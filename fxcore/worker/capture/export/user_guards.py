"""A data-dependent guard in the user's own names, for the ``torch._check`` line that states it.

torch's non-strict export does the same for the guards a torch function raises
(``torch._export.non_strict_utils._suggest_fixes_for_data_dependent_error_non_strict``): it
maps each symbol of the guard to a local variable of the user's frame that holds it, and prints
the guard and its negation as ``torch._check(...)`` lines. Here that is done for the guards the
user's code itself decides: a ``bool()`` of a SymBool or SymInt called from the user's frame
(``if n > 2``, ``assert n > 0``, ``if y.shape[0] > 3``, ``if n:``), where the guard is exactly the
user's condition.

A symbol is mapped only to a local that holds it as a plain SymInt (``n``) or as a size of a
local tensor (``y.shape[0]``), never through an attribute or a container: then the names are
bound, with those values, in the statement the check goes before. A guard that is not a
comparison of sums and integer multiples of such symbols (``//``, ``%``, ``min``, ``and``) is
not rendered: its Python spelling would not be the user's.
"""

from __future__ import annotations

from types import FrameType

import sympy
import torch

_OPERATORS: dict[type, str] = {
    sympy.StrictGreaterThan: ">", sympy.GreaterThan: ">=", sympy.StrictLessThan: "<",
    sympy.LessThan: "<=", sympy.Equality: "==", sympy.Unequality: "!=",
}


def _bool_codes() -> tuple[object, ...]:
    """The code of ``torch.SymBool.__bool__`` and ``torch.SymInt.__bool__`` (the calls a Python
    ``if``/``assert``/``bool()`` on a SymBool, or ``if n:`` on a SymInt, makes), those of this
    torch's that are Python code."""
    methods = [getattr(getattr(torch, name, None), "__bool__", None)
               for name in ("SymBool", "SymInt")]
    return tuple(code for code in (getattr(method, "__code__", None) for method in methods)
                 if code is not None)


_BOOL_CODES = _bool_codes()


def decided_by_user_code(callee: FrameType | None) -> bool:
    """Whether the guard is a SymBool (or SymInt) that the user's frame turned into a Python
    bool itself (``callee`` is the frame the user's frame called), not one a torch function
    asked for."""
    return callee is not None and any(callee.f_code is code for code in _BOOL_CODES)


def _symbol_name(value: object) -> str | None:
    """``u0`` for a SymInt that is exactly one symbol, else None."""
    if not isinstance(value, torch.SymInt):
        return None
    expression = value.node.expr
    return expression.name if isinstance(expression, sympy.Symbol) else None


def local_names(frame: FrameType) -> dict[str, str]:
    """Symbol name -> how the frame's locals spell it: a SymInt local first, else a size of a
    tensor local (in the order the locals were bound)."""
    names: dict[str, str] = {}
    sizes: dict[str, str] = {}
    for name, value in frame.f_locals.items():
        if not name.isidentifier():  # ``.0``, a comprehension's iterator
            continue
        symbol = _symbol_name(value)
        if symbol is not None:
            names.setdefault(symbol, name)
        elif isinstance(value, torch.Tensor):
            for index, size in enumerate(value.shape):
                symbol = _symbol_name(size)
                if symbol is not None:
                    sizes.setdefault(symbol, f"{name}.shape[{index}]")
    return {**sizes, **names}


def _term(term: sympy.Basic, names: dict[str, str]) -> str | None:
    """A product ``2 * n`` (without its sign when negative: the sum writes it)."""
    coefficient, rest = term.as_coeff_Mul()
    if not isinstance(coefficient, sympy.Integer):
        return None
    factors = [names.get(factor.name) if isinstance(factor, sympy.Symbol) else None
               for factor in sympy.Mul.make_args(rest)]
    if rest == 1 or None in factors:
        return str(abs(coefficient)) if rest == 1 else None
    product = " * ".join(str(factor) for factor in factors)
    return product if abs(coefficient) == 1 else f"{abs(coefficient)} * {product}"


def _sum(expression: sympy.Basic, names: dict[str, str]) -> str | None:
    """``n - m + 2`` for a sum of integer multiples of mapped symbols, else None."""
    if not (isinstance(expression, (sympy.Add, sympy.Mul, sympy.Symbol, sympy.Integer))):
        return None
    text = ""
    for term in expression.as_ordered_terms():
        rendered = _term(term, names)
        if rendered is None:
            return None
        negative = term.as_coeff_Mul()[0] < 0
        if not text:
            text = f"-{rendered}" if negative else rendered
        else:
            text += f" - {rendered}" if negative else f" + {rendered}"
    return text or None


def render(guard: sympy.Basic, names: dict[str, str]) -> str | None:
    """``n > 2`` for the guard ``u0 > 2`` when ``names`` maps ``u0`` to ``n``, else None."""
    operator = _OPERATORS.get(type(guard))
    if operator is None:
        return None
    left, right = (_sum(side, names) for side in guard.args)
    if left is None or right is None:
        return None
    return f"{left} {operator} {right}"


def guard_checks(guard: sympy.Basic, frame: FrameType, assumed: bool) -> tuple[str, ...]:
    """The guard and its negation in the user's names, the one assumed first; () when a
    symbol is not a local of ``frame`` or the guard is not a comparison rendered here."""
    names = local_names(frame)
    rendered = render(guard, names)
    negated = render(sympy.Not(guard), names)
    if rendered is None or negated is None:
        return ()
    return (rendered, negated) if assumed else (negated, rendered)
