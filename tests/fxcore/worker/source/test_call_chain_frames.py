"""Which frames a failure's call chain lists: the user's calls and the public torch API they
made, never torch's machinery or private modules (fxcore/worker/source/locate.py)."""

from __future__ import annotations

import os

import pytest
import torch

from fxcore.worker.source.locate import is_plumbing

TORCH = os.path.dirname(torch.__file__)


@pytest.mark.parametrize("relative", [
    "nn/modules/linear.py", "nn/functional.py", "functional.py", "nn/modules/conv.py",
])
def test_public_torch_calls_stay_in_the_chain(relative: str) -> None:
    assert not is_plumbing(os.path.join(TORCH, relative))


@pytest.mark.parametrize("relative", [
    # Where a shape error under export or compile is raised, below nn.Linear.forward: a
    # call chain of 13 frames in VS Code before (decompositions, meta kernels, _check).
    "_decomp/decompositions.py", "_meta_registrations.py", "_prims_common/wrappers.py",
    "_library/utils.py", "utils/_stats.py", "__init__.py",
    # The capture machinery itself.
    "fx/proxy.py", "export/_trace.py", "_dynamo/symbolic_convert.py",
    "_subclasses/fake_tensor.py", "nn/modules/module.py", "overrides.py",
])
def test_torch_machinery_and_private_modules_are_plumbing(relative: str) -> None:
    assert is_plumbing(os.path.join(TORCH, relative))


def test_third_party_libraries_stay_in_the_chain() -> None:
    site = os.path.dirname(TORCH)
    assert not is_plumbing(os.path.join(site, "timm", "layers", "_fx.py"))
