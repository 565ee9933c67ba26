"""Classes written for a GPU that use CUDA streams and events, as people write them (each
takes float32[2, 8]): judged for one (``device = "auto"``: they make CUDA tensors) on any
machine. Their expected verdicts: tests/fxcore/worker/devices/test_gpu_streams.py's docstring."""

import torch
from torch import nn


class TimedForward(nn.Module):
    """Times its projection with CUDA events."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        y = self.proj(x.cuda())
        end.record()
        end.synchronize()
        return y


class SideStream(nn.Module):
    """Runs a branch on a side stream that first waits for the current one."""

    def __init__(self):
        super().__init__()
        self.main = nn.Linear(8, 8)
        self.side = nn.Linear(8, 8)

    def forward(self, x):
        x = x.cuda()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            y = self.side(x)
        torch.cuda.current_stream().wait_stream(side)
        return self.main(x) + y


class StoredStream(nn.Module):
    """Keeps a stream made in ``__init__`` and an event that orders the streams."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.copy_stream = torch.cuda.Stream()
        self.done = torch.cuda.Event()

    def forward(self, x):
        with torch.cuda.stream(self.copy_stream):
            x = x.to("cuda", non_blocking=True)
            self.done.record()
        self.done.wait()
        return self.proj(x)


class SynchronizedStream(nn.Module):
    """Waits for the current and default streams before it returns."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x.cuda())
        torch.cuda.current_stream().synchronize()
        torch.cuda.default_stream().synchronize()
        return y
