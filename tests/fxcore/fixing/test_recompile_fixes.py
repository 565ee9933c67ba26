"""The quick fixes of torch.compile's recompilations (``fxcore.fixing.recompile_plan``), checked
as the export fixes are: ``fx-lsp check --fix --unsafe-fixes`` on a copy of the recompile
corpus (tests/corpus/recompiles) fixes what it plans a fix for, checks again, and then REAL
torch.compile (backend eager) on the CPU with real tensors runs each fixed class and its
original with the same calls, in a process of its own (the fix sets a process-wide option):
the fixed class compiles fewer frames, stops short of ``recompile_limit``, and computes what
the original computes eagerly. FX507 gets no fix: ``dynamic=True`` compiles as many frames.
The rewrites of size-keyed caches, swapped heads and loops over steps have their own corpus
and tests (test_recompile_rewrites.py); SizeAsKey here is one such cache."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fxcore.fixing.fix_plan import plan
from fxcore.model.results import Hint
from fxcore.worker.capture.compile import recompile_loop

from cli_support import fx_lsp

CORPUS = Path(__file__).parents[2] / "corpus" / "recompiles" / "recompiles.py"

#: Run in a process of its own: each fixed class and its original, compiled with a counting
#: eager backend and called 12 times with real tensors, as a training loop calls it (``name:``
#: the dimension that grows by one each call, or ``name:-`` for the same shape each time); the
#: original first, since importing the fixed file sets what the fix sets.
REAL_TORCH = textwrap.dedent('''
    import importlib.util, json, logging, sys, warnings
    import torch
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")

    def load(path, name):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    def inputs(module, name):
        found = []
        for call in range(12):
            shape = list(module.EXAMPLE_INPUTS[name])
            if growing[name] != "-":
                shape[int(growing[name])] += call
            found.append(torch.rand(shape, generator=torch.Generator().manual_seed(call)))
        return found

    def outputs(module, name, compiled):
        frames = []

        def eager(graph_module, _inputs):
            frames.append(graph_module)
            return graph_module.forward

        torch.manual_seed(0)
        model = getattr(module, name)()
        if compiled:
            model = torch.compile(model, backend=eager)
        torch._dynamo.reset()
        with torch.no_grad():
            found = [model(x) for x in inputs(module, name)]
        torch._dynamo.reset()
        return found, len(frames)

    original_path, fixed_path = sys.argv[1], sys.argv[2]
    growing = dict(argument.split(":") for argument in sys.argv[3:])
    names = list(growing)
    original = load(original_path, "original")
    found = {}
    for name in names:
        eager, _ = outputs(original, name, False)
        _, frames = outputs(original, name, True)
        found[name] = {"original": frames, "eager": eager}
    fixed = load(fixed_path, "fixed")
    for name in names:
        results, frames = outputs(fixed, name, True)
        eager = found[name].pop("eager")
        found[name]["fixed"] = frames
        found[name]["fixed_computes_the_same"] = all(
            torch.equal(a, b) for a, b in zip(eager, results, strict=True))
    print(json.dumps(found))
''')


def report(root: Path) -> list[dict[str, object]]:
    completed = fx_lsp("check", "--mode", "compile", "--format", "json", "recompiles.py",
                       cwd=root)
    return json.loads(completed.stdout)["diagnostics"]


def growing(problem: dict[str, object]) -> str:
    """The dimension of ``x`` an FX506 names, else ``-``: the calls that make real torch
    recompile as fx-lsp's loop did."""
    message = str(problem["message"])
    if problem["code"] != "FX506":
        return "-"
    return message.split("dimension ")[1].split(" ")[0]


def recompiles(problems: list[dict[str, object]]) -> dict[str, list[str]]:
    """The recompile codes of each class."""
    found: dict[str, list[str]] = {}
    for problem in problems:
        if problem["code"] in ("FX505", "FX506", "FX507"):
            for name in problem["classes"]:  # type: ignore[attr-defined]
                found.setdefault(name, []).append(str(problem["code"]))
    return found


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.skipif(not recompile_loop.can_observe(),
                    reason="this torch reports no guard failures to a hook")
def test_fixed_classes_compile_fewer_frames_with_real_torch(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(CORPUS, root / "recompiles.py")
    original = tmp_path / "original.py"
    shutil.copy(CORPUS, original)
    problems = report(root)
    before = recompiles(problems)
    completed = fx_lsp("check", "--mode", "compile", "--fix", "--unsafe-fixes",
                       "recompiles.py", cwd=root)
    # ``recompiles.py:18:9: FX505: Set ...``: the place of each recompile fixed, before the
    # fix (a graph break's fix on the same line, GB0124's option at ItemShape's ``.item()``,
    # is not a recompile's; a swapped head's FX510, whose fix test_recompile_rewrites.py
    # proves, is not one that reaches the limit).
    fixed_lines = {int(line.split(":")[1]) for line in completed.stderr.splitlines()[1:]
                   if line.strip().startswith("recompiles.py:")
                   and line.split(":")[3].strip().startswith(("FX505", "FX506", "FX507"))}
    fixed = {name: problem for problem in problems if problem["line"] in fixed_lines
             for name in problem["classes"]}  # type: ignore[attr-defined]
    # Each FX505 of the corpus is fixed (torch's hint names the option), the FX506 of
    # torch.tensor(list(range(n))) (torch.arange) and that of a size as a dict key (the value
    # computed on every call); no FX507, nor the FX506 of a loop over a size.
    assert sorted(fixed) == sorted([*(name for name, codes in before.items() if "FX505" in codes),
                                    "TensorOfRange", "SizeAsKey"]), completed.stderr
    after = recompiles(report(root))  # fx-lsp's own check of the fixed file: none of them left
    assert after == {name: codes for name, codes in before.items() if name not in fixed}
    ran = subprocess.run([sys.executable, "-c", REAL_TORCH, str(original),
                          str(root / "recompiles.py"),
                          *(f"{name}:{growing(problem)}" for name, problem in fixed.items())],
                         capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout.splitlines()[-1])
    for name in fixed:
        # Real torch: the original reaches the limit, the fixed class compiles (at least one
        # frame) fewer frames, and computes what the original computes eagerly.
        assert found[name]["original"] == recompile_loop.recompile_limit(), found
        assert 1 <= found[name]["fixed"] < found[name]["original"], found
        assert found[name]["fixed_computes_the_same"], found


def test_fx505_fix_sets_the_option_torchs_hint_names_once() -> None:
    """The planner the editor and ``--fix`` share: the option torch's hint names, set after
    the imports in the spelling of the file's torch import; made twice, it is set once."""
    source = "import torch as th\nfrom torch import nn\n\n\nclass A(nn.Module):\n    pass\n"
    hint = Hint(path="/ws/a.py", line=5, column=9, end_line=5, end_column=23, code="FX505",
                kind="recompiles-every-call",
                message="torch.compile recompiles on every call: ... (HINT: ... using "
                        "torch._dynamo.config.allow_unspec_int_on_nn_module = True, or ...)")
    (fix,) = plan(hint, None, lambda path: source, lambda path: "/ws")
    assert not fix.safe and fix.path == "/ws/a.py"
    _, fixed = fix.texts(lambda path: source)
    assert fixed == ("import torch as th\nfrom torch import nn\n\n"
                     "th._dynamo.config.allow_unspec_int_on_nn_module = True\n\n\n"
                     "class A(nn.Module):\n    pass\n")
    assert fix.texts(lambda path: fixed)[1] == fixed
    assert plan(Hint(**{**hint.__dict__, "message": "no hint"}), None, lambda path: source,
                lambda path: "/ws") == []


def test_fx506_fix_is_offered_at_a_tensor_of_a_range_only() -> None:
    """``torch.tensor(list(range(n)), dtype=...)`` in the FX506's statement becomes
    ``torch.arange(n, dtype=...)``; a loop over a size gets no fix."""
    source = ("import torch\n\n\ndef f(x):\n"
              "    p = torch.tensor(list(range(x.shape[0])), dtype=x.dtype)  # keep\n"
              "    for i in range(x.shape[1]):\n        p = p + i\n    return p\n")

    def hint_at(line: int, end_column: int) -> Hint:
        return Hint(path="/ws/a.py", line=line, column=5, end_line=line,
                    end_column=end_column, code="FX506", kind="recompiles-every-size",
                    message="torch.compile recompiles for every new size of dimension 0 of "
                            "`x`: ...")

    (fix,) = plan(hint_at(5, 62), None, lambda path: source, lambda path: "/ws")
    assert not fix.safe
    assert "    p = torch.arange(x.shape[0], dtype=x.dtype)  # keep\n" in \
        fix.texts(lambda path: source)[1]
    assert plan(hint_at(6, 32), None, lambda path: source, lambda path: "/ws") == []
