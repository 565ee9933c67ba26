"""Which device a class is judged for, read from its file's code
(``fxcore.worker.devices.device_choice``): here its cost on a file of many classes; what it
decides is in ``test_gpu_written.py`` and ``test_device_per_class.py``."""

from __future__ import annotations

import ast

import pytest

from fxcore.worker.devices import device_choice
from fxcore.worker.devices.device_choice import written_for_cuda


def test_a_file_of_many_classes_is_read_once_for_all_of_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Asked of every class of a file (the worker asks before importing it), the module's
    # top level is read once: read again for each class, a file of thousands of classes took
    # longer than the import's time-out and no class got a verdict.
    classes = 200
    source = "\n".join(["import torch", 'DEVICE = "cuda"', "SCALE = 2"] + [
        f"class M{i}(torch.nn.Module):\n    def forward(self, x):\n"
        f"        return x.to({'DEVICE' if i == classes - 1 else 'SCALE'})"
        for i in range(classes)])
    tree = ast.parse(source)
    reads: list[ast.stmt] = []
    bound_names = device_choice._bound_names

    def counted(statement: ast.stmt) -> set[str]:
        reads.append(statement)
        return bound_names(statement)

    monkeypatch.setattr(device_choice, "_bound_names", counted)
    written = [written_for_cuda(tree, f"M{i}") for i in range(classes)]
    assert written == [False] * (classes - 1) + [True]
    assert len(reads) <= 3
