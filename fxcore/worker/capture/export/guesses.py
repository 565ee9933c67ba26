"""Recovery from data-dependent guards: torch.export stops at the first place where Python
needs a value that only real data has (``if x.sum() > 0``, ``int(t.item())``). The shape
environment raises ``GuardOnDataDependentSymNode`` from ``ShapeEnv.evaluate_expr`` there;
``DataDependentGuesser`` intercepts it, records the site (the live stack) and returns a
guess, so one export finds every such site.

A guess per call site (an instruction of the user's code): the first decision at a site is
True, later ones False, so a data-dependent ``while`` ends after one pass. A Python number
taken from a tensor is guessed as 1. The hook is private to torch:
``torch_hooks.missing_guess_hook`` says whether this torch has it. A guard the user's code
decides on Python numbers is also written in the user's names (``user_guards``), for the
``torch._check`` that states it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType
from typing import Any

import sympy

from fxcore.worker.capture.export.torch_hooks import GuardOnDataDependentSymNode, ShapeEnv
from fxcore.worker.capture.export.user_guards import decided_by_user_code, guard_checks
from fxcore.worker.source.locate import RawPosition, stack_positions


@dataclass
class Guess:
    """One data-dependent site as met: the expression torch could not decide, whether it is
    a condition (else a Python number taken from a tensor), the value assumed, and the live
    stack, outermost first."""

    expression: str
    is_condition: bool
    assumed: bool | int | float
    stack: list[RawPosition]
    #: File, line and column of the innermost workspace frame's instruction.
    site: tuple[str, int, int | None]
    #: Whether the user's code decided the condition on Python numbers (a SymBool), not a
    #: torch function on a tensor.
    python_condition: bool = False
    #: The condition as the assumed value has it, then its negation, in the user's names;
    #: () when its symbols are not the frame's locals (``user_guards``).
    checks: tuple[str, ...] = ()
    #: What the guess takes to hold, over torch's symbols: the condition or its negation, or
    #: the number equal to the value assumed (the compile capture picks values that hold).
    fact: sympy.Basic = sympy.true


class DataDependentGuesser:
    """Records each data-dependent guard in user code and answers it with a guess."""

    def __init__(self, is_workspace_path: Callable[[str], bool]) -> None:
        self._is_workspace_path = is_workspace_path
        self.guesses: list[Guess] = []
        self._decisions: dict[tuple[str, int, int | None], int] = {}

    @contextmanager
    def installed(self) -> Iterator[None]:
        """``ShapeEnv.evaluate_expr`` answers data-dependent guards with guesses."""
        original = ShapeEnv.evaluate_expr
        guesser = self

        def evaluate_expr(shape_env: Any, orig_expr: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return original(shape_env, orig_expr, *args, **kwargs)
            except GuardOnDataDependentSymNode:
                guess = guesser.guess(orig_expr)
                if guess is None:
                    raise
                return guess

        ShapeEnv.evaluate_expr = evaluate_expr  # type: ignore[method-assign]
        try:
            yield
        finally:
            ShapeEnv.evaluate_expr = original  # type: ignore[method-assign]

    def guess(self, expression: sympy.Basic) -> sympy.Basic | None:
        """The value assumed for ``expression`` at the current user line, recorded; None
        when no workspace code is on the stack (then it is not the user's to fix)."""
        stack = stack_positions(sys._getframe(2))
        # The instruction, not only the line: `if a.sum() > 0 and a.max() > 2` asks twice.
        site = next(((p.filename, p.line, p.column) for p in reversed(stack)
                     if self._is_workspace_path(p.filename)), None)
        if site is None:
            return None
        user_frame, callee = self._user_frame(sys._getframe(2))
        decisions = self._decisions.get(site, 0)
        self._decisions[site] = decisions + 1
        # sympy's Symbol is a Boolean too; a bare unbacked symbol (``u0`` of an int
        # ``.item()``, ``zuf0`` of a float one) is a number that int() or float() asks for.
        is_condition = isinstance(expression, sympy.logic.boolalg.Boolean) and \
            not isinstance(expression, sympy.Symbol)
        assumed: bool | int | float
        if is_condition:
            assumed = decisions == 0
            answer: sympy.Basic = sympy.true if assumed else sympy.false
            fact = expression if assumed else sympy.Not(expression)
        else:
            if expression.is_integer:
                assumed, answer = 1, sympy.Integer(1)
            else:
                assumed, answer = 1.0, sympy.Float(1.0)
            fact = sympy.Eq(expression, answer)
        python_condition = is_condition and decided_by_user_code(callee)
        checks = guard_checks(expression, user_frame, bool(assumed)) \
            if python_condition and user_frame is not None else ()
        self.guesses.append(Guess(str(expression), is_condition, assumed, stack, site,
                                  python_condition, checks, fact))
        return answer

    def _user_frame(self, frame: FrameType | None) -> tuple[FrameType | None, FrameType | None]:
        """The innermost workspace frame from ``frame`` outwards, and the frame it called."""
        callee = None
        while frame is not None and not self._is_workspace_path(frame.f_code.co_filename):
            callee, frame = frame, frame.f_back
        return frame, callee
