"""``fx-lsp check --fix``/``--diff`` for export and compile problems, on real files: the CLI
traces again after fixing, and the fixed code is then run through REAL torch.export and
torch.compile on CPU with real tensors (and eagerly, against the original code)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli_support import fx_lsp
from engine_support import REPO_ROOT

EXPORTED = '''\
import torch
from torch import nn


class AssertPositive(nn.Module):
    def forward(self, x):
        assert (x > 0).all(), "positive"
        return x + 1


class Counted(nn.Module):
    def forward(self, x):
        n = int((x > 0.5).sum().item())
        m = float(x.max().item())
        return x.flatten()[:n] * m


class Narrow(nn.Module):
    def forward(self, x):
        torch._check(x.shape[0] <= 16)
        return x.relu()
'''

COMPILED = '''\
import logging
import warnings

from torch import nn

log = logging.getLogger(__name__)


def noisy(x):
    print("in helper", x.shape)  # keep this comment
    return x + 1


class Printing(nn.Module):
    def forward(self, x):
        y = x * 2
        print("y computed")
        return noisy(y)


class Logged(nn.Module):
    def forward(self, x):
        log.warning("shape %s", x.shape)
        warnings.warn("careful")
        return x * 3


class PrintInLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(8, 8) for _ in range(2))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
            print("layer", x.shape)
        return x
'''

PYPROJECT = '''\
[project]
name = "ws"

[tool.fx-lsp.modules."exported:AssertPositive"]
inputs = {x = "float32[2, 8]"}
[tool.fx-lsp.modules."exported:Counted"]
inputs = {x = "float32[2, 8]"}
[tool.fx-lsp.modules."exported:Narrow"]
inputs = {x = "float32[4, 8]"}
dynamic = {x = {0 = {name = "batch", min = 2, max = 64}}}
[tool.fx-lsp.modules."compiled:Printing"]
inputs = {x = "float32[2, 8]"}
[tool.fx-lsp.modules."compiled:Logged"]
inputs = {x = "float32[2, 8]"}
[tool.fx-lsp.modules."compiled:PrintInLoop"]
inputs = {x = "float32[2, 8]"}
'''

#: Per file, the mode it is checked with (each file re-checks clean in its own mode).
MODES = {"exported.py": "export", "compiled.py": "compile"}


def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "exported.py").write_text(EXPORTED)
    (root / "compiled.py").write_text(COMPILED)
    (root / "pyproject.toml").write_text(PYPROJECT)
    return root


def cli(root: Path, file: str, *arguments: str) -> subprocess.CompletedProcess[str]:
    return fx_lsp("check", "--mode", MODES[file], *arguments, file, cwd=root)


def codes(root: Path, file: str) -> list[tuple[int, str]]:
    report = json.loads(cli(root, file, "--format", "json").stdout)
    return sorted((problem["line"], problem["code"]) for problem in report["diagnostics"])


def fixed_lines(completed: subprocess.CompletedProcess[str]) -> list[str]:
    """``exported.py:13:13: FX402: Replace ...`` lines of what --fix says it fixed."""
    return sorted(line.strip() for line in completed.stderr.splitlines()[1:])


def test_safe_fix_only_without_unsafe_fixes(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    assert codes(root, "exported.py") == [(7, "FX401"), (13, "FX402"), (14, "FX402"),
                                          (20, "FX403")]
    completed = cli(root, "exported.py", "--fix")
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr.startswith("Fixed 2 problems in 1 file.")
    assert fixed_lines(completed) == [
        "exported.py:13:13: FX402: Replace int() with torch.sym_int() (symbolic under "
        "torch.export)",
        "exported.py:14:13: FX402: Replace float() with torch.sym_float() (symbolic under "
        "torch.export)"]
    text = (root / "exported.py").read_text()
    assert "n = torch.sym_int((x > 0.5).sum().item())" in text
    assert 'assert (x > 0).all(), "positive"' in text
    assert codes(root, "exported.py") == [(7, "FX401"), (20, "FX403")]
    compiled = cli(root, "compiled.py", "--fix")  # every compile fix is unsafe
    assert compiled.stderr.startswith("Fixed 0 problems") and compiled.returncode == 1
    assert (root / "compiled.py").read_text() == COMPILED


def test_diff_shows_the_unsafe_fixes_and_writes_nothing(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    completed = cli(root, "compiled.py", "--diff", "--unsafe-fixes")
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr.startswith("Would fix 5 problems in 1 file.")
    assert "--- compiled.py\n+++ compiled.py\n" in completed.stdout
    assert " from torch import nn\n+import torch\n" in completed.stdout
    assert ("-    print(\"in helper\", x.shape)  # keep this comment\n"
            "+    if not torch.compiler.is_compiling():\n"
            "+        print(\"in helper\", x.shape)  # keep this comment\n") in completed.stdout
    assert (root / "compiled.py").read_text() == COMPILED
    exported = cli(root, "exported.py", "--diff", "--unsafe-fixes")
    assert "--- pyproject.toml\n+++ pyproject.toml\n" in exported.stdout
    assert ('-dynamic = {x = {0 = {name = "batch", min = 2, max = 64}}}\n'
            '+dynamic = {x = {0 = {name = "batch", min = 2, max = 16}}}\n') in exported.stdout
    assert (root / "pyproject.toml").read_text() == PYPROJECT


GROUND_TRUTH = textwrap.dedent('''
    """Run by the test in a process of its own: the fixed and the original workspace files
    through real torch on CPU."""
    import contextlib, importlib.util, io, json, logging, sys, tomllib, warnings
    import torch
    sys.path.insert(0, sys.argv[1])
    from compile_ground_truth import compile_on_cpu

    def load(path, name):
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    fixed_root, original_root = sys.argv[2], sys.argv[3]
    config = tomllib.load(open(f"{fixed_root}/pyproject.toml", "rb"))["tool"]["fx-lsp"]
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    found = {}
    for file, classes in (("exported", ["AssertPositive", "Counted", "Narrow"]),
                          ("compiled", ["Printing", "Logged", "PrintInLoop"])):
        fixed = load(f"{fixed_root}/{file}.py", f"fixed_{file}")
        original = load(f"{original_root}/{file}.py", f"original_{file}")
        for name in classes:
            shape = (4, 8) if name == "Narrow" else (2, 8)
            torch.manual_seed(0)
            x = torch.rand(shape) + 0.1
            outputs, printed = [], []
            for module in (original, fixed):
                torch.manual_seed(0)
                model = getattr(module, name)()
                with contextlib.redirect_stdout(io.StringIO()) as out:
                    outputs.append(model(x))
                printed.append(out.getvalue())
            entry = {"eager_equal": bool(torch.equal(*outputs)),
                     "eager_printed_equal": printed[0] == printed[1]}
            if file == "exported":
                dynamic = config["modules"][f"{file}:{name}"].get("dynamic")
                shapes = None
                if dynamic:
                    (bounds,) = dynamic["x"].values()
                    shapes = {"x": {0: torch.export.Dim(
                        bounds["name"], min=bounds.get("min"), max=bounds.get("max"))}}
                try:
                    torch.export.export(getattr(fixed, name)(), (), {"x": x},
                                        dynamic_shapes=shapes, strict=False)
                    entry["export"] = "ok"
                except Exception as error:
                    entry["export"] = type(error).__name__
            else:
                with contextlib.redirect_stdout(io.StringIO()):
                    entry["compile"] = compile_on_cpu(getattr(fixed, name),
                                                      __import__("pathlib").Path(
                                                          f"{fixed_root}/{file}.py"))
            found[name] = entry
    fixed_positive = load(f"{fixed_root}/exported.py", "again").AssertPositive()
    try:
        fixed_positive(-torch.ones(2, 8))
        found["negative input"] = "passed"
    except RuntimeError:
        found["negative input"] = "RuntimeError"
    print(json.dumps(found))
''')


@pytest.mark.slow  # over 12 s in the loaded fast tier
def test_unsafe_fixes_leave_code_that_exports_and_compiles_whole(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    original = tmp_path / "original"
    shutil.copytree(root, original)
    for file in MODES:
        completed = cli(root, file, "--fix", "--unsafe-fixes")
        # The CLI traced the changed files again: nothing remains.
        assert completed.returncode == 0, completed.stdout + completed.stderr
        assert codes(root, file) == []
    compiled_text = (root / "compiled.py").read_text()
    # One guard per run of consecutive calls: Logged's warning and log line share one.
    assert compiled_text.count("if not torch.compiler.is_compiling():") == 4
    assert ('        if not torch.compiler.is_compiling():\n'
            '            log.warning("shape %s", x.shape)\n'
            '            warnings.warn("careful")\n') in compiled_text
    assert "from torch import nn\nimport torch\n" in compiled_text
    exported_text = (root / "exported.py").read_text()
    assert 'torch._assert_async((x > 0).all(), "positive")' in exported_text
    script = tmp_path / "ground_truth.py"
    script.write_text(GROUND_TRUTH)
    completed = subprocess.run(
        [sys.executable, str(script), str(REPO_ROOT / "scripts"), str(root), str(original)],
        capture_output=True, text=True, timeout=600)
    assert completed.returncode == 0, completed.stderr
    found = json.loads(completed.stdout.splitlines()[-1])
    for name in ("AssertPositive", "Counted", "Narrow"):
        assert found[name] == {"eager_equal": True, "eager_printed_equal": True,
                               "export": "ok"}, name
    for name in ("Printing", "Logged", "PrintInLoop"):
        assert found[name] == {"eager_equal": True, "eager_printed_equal": True,
                               "compile": {"breaks": [], "graphs": 1}}, name
    # The check the assert became still stops a bad input, as a RuntimeError.
    assert found["negative input"] == "RuntimeError"
