"""The rewrites of recompiling code (``recompile_plan`` with ``size_cache_fixes``,
``swapped_module_fixes``, ``step_list_fixes``) on the classes of recompile_fix_corpus: the
planner the editor and ``--fix`` share offers a fix at each ``# fixed`` line and none, with why,
at each ``# no fix`` line; ``fx-lsp check --fix --unsafe-fixes`` makes the fixes and says why
it left the others; and real torch, in a process of its own, computes the same eagerly with
the fixed classes for every input size of the calls, and recompiles less under torch.compile
for the same calls."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from compiled_proof import assert_outputs_kept

from fxcore.fixing.fix_plan import plan, why_no_fix
from fxcore.model.results import Hint, RecompileSubject
from fxcore.worker.capture.compile import recompile_loop

from cli_support import fx_lsp

CORPUS = Path(__file__).parent / "recompile_fix_corpus" / "classes.py"
SOURCE = CORPUS.read_text()

#: The message of each code, as compile mode words it (the planner reads none of it).
MESSAGES = {
    "FX506": "torch.compile recompiles for every new size of dimension 1 of `x`: the guard "
             "that fails: tensor 'x' size mismatch at index 1. expected 10, actual 11",
    "FX506@0": "torch.compile recompiles for every new size of dimension 0 of `x`: the guard "
               "that fails: tensor 'x' size mismatch at index 0. expected 5, actual 6",
    "FX510": "torch.compile compiles again for each module assigned to `self.head`: the guard "
             "that fails: ___check_type_id(self._modules['head'], 1), type=<class 'Linear'>",
    "FX508": "torch.compile recompiles for every new length of `steps`: the "
             "guard that fails: len(steps) == 3",
}
KINDS = {"FX506": "recompiles-every-size", "FX510": "recompiles-swapped-module",
         "FX508": "recompiles-every-length"}
#: What the worker says recompiles with each code (``Hint.recompile``): what the planner reads.
SUBJECTS = {"FX506": RecompileSubject("size", "x", 1), "FX506@0": RecompileSubject("size", "x", 0),
            "FX510": RecompileSubject("module", "head"),
            "FX508": RecompileSubject("length", "steps")}
#: The diagnostic of each marked line: (class, code as in MESSAGES).
MARKED = {"PositionTable": "FX506", "RotaryTables": "FX506", "LearnedTable": "FX506",
          "AlternatingHeads": "FX510", "HeadWeightRead": "FX510", "DeepHead": "FX510",
          "DepthHeads": "FX510", "OwnStackHeads": "FX510", "StepMap": "FX506@0",
          "StepRecurrence": "FX506@0", "StepListMap": "FX508"}


def line_of(name: str) -> int:
    """The line of the class's ``# fixed`` or ``# no fix`` mark."""
    lines = SOURCE.splitlines()
    start = lines.index(next(line for line in lines if line.startswith(f"class {name}(")))
    return next(number for number, line in enumerate(lines[start:], start=start + 1)
                if "# fixed" in line or "# no fix" in line)


def hint_of(name: str, path: str = "/ws/classes.py") -> Hint:
    code = MARKED[name]
    line = line_of(name)
    return Hint(path=path, line=line, column=9, end_line=line, end_column=20,
                code=code.split("@")[0], kind=KINDS[code.split("@")[0]],
                message=MESSAGES[code], recompile=SUBJECTS[code])


def fixed_text(name: str, source: str = SOURCE) -> str | None:
    """The planner's first fix of the class's diagnostic applied, or None when none."""
    fixes = plan(hint_of(name), None, lambda path: source, lambda path: "/ws")
    if not fixes:
        return None
    assert not fixes[0].safe
    _, text = fixes[0].texts(lambda path: source)
    assert fixes[0].texts(lambda path: text)[1] == text  # made twice, it is made once
    return text


def method_text(text: str, name: str) -> str:
    """The class's source in ``text``."""
    start = text.index(f"class {name}(")
    end = text.find("\nclass ", start + 1)
    return text[start:end if end != -1 else len(text)]


def test_size_keyed_cache_is_computed_without_its_key() -> None:
    fixed = fixed_text("PositionTable")
    assert fixed is not None
    assert ("        length = x.shape[1]\n"
            "        table = torch.arange(length, dtype=torch.float32)[:, None] * self.scale"
            "  # fixed\n"
            "        return self.lin(x) + table\n") in method_text(fixed, "PositionTable")
    assert method_text(fixed, "LearnedTable") == method_text(SOURCE, "LearnedTable")


def test_rotary_cache_of_several_statements_is_computed_on_every_call() -> None:
    """The statements before the fill stay, in order; ``x.device`` is no read of ``x``'s data."""
    fixed = fixed_text("RotaryTables")
    assert fixed is not None
    assert method_text(fixed, "RotaryTables").endswith(
        "        seq_len = x.shape[1]\n"
        "        t = torch.arange(seq_len, device=x.device, dtype=torch.float32)\n"
        "        freqs = torch.outer(t, self.inv_freq)\n"
        "        emb = torch.cat((freqs, freqs), dim=-1)\n"
        "        cache_entry = (emb.cos(), emb.sin())  # fixed\n"
        "        cos, sin = cache_entry\n"
        "        return self.lin(x) * cos + x * sin\n\n")
    dtype_read = SOURCE.replace("device=x.device, dtype=torch.float32", "dtype=x.dtype")
    assert (why_no_fix(hint_of("RotaryTables"), lambda path: dtype_read) or "").startswith(
        "self.cache[seq_len] reads `x`, which the key does not determine")


def test_swapped_head_becomes_both_heads_selected_by_a_tensor_flag() -> None:
    fixed = fixed_text("AlternatingHeads")
    assert fixed is not None
    assert method_text(fixed, "AlternatingHeads").endswith(
        "    def forward(self, x):\n"
        "        head_is_head_b = self._swap_head()  # fixed\n"
        "        return torch.where(head_is_head_b, self.head_b(x), self.head_a(x)) * 2\n\n"
        "    @torch.compiler.disable\n"
        "    def _swap_head(self):\n"
        "        # Eagerly, with which module it chose as a tensor: torch.compile would guard\n"
        "        # which module self.head is, and a Python flag's value.\n"
        "        self.head = self.head_b if self.head is self.head_a else self.head_a\n"
        "        return torch.tensor(self.head is self.head_b)\n\n")


def test_swapped_heads_that_could_change_outputs_say_why() -> None:
    """Heads of other features (torch.where would broadcast), one that draws random numbers
    (calling it when not chosen changes the random stream)."""
    def reason(head_b: str) -> str | None:
        source = SOURCE.replace(
            "self.head_b = nn.Sequential(nn.Linear(8, 8), nn.ReLU())", f"self.head_b = {head_b}")
        return why_no_fix(hint_of("AlternatingHeads"), lambda path: source)

    assert (reason("nn.Linear(8, 4)") or "").startswith(
        "self.head_b and self.head_a give different features")
    assert (reason("nn.Sequential(nn.Linear(8, 8), nn.Dropout(0.1))") or "").startswith(
        "self.head_b is not built in __init__ from layers known to keep no state")
    assert reason("nn.Sequential(nn.Linear(8, out_features=8), nn.GELU())") is None


@pytest.mark.parametrize(("name", "chosen", "other"), [("DeepHead", "deep", "shallow"),
                                                      ("DepthHeads", "long", "short")])
def test_heads_of_different_structure_are_both_called_and_selected(name: str, chosen: str,
                                                                   other: str) -> None:
    """A Linear swapped with a Sequential of three layers, two Sequentials of different depth:
    both stateless, of the same features."""
    fixed = fixed_text(name)
    assert fixed is not None
    assert f"torch.where(head_is_{chosen}, self.{chosen}(x), self.{other}(x))" in \
        method_text(fixed, name)


def test_loop_over_a_tensors_steps_becomes_one_computation() -> None:
    fixed = fixed_text("StepMap")
    assert fixed is not None
    assert method_text(fixed, "StepMap").endswith(
        "    def forward(self, x):\n"
        "        outputs = torch.relu(self.cell(x)) * 2  # fixed\n"
        "        return outputs\n\n")


@pytest.mark.parametrize(("name", "why"), [
    ("LearnedTable", "self.tables[length] reads `self.weight`, which can change between calls "
                     "(a parameter)"),
    ("HeadWeightRead", f"forward reads self.head at line {line_of('HeadWeightRead') + 1} other "
                       "than by calling it"),
    ("OwnStackHeads", "self.long is not built in __init__ from layers known to keep no state"),
    ("StepRecurrence", "each step reads `state`, which the step before assigned"),
    ("StepListMap", "torch.compile guards the length of the list steps that forward takes"),
])
def test_no_fix_where_it_would_change_outputs_and_why(name: str, why: str) -> None:
    """No fix is planned, and the planner says why (``--fix`` and the ``help:`` line show it)."""
    assert fixed_text(name) is None
    reason = why_no_fix(hint_of(name), lambda path: SOURCE)
    assert reason is not None and reason.startswith(why), reason


def planned(hint: Hint) -> tuple[list[str], str | None]:
    """The titles of the fixes planned for ``hint`` on the corpus, and why none where none."""
    return ([fix.title for fix in plan(hint, None, lambda path: SOURCE, lambda path: "/ws")],
            why_no_fix(hint, lambda path: SOURCE))


@pytest.mark.parametrize("name", sorted(MARKED))
def test_the_planner_reads_what_the_worker_says_recompiles_not_the_message(name: str) -> None:
    """A fix, or why none, from ``Hint.recompile`` alone: the same with a message that names
    nothing, and none without the subject, whatever the message says."""
    hint = hint_of(name)
    fixes, why = planned(hint)
    assert fixes or why
    assert planned(dataclasses.replace(hint, message="torch.compile recompiles")) == (fixes, why)
    assert planned(dataclasses.replace(hint, recompile=None)) == ([], None)


def test_other_cache_spellings_say_why() -> None:
    """A cache of a random draw, one of a value the key does not determine, one read elsewhere."""
    def reason(value: str, extra: str = "") -> str | None:
        source = SOURCE.replace(
            "torch.arange(length, dtype=torch.float32)[:, None] * self.scale", value) + extra
        return why_no_fix(hint_of("PositionTable"), lambda path: source)

    assert (reason("torch.randn(length, 8)") or "").startswith(
        "self.tables[length] draws random numbers (torch.randn)")
    assert (reason("x[0, :length]") or "").startswith(
        "self.tables[length] reads `x`, which the key does not determine")
    assert reason("torch.ones(length, 8)") is None  # a fix, not a reason
    read_elsewhere = SOURCE.replace("        return self.lin(x) + self.tables[length]\n",
                                    "        return self.lin(x) + self.tables[length]\n\n"
                                    "    def sizes(self):\n        return list(self.tables)\n",
                                    1)
    assert (why_no_fix(hint_of("PositionTable"), lambda path: read_elsewhere) or "").startswith(
        "`self.tables` is read at line")


#: Run in a process of its own: each class of the original file and of the fixed one, called
#: with the same tensors (``name:dim:start:size``: x's shape ``size`` with dimension ``dim``
#: growing by one from ``start`` each call, 12 calls), eagerly and under torch.compile with a
#: counting eager backend; the guard failures dynamo reports (``guard_fail_fn``, as
#: ``TORCH_LOGS=recompiles``) and the frames it compiled.
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

    def calls(dim, start, size):
        found = []
        for call in range(12):
            shape = list(size)
            shape[dim] = start + call
            found.append(torch.rand(shape, generator=torch.Generator().manual_seed(call)))
        return found

    def run(module, name, inputs, compiled):
        failures = []
        torch.manual_seed(0)
        model = getattr(module, name)()
        torch._dynamo.reset()
        torch._dynamo.utils.counters.clear()
        if compiled:
            model = torch._dynamo.optimize(lambda graph, _: graph.forward,
                                           guard_fail_fn=failures.append)(model)
        with torch.no_grad():
            outputs = [model(x) for x in inputs]
        frames = int(torch._dynamo.utils.counters["frames"]["ok"])
        torch._dynamo.reset()
        return outputs, len(failures), frames

    original, fixed = load(sys.argv[1], "original"), load(sys.argv[2], "fixed")
    found = {}
    for argument in sys.argv[3:]:
        name, dim, start, size = argument.split(":")
        inputs = calls(int(dim), int(start), json.loads(size))
        before, _, _ = run(original, name, inputs, False)
        after, _, _ = run(fixed, name, inputs, False)
        _, failures_before, frames_before = run(original, name, inputs, True)
        _, failures_after, frames_after = run(fixed, name, inputs, True)
        found[name] = {
            "same": all(torch.equal(a, b) for a, b in zip(before, after, strict=True)),
            "sizes": sorted({tuple(x.shape) for x in inputs}).__len__(),
            "guard_failures": [failures_before, failures_after],
            "frames": [frames_before, frames_after]}
    print(json.dumps(found))
''')
#: The calls of each fixed class: the dimension that grows, from what, on which shape.
CALLS = {"PositionTable": "1:4:[2, 4, 8]", "RotaryTables": "1:4:[2, 4, 8]",
         "AlternatingHeads": "0:2:[2, 8]", "DeepHead": "0:2:[2, 8]", "DepthHeads": "0:2:[2, 8]",
         "StepMap": "0:3:[3, 2, 8]"}


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.skipif(not recompile_loop.can_observe(),
                    reason="this torch reports no guard failures to a hook")
def test_fixes_keep_outputs_and_recompile_less_with_real_torch(tmp_path: Path) -> None:
    """``fx-lsp check --fix --unsafe-fixes`` fixes the caches, the swapped head and the loop
    over a tensor's steps it finds, and says why it leaves the others. Real torch: the same
    outputs for 12 input sizes, fewer guard failures and no more frames compiled."""
    root = tmp_path / "ws"
    root.mkdir()
    shutil.copy(CORPUS, root / "classes.py")
    completed = fx_lsp("check", "--mode", "compile", "--fix", "--unsafe-fixes", "classes.py",
                       cwd=root)
    said = completed.stderr
    for name in CALLS:
        assert f"classes.py:{line_of(name)}:9: {MARKED[name].split('@')[0]}:" in said, said
    for name in ("LearnedTable", "HeadWeightRead", "OwnStackHeads", "StepRecurrence",
                 "StepListMap"):
        assert f"classes.py: not fixed: {MARKED[name].split('@')[0]} at line " \
               f"{line_of(name)}: " in said, said
    after = json.loads(fx_lsp("check", "--mode", "compile", "--format", "json", "classes.py",
                              cwd=root).stdout)["diagnostics"]
    left = {name for problem in after if problem["code"] in ("FX506", "FX510")
            for name in problem["classes"]}
    assert left == {"LearnedTable", "HeadWeightRead", "OwnStackHeads", "StepRecurrence"}, after
    ran = subprocess.run([sys.executable, "-c", REAL_TORCH, str(CORPUS), str(root / "classes.py"),
                          *(f"{name}:{calls}" for name, calls in CALLS.items())],
                         capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout.splitlines()[-1])
    for name in CALLS:
        assert found[name]["same"] and found[name]["sizes"] == 12, found
        before, fixed = found[name]["guard_failures"]
        assert fixed < before, found
        assert found[name]["frames"][1] <= found[name]["frames"][0], found


def _classes(source: str) -> dict[str, type]:
    namespace: dict = {"__name__": "recompile_fix_corpus_classes"}
    exec(compile(source, str(CORPUS), "exec"), namespace)
    return namespace


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(900)  # inductor builds each size's graphs, before and after the fix
@pytest.mark.parametrize("name", sorted(CALLS))
def test_each_fix_keeps_compiled_outputs(name: str) -> None:
    """The fixed class gives the outputs of the class before, eagerly and compiled with
    aot_eager (and inductor where it builds), on the same weights, over calls of growing size
    (the module's state, a swapped head or a cache, kept between them)."""
    import torch

    fixed = fixed_text(name)
    assert fixed is not None
    before, after = _classes(SOURCE)[name], _classes(fixed)[name]
    dim, start, size = CALLS[name].split(":", 2)
    calls = []
    for call in range(3):
        shape = json.loads(size)
        shape[int(dim)] = int(start) + call
        calls.append((torch.rand(shape, generator=torch.Generator().manual_seed(call)),))
    # Real torch compiles DepthHeads wrong unfixed (2.10 to 2.15): once a new batch size
    # made the frame dynamic, the frame compiled for one Sequential runs for the other.
    assert_outputs_kept(before, after, calls, before_compiles_wrong=name == "DepthHeads")
