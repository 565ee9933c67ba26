"""FX008: einops on a traced value, whichever way the code reaches it (a function imported by
name, ``einops.rearrange``, a layer, a workspace helper), at the user's call; the fixes
``--fix`` applies (``torch.fx.wrap``, ``autowrap-modules``, ``leaf-modules``) make the file
trace, and plain torch.fx, given the same, agrees and computes what eager code does."""

from __future__ import annotations

import importlib
import math
import os
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from test_plain_fx_agreement import assert_agrees
from torch import fx

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.fixing import fix_plan, fixes, pyproject_fixes
from fxcore.host.engine import Engine
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import Failure, Frame, ModuleResult
from fxcore.workspace import traced_libraries
from fxcore.workspace.config import load_config

from cli_support import fx_lsp
from engine_support import REPO_ROOT, Workspace, check_job, line_of, span_of

einops = pytest.importorskip("einops")
from einops.layers.torch import Rearrange, Reduce  # noqa: E402

MODELS = '''
import torch
from einops import rearrange, reduce
from einops.layers.torch import Rearrange, Reduce
from torch import nn

from einops_helpers import to_tokens


class ByName(nn.Module):
    def forward(self, x: torch.Tensor):
        x = rearrange(x, "b c (h p) (w q) -> b (h w) (c p q)", p=2, q=2)
        return reduce(x, "b n c -> b c", "mean")


class Layers(nn.Module):
    def __init__(self):
        super().__init__()
        self.to_tokens = Rearrange("b c h w -> b (h w) c")
        self.pool = Reduce("b n c -> b c", "max")

    def forward(self, x: torch.Tensor):
        return self.pool(self.to_tokens(x))


class InHelper(nn.Module):
    def forward(self, x: torch.Tensor):
        return to_tokens(x) + 1
'''

#: In a project of its own: autowrap-modules = ["einops"] would also record ByName's calls.
ATTRIBUTE = '''
import einops
import torch
from torch import nn


class AsAttribute(nn.Module):
    def forward(self, x: torch.Tensor):
        return einops.rearrange(x, "b c h w -> b (h w) c") * 2
'''

HELPERS = '''
from einops import rearrange as flatten_patches


def to_tokens(x):
    return flatten_patches(x, "b c h w -> b (h w) c")
'''


def cli(root: Path, *arguments: str, pythonpath: str = "") -> subprocess.CompletedProcess[str]:
    if not pythonpath:
        return fx_lsp("check", "--no-cache", *arguments, str(root), cwd=os.getcwd())
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        filter(None, [str(REPO_ROOT), pythonpath, environment.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "fx_lsp", "check", "--no-cache", *arguments,
                           str(root)], capture_output=True, text=True, timeout=600,
                          env=environment)


def by_class(output: str) -> dict[str, dict]:
    return {module["class"]: module for module in parse_report(output)["modules"]}


@pytest.fixture
def models(workspace: Workspace) -> Iterator[Workspace]:
    workspace.write("einops_models.py", MODELS)
    workspace.write("einops_helpers.py", HELPERS)
    (workspace.root / "attribute").mkdir()
    Workspace(workspace.root / "attribute").write("einops_attribute.py", ATTRIBUTE)
    yield workspace
    # Imported here by plain tracing.
    for name in ("einops_models", "einops_helpers", "einops_attribute"):
        sys.modules.pop(name, None)


def test_each_form_is_fx008_at_the_users_call(models: Workspace) -> None:
    completed = cli(models.root, "--format", "json")
    modules = by_class(completed.stdout)
    path = models.root / "einops_models.py"
    attribute = models.root / "attribute" / "einops_attribute.py"
    helpers = models.root / "einops_helpers.py"

    def at(file: Path, snippet: str) -> tuple[int, int, int, int]:
        return span_of(file, line_of(file, snippet), snippet)

    expected = {
        "ByName": (path, at(path, 'rearrange(x, "b c (h p) (w q) -> b (h w) (c p q)", p=2, q=2)'),
                   'Call torch.fx.wrap("rearrange") at module scope of this file'),
        "AsAttribute": (attribute, at(attribute, 'einops.rearrange(x, "b c h w -> b (h w) c")'),
                        'Add autowrap-modules = ["einops"] under [tool.fx-lsp]'),
        "Layers": (path, at(path, "self.to_tokens(x)"),
                   'leaf-modules = ["einops.layers.torch:Rearrange"]'),
        "InHelper": (helpers, at(helpers, 'flatten_patches(x, "b c h w -> b (h w) c")'),
                     'Call torch.fx.wrap("flatten_patches") at module scope of this file'),
    }
    for name, (file, span, advice) in expected.items():
        (failure,) = modules[name]["failures"]
        assert (failure["code"], failure["kind"]) == ("FX008", "einops"), failure
        assert (failure["path"], failure["line"], failure["column"], failure["end_line"],
                failure["end_column"]) == (str(file), *span), name
        assert advice in failure["message"], failure["message"]
    assert "einops.rearrange() was given a traced value (RuntimeError: Tensor type unknown " \
        "to einops" in modules["ByName"]["failures"][0]["message"]
    assert "torch.fx.Tracer(autowrap_modules=(math, einops))" in \
        modules["AsAttribute"]["failures"][0]["message"]
    assert "The einops layer `einops.layers.torch.Rearrange` was given a traced value " \
        "(KeyError" in modules["Layers"]["failures"][0]["message"]


#: The classes of each file, and the folder its project (pyproject.toml) is in.
FILES = {"einops_models": ("", ("ByName", "Layers", "InHelper")),
         "einops_attribute": ("attribute", ("AsAttribute",))}


def test_the_failures_agree_with_plain_torch_fx(engine: Engine, models: Workspace) -> None:
    for module_name, (folder, classes) in FILES.items():
        root = models.root / folder
        assert assert_agrees(engine, root / f"{module_name}.py", root) == len(classes)
        # Plain torch.fx fails inside einops for each: the frames FX008 is decided by.
        sys.path[:0] = [str(root)]
        try:
            module = importlib.import_module(module_name)
            for name in classes:
                with pytest.raises(Exception) as raised:
                    fx.symbolic_trace(getattr(module, name)())
                files = [frame.f_code.co_filename for frame in _frames(raised.value)]
                assert any(f"{os.sep}einops{os.sep}" in file for file in files), name
        finally:
            del sys.path[0]


def _frames(error: BaseException) -> Iterator[types.FrameType]:
    tb = error.__traceback__
    while tb is not None:
        yield tb.tb_frame
        tb = tb.tb_next


class LayersAsLeaves(fx.Tracer):
    """A user's tracer with einops' layers as leaf modules."""

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        return isinstance(m, (Rearrange, Reduce)) or super().is_leaf_module(
            m, module_qualified_name)


def test_fix_makes_each_form_trace_as_plain_torch_fx_does(engine: Engine,
                                                          models: Workspace) -> None:
    completed = cli(models.root, "--fix", "--format", "json")
    assert completed.returncode == 0, completed.stderr
    assert {module["class"]: (module["status"], module["failures"])
            for module in parse_report(completed.stdout)["modules"]} == {
        name: ("traceable", []) for name in ("ByName", "AsAttribute", "Layers", "InHelper")}
    text = (models.root / "einops_models.py").read_text()
    assert 'torch.fx.wrap("rearrange")\ntorch.fx.wrap("reduce")\n' in text
    assert 'torch.fx.wrap("flatten_patches")' in (models.root / "einops_helpers.py").read_text()
    assert ('leaf-modules = ["einops.layers.torch:Rearrange", "einops.layers.torch:Reduce"]'
            in (models.root / "pyproject.toml").read_text())
    assert 'autowrap-modules = ["einops"]' in \
        (models.root / "attribute" / "pyproject.toml").read_text()

    # Plain torch.fx given the same (torch.fx.wrap needs nothing more; autowrap_modules and
    # leaf modules are the user's tracer's) traces each fixed class to fx-lsp's graph, and
    # the graph computes what the module does on real tensors.
    tracers = {"ByName": fx.Tracer(), "InHelper": fx.Tracer(), "Layers": LayersAsLeaves(),
               "AsAttribute": fx.Tracer(autowrap_modules=(math, einops))}
    torch.manual_seed(0)
    x = torch.randn(2, 3, 4, 6)
    for module_name, (folder, classes) in FILES.items():
        root = models.root / folder
        result = check_job(engine, TraceJob(path=str(root / f"{module_name}.py"),
                                            workspace_root=str(root),
                                            config=load_config(str(root))[0]))
        generated = {module.class_name: module.generated_code for module in result.modules}
        sys.path[:0] = [str(root)]
        try:
            module = importlib.import_module(module_name)
            for name in classes:
                model = getattr(module, name)()
                graph_module = fx.GraphModule(model, tracers[name].trace(model), name)
                assert graph_module.code.strip() == (generated[name] or "").strip(), name
                assert "einops" in graph_module.code or name == "Layers", graph_module.code
                assert torch.equal(graph_module(x), model(x)), name
        finally:
            del sys.path[0]


STAND_IN_EINX = '''
"""A stand-in for einx (not installed here), failing on a Proxy the two ways a library can:
an exception of its own, and control flow torch.fx's recovering tracer records."""


def rearrange(pattern, x):
    backends = {"Tensor": "torch"}
    return backends[type(x).__name__]


def checked(x):
    if x.sum() > 0:
        return x
    return -x
'''

EINX_MODELS = '''
import einx
import torch
from torch import nn


class Raises(nn.Module):
    def forward(self, x: torch.Tensor):
        return einx.rearrange("b c -> c b", x)


class Branches(nn.Module):
    def forward(self, x: torch.Tensor):
        return einx.checked(x) + 1
'''


@pytest.mark.slow  # over 12 s in the loaded fast tier
def test_einx_package_frames_are_fx008_with_no_fix(workspace: Workspace,
                                                   tmp_path_factory: pytest.TempPathFactory
                                                   ) -> None:
    libraries = tmp_path_factory.mktemp("site")
    (libraries / "einx").mkdir()
    (libraries / "einx" / "__init__.py").write_text(STAND_IN_EINX.lstrip())
    path = workspace.write("einx_models.py", EINX_MODELS)
    written = path.read_text()
    completed = cli(workspace.root, "--format", "json", pythonpath=str(libraries))
    modules = by_class(completed.stdout)
    (raised,) = modules["Raises"]["failures"]
    assert (raised["code"], raised["line"]) == ("FX008", 8)
    assert "einx.rearrange() was given a traced value (KeyError: 'Proxy')" in raised["message"]
    assert "module-level function marked with torch.fx.wrap" in raised["message"]
    (recorded,) = modules["Branches"]["failures"]
    assert (recorded["code"], recorded["line"]) == ("FX008", 13)
    assert "(Control flow on a traced value inside it)" in recorded["message"]
    # einx's functions were not checked with torch.fx: no fix is offered for them.
    completed = cli(workspace.root, "--diff", pythonpath=str(libraries))
    assert completed.stdout == "" and completed.stderr.startswith("Would fix 0 problems"), \
        completed.stderr
    assert path.read_text() == written


@pytest.mark.slow
def test_a_library_whose_code_is_in_a_namespace_subpackage_is_fx008(
        workspace: Workspace, tmp_path_factory: pytest.TempPathFactory) -> None:
    # einx 0.4 keeps its code in einx/_src/, a folder without __init__.py: the failing frame's
    # __init__ chain stops there, and the failure was FX199 with no advice.
    libraries = tmp_path_factory.mktemp("site")
    (libraries / "einx" / "_src" / "frontend").mkdir(parents=True)
    (libraries / "einx" / "_src" / "frontend" / "api.py").write_text(STAND_IN_EINX.lstrip())
    (libraries / "einx" / "__init__.py").write_text(
        "from ._src.frontend.api import checked, rearrange  # noqa: F401\n")
    workspace.write("einx_models.py", EINX_MODELS)
    modules = by_class(cli(workspace.root, "--format", "json",
                           pythonpath=str(libraries)).stdout)
    (raised,) = modules["Raises"]["failures"]
    assert (raised["code"], raised["line"]) == ("FX008", 8)
    assert "einx.rearrange() was given a traced value (KeyError: 'Proxy')" in raised["message"]


# ---------------------------------------------------------------------------------------------
# The planner and the edits


SOURCE = '''
import einops as E
import torch
from einops import pack, rearrange as r


def f(x):
    from einops import repeat
    a = r(x, "a b -> b a")
    b = E.reduce(x, "a b -> a", "sum")
    c = pack([x], "*")
    return repeat(x, "a -> a b", b=2), a, b, c
'''.lstrip()


def failure_at(path: str, snippet: str) -> Failure:
    line = next(number for number, text in enumerate(SOURCE.splitlines(), start=1)
                if snippet in text)
    column = SOURCE.splitlines()[line - 1].index(snippet) + 1
    frame = Frame(path, line, column, line, column + len(snippet), "f")
    return Failure(path=path, line=line, column=column, end_line=line,
                   end_column=column + len(snippet), code="FX008", kind="einops",
                   message="", frames=[frame])


def test_calls_found_from_the_module_level_imports() -> None:
    calls = {(call.function, call.imported_name, call.has_fix)
             for call in traced_libraries.library_calls(SOURCE) or ()}
    # `repeat` is imported inside the function: torch.fx.wrap could not patch it.
    assert calls == {("rearrange", "r", True), ("reduce", None, True), ("pack", "pack", False)}


def test_planned_fixes_by_form(tmp_path: Path) -> None:
    path = str(tmp_path / "ops.py")
    texts = {path: SOURCE}
    module = ModuleResult(path=path, line=1, column=1, end_line=1, end_column=2,
                          class_name="Net", qualified_name="ops:Net", status="failed")

    def titles(snippet: str) -> list[str]:
        found = fix_plan.plan(failure_at(path, snippet), module, texts.get,
                              lambda _: str(tmp_path))
        return [fix.title for fix in found]

    assert titles('r(x, "a b -> b a")')[0] == 'Trace r() as one call: torch.fx.wrap("r")'
    assert titles('E.reduce(x, "a b -> a", "sum")')[0] == \
        "Trace einops's functions as calls (autowrap-modules, pyproject.toml)"
    assert not any("einops" in title or "wrap(\"" in title
                   for title in titles('pack([x], "*")') + titles('repeat(x, "a -> a b", b=2)'))


def test_wrap_global_groups_the_wrap_calls_and_is_idempotent() -> None:
    once = fixes.wrap_global("import torch.fx\nfrom einops import rearrange\n\n\nx = 1\n",
                             "rearrange")
    twice = fixes.wrap_len(once)
    assert twice == ('import torch.fx\nfrom einops import rearrange\n\n'
                     'torch.fx.wrap("rearrange")\ntorch.fx.wrap("len")\n\n\nx = 1\n')
    assert fixes.wrap_global(twice, "rearrange") == twice
    pyproject = pyproject_fixes.add_autowrap_module("", "einops")
    assert pyproject == '[tool.fx-lsp]\nautowrap-modules = ["einops"]\n'
    assert pyproject_fixes.add_autowrap_module(pyproject, "einops") == pyproject
