"""What the GPU view cannot answer as a GPU does is said, once per gap, in every verdict made
in it (``cuda_view.gap_notes``): here each piece that can be missing is made to be missing, in
a process of its own (the view swaps torch's functions)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

RUNNER = """
import json
from fxcore.worker.devices import attention_choice, cpu_fallback, cuda_view, recurrent_kernels

attention_choice.choose_as_h100 = lambda stack: "no attention hook"
recurrent_kernels.run_without_cudnn_on_cuda = lambda stack: "no recurrent hook"
cpu_fallback.run_fallback_on_cpu = lambda stack, cuda: "no fallback hook"
cpu_fallback.copy_constants_on_cpu = lambda stack: "no constants hook"
with cuda_view.cuda_view():
    inside = cuda_view.gap_notes()
print(json.dumps([inside, cuda_view.gap_notes()]))
"""


@pytest.mark.slow
def test_each_missing_piece_of_the_view_is_one_note_while_it_is_entered() -> None:
    completed = subprocess.run([sys.executable, "-c", RUNNER], capture_output=True, text=True,
                               timeout=240)
    assert completed.returncode == 0, completed.stderr[-3000:]
    inside, after = json.loads(completed.stdout.splitlines()[-1])
    missing = [note for note in inside if "device guard" not in note and "Stream" not in note]
    assert missing == [
        "no attention hook: attention runs as this build runs it on CUDA tensors without a GPU.",
        "no recurrent hook: nn.LSTM, nn.GRU and nn.RNN on CUDA tensors fail here where a GPU "
        "runs them.",
        "no fallback hook.",
        "no constants hook."]
    assert after == []
