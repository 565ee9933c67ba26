"""The zygote warms up the export and compile captures before it forks jobs that use them
(``fxcore.worker.capture.base.warm``), once per mode, and each warm-up runs on the installed
torch without an error: a failing one is only printed by the zygote, so the matrix runs this
on every series."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fxcore.host.zygote_host import ZygoteProcess
from fxcore.model.job_spec import EngineConfig, TraceJob

#: One interpreter's warm-ups (over 20 s): the slow tier, and every series of the matrix.
pytestmark = [pytest.mark.matrix, pytest.mark.slow]

#: One interpreter for both checks below (each started its own: a torch import and an export
#: warm-up more, in every torch series): the export warm-up first, then a data-dependent guard
#: (its sympy imports, printed as a list), then the other modes' warm-ups.
WARM_UP_THEN_GUARD = """
import sys

import torch

from fxcore.worker.capture.base import warm
from fxcore.worker.capture.export.exporting import quiet_torch
from fxcore.worker.capture.modes import CAPTURES

warm(CAPTURES["export"])
before = set(sys.modules)


class Gated(torch.nn.Module):
    def forward(self, x):
        return x / 2 if x.abs().mean() > 1.0 else x


try:
    with quiet_torch():
        torch.export.export(Gated(), (torch.empty(2, 4, device="meta"),), strict=False)
except Exception as error:
    print(type(error).__name__)
print(sorted(name for name in set(sys.modules) - before if name.split(".")[0] == "sympy"))

for mode in ("fx", "compile"):
    warm(CAPTURES[mode])
print("warmed")
"""


@pytest.fixture(scope="module")
def warm_up_run() -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", WARM_UP_THEN_GUARD], capture_output=True,
                          text=True, timeout=300)


def test_each_capture_warms_up_on_this_torch(
        warm_up_run: subprocess.CompletedProcess[str]) -> None:
    assert warm_up_run.returncode == 0, warm_up_run.stderr[-3000:]
    assert warm_up_run.stdout.strip().endswith("warmed")


def test_after_the_export_warm_up_a_data_dependent_guard_imports_no_more_of_sympy(
        warm_up_run: subprocess.CompletedProcess[str]) -> None:
    """sympy imports part of itself on the first sum of symbols, which a data-dependent
    guard makes: the warm-up has done so, so that no child pays for it."""
    assert warm_up_run.returncode == 0, warm_up_run.stderr[-3000:]
    assert warm_up_run.stdout.split("\n")[-3:] == ["[]", "warmed", ""], warm_up_run.stdout


#: The compile warm-up alone (a zygote of fx and compile has no export's), then what the loop of
#: calls does: a call with new sizes, which automatic dynamic shapes compile with symbols.
COMPILE_WARM_UP_THEN_RECOMPILE = """
import sys

import torch

from fxcore.worker.capture.base import warm
from fxcore.worker.capture.compile.torch_hooks import guard_latency_unmeasured
from fxcore.worker.capture.modes import CAPTURES

warm(CAPTURES["compile"])
before = set(sys.modules)


class Scaled(torch.nn.Module):
    def forward(self, x):
        return x * x.shape[1]


torch._dynamo.reset()
compiled = torch.compile(Scaled(), backend=lambda graph_module, _inputs: graph_module.forward)
with torch.no_grad(), guard_latency_unmeasured():
    compiled(torch.empty(2, 4, device="meta"))
    compiled(torch.empty(3, 5, device="meta"))
print(sorted(name for name in set(sys.modules) - before if name.split(".")[0] == "sympy"))
"""


def test_after_the_compile_warm_up_a_recompilation_with_symbols_imports_no_more_of_sympy(
) -> None:
    """The loop of calls' first recompilation makes sizes symbolic: the compile warm-up has
    done so once, so that no child pays for sympy's imports."""
    run = subprocess.run([sys.executable, "-c", COMPILE_WARM_UP_THEN_RECOMPILE],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.strip().split("\n")[-1] == "[]", run.stdout


class _Recorded(ZygoteProcess):
    """A zygote host that records its requests instead of starting a zygote."""

    def __init__(self) -> None:  # no process: only the warm-up bookkeeping is under test
        import threading

        self._state = threading.Condition()
        self._send_lock = threading.Lock()
        self._warmed: set[str] = set()
        self.sent: list[tuple[str, list[str]]] = []
        self._socket = None


def test_the_zygote_is_asked_to_warm_each_mode_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("FX_LSP_NO_PRELOAD", raising=False)
    zygote = _Recorded()
    monkeypatch.setattr("fxcore.host.zygote_host.send_request",
                        lambda _socket, message: zygote.sent.append(message))
    for modes in (("fx", "export"), ("fx", "export", "compile"), ("compile",)):
        zygote._warm(TraceJob(path="/ws/a.py", workspace_root="/ws",
                              config=EngineConfig(modes=modes)).config.modes)
    assert zygote.sent == [("warm", ["fx", "export"]), ("warm", ["compile"])]
