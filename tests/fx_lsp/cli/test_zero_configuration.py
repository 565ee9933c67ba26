"""A real repository with no configuration: arguments found for constructors, only files that
can define a module imported, run as Python would run them, with no network and no weights.

Everything goes through the real CLI (``python -m fx_lsp check --format json``); markers
written by workspace code prove what ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report

from cli_support import fx_lsp
from engine_support import Workspace

VIT = '''
import json
import os
import socket
import sys
import torch
from dataclasses import dataclass
from torch import nn

with open(os.path.join(os.path.dirname(__file__), "..", "import-probe.json"), "w") as probe:
    json.dump({"argv": sys.argv, "cwd": os.getcwd(), "name": __name__}, probe)


class Attention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=16):
        super().__init__()
        self.to_qkv = nn.Linear(dim, dim_head * heads * 3)
        self.out = nn.Linear(dim_head * heads, dim)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        return self.out(q)


class PreNorm(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.norm(x))


class ViT(nn.Module):
    def __init__(self, *, image_size, patch_size, num_classes, dim, depth, heads, channels=3):
        super().__init__()
        assert image_size % patch_size == 0 and dim % heads == 0
        self.patch = nn.Conv2d(channels, dim, patch_size, patch_size)
        self.layers = nn.ModuleList(
            [PreNorm(dim, Attention(dim, heads=heads)) for _ in range(depth)])
        self.head = nn.Linear(dim, num_classes)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)
        for layer in self.layers:
            x = layer(x)
        if x.shape[0] > 1:
            x = x * 2
        return self.head(x.mean(1))


@dataclass
class GPTConfig:
    n_layer: int = 2
    n_embd: int = 32


class GPT(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.proj = nn.Linear(config.n_embd, config.n_embd)

    def forward(self, x):
        return self.proj(x)


class Base(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)


class Forwarding(Base):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)


class Quantizer(nn.Module):
    def __init__(self, dim, *, num_quantizers, codebook_size):
        super().__init__()
        self.codebooks = nn.Parameter(torch.zeros(num_quantizers, codebook_size, dim))

    def forward(self, x):
        return x @ self.codebooks[0].t()


class GroupedQuantizer(nn.Module):
    def __init__(self, *, dim, groups=2, **kwargs):
        super().__init__()
        self.part = dim // groups
        self.quantizers = nn.ModuleList(Quantizer(self.part, **kwargs) for _ in range(groups))

    def forward(self, x):
        return sum(quantizer(x[..., :self.part]) for quantizer in self.quantizers)


class Pretrained(nn.Module):
    def __init__(self, pretrained=True):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        if pretrained:
            self.load_state_dict(
                torch.hub.load_state_dict_from_url("https://example.com/weights.pth"))

    def forward(self, x):
        return self.proj(x)


class Downloader(nn.Module):
    def __init__(self):
        super().__init__()
        socket.create_connection(("192.0.2.1", 80), timeout=30)

    def forward(self, x):
        return x


if __name__ == "__main__":
    open(os.path.join(os.path.dirname(__file__), "..", "main-block-ran"), "w").close()
'''

TRAIN = '''
import os
open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "train-ran"), "w").close()
'''


def check(root: Path, *extra: str) -> dict[str, Any]:
    completed = fx_lsp("check", "--no-cache", "--format", "json", *extra, str(root),
                       cwd=root.parent)
    assert completed.returncode in (0, 1), completed.stderr
    return parse_report(completed.stdout)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict[str, Any]]]:
    workspace = Workspace(tmp_path_factory.mktemp("zero-config"))
    workspace.write("models/__init__.py", "")
    workspace.write("models/vit.py", VIT)
    workspace.write("train.py", TRAIN)
    data = check(workspace.root)
    return workspace.root, {module["class"]: module for module in data["modules"]}


def test_guessed_arguments_give_a_tracing_verdict(report) -> None:
    _, modules = report
    vit = modules["ViT"]
    assert vit["status"] == "failed"
    assert [failure["code"] for failure in vit["failures"]] == ["FX001"]
    assert vit["arguments"]["from"] == "guessed"
    assert vit["arguments"]["kwargs"] == {"image_size": "32", "patch_size": "8",
                                          "num_classes": "10", "dim": "64", "depth": "2",
                                          "heads": "4"}


def test_submodules_are_traced_as_the_parent_built_them(report) -> None:
    _, modules = report
    assert modules["Attention"]["arguments"]["from"] == "parent"
    assert modules["Attention"]["arguments"]["parent"] == "models.vit:ViT"
    assert modules["Attention"]["arguments"]["path"] == "layers.0.fn"
    assert modules["PreNorm"]["status"] == "traceable"


def test_a_configuration_class_with_defaults_is_built(report) -> None:
    _, modules = report
    assert modules["GPT"]["status"] == "traceable"
    assert modules["GPT"]["arguments"] == {
        "from": "config-class", "args": [],
        "kwargs": {"config": "__import__('models.vit', fromlist=['_'])"
                             ".GPTConfig(n_layer=2, n_embd=32)"}}


def test_kwargs_forwarded_to_a_base_that_needs_arguments(report) -> None:
    _, modules = report
    assert modules["Forwarding"]["status"] == "traceable"
    assert modules["Forwarding"]["arguments"]["kwargs"] == {"dim": "64"}


def test_kwargs_passed_on_to_a_class_that_needs_more_are_guessed_too(report) -> None:
    """GroupedQuantizer(dim=...) raises: the Quantizers its **kwargs build need
    num_quantizers and codebook_size, which the error names and the table guesses."""
    _, modules = report
    module = modules["GroupedQuantizer"]
    assert module["status"] == "traceable", module
    assert module["arguments"] == {"from": "guessed", "args": [], "kwargs": {
        "dim": "64", "num_quantizers": "2", "codebook_size": "64"}}


def test_pretrained_weights_are_skipped(report) -> None:
    _, modules = report
    assert modules["Pretrained"]["status"] == "traceable"
    assert modules["Pretrained"]["weights"] == "skipped"


def test_network_connections_are_blocked(report) -> None:
    _, modules = report
    (failure,) = modules["Downloader"]["failures"]
    assert failure["code"] == "FX101"
    assert "fx-lsp blocks network access" in failure["message"]


def test_files_run_as_python_would_run_them(report) -> None:
    root, _ = report
    probe = parse_report((root / "import-probe.json").read_text())
    assert probe["argv"] == [str(root / "models" / "vit.py")]
    assert probe["cwd"] == str(root)
    assert probe["name"] == "models.vit"
    assert not (root / "main-block-ran").exists()


def test_a_file_without_classes_is_never_run(report) -> None:
    root, _ = report
    assert not (root / "train-ran").exists()


def test_guessing_can_be_turned_off(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    workspace.write("models/__init__.py", "")
    workspace.write("models/vit.py", VIT)
    (tmp_path / "pyproject.toml").write_text("[tool.fx-lsp]\nguess-arguments = false\n")
    modules = {module["class"]: module for module in check(tmp_path)["modules"]}
    assert modules["ViT"]["status"] == "not-traced"
    assert "needs arguments: image_size" in modules["ViT"]["reason"]
    assert modules["Attention"]["status"] == "not-traced"


CALLED = '''
import os
from dataclasses import dataclass
from torch import nn


@dataclass
class TinyConfig:
    width: int
    layers: int = 1


class FromReadme(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.blocks = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])

    def forward(self, x):
        return self.blocks(x)


class FromDoctest(nn.Module):
    """A model.

    >>> model = FromDoctest(widths=(4, 8))
    """

    def __init__(self, widths):
        super().__init__()
        self.proj = nn.Linear(widths[0], widths[1])

    def forward(self, x):
        return self.proj(x)


class FromNestedCall(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.proj = nn.Linear(config.width, config.width)

    def forward(self, x):
        return self.proj(x)


if __name__ == "__main__":
    open(os.path.join(os.path.dirname(__file__), "main-block-ran"), "w").close()
    FromNestedCall(TinyConfig(width=12, layers=2))
'''

README = '''
# tiny

```python
from tiny import FromReadme
model = FromReadme(width=24, depth=3)
```
'''


def test_literal_calls_written_in_the_workspace_are_used(tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    workspace.write("tiny.py", CALLED)
    workspace.write("README.md", README)
    modules = {module["class"]: module for module in check(tmp_path)["modules"]}
    assert modules["FromReadme"]["status"] == "traceable"
    assert modules["FromReadme"]["arguments"] == {
        "from": "call-site", "args": [], "kwargs": {"width": "24", "depth": "3"},
        "site": "README.md:5"}
    assert modules["FromDoctest"]["arguments"]["site"] == "tiny.py:24"
    assert modules["FromDoctest"]["arguments"]["kwargs"] == {"widths": "(4, 8)"}
    nested = modules["FromNestedCall"]["arguments"]
    assert nested["from"] == "call-site"
    assert nested["args"] == ["TinyConfig(width=12, layers=2)"]
    assert not (tmp_path / "main-block-ran").exists()


README_AFTER_A_SHELL_BLOCK = '''
# tiny

```bash
$ pip install tiny
```

Usage:

```python
from tiny import FromReadme
model = FromReadme(width=24, depth=3)
```
'''


def test_a_readme_call_after_a_shell_block_is_used(tmp_path: Path) -> None:
    # The closing fence of the ```bash block is not the opening of a Python block: pairing
    # it so (as a regular expression over ``` did) made every later block prose.
    workspace = Workspace(tmp_path)
    workspace.write("tiny.py", CALLED)
    workspace.write("README.md", README_AFTER_A_SHELL_BLOCK)
    modules = {module["class"]: module for module in check(tmp_path)["modules"]}
    assert modules["FromReadme"]["status"] == "traceable"
    assert modules["FromReadme"]["arguments"] == {
        "from": "call-site", "args": [], "kwargs": {"width": "24", "depth": "3"},
        "site": "README.md:11"}


EITHER = '''
from torch import nn


class Either(nn.Module):
    def __init__(self, dim=None, codebook_size=None):
        super().__init__()
        assert dim is not None or codebook_size is not None, "give dim or codebook_size"
        self.proj = nn.Linear(dim or codebook_size, 4)

    def forward(self, x):
        return self.proj(x)
'''

EITHER_README = '''
```python
from either import Either
quantizer = Either(dim=16)
```
'''


def test_a_call_site_is_used_when_the_defaults_raise(tmp_path: Path) -> None:
    # Every parameter has a default, but the defaults together are refused: the README's
    # call is how the class is built, not a constructor error (FX101).
    workspace = Workspace(tmp_path)
    workspace.write("either.py", EITHER)
    workspace.write("README.md", EITHER_README)
    (module,) = check(tmp_path)["modules"]
    assert module["status"] == "traceable", module["failures"]
    assert module["arguments"] == {"from": "call-site", "args": [], "kwargs": {"dim": "16"},
                                   "site": "README.md:3"}


STAGED = '''
from torch import nn


class Staged(nn.Module):
    def __init__(self, depths, norm):
        super().__init__()
        assert isinstance(depths, tuple), f"depths must be a tuple, got {depths!r}"
        assert norm is None
        self.stages = nn.Sequential(*[nn.Linear(4, 4) for _ in depths])

    def forward(self, x):
        return self.stages(x)
'''


def check_staged(root: Path, entry: str) -> dict[str, Any]:
    """Check ``Staged`` with one line of configuration under its modules table."""
    Workspace(root).write("staged.py", STAGED)
    with (root / "pyproject.toml").open("a") as pyproject:
        pyproject.write(f'[tool.fx-lsp.modules."staged:Staged"]\n{entry}\n')
    return check(root)


def test_a_pasted_call_passes_tuples_and_none(tmp_path: Path) -> None:
    (staged,) = check_staged(tmp_path, 'call = "Staged(depths=(1, 2, 3), norm=None)"')["modules"]
    assert staged["status"] == "traceable"
    assert staged["arguments"] == {"from": "config", "args": [],
                                   "kwargs": {"depths": "(1, 2, 3)", "norm": "None"}}


def test_a_tuple_that_toml_made_a_list_is_explained(tmp_path: Path) -> None:
    (staged,) = check_staged(tmp_path, 'kwargs = {depths = [1, 2, 3], norm = "none"}')["modules"]
    (failure,) = staged["failures"]
    assert failure["code"] == "FX101"
    assert "depths must be a tuple, got [1, 2, 3]" in failure["message"]
    assert "Staged(depths=[1, 2, 3], norm='none')" in failure["message"]
    assert "TOML has no tuples or None: depths arrived as a list" in failure["message"]


def test_a_call_that_is_not_a_literal_call_is_a_config_problem(tmp_path: Path) -> None:
    report = check_staged(tmp_path, 'call = "Staged(depths=make_depths())"')
    assert any("'call' may only pass literals" in problem
               for problem in report["config_problems"])


@pytest.mark.slow
def test_bytecode_is_cached_outside_the_workspace(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    workspace = Workspace(tmp_path / "ws")
    workspace.write("pkg/__init__.py", "")
    workspace.write("pkg/helpers.py", "def double(x):\n    return x * 2\n")
    workspace.write("pkg/net.py", """
        from torch import nn
        from pkg.helpers import double


        class Net(nn.Module):
            def forward(self, x):
                return double(x)
        """)
    cache_home = tmp_path / "cache-home"
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", str(workspace.root)],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "XDG_CACHE_HOME": str(cache_home)},
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
    compiled = {path.name.split(".")[0] for path in cache_home.rglob("*.pyc")}
    assert {"helpers", "net"} <= compiled
    assert not list(workspace.root.rglob("__pycache__"))


@pytest.mark.slow
def test_a_file_saved_again_within_its_second_at_its_size_is_run_as_its_new_text(
        tmp_path: Path) -> None:
    """The workers' bytecode is checked by the source's hash: a .pyc checked by time stamp
    (whole seconds) and size took the new text for the old one."""
    (tmp_path / "ws").mkdir()
    workspace = Workspace(tmp_path / "ws")
    net = workspace.root / "net.py"
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache-home")}

    def codes(source: str) -> list[str]:
        net.write_text(source)
        os.utime(net, (1_700_000_000, 1_700_000_000))  # the same second, both times
        completed = subprocess.run(
            [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--output-format", "json",
             str(workspace.root)], capture_output=True, text=True, timeout=300, env=env)
        report = parse_report(completed.stdout)
        return [diagnostic["code"] for diagnostic in report["diagnostics"]]

    template = "from torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n" \
        "        return x * {}\n"
    assert "FX002" in codes(template.format("len(x)"))
    assert codes(template.format("abs(2)")) == []
