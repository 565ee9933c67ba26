"""``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` judged for a GPU run on fake CUDA tensors
without the CUDA runtime, on both builds, and give the outputs a GPU gives.

On a CUDA build their composite takes cuDNN's path on CUDA tensors, which asks the runtime for
a cuDNN handle: without a driver, "CUDA driver version is insufficient for CUDA runtime
version" (a CPU-only build, with no cuDNN, ran torch's cell-by-cell composite, whose CUDA GRU
cell has no meta function: GRU failed there too). In the view they run without cuDNN
(``recurrent_kernels``). The outputs' shapes are the
documented ones, which the CPU's run gives too; their device is the GPU. The CUDA builds of the
torch matrix (no GPU) are where this fails without the view's decomposition. Packed sequences
are left out: ``pack_padded_sequence`` of a fake tensor fails on any device (its batch sizes
come from the data)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.matrix

#: Runs each layer on the CPU (real tensors) and in the GPU view on fake CUDA tensors, in a
#: process of its own (the view sets CUDA's device guard up for the process), and prints the
#: outputs' shapes and devices, or the error.
RUNNER = """
import json, torch
from torch import nn
from fxcore.worker.devices.cuda_view import CUDA, cuda_view
from fxcore.worker.devices.fake_device import on_fake_device

LAYERS = {
    "lstm": lambda: nn.LSTM(8, 6, batch_first=True),
    "lstm, two layers, bidirectional": lambda: nn.LSTM(8, 6, 2, bidirectional=True),
    "lstm with projections": lambda: nn.LSTM(8, 6, proj_size=4, batch_first=True),
    "gru": lambda: nn.GRU(8, 6, batch_first=True),
    "rnn, tanh": lambda: nn.RNN(8, 6, batch_first=True),
    "rnn, relu, two layers": lambda: nn.RNN(8, 6, 2, nonlinearity="relu", batch_first=True),
}

def shapes(value):
    if isinstance(value, torch.Tensor):
        return [list(value.shape), value.device.type]
    return [shapes(item) for item in value]

answers = {}
for name, make in LAYERS.items():
    on_cpu = shapes(make()(torch.randn(2, 3, 8)))
    try:
        # As the worker judges a class for a GPU: built on meta, weights faked on CUDA.
        with cuda_view():
            with torch.device("meta"):
                layer = make()
            layer = layer.cuda()
            with on_fake_device(layer, CUDA) as mode:
                x = mode.from_tensor(torch.randn(2, 3, 8)).cuda()
                answers[name] = [on_cpu, shapes(layer(x))]
    except Exception as error:
        answers[name] = [on_cpu, f"{type(error).__name__}: {error}"[:300]]
print(json.dumps(answers))
"""


@pytest.mark.slow
def test_recurrent_layers_run_on_fake_cuda_tensors_as_on_a_gpu() -> None:
    environment = dict(os.environ, CUDA_VISIBLE_DEVICES="", PYTORCH_NVML_BASED_CUDA_CHECK="1")
    completed = subprocess.run([sys.executable, "-c", RUNNER], capture_output=True, text=True,
                               timeout=240, env=environment)
    assert completed.returncode == 0, completed.stderr[-3000:]
    answers = json.loads(completed.stdout.splitlines()[-1])
    assert len(answers) == 6
    on_the_gpu = {}
    for key, (on_cpu, in_the_view) in answers.items():
        # The same shapes as on the CPU, every tensor on the GPU.
        expected = json.loads(json.dumps(on_cpu).replace('"cpu"', '"cuda"'))
        if in_the_view != expected:
            on_the_gpu[key] = (on_cpu, in_the_view)
    assert on_the_gpu == {}
