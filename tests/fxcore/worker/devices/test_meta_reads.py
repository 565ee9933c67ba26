"""The record of reads that hear a tensor is on meta (``fxcore.worker.devices.meta_reads``),
on real torch: the user's code's reads of ``is_meta`` and of a meta device it compares with
"meta", by place; torch's own reads, and reads that hear no, are not recorded; and torch's
attributes are its own again after."""

from __future__ import annotations

import inspect
import os

import torch
from torch import nn

from fxcore.worker.devices import meta_reads
from fxcore.worker.devices.meta_reads import MetaRead, described

HERE = os.path.abspath(__file__)


def _line(function: object, text: str) -> int:
    lines, first = inspect.getsourcelines(function)  # type: ignore[arg-type]
    return first + next(index for index, line in enumerate(lines) if text in line)


def _asks(tensor: torch.Tensor) -> tuple[bool, bool]:
    on_meta = tensor.is_meta
    by_type = tensor.device.type == "meta"
    return on_meta, by_type


def _moves(tensor: torch.Tensor) -> torch.Tensor:
    return torch.zeros(2, device=tensor.device)


def test_this_torch_has_the_attributes_recorded() -> None:
    # The descriptors are feature-detected; on the torch these tests run, both are there.
    assert meta_reads.available()


def test_the_codes_reads_are_recorded_by_place_and_torchs_are_not() -> None:
    meta = torch.empty(3, device="meta")
    with meta_reads.meta_reads() as reads:
        assert _asks(meta) == (True, True)
        assert _asks(torch.empty(3)) == (False, False)  # heard no: nothing to record
        _moves(meta)  # reads a meta device, names no "meta": no branch on it
        with torch.device("meta"):
            layer = nn.Linear(4, 4)
        layer.to("meta")  # torch's own code asks, in nn.Module._apply
        layer.to_empty(device="meta")
        assert _asks(meta) == (True, True)  # each place once
    assert reads == [MetaRead(HERE, _line(_asks, "tensor.is_meta"), "is_meta"),
                     MetaRead(HERE, _line(_asks, "tensor.device.type"), "device")]
    assert described(reads) == (f"`.is_meta` at test_meta_reads.py:{reads[0].line}, "
                                f"`.device` beside the name \"meta\" at "
                                f"test_meta_reads.py:{reads[1].line}")


def test_torchs_own_attributes_answer_again_after() -> None:
    with meta_reads.meta_reads() as outer:
        with meta_reads.meta_reads() as inner:
            assert "is_meta" in torch.Tensor.__dict__
            _asks(torch.empty(1, device="meta"))
        assert "is_meta" in torch.Tensor.__dict__  # the outer recording still runs
        _asks(torch.empty(1, device="meta"))
    assert len(inner) == 2 and outer == inner
    assert "is_meta" not in torch.Tensor.__dict__ and "device" not in torch.Tensor.__dict__
    # Nothing recorded without a recording.
    with meta_reads.meta_reads() as later:
        pass
    _asks(torch.empty(1, device="meta"))
    assert later == []
