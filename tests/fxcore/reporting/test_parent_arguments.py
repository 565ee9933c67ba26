"""Classes that need constructor arguments get the verdict of the instance a traced root
built (``"arguments": {"from": "parent", ...}``), through the real CLI."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.model.results import Arguments, Failure, FileResult, ModuleResult
from fxcore.reporting.parent_arguments import apply_parent_arguments, parent_description

from cli_support import fx_lsp
from engine_support import REPO_ROOT, Workspace, line_of

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.plain_fx_check import disagreement, plain_verdicts

LAYERS = """
    from torch import nn


    class Attention(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.heads = heads
            self.qkv = nn.Linear(dim, dim * 3)

        def forward(self, x):
            return self.qkv(x)


    class Block(nn.Module):
        def __init__(self, dim, heads):
            super().__init__()
            self.attn = Attention(dim, heads)

        def forward(self, x):
            if x.sum() > 0:
                x = x + 1
            return self.attn(x)


    class Shared(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            return self.proj(x)


    class Configured(nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.size = dim

        def forward(self, x):
            return x[..., : self.size]
    """

VIT = """
    from torch import nn

    from pkg.layers import Block, Configured, Shared


    class ViT(nn.Module):
        def __init__(self, dim=16, depth=2, heads=4):
            super().__init__()
            self.blocks = nn.ModuleList([Block(dim, heads) for _ in range(depth)])
            self.head = Shared(dim)
            self.crop = Configured(dim)

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return self.crop(self.head(x))
    """

MIXER = """
    from torch import nn

    from pkg.layers import Shared


    class Mixer(nn.Module):
        def __init__(self, dim=8):
            super().__init__()
            self.mix = Shared(dim)

        def forward(self, x):
            return self.mix(x)
    """


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    workspace = Workspace(tmp_path_factory.mktemp("parent"))
    with open(workspace.root / "pyproject.toml", "a") as handle:
        handle.write('\n[tool.fx-lsp.modules."pkg.layers:Configured"]\nkwargs = {dim = 5}\n')
    workspace.write("pkg/__init__.py", "")
    workspace.write("pkg/layers.py", LAYERS)
    workspace.write("pkg/vit.py", VIT)
    workspace.write("pkg/mixer.py", MIXER)
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--format", "json", "."],
        cwd=workspace.root, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 1, completed.stderr  # Block cannot be traced
    return workspace.root, parse_report(completed.stdout)


def modules_by_class(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {module["class"]: module for module in report["modules"]}


def test_a_class_built_by_a_root_with_defaults_gets_its_verdict_from_that_instance(
        report: tuple[Path, dict[str, Any]]) -> None:
    _, data = report
    attention = modules_by_class(data)["Attention"]
    assert attention["status"] == "traceable"
    assert attention["path"] == "pkg/layers.py"
    assert attention["arguments"] == {"from": "parent", "args": [], "kwargs": {},
                                      "parent": "pkg.vit:ViT", "path": "blocks.0.attn",
                                      "parent_from": "defaults"}
    assert data["summary"]["not_traced"] == 0


def test_a_failing_submodule_is_reported_on_its_own_line(
        report: tuple[Path, dict[str, Any]]) -> None:
    root, data = report
    block = modules_by_class(data)["Block"]
    assert block["status"] == "failed"
    assert block["arguments"]["path"] == "blocks.0"
    (failure,) = block["failures"]
    assert (failure["kind"], failure["path"], failure["line"]) == (
        "control-flow", "pkg/layers.py", line_of(root / "pkg/layers.py", "if x.sum() > 0"))


def test_a_class_built_by_two_roots_gets_one_deterministic_parent(
        report: tuple[Path, dict[str, Any]]) -> None:
    shared = modules_by_class(report[1])["Shared"]
    assert shared["status"] == "traceable"
    assert (shared["arguments"]["parent"], shared["arguments"]["path"]) == ("pkg.mixer:Mixer",
                                                                            "mix")


def test_a_configured_class_keeps_its_configuration(
        report: tuple[Path, dict[str, Any]]) -> None:
    configured = modules_by_class(report[1])["Configured"]
    assert configured["status"] == "traceable"
    assert configured["arguments"] is None or configured["arguments"]["from"] == "config"


@pytest.mark.slow
def test_every_verdict_agrees_with_plain_fx_on_the_rebuilt_instance(
        report: tuple[Path, dict[str, Any]]) -> None:
    root, data = report
    outcomes = plain_verdicts(str(root), data["modules"])
    assert [o["status"] for o in outcomes].count("failed") == 2  # Block and ViT
    problems = {module["qualified_name"]: disagreement(module, plain, str(root))
                for module, plain in zip(data["modules"], outcomes, strict=True)}
    assert problems == dict.fromkeys(problems)


# -- the pure choice ---------------------------------------------------------------------------


def module(class_name: str, status: str, arguments: Arguments | None,
           path: str = "/ws/pkg/layers.py") -> ModuleResult:
    return ModuleResult(path=path, class_name=class_name,
                        qualified_name=f"pkg.layers:{class_name}", line=1, column=7,
                        end_line=1, end_column=7 + len(class_name), status=status,
                        arguments=arguments)


def derived(class_name: str, parent: str, path: str, parent_origin: str) -> ModuleResult:
    return module(class_name, "traceable",
                  Arguments(origin="parent", parent=parent, path=path,
                            parent_origin=parent_origin))


def test_parent_verdicts_replace_only_classes_without_configured_or_default_arguments() -> None:
    own = FileResult(path="/ws/pkg/layers.py", modules=[
        module("Block", "not-traced", None),
        module("Guessed", "failed", Arguments(origin="guessed", kwargs={"dim": "64"})),
        module("Configured", "traceable", Arguments(origin="config")),
        module("Plain", "traceable", None),
        module("Orphan", "not-traced", None),
        module("GuessedFine", "traceable", Arguments(origin="guessed")),
    ])
    hung = derived("GuessedFine", "pkg.a:A", "slow", "defaults")
    hung.status = "failed"
    hung.failures = [Failure(code="FX102", kind="timeout", message="took longer", path=hung.path,
                             line=1, column=1, end_line=1, end_column=2)]
    roots = [
        FileResult(path="/ws/pkg/a.py", derived_modules=[
            derived("Block", "pkg.a:A", "blocks.1", "guessed"),
            derived("Guessed", "pkg.a:A", "g", "defaults"),
            derived("Configured", "pkg.a:A", "c", "defaults"),
            derived("Plain", "pkg.a:A", "p", "defaults"),
            hung,
        ]),
        FileResult(path="/ws/pkg/z.py", derived_modules=[
            derived("Block", "pkg.z:Z", "layers.0", "defaults"),
            derived("Block", "pkg.z:Z", "layers.1", "defaults"),
        ]),
    ]
    merged = apply_parent_arguments([own, *roots])
    chosen = {m.class_name: m for m in merged[0].modules}
    assert (chosen["Block"].arguments.parent, chosen["Block"].arguments.path) == ("pkg.z:Z",
                                                                                  "layers.0")
    assert chosen["Block"].status == "traceable"
    assert chosen["Guessed"].arguments.parent == "pkg.a:A"
    assert chosen["Configured"].arguments.origin == "config"
    assert chosen["Plain"].arguments is None
    assert chosen["Orphan"].status == "not-traced"
    assert chosen["GuessedFine"].arguments.origin == "guessed"  # not a parent's time-out
    assert own.modules[0].status == "not-traced"  # the inputs are left as they were
    assert merged[1:] == roots
    assert apply_parent_arguments([own, *reversed(roots)])[0].modules == merged[0].modules
    assert parent_description(chosen["Block"]) == "Z.layers.0"


@pytest.mark.slow  # the hang holds a worker for the whole scaled time-out, 10 s
def test_a_submodule_instance_that_hangs_times_out_alone(tmp_path: Path) -> None:
    # At the suite's time-out scale (1 s, ten times over), which load cannot reach: the
    # verdicts of Holder and After are compared, and at an unscaled 2 s a busy machine could
    # stop them as it stops the hang.
    workspace = Workspace(tmp_path)
    workspace.write("pkg/__init__.py", "")
    workspace.write("pkg/models.py", """
        from torch import nn


        class Spins(nn.Module):
            def __init__(self, dim):
                super().__init__()
                self.dim = dim

            def forward(self, x):
                while True:
                    pass


        class Holder(nn.Module):
            def __init__(self, dim=4):
                super().__init__()
                self.unused = Spins(dim)

            def forward(self, x):
                return x


        class After(nn.Module):
            def forward(self, x):
                return x + 1
        """)
    # Spins needs arguments it would otherwise get guessed: here only its parent builds it.
    with (workspace.root / "pyproject.toml").open("a") as pyproject:
        pyproject.write("[tool.fx-lsp]\nguess-arguments = false\n")
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--timeout", "1", "--format",
         "json", "."], cwd=workspace.root, capture_output=True, text=True, timeout=300)
    data = parse_report(completed.stdout)
    modules = modules_by_class(data)
    assert modules["Holder"]["status"] == "traceable"
    assert modules["After"]["status"] == "traceable"
    spins = modules["Spins"]
    assert (spins["status"], spins["arguments"]["path"]) == ("failed", "unused")
    (failure,) = spins["failures"]
    assert (failure["code"], failure["line"]) == ("FX102", spins["line"])
    assert "as built by pkg.models:Holder -> unused" in failure["message"]
    assert "took longer than" in failure["message"]  # the scaled 1 s
    assert data["files"][0]["errors"] == []


BOTTLENECK = """
    class ResBottleneck(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.conv = nn.Conv2d(in_channels, out_channels, 1)

        def forward(self, x):
            return self.conv(x)
    """

#: Its arguments are guessed: in file order it is the first root to build a ResBottleneck.
GUESSED_UNIT = """
    class ResUnit(nn.Module):
        def __init__(self, in_channels, out_channels):
            super().__init__()
            self.body = ResBottleneck(in_channels, out_channels)

        def forward(self, x):
            return self.body(x).relu()
    """

#: Configured in pyproject.toml.
CONFIGURED_NET = """
    class ResNet(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.units = nn.Sequential(*[ResUnit(a, b) for a, b in zip(channels, channels[1:])])

        def forward(self, x):
            return self.units(x)
    """


@pytest.mark.parametrize("order", [(BOTTLENECK, GUESSED_UNIT, CONFIGURED_NET),
                                   (BOTTLENECK, CONFIGURED_NET, GUESSED_UNIT)],
                         ids=["guessed-root-first", "configured-root-first"])
@pytest.mark.slow
def test_a_configured_root_wins_over_a_guessed_root_whatever_the_file_order(
        tmp_path: Path, order: tuple[str, ...]) -> None:
    workspace = Workspace(tmp_path)
    workspace.write("pkg/__init__.py", "")
    workspace.write("pkg/resnet.py", "from torch import nn\n" + "\n".join(
        textwrap.dedent(part) for part in order))
    with (workspace.root / "pyproject.toml").open("a") as pyproject:
        pyproject.write('[tool.fx-lsp.modules."pkg.resnet:ResNet"]\n'
                        'kwargs = {channels = [3, 8, 4]}\n')
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--format", "json", "."],
        cwd=workspace.root, capture_output=True, text=True, timeout=300)
    modules = modules_by_class(parse_report(completed.stdout))
    assert modules["ResUnit"]["arguments"]["parent"] == "pkg.resnet:ResNet"
    bottleneck = modules["ResBottleneck"]["arguments"]
    assert (bottleneck["from"], bottleneck["parent"], bottleneck["path"],
            bottleneck["parent_from"]) == ("parent", "pkg.resnet:ResNet", "units.0.body",
                                           "config")


QUANTIZERS = """
    from torch import nn


    class Codebook(nn.Module):
        def __init__(self, dim, codebook_size):
            super().__init__()
            self.embed = nn.Linear(dim, codebook_size)

        def forward(self, x):
            return self.embed(x)


    class Quantizer(nn.Module):
        def __init__(self, dim, codebook_size):
            super().__init__()
            self.codebook = Codebook(dim, codebook_size)

        def forward(self, x):
            return self.codebook(x)
"""

QUANTIZER_README = """
    ```python
    from pkg.quantizers import Codebook
    codebook = Codebook(dim=256, codebook_size=512)
    ```
"""


@pytest.mark.slow
def test_a_call_site_wins_over_an_instance_a_guessed_root_built(tmp_path: Path) -> None:
    # Quantizer has no call site: guessed. The instance of Codebook it builds is as guessed
    # as it is; the README's call of Codebook is what its users write, and stays.
    workspace = Workspace(tmp_path)
    workspace.write("pkg/__init__.py", "")
    workspace.write("pkg/quantizers.py", textwrap.dedent(QUANTIZERS))
    workspace.write("README.md", textwrap.dedent(QUANTIZER_README))
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--format", "json", "."],
        cwd=workspace.root, capture_output=True, text=True, timeout=300)
    modules = modules_by_class(parse_report(completed.stdout))
    assert modules["Quantizer"]["arguments"]["from"] == "guessed"
    assert modules["Codebook"]["arguments"] == {
        "from": "call-site", "args": [], "kwargs": {"dim": "256", "codebook_size": "512"},
        "site": "README.md:3"}


HEADS = """
    import torch
    from torch import nn


    class Head(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv = nn.Conv2d(channels, channels, 3, padding=1)
            self.pool = nn.AvgPool2d(2)
            self.fc = nn.Linear(channels * 2 * 2, 10)

        def forward(self, x):
            return self.fc(self.pool(self.conv(x)).flatten(1))


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Conv2d(3, 8, 3, stride=8, padding=1)
            self.head = Head(8)

        def forward(self, x):
            return self.head(self.stem(x))
"""


def check_json(workspace: Workspace, *options: str) -> dict[str, Any]:
    completed = fx_lsp("check", "--no-cache", *options, "--format", "json", ".",
                       cwd=workspace.root)
    return parse_report(completed.stdout)


def test_a_submodule_is_traced_on_the_inputs_its_parent_passes(tmp_path: Path) -> None:
    # Head, after Net's stride-8 stem, is given 4x4 maps. Inputs inferred for Head alone (its
    # first layer is a Conv2d: 32x32 and up) never fit its Linear: a false FX300, and export
    # and compile failing on them. Run on Net's own inputs, Net passes Head float32[2, 8, 4, 4].
    workspace = Workspace(tmp_path)
    path = workspace.write("heads.py", textwrap.dedent(HEADS))
    report = check_json(workspace, "--mode", "fx,export,compile")
    assert report["diagnostics"] == []
    heads = [module for module in report["modules"] if module["class"] == "Head"]
    assert sorted(module["mode"] for module in heads) == ["compile", "export", "fx"]
    for head in heads:
        assert (head["status"], head["arguments"]["parent"]) == ("traceable", "heads:Net")
        assert (head["inputs"]["from"], head["inputs"]["tensors"]) == \
            ("parent", {"x": "float32[2, 8, 4, 4]"})
        assert head["inputs"]["note"] == ("as Net passes them to head when run on its own "
                                          "example inputs x: float32[2, 3, 32, 32], inferred")
    namespace: dict[str, Any] = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    assert namespace["Net"]()(torch.randn(2, 3, 32, 32)).shape == (2, 10)
    assert namespace["Head"](8)(torch.randn(2, 8, 4, 4)).shape == (2, 10)


def test_a_parent_that_cannot_run_on_meta_leaves_its_submodule_inputs_inferred_for_it_alone(
        tmp_path: Path) -> None:
    # Net traces (``repeat_interleave`` is a node), but running it on meta tensors stops
    # there (meta has no counts to repeat by; a value read with ``.item()`` would be stood
    # in): Head keeps inputs inferred for it alone, and FX300 on them is a hint that says why
    # the inputs Net passes are unknown.
    workspace = Workspace(tmp_path)
    workspace.write("heads.py", textwrap.dedent(HEADS).replace(
        "return self.head(self.stem(x))",
        "repeats = torch.repeat_interleave(x.abs().amax(dim=(1, 2, 3)).long())\n"
        "        return self.head(self.stem(x)) * repeats.numel()"))
    report = check_json(workspace)
    modules = modules_by_class(report)
    assert modules["Net"]["shape_errors"] == []
    assert (modules["Head"]["arguments"]["parent"], modules["Head"]["inputs"]["from"]) == \
        ("heads:Net", "inferred")
    (problem,) = [d for d in report["diagnostics"] if d["code"] == "FX300"]
    assert (problem["severity"], problem["classes"]) == ("hint", ["Head"])
    assert ("inferred for this submodule alone: Net, which builds it, passes it inputs of its "
            "own (the inputs it passes were not recorded: running the parent on its example "
            "inputs raised RuntimeError: cannot repeat_interleave a meta tensor without "
            "output_size)"
            ) in problem["message"]


DECODERS = """
    import torch
    from torch import nn


    class AlibiBias(nn.Module):
        def __init__(self, heads, slope_scale):
            super().__init__()
            self.slopes = nn.Parameter(torch.arange(heads, dtype=torch.float) * slope_scale)

        def forward(self, x):
            return x + self.slopes.sum()


    class Decoder(nn.Module):
        def __init__(self, dim, heads, alibi_pos_bias=False):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
            self.bias = AlibiBias(heads, 0.5) if alibi_pos_bias else None

        def forward(self, x):
            x = self.proj(x)
            return x if self.bias is None else self.bias(x)
"""

DECODER_README = """\
    ```python
    plain = Decoder(dim=16, heads=4)
    again = Decoder(dim=16, heads=4)
    again = Decoder(dim=16, heads=4)
    again = Decoder(dim=16, heads=4)
    again = Decoder(dim=16, heads=4)
    with_alibi = Decoder(dim=16, heads=4, alibi_pos_bias=True)
    ```
"""


# Over 20 s in CI's fast tier (2 cores): the slow tier.
@pytest.mark.slow
def test_a_class_only_a_later_call_site_builds_gets_that_parent_built_instance(
        tmp_path: Path) -> None:
    # Decoder's verdict rests on its first call; AlibiBias is built only by the second, which
    # makes a real instance of it rather than one from guessed arguments. The repeated calls
    # build nothing new and do not count among the later calls a class's job carries.
    workspace = Workspace(tmp_path)
    workspace.write("pkg/__init__.py", "")
    workspace.write("pkg/decoders.py", textwrap.dedent(DECODERS))
    workspace.write("README.md", textwrap.dedent(DECODER_README))
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--format", "json", "."],
        cwd=workspace.root, capture_output=True, text=True, timeout=300)
    data = parse_report(completed.stdout)
    modules = modules_by_class(data)
    assert modules["Decoder"]["arguments"] == {
        "from": "call-site", "args": [], "kwargs": {"dim": "16", "heads": "4"},
        "site": "README.md:2"}
    assert modules["AlibiBias"]["status"] == "traceable"
    assert modules["AlibiBias"]["arguments"] == {
        "from": "parent", "args": [],
        "kwargs": {"dim": "16", "heads": "4", "alibi_pos_bias": "True"},
        "parent": "pkg.decoders:Decoder", "path": "bias", "parent_from": "call-site",
        "site": "README.md:7"}
    outcomes = plain_verdicts(str(workspace.root), data["modules"])
    assert [outcome["status"] for outcome in outcomes] == ["traceable", "traceable"]
    problems = [disagreement(module, plain, str(workspace.root))
                for module, plain in zip(data["modules"], outcomes, strict=True)]
    assert problems == [None, None]


def test_a_module_tree_that_breaks_is_given_up_and_said(tmp_path: Path) -> None:
    """A root whose ``named_modules()`` raises: it keeps a verdict, the file's later classes
    theirs, and the output fx-lsp logs (``-v``) says what was given up, with the traceback."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (tmp_path / "model.py").write_text(textwrap.dedent('''
        from torch import nn


        class Root(nn.Module):
            def __init__(self):
                super().__init__()
                self.head = nn.Linear(4, 4)

            def named_modules(self, *args, **kwargs):
                raise RuntimeError("a tree that cannot be walked")

            def forward(self, x):
                return self.head(x)


        class Later(nn.Module):
            def forward(self, x):
                return x + 1
        '''))
    done = fx_lsp("check", "--no-cache", "-v", "--output-format", "json", ".", cwd=tmp_path)
    statuses = {module["class"]: module["status"]
                for module in parse_report(done.stdout)["modules"]}
    assert set(statuses) == {"Root", "Later"} and statuses["Later"] == "traceable", \
        done.stderr[-3000:]
    assert "fx-lsp: gave up tracing the submodule instances of Root:" in done.stderr
    assert "RuntimeError: a tree that cannot be walked" in done.stderr
