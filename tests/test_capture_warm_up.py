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

pytestmark = pytest.mark.matrix

WARM_EACH_MODE = """
from fxcore.worker.capture.base import warm
from fxcore.worker.capture.modes import CAPTURES

for mode in ("fx", "export", "compile"):
    warm(CAPTURES[mode])
print("warmed")
"""


def test_each_capture_warms_up_on_this_torch() -> None:
    done = subprocess.run([sys.executable, "-c", WARM_EACH_MODE], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().endswith("warmed")


DATA_DEPENDENT_AFTER_WARM_UP = """
import sys

import torch

from fxcore.worker.capture.base import warm
from fxcore.worker.capture.export.capture import quiet_torch
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
"""


def test_after_the_export_warm_up_a_data_dependent_guard_imports_no_more_of_sympy() -> None:
    """sympy imports part of itself on the first sum of symbols, which a data-dependent
    guard makes: the warm-up has done so, so that no child pays for it."""
    done = subprocess.run([sys.executable, "-c", DATA_DEPENDENT_AFTER_WARM_UP],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[-2:] == ["[]", ""], done.stdout


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
