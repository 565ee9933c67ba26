"""Two defects of guessed instances: a library's lazy optional-import stub,
whose every attribute raises the library's own error, must not end the worker; and an instance
only the meta device builds (``torch.as_tensor(None, dtype=torch.float)``) is not one to judge."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from source_modules import load_module

from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig, ModuleConfig
from fxcore.worker.building.construction import build

from engine_support import Workspace

STUBBED = """
    import sys

    import torch
    from torch import nn


    class OptionalImportError(Exception):
        pass


    class Stub:
        # What a library's ``optional_import`` returns for a package that is not installed.
        def __getattr__(self, name):
            raise OptionalImportError(f"the optional package is not installed ({name})")

        def __call__(self, *args, **kwargs):
            raise OptionalImportError("the optional package is not installed")


    stub = Stub()
    # A lazy module: every attribute, ``__file__`` too, is the stub's error.
    sys.modules["optional_stub_module"] = Stub()


    class Gated(nn.Module):
        def __init__(self, channels: int, mode):
            super().__init__()
            self.conv = nn.Conv2d(channels, channels, 1)
            if mode == "optional":
                self.extra = stub(mode)

        def forward(self, x):
            return self.conv(x)


    class Plain(nn.Module):
        def __init__(self, channels: int = 8):
            super().__init__()
            self.conv = nn.Conv2d(channels, channels, 1)

        def forward(self, x):
            return torch.relu(self.conv(x))
    """

GAUSSIAN = """
    import torch
    from torch import nn


    class Gaussian(nn.Module):
        def __init__(self, spatial_dims: int, sigma: float | None = None):
            super().__init__()
            self.spatial_dims = spatial_dims
            self.sigma = nn.Parameter(torch.as_tensor(sigma, dtype=torch.float),
                                      requires_grad=False)

        def forward(self, x):
            tail = int(max(float(self.sigma) * 4.0, 0.5) + 0.5)
            return x * tail


    class Ragged(nn.Module):
        def __init__(self, rows=((1.0, 2.0), (3.0,))):
            super().__init__()
            self.register_buffer("table", torch.tensor(rows))

        def forward(self, x):
            return x + self.table.sum()
    """


def test_an_optional_import_stub_leaves_every_class_its_verdict(
        engine: Engine, workspace: Workspace) -> None:
    # Reading the constructor's code for ``mode``'s values meets ``stub(mode)``; asking the
    # stub for ``__func__`` raised OptionalImportError, which ended the worker (FX199) and
    # left both classes without a verdict (FX102). So did asking the lazy module in
    # ``sys.modules`` for its ``__file__`` when the file's imports were recorded.
    workspace.write("blocks.py", STUBBED)
    result = workspace.check(engine, "blocks.py")
    assert not result.errors, [error.message for error in result.errors]
    modules = {module.class_name: module for module in result.modules}
    assert set(modules) == {"Gated", "Plain"}
    # Its own verdict: the value its code names for ``mode`` calls the stub, which raises.
    assert modules["Gated"].status == "not-traced", modules["Gated"].reason
    assert "OptionalImportError" in (modules["Gated"].reason or "")
    assert modules["Plain"].status == "traceable", modules["Plain"].reason


def test_a_tensor_from_python_data_builds_on_meta_only_where_the_cpu_builds_it(
        workspace: Workspace) -> None:
    path = workspace.write("gaussian.py", GAUSSIAN)
    gaussian = load_module(path, "guessed_gaussian")

    with pytest.raises(TypeError, match="must be real number, not NoneType"):
        build(gaussian.Gaussian, ModuleConfig(kwargs={"spatial_dims": 2}))
    with pytest.raises(ValueError, match="expected sequence of length 2"):
        build(gaussian.Ragged, ModuleConfig())
    model, instantiated_on, *_ = build(gaussian.Gaussian,
                                       ModuleConfig(kwargs={"spatial_dims": 2, "sigma": 1.0}))
    assert instantiated_on == "meta" and model.sigma.is_meta
    # Data holding tensors is torch's to judge: the CPU cannot read meta tensors.
    model, instantiated_on, *_ = build(gaussian.Ragged, ModuleConfig(
        kwargs={"rows": [torch.ones(()), torch.ones(())]}))
    assert instantiated_on == "meta" and model.table.is_meta


@pytest.mark.parametrize("modes", [("fx", "export", "compile")])
def test_no_export_or_compile_failure_for_an_instance_the_cpu_cannot_build(
        engine: Engine, workspace: Workspace, modes: tuple[str, ...]) -> None:
    path: Path = workspace.write("gaussian.py", GAUSSIAN)
    result = workspace.check(engine, path.name, EngineConfig(modes=modes))
    verdicts = {(module.class_name, module.mode): module for module in result.modules}
    assert set(verdicts) == {(name, mode) for name in ("Gaussian", "Ragged") for mode in modes}
    for mode in modes:
        # Guessed ``spatial_dims`` with the default ``sigma=None``: the CPU raises in
        # ``__init__``, so there is no instance whose export or compile could fail.
        gaussian = verdicts["Gaussian", mode]
        assert gaussian.status == "not-traced", (mode, [f.message for f in gaussian.failures])
        assert "must be real number, not NoneType" in (gaussian.reason or "")
        # Its defaults build nothing on the CPU: the constructor's failure, not a capture's.
        ragged = verdicts["Ragged", mode]
        assert [failure.kind for failure in ragged.failures] == ["constructor"], mode
        assert "expected sequence of length 2" in ragged.failures[0].message
