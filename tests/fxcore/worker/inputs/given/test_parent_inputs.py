"""``fxcore.worker.inputs.given.parent``: the inputs a root passes its submodules, recorded by
running it once on its example inputs, on real torch modules."""

from __future__ import annotations

import inspect
import signal
import sys
import time

import pytest
import torch
from torch import nn

from fxcore.model.results import ExampleInputs
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.given.parent import passed_inputs, passed_note


class Attention(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None,
                heads: int = 2) -> torch.Tensor:
        return self.proj(x)


class Scaler(nn.Module):
    def forward(self, x: torch.Tensor, factor: float) -> torch.Tensor:
        return x * factor


class Gate(nn.Module):
    def forward(self, x: torch.Tensor, activation: object) -> torch.Tensor:
        return activation(x)  # type: ignore[operator]


class Bias(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(8))

    def forward(self, scale: float = 1.0) -> torch.Tensor:
        return self.bias * scale


class Root(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(100, 8)
        self.attn = Attention()
        self.scale = Scaler()
        self.unused = Attention()
        self.bias = Bias()
        self.gate = Gate()

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)
        h = self.attn(h.transpose(0, 1), mask=None, heads=2)
        self.attn(h[:1])  # only the first call counts
        return self.scale(h, 0.5) + self.bias() + self.gate(h, torch.sigmoid)


INPUTS = ExampleInputs("inferred", {"tokens": "int64[2, 5]"})


def test_each_submodule_gets_the_tensors_of_its_first_call_by_forward_argument() -> None:
    for device in ("meta", "cpu"):
        with torch.device(device):
            root = Root()
        passed = passed_inputs(root, INPUTS, {}, "meta" if device == "meta" else "cpu",
                               [root.attn, root.scale, root.unused, root.bias, root.gate],
                               seconds=30)
        assert passed.failed is None
        tokens = {"x": TensorSpec("float32", (5, 2, 8))}
        assert passed.inputs == {id(root.attn): tokens, id(root.scale): tokens}
        # A literal other than the default is kept to be given as it was; defaults are not.
        assert passed.values == {id(root.attn): {}, id(root.scale): {"factor": 0.5}}
        assert passed.reason(root.gate) == ("its argument activation is given a "
                                            "builtin_function_or_method, which example inputs "
                                            "cannot give")
        assert passed.reason(root.unused) == "it was not called"
        assert passed.reason(root.bias) == "it is called without tensors"
        # The hooks are gone: the next call records nothing.
        assert not root.attn._forward_pre_hooks


def test_a_root_that_raises_or_has_no_inputs_records_nothing() -> None:
    with torch.device("meta"):
        root = Root()
    raised = passed_inputs(root, ExampleInputs("inferred", {"tokens": "float32[2, 5]"}), {},
                           "meta", [root.attn], seconds=30)
    assert raised.inputs == {} and raised.failed is not None
    assert raised.failed.startswith("running the parent on its example inputs raised ")
    assert raised.reason(root.attn) == raised.failed
    assert passed_inputs(root, None, {}, "meta", [root.attn], seconds=30).failed == \
        "the parent has no example inputs to run it on"


class Counting(nn.Module):
    """Reads a number from its tensors before it calls its submodule."""

    def __init__(self) -> None:
        super().__init__()
        self.attn = Attention()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        count = int((x > 0).sum())  # read
        return self.attn(x[:, :count])


def test_values_the_root_reads_from_its_tensors_are_stood_in() -> None:
    """On meta (and on fake tensors for a root built on the CPU) the number is one, as the
    compile capture takes it; the note on the submodule's inputs says so, at the line."""
    read_at = next(number for number, text in
                   enumerate(inspect.getsource(sys.modules[__name__]).splitlines(), 1)
                   if text.endswith("# read"))
    for device in ("meta", "cpu"):
        with torch.device(device):
            root = Counting()
        passed = passed_inputs(root, ExampleInputs("inferred", {"x": "float32[2, 5, 8]"}), {},
                               "meta" if device == "meta" else "cpu", [root.attn], seconds=30)
        assert passed.failed is None, passed.failed
        assert passed.inputs == {id(root.attn): {"x": TensorSpec("float32", (2, 1, 8))}}
        assert passed.read == [(__file__, read_at)]
        note = passed_note("Counting", "attn", ExampleInputs("inferred", {"x": "float32[2, 5, 8]"}),
                           passed.read)
        assert f"test_parent_inputs.py:{read_at} were taken as one" in note


class Sleeps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = Attention()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(60)
        return self.attn(x)


@pytest.mark.usefixtures("unscaled_timeouts")  # the wait is stopped by the backstop
def test_a_root_that_runs_too_long_is_stopped() -> None:
    with torch.device("meta"):
        root = Sleeps()
    handler, (delay, _) = signal.getsignal(signal.SIGALRM), signal.getitimer(signal.ITIMER_REAL)
    passed = passed_inputs(root, ExampleInputs("inferred", {"x": "float32[2, 8]"}), {}, "meta",
                           [root.attn], seconds=0.5)
    assert passed.failed == "running the parent on its example inputs took longer than 0.5 s"
    # As it was: no timer and the default handler, or a test runner's (timeout_method=signal).
    assert signal.getsignal(signal.SIGALRM) == handler
    assert (signal.getitimer(signal.ITIMER_REAL)[0] > 0) == (delay > 0)


@pytest.mark.usefixtures("unscaled_timeouts")  # the wait is stopped by the backstop
def test_a_runners_timer_is_kept_and_put_back() -> None:
    """pytest-timeout (CI's per-test limit) and any other outer timer: the root's own limit
    still applies, and the outer timer runs on afterwards with the time it had left."""
    fired: list[int] = []
    signal.signal(signal.SIGALRM, lambda signum, _frame: fired.append(signum))
    signal.setitimer(signal.ITIMER_REAL, 30)
    try:
        with torch.device("meta"):
            root = Sleeps()
        passed = passed_inputs(root, ExampleInputs("inferred", {"x": "float32[2, 8]"}), {},
                               "meta", [root.attn], seconds=0.5)
        assert passed.failed == \
            "running the parent on its example inputs took longer than 0.5 s"
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left < 30
        assert fired == []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
