"""``fx-lsp check --fix --unsafe-fixes`` for data-dependent guards, on real files: a
``torch._check`` of the guard in the user's names before its statement (FX401 on Python
numbers), and an ``if`` on tensor data rewritten as ``torch.cond`` (FX401, GB0170). The CLI
checks again after fixing; then REAL torch.export and torch.compile run on CPU with real tensors
on the fixed code and on the original (which they must refuse, so that the fix is what makes
them pass), and the fixed code runs eagerly as the original did."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fxcore.fixing.fix_plan import plan
from fxcore.model.results import Failure, Frame

from cli_support import fx_lsp
from engine_support import REPO_ROOT

GUARDED = '''\
import torch
from torch import nn


def clip(x, n):
    if n > 4:
        return x[:, :4] * n
    return x


class AssertCount(nn.Module):
    def forward(self, x):
        n = (x > 0.5).sum().item()
        assert n > 2, "too few"
        return x * n


class ShapeGate(nn.Module):
    def forward(self, x):
        y = x[x > 0.5]
        # the first three
        if y.shape[0] > 3:
            return y[:3] * 2
        return y


class Difference(nn.Module):
    def forward(self, x):
        n = (x > 0.2).sum().item()
        m = (x > 0.9).sum().item()
        if n - m >= 2:
            return x * 2
        return x


class AnySelected(nn.Module):
    def forward(self, x):
        n = (x > 0.5).sum().item()
        if n:
            return x[:, :1].expand(-1, n)
        return x


class Clipped(nn.Module):
    def forward(self, x):
        n = (x > 0.5).sum().item()
        return clip(x, n)
'''

BRANCHES = '''\
from torch import nn


class Scaled(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.scale = 2.0

    def forward(self, x):
        if x.sum() > 0:
            y = self.linear(x) * self.scale
        else:
            y = x - 1  # shifted
        return y


class Doubled(nn.Module):
    def forward(self, x):
        y = x + 1
        if (x > 0).all():
            y = y * 2
        return y.relu()


class Pair(nn.Module):
    def forward(self, x):
        if x.mean() > 0:
            a = x * 2
            b = x + 1
        else:
            a = x - 1
            b = x
        return a * b


class Returned(nn.Module):
    def forward(self, x):
        if x.max() > 0.5:
            return x.relu()
        else:
            return -x
'''

GUARDED_CLASSES = ["AssertCount", "ShapeGate", "Difference", "AnySelected", "Clipped"]
BRANCH_CLASSES = ["Scaled", "Doubled", "Pair", "Returned"]


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "guarded.py").write_text(GUARDED)
    (root / "branches.py").write_text(BRANCHES)
    tables = [f'[tool.fx-lsp.modules."{file}:{name}"]\ninputs = {{x = "float32[4, 8]"}}\n'
              for file, names in (("guarded", GUARDED_CLASSES), ("branches", BRANCH_CLASSES))
              for name in names]
    (root / "pyproject.toml").write_text('[project]\nname = "ws"\n\n' + "".join(tables))
    return root


def cli(root: Path, mode: str, file: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return fx_lsp("check", "--mode", mode, *arguments, file, cwd=root)


def diagnostics(root: Path, mode: str, file: str) -> list[dict]:
    return json.loads(cli(root, mode, file, "--format", "json").stdout)["diagnostics"]


def codes(root: Path, mode: str, file: str) -> list[tuple[int, str]]:
    return sorted((problem["line"], problem["code"])
                  for problem in diagnostics(root, mode, file))


GROUND_TRUTH = textwrap.dedent('''
    """Run by the test in a process of its own: the fixed and the original files through real
    torch on CPU."""
    import importlib.util, json, logging, sys, warnings
    import torch
    sys.path.insert(0, sys.argv[1])
    from compile_ground_truth import compile_on_cpu

    def load(path, name):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        # As an import does: dynamo finds a nested lambda's globals by its module's name.
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module

    def outcome(run):
        try:
            run()
            return "ok"
        except Exception as error:
            return type(error).__name__

    def build(module, name):
        torch.manual_seed(0)
        return getattr(module, name)()

    fixed_root, original_root, file, classes = sys.argv[2], sys.argv[3], sys.argv[4], \\
        sys.argv[5].split(",")
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    fixed = load(f"{fixed_root}/{file}.py", "fixed")
    original = load(f"{original_root}/{file}.py", "original")
    torch.manual_seed(0)
    holding = torch.rand(4, 8) + 0.1
    # Per class, inputs the fixed code must run as the original did: for a torch._check, one
    # where the guard holds; for torch.cond, one for each branch: all positive, all negative,
    # of both signs (an elif's third branch).
    mixed = holding - 0.6
    assert mixed.min() < 0 < mixed.max()
    inputs = [holding] if file == "guarded" else [holding, -holding, mixed]
    found = {}
    for name in classes:
        entry = {"eager_equal": all(
            torch.equal(build(original, name)(x), build(fixed, name)(x)) for x in inputs)}
        for label, module in (("original", original), ("fixed", fixed)):
            model = build(module, name)
            entry[f"{label}_export"] = outcome(
                lambda: torch.export.export(model, (holding,), strict=False))
        model = build(fixed, name)
        program = torch.export.export(model, (holding,), strict=False).module()
        # The exported program computes what eager code does, on every input: for torch.cond,
        # both branches are in it.
        entry["exported_equal"] = all(torch.equal(program(x), model(x)) for x in inputs)
        if file == "guarded":
            # .item() and nonzero() inside the graph: then the guard is what breaks it.
            torch._dynamo.config.capture_scalar_outputs = True
            torch._dynamo.config.capture_dynamic_output_shape_ops = True
            for label, module in (("original", original), ("fixed", fixed)):
                torch._dynamo.reset()
                model = build(module, name)
                entry[f"{label}_fullgraph"] = outcome(lambda: torch.compile(
                    model, fullgraph=True, backend="eager")(holding))
            # Where the guard does not hold, the check stops the fixed code.
            entry["violated"] = outcome(lambda: build(fixed, name)(torch.zeros(4, 8)))
        else:
            for label, module in (("original", original), ("fixed", fixed)):
                entry[f"{label}_compile"] = compile_on_cpu(
                    getattr(module, name), __import__("pathlib").Path(
                        f"{fixed_root if module is fixed else original_root}/{file}.py"))
            torch._dynamo.reset()
            model = build(fixed, name)
            entry["fixed_fullgraph"] = outcome(lambda: [torch.compile(
                model, fullgraph=True, backend="eager")(x) for x in inputs])
        found[name] = entry
    print(json.dumps(found))
''')


def real_torch(tmp_path: Path, fixed: Path, original: Path, file: str,
               classes: list[str]) -> dict[str, dict]:
    script = tmp_path / "ground_truth.py"
    script.write_text(GROUND_TRUTH)
    completed = subprocess.run(
        [sys.executable, str(script), str(REPO_ROOT / "scripts"), str(fixed), str(original),
         file, ",".join(classes)], capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr
    return json.loads(completed.stdout.splitlines()[-1])


@pytest.mark.matrix
def test_fx401_names_the_guard_in_the_users_names(tmp_path: Path) -> None:
    # Which frame torch decides a guard in, and how its symbols look, is torch's own.
    root = workspace(tmp_path)
    before = diagnostics(root, "export", "guarded.py")
    assert sorted((d["line"], d["code"]) for d in before) == [
        (6, "FX401"), (14, "FX401"), (22, "FX401"), (31, "FX401"), (39, "FX401")]
    # Each guard in the names of the frame torch could not decide it in: the helper's own.
    suggested = {d["line"]: d["message"].split("state what holds: ")[1].split(". fx-lsp")[0]
                 for d in before}
    assert suggested == {
        6: "`torch._check(n > 4)` or `torch._check(n <= 4)`",
        14: "`torch._check(n > 2)` or `torch._check(n <= 2)`",
        22: "`torch._check(y.shape[0] > 3)` or `torch._check(y.shape[0] <= 3)`",
        31: "`torch._check(n - m >= 2)` or `torch._check(n - m < 2)`",
        39: "`torch._check(n != 0)` or `torch._check(n == 0)`"}


@pytest.mark.slow  # over 12 s in the loaded fast tier
def test_torch_check_of_the_guard_makes_real_export_and_compile_pass(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    original = tmp_path / "original"
    shutil.copytree(root, original)
    safe = cli(root, "export", "guarded.py", "--fix")
    assert safe.stderr.startswith("Fixed 0 problems"), safe.stderr  # a check is unsafe
    assert (root / "guarded.py").read_text() == GUARDED
    completed = cli(root, "export", "guarded.py", "--fix", "--unsafe-fixes")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert codes(root, "export", "guarded.py") == []
    text = (root / "guarded.py").read_text()
    for inserted in ("def clip(x, n):\n    torch._check(n > 4)\n    if n > 4:",
                     '        torch._check(n > 2)\n        assert n > 2, "too few"',
                     "        # the first three\n        torch._check(y.shape[0] > 3)\n"
                     "        if y.shape[0] > 3:",
                     "        torch._check(n - m >= 2)\n        if n - m >= 2:",
                     "        torch._check(n != 0)\n        if n:"):
        assert inserted in text
    found = real_torch(tmp_path, root, original, "guarded", GUARDED_CLASSES)
    for name in GUARDED_CLASSES:
        entry = found[name]
        assert entry["original_export"] == "GuardOnDataDependentSymNode", name
        assert {key: entry[key] for key in ("eager_equal", "fixed_export", "exported_equal",
                                            "fixed_fullgraph", "violated")} == {
            "eager_equal": True, "fixed_export": "ok", "exported_equal": True,
            "fixed_fullgraph": "ok", "violated": "RuntimeError"}, name
    # Dynamo turns the assert on a SymInt into a runtime check of its own; every other
    # guard breaks the full graph until it is stated.
    assert [name for name in GUARDED_CLASSES if found[name]["original_fullgraph"] == "ok"] == [
        "AssertCount"]


# Over 20 s in CI's fast tier (2 cores): the slow tier.
@pytest.mark.slow
def test_torch_cond_rewrite_makes_real_export_and_compile_pass(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    original = tmp_path / "original"
    shutil.copytree(root, original)
    assert codes(root, "export", "branches.py") == [
        (11, "FX401"), (21, "FX401"), (28, "FX401"), (39, "FX401")]
    assert codes(root, "compile", "branches.py") == [
        (11, "GB0170"), (21, "GB0170"), (28, "GB0170"), (39, "GB0170")]
    safe = cli(root, "compile", "branches.py", "--fix")
    assert safe.stderr.startswith("Fixed 0 problems"), safe.stderr  # the rewrite is unsafe
    completed = cli(root, "compile", "branches.py", "--fix", "--unsafe-fixes")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert codes(root, "compile", "branches.py") == []
    assert codes(root, "export", "branches.py") == []
    text = (root / "branches.py").read_text()
    assert text.startswith("from torch import nn\nimport torch\n")
    for rewritten in (
            "        # shifted\n        y = torch.cond(x.sum() > 0, lambda: self.linear(x) * "
            "self.scale, lambda: x - 1)\n",
            "        y = torch.cond((x > 0).all(), lambda: y * 2, lambda: y.clone())\n",
            "        a, b = torch.cond(x.mean() > 0, lambda: (x * 2, x + 1), "
            "lambda: (x - 1, x.clone()))\n",
            "        return torch.cond(x.max() > 0.5, lambda: x.relu(), lambda: -x)\n"):
        assert rewritten in text
    found = real_torch(tmp_path, root, original, "branches", BRANCH_CLASSES)
    for index, name in enumerate(BRANCH_CLASSES):
        line = (11, 21, 28, 39)[index]
        assert found[name] == {
            "eager_equal": True, "original_export": "GuardOnDataDependentSymNode",
            "fixed_export": "ok", "exported_equal": True,
            "original_compile": {"breaks": [[line, "GB0170"]], "graphs": 2},
            "fixed_compile": {"breaks": [], "graphs": 1}, "fixed_fullgraph": "ok"}, name


@pytest.mark.slow  # over 12 s in the loaded fast tier
def test_the_negated_check_the_editor_also_offers_makes_real_export_pass(
        tmp_path: Path) -> None:
    # `if n - m >= 2:` where it does not hold: the editor's second check, `n - m < 2`.
    root = workspace(tmp_path)
    original = tmp_path / "original"
    shutil.copytree(root, original)
    (diagnostic,) = [d for d in diagnostics(root, "export", "guarded.py") if d["line"] == 31]
    path = str(root / "guarded.py")
    failure = Failure(path, 31, diagnostic["column"], 31, diagnostic["end_column"],
                      code="FX401", kind="export-data-dependent",
                      message=diagnostic["message"],
                      frames=[Frame(path, 31, diagnostic["column"], 31,
                                    diagnostic["end_column"], "forward")])
    texts = {path: GUARDED}
    fixes = plan(failure, None, texts.get, lambda _: str(root))
    assert [(fix.title, fix.preferred) for fix in fixes] == [
        ("Insert torch._check(n - m >= 2) before this line (what fx-lsp assumed)", True),
        ("Insert torch._check(n - m < 2) before this line", False),
        # The early return as torch.cond too, after the checks torch suggests for a guard on
        # Python numbers (tests/fxcore/fixing/test_pt2_plan.py says why).
        ("Rewrite the if and the return after it as torch.cond (the graph keeps both "
         "branches; it returns from lambdas)", False)]
    (root / "guarded.py").write_text(fixes[1].texts(texts.get)[1])
    script = tmp_path / "negated.py"
    script.write_text(textwrap.dedent('''
        import importlib.util, sys, warnings
        import torch
        warnings.simplefilter("ignore")
        found = []
        for root in sys.argv[1:]:
            spec = importlib.util.spec_from_file_location("m", f"{root}/guarded.py")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            x = torch.rand(4, 8) * 0.1  # no value above 0.2: n - m == 0
            model = module.Difference()
            try:
                program = torch.export.export(model, (x,), strict=False).module()
                found.append(bool(torch.equal(program(x), model(x))))
            except Exception as error:
                found.append(type(error).__name__)
        print(found)
    '''))
    completed = subprocess.run([sys.executable, str(script), str(root), str(original)],
                               capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr
    # The fixed code exports and computes what it does eagerly; the original does not export.
    assert completed.stdout.strip().splitlines()[-1] == "[True, 'GuardOnDataDependentSymNode']"
