"""Example inputs learned by running ``forward`` on recording stand-ins
(``fxcore.worker.inputs.from_forward.probes``), for classes no reading of the source gives
inputs for: a dict whose keys a helper function reads, one read in a loop over constant
keys, a list of feature maps zipped with the layers, one read by negative indices, one
measured with ``len`` and indexed. Each is checked by the real worker (``fx-lsp check``) and
its export and compile verdicts compared with real torch.export and torch.compile on the CPU,
on real tensors of the inputs found, in the same test; the report says how each argument was
found.

On the branch's base none of these classes gets example inputs (FX103).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from library_verdicts import checked_against_real_torch
from torch import nn

from fxcore.model.container_spec import ContainerSpec, parse_input
from fxcore.worker.inputs.from_forward.probe_values import Learned, Probe, Recorder
from fxcore.worker.inputs.from_forward.probes import probed_inputs

CORPUS = '''"""Blocks whose arguments only their uses tell."""
from __future__ import annotations

import torch
from torch import nn


def _unpacked(inputs):
    return inputs["pixels"], inputs["labels"]


class HelperKeys(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.emb = nn.Embedding(10, 4)

    def forward(self, inputs):
        pixels, labels = _unpacked(inputs)
        return self.conv(pixels).mean((2, 3)) + self.emb(labels[:, 0])


class LoopKeys(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.ModuleDict({"rgb": nn.Conv2d(3, 5, 1), "depth": nn.Conv2d(1, 5, 1)})

    def forward(self, views):
        outs = []
        for key in ("rgb", "depth"):
            outs.append(self.enc[key](views[key]).mean((2, 3)))
        return sum(outs)


class ZipLevels(nn.Module):
    def __init__(self, channels=(4, 8)):
        super().__init__()
        self.heads = nn.ModuleList(nn.Conv2d(c, 2, 1) for c in channels)

    def forward(self, levels):
        return [head(level) for head, level in zip(self.heads, levels)]


class LastLevels(nn.Module):
    def __init__(self):
        super().__init__()
        self.top = nn.Conv2d(12, 3, 1)
        self.low = nn.Conv2d(6, 3, 1)

    def forward(self, pyramid):
        return self.top(pyramid[-1]).sum() + self.low(pyramid[-2]).sum()


class MeasuredLevels(nn.Module):
    def __init__(self, channels=(8, 16, 32)):
        super().__init__()
        self.lat = nn.ModuleList(nn.Conv2d(c, 4, 1) for c in channels)

    def forward(self, feats):
        outs = []
        for i in range(len(feats)):
            outs.append(self.lat[i](feats[i]).mean((2, 3)))
        return torch.stack(outs, 0).sum(0)
'''


@pytest.mark.slow
def test_arguments_only_their_uses_tell_are_learned_and_agree_with_real_torch(
        tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(CORPUS)
    classes = checked_against_real_torch(tmp_path, ["blocks.py"])
    assert set(classes) == {"HelperKeys", "LoopKeys", "ZipLevels", "LastLevels",
                            "MeasuredLevels"}
    found = {}
    for name, modes in classes.items():
        inputs = modes["export"]["inputs"]
        assert inputs == modes["compile"]["inputs"]
        assert inputs["from"] == "inferred" and "recording stand-ins" in inputs["note"], name
        found[name] = ({arg: parse_input(text) for arg, text in inputs["tensors"].items()},
                       inputs["found_by"])
    helper, how = found["HelperKeys"]
    # The helper's keys, the one an embedding takes (after an index) as indices.
    assert str(helper["inputs"]).startswith("{'pixels': float32[2, 3, ")
    assert isinstance(helper["inputs"], ContainerSpec)
    assert dict(helper["inputs"].items)["labels"].dtype == "int64"
    assert how["inputs"].startswith("a dict read by keys 'pixels', 'labels'")
    views, _ = found["LoopKeys"]
    assert [(key, spec.shape[1]) for key, spec in views["views"].items] == [("rgb", 3),
                                                                           ("depth", 1)]
    for name, channels in (("ZipLevels", [4, 8]), ("LastLevels", [6, 12])):
        (spec,) = found[name][0].values()
        assert spec.kind == "list" and [leaf.shape[1] for leaf in spec.leaves] == channels
    measured, how = found["MeasuredLevels"]
    assert [leaf.shape[1] for leaf in measured["feats"].leaves] == [8, 16]
    assert how["feats"].startswith("a list of 2 (from its len())")


class _Attributes(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, batch):
        return self.conv(batch.images)


def test_a_stand_in_records_each_use_and_ends_the_run_at_a_tensor_operation() -> None:
    recorder = Recorder()
    batch = Probe(("batch",), recorder)
    ids = batch["ids"]
    assert [item for item in batch["levels"][:]] and len(batch["levels"]) == 2
    with pytest.raises(Learned):
        torch.cat([ids, ids])
    with pytest.raises(Learned):
        nn.functional.embedding(batch["labels"], torch.zeros(3, 2))
    known = recorder.known
    assert known[("batch",)].kind == "dict"
    assert known[("batch",)].keys == ["ids", "levels", "labels"]
    assert known[("batch", "levels")].kind == "list"
    assert known[("batch", "ids")].kind == "tensor"
    assert known[("batch", "labels")].dtype == torch.int64


def test_an_argument_read_by_attributes_is_learned_but_given_no_spec() -> None:
    """An object's attributes are learned; no spec spells an object, so no inputs."""
    assert probed_inputs(_Attributes, _Attributes(), "cpu", {}, 30.0) is None
