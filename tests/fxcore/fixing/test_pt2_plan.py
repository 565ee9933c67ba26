"""The pure parts of the torch._check and torch.cond fixes: where a check can go, which ``if``
statements are rewritten (and which are not), the edits' texts, the planner's choice from an
FX401's message, and a guard rendered in the user's names. Real torch on the fixed code is
tests/fxcore/fixing/test_pt2_guard_fixes.py's."""

from __future__ import annotations

from pathlib import Path

import pytest
import sympy

from fxcore.fixing.cond_rewrite import cond_sites, if_to_cond
from fxcore.fixing.fix_plan import plan
from fxcore.fixing.pt2_fixes import insert_check
from fxcore.fixing.pt2_plan import CheckSite, check_site
from fxcore.model.guard_checks import checks_sentence, suggested_checks
from fxcore.model.results import Failure, Frame
from fxcore.worker.capture.export.user_guards import render

SOURCE = """\
import torch as th


def helper(x, n):
    if n > 2:
        y = x * 2
    elif n > 1:
        y = x
    while n > 3:
        n = n - 1
    total = x.sum() if n > 0 else x.max()
    both = bool(x.numel()) and n > 5
    sizes = [n > k for k in range(3)]
    if (m := n) > 2:
        return m
    a = 1; b = n > 2
    if n > 4: return x
    assert n > 6, "many"
    return y
"""


@pytest.mark.parametrize(("line", "column", "expected"), [
    (5, 8, CheckSite(5, 5, False)),        # if n > 2:
    (18, 12, CheckSite(18, 5, True)),      # assert n > 6
    (11, 24, CheckSite(11, 5, False)),     # the test of `a if n > 0 else b`
    (7, 10, None),                         # elif: no place before it
    (9, 11, None),                         # a loop's header decides it again each pass
    (11, 13, None),                        # one arm of `a if c else b`
    (12, 32, None),                        # after `and`: decided only sometimes
    (13, 14, None),                        # in a comprehension: `k` is its own
    (14, 9, None),                         # beside a `:=`
    (16, 16, None),                        # after `a = 1;` on its line
    (17, 15, None),                        # the body of `if n > 4: return x`
])
def test_where_a_check_can_go(line: int, column: int, expected: CheckSite | None) -> None:
    assert check_site(SOURCE, line, column) == expected


def test_a_check_goes_before_its_statement_below_the_comments_once() -> None:
    source = "import torch as th\n\n\ndef f(x, n):\n    # many\n    assert n > 6\n    return x\n"
    fixed = insert_check(source, 6, 5, "n > 6")
    assert fixed == source.replace("    # many\n", "    # many\n    th._check(n > 6)\n")
    assert insert_check(fixed, 7, 5, "n > 6") == fixed  # stated already
    assert insert_check(source, 6, 6, "n > 6") == source  # no statement starts there


BRANCHES = """\
def f(self, x, w):
    z = x + 1
    if x.sum() > 0:
        y = self.linear(x)
    else:
        y = x
    if (x > 0).all():  # all positive
        z = z * 2
    if torch.any(x):
        return x.relu()
    else:
        return w
    if x.sum() > 0: q = x
    else: q = w
    if x.sum() > 0:
        p = x * 2
    if x.sum() > 0:
        z = z * 2
    elif x.max() > 1:
        z = z + 1
    if x.sum() > 0:
        print("positive")
        z = z * 2
    if x.sum() > 0:
        z = z.add_(1)
    if x.sum() > 0:
        a = x * 2
        b = a + 1
    if x.sum() > 0:
        return x
    if x.sum() > 0 and x.max() > 1:
        z = z * 2
    if x.sum():
        z = z * 2
    if x.sum() > 0:
        z += 1
    if x.sum() > 0:
        z = super().forward(x)
    return z


if flag.sum() > 0:
    value = 1
"""


def test_the_if_statements_rewritten_as_torch_cond() -> None:
    sites = cond_sites(BRANCHES) or ()
    assert [(site.line, site.column, site.end_line, site.end_column, site.names)
            for site in sites] == [
        (3, 5, 3, 19, ("y",)), (7, 5, 7, 21, ("z",)), (9, 5, 9, 20, ()),
        (13, 5, 13, 19, ("q",)), (31, 5, 31, 35, ("z",))]
    # `and` of comparisons: torch.logical_and of each made a tensor.
    assert "    z = torch.cond(torch.logical_and(torch.as_tensor(x.sum() > 0), torch.as_tensor(" \
        "x.max() > 1)), lambda: z * 2, lambda: z.clone())\n" in if_to_cond(BRANCHES, 31, 5)
    # Refused: `p` would be unbound without the branch; an elif; print; an in-place method;
    # `b` reads the `a` its branch assigned; a return on one side only; a float condition;
    # `+=` (in place on a tensor); zero-argument super() in a lambda; module level.
    assert cond_sites("def f(:\n") is None


def test_the_torch_cond_rewrite_spells_torch_as_imported_and_clones_what_it_returns() -> None:
    source = "import torch as th\n\n\n" + BRANCHES
    fixed = if_to_cond(source, 6, 5)
    assert "    y = th.cond(x.sum() > 0, lambda: self.linear(x), lambda: x.clone())\n" \
        "    if (x > 0).all():" in fixed
    fixed = if_to_cond(fixed, 7, 5)
    assert "    # all positive\n    z = th.cond((x > 0).all(), lambda: z * 2, " \
        "lambda: z.clone())\n" in fixed
    assert if_to_cond(fixed, 7, 5) == fixed  # nothing to rewrite there any more
    returned = if_to_cond(source, 12, 5)
    assert "    return th.cond(torch.any(x), lambda: x.relu(), lambda: w.clone())\n" in returned
    suite = if_to_cond(source, 16, 5)
    assert "    q = th.cond(x.sum() > 0, lambda: x.clone(), lambda: w.clone())\n" in suite
    assert if_to_cond(source, 18, 5) == source  # `p`: refused


RETURNS = """\
def f(self, x):
    if x.sum() > 0:  # positive
        return self.left(x)
    # otherwise
    return self.right(x)


def chain(x):
    if x.min() > 0:
        return x * 2
    elif x.max() < 0:
        return -x
    else:
        return x


def early_chain(x):
    if x.min() > 0: return x * 2
    elif x.max() < 0:
        return -x
    if x.sum() > 0:
        return x + 1
    return x - 1


def refused(x):
    if x.sum() > 0:
        return x * 2
    y = x - 1
    return y
    if x.sum() > 0:
        return x.add_(1)
    return x
    if x.sum() > 0:
        return x * 2
    elif x.max() > 0:
        return x
    for _ in range(2):
        if x.sum() > 0:
            return x
    return x
"""


def test_early_returns_and_elif_chains_rewritten_as_nested_torch_cond() -> None:
    sites = cond_sites(RETURNS) or ()
    assert [(site.line, site.label(), site.branches,
             [(c.line, c.column, c.end_line, c.end_column) for c in site.elif_conditions])
            for site in sites] == [
        (2, "the if and the return after it", 2, []),
        (9, "the if/elif", 3, [(11, 10, 11, 21)]),
        (18, "the if/elif and the statements after it", 4, [(19, 10, 19, 21)]),
        (21, "the if and the return after it", 2, [])]
    # Refused: a statement between the if and the return; an in-place method; a chain that
    # falls off the end (None); a return in a loop, the fall-through outside it.
    fixed = if_to_cond(RETURNS, 2, 5)
    assert fixed.startswith(
        "def f(self, x):\n    # positive\n    # otherwise\n    return torch.cond(x.sum() > 0, "
        "lambda: self.left(x), lambda: self.right(x))\n\n\ndef chain(x):\n")
    assert "    return torch.cond(x.min() > 0, lambda: x * 2, lambda: torch.cond(x.max() < 0, " \
        "lambda: -x, lambda: x.clone()))\n\n\ndef early_chain" in if_to_cond(RETURNS, 9, 5)
    nested = ("    return torch.cond(x.min() > 0, lambda: x * 2, lambda: torch.cond("
              "x.max() < 0, lambda: -x, lambda: torch.cond(x.sum() > 0, lambda: x + 1, "
              "lambda: x - 1)))\n\n\ndef refused")
    assert nested in if_to_cond(RETURNS, 18, 5)
    # --fix applies the later if first: the earlier one then falls through to its torch.cond.
    assert nested in if_to_cond(if_to_cond(RETURNS, 21, 5), 18, 5)


def _failure(path: str, kind: str, span: tuple[int, int, int, int], message: str,
             code: str = "FX401") -> Failure:
    line, column, end_line, end_column = span
    return Failure(path, line, column, end_line, end_column, code=code, kind=kind,
                   message=message,
                   frames=[Frame(path, line, column, end_line, end_column, "helper")])


def _message(checks: tuple[str, str] | None) -> str:
    """An FX401 message as the export capture words it for a guard on Python numbers."""
    suggestion = checks_sentence(*checks) if checks else "state what holds with torch._check."
    return ("Control flow depends on tensor data: torch.export cannot decide `u0 > 2`, a "
            "condition on Python numbers taken from tensors, without real values, so export "
            f"stops here. Use torch.cond or torch.where, or {suggestion} fx-lsp assumed it "
            "True to check the rest. Checked after guesses at line 3.")


def test_the_planner_offers_the_checks_an_fx401_names(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    texts = {path: SOURCE}

    def titles(failure: Failure) -> list[tuple[str, bool, bool]]:
        return [(fix.title, fix.preferred, fix.safe)
                for fix in plan(failure, None, texts.get, lambda _: str(tmp_path))]

    at_if = _failure(path, "export-data-dependent", (5, 8, 5, 13), _message(("n > 2", "n <= 2")))
    assert titles(at_if) == [
        ("Insert torch._check(n > 2) before this line (what fx-lsp assumed)", True, False),
        ("Insert torch._check(n <= 2) before this line", False, False)]
    (first, _) = plan(at_if, None, texts.get, lambda _: str(tmp_path))
    assert "def helper(x, n):\n    th._check(n > 2)\n    if n > 2:" in first.texts(texts.get)[1]
    # An assert holds, or it raises: its negation is no fix, nor is torch._assert_async,
    # which takes a tensor, not Python numbers.
    at_assert = _failure(path, "export-data-dependent", (18, 12, 18, 17),
                         _message(("n > 6", "n <= 6")))
    assert titles(at_assert) == [
        ("Insert torch._check(n > 6) before this line (what fx-lsp assumed)", True, False)]
    assert titles(_failure(path, "export-data-dependent", (18, 12, 18, 17), _message(None))) \
        == []
    # No check where it could not go, nor for a guard not in the user's names.
    assert titles(_failure(path, "export-data-dependent", (9, 11, 9, 16),
                           _message(("n > 3", "n <= 3")))) == []
    assert titles(_failure(path, "export-data-dependent", (5, 8, 5, 13), _message(None))) == []


def test_the_planner_offers_torch_cond_for_fx401_and_gb0170_on_an_if(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    texts = {path: BRANCHES}
    cond = ("Rewrite the if as torch.cond (the graph keeps both branches; it assigns y from "
            "lambdas)", True, False)

    def titles(failure: Failure) -> list[tuple[str, bool, bool]]:
        return [(fix.title, fix.preferred, fix.safe)
                for fix in plan(failure, None, texts.get, lambda _: str(tmp_path))]

    tensor_message = "Control flow depends on tensor data: `Eq(u0, 1)`."
    assert titles(_failure(path, "export-data-dependent", (3, 8, 3, 19), tensor_message)) == [
        cond]
    assert titles(_failure(path, "graph-break-gb0170", (3, 5, 3, 19), "", "GB0170")) == [cond]
    # Another graph break on the line, or a refused if: nothing.
    assert titles(_failure(path, "graph-break-gb0088", (3, 5, 3, 19), "", "GB0088")) == []
    assert titles(_failure(path, "graph-break-gb0170", (15, 5, 15, 19), "", "GB0170")) == []


def test_the_planner_offers_torch_cond_on_an_elif_and_after_a_check_on_python_numbers(
        tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    texts = {path: RETURNS}

    def titles(failure: Failure) -> list[tuple[str, bool]]:
        return [(fix.title, fix.preferred)
                for fix in plan(failure, None, texts.get, lambda _: str(tmp_path))]

    chain = ("Rewrite the if/elif as torch.cond (the graph keeps all 3 branches; it returns "
             "from lambdas)")
    # A compiled graph breaks again at the elif, in the code after the first break.
    assert titles(_failure(path, "graph-break-gb0170", (11, 10, 11, 21), "", "GB0170")) == [
        (chain, True)]
    assert titles(_failure(path, "graph-break-gb0170", (12, 9, 12, 18), "", "GB0170")) == []
    early = ("Rewrite the if and the return after it as torch.cond (the graph keeps both "
             "branches; it returns from lambdas)")
    assert titles(_failure(path, "export-data-dependent", (21, 8, 21, 19),
                           "Control flow depends on tensor data: `Eq(u0, 1)`.")) == [
        (early, True)]
    # On Python numbers torch's own torch._check comes first: a torch.cond branch that reads
    # such a number (`x[:, :n]`) does not export ("Attempted to wrap unbacked SymInt").
    assert titles(_failure(path, "export-data-dependent", (21, 8, 21, 19),
                           _message(("n > 2", "n <= 2")))) == [
        ("Insert torch._check(n > 2) before this line (what fx-lsp assumed)", True),
        ("Insert torch._check(n <= 2) before this line", False), (early, False)]


def test_an_fx401_message_gives_its_checks_back() -> None:
    assert suggested_checks(_message(("n - m >= 2", "n - m < 2"))) == ("n - m >= 2", "n - m < 2")
    assert suggested_checks(_message(None)) == ()


def test_a_guard_is_rendered_in_the_users_names_or_not_at_all() -> None:
    u0, u1, s0 = sympy.symbols("u0 u1 s0", integer=True)
    names = {"u0": "n", "u1": "m", "s0": "y.shape[0]"}
    assert render(u0 > 2, names) == "n > 2"
    assert render(sympy.Ne(u0, 0), names) == "n != 0"
    assert render(sympy.Not(sympy.Eq(u0, 0)), names) == "n != 0"
    assert render(u0 - u1 >= 2, names) == "n - m >= 2"
    assert render(2 * u0 + 1 < s0, names) == "2 * n + 1 < y.shape[0]"
    assert render(sympy.Not(u0 > 2), names) == "n <= 2"
    assert render(u0 > 2, {"u1": "m"}) is None  # u0 is no local
    assert render(sympy.Mod(u0, 2) > 0, names) is None  # not spelled as the user would
    assert render(sympy.And(u0 > 2, u1 > 1), names) is None
    assert render(u0, names) is None  # a number, not a condition
