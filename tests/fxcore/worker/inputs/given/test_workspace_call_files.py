"""The workspace's tests and examples that give a class its inputs (``calling_files``) are read
as every workspace file is (``fxcore.workspace.reading``): a committed link to ``/dev/zero``, a
named pipe, a link out of the workspace and a file too deep for Python's parser are refused,
each with its one FX100, and the class still gets its verdict from its own test's call; a
UTF-8 byte-order mark is read; many large test files neither hold up nor stop the check. Each
through the real CLI (``--mode export``) on real files."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cli_support import fx_lsp

#: Accepts only the 48 by 48 images its test gives: no guess fits, so its export verdict says
#: where its inputs came from.
NETS = '''import torch
import torch.nn.functional as F
from torch import nn


class Patches(nn.Module):
    def __init__(self, channels: int = 3, width: int = 12):
        super().__init__()
        self.mix = nn.Linear(channels * 16, width)

    def forward(self, image):
        if image.shape[-1] != 48:
            raise ValueError("images of 48 by 48")
        return self.mix(F.unfold(image, 4, stride=4).transpose(1, 2))
'''

TEST_NETS = '''import torch

from nets import Patches


def test_patches():
    model = Patches()
    image = torch.randn(3, 3, 48, 48)
    assert model(image).shape == (3, 144, 12)
'''

#: Where Patches' inputs come from when its test is read.
OWN_CALL = "from the call of Patches in tests/test_nets.py:9, which Patches runs on"

#: A test file naming the class in an expression Python's parser gives up on (RecursionError).
DEEP_TEST = "from nets import Patches\n\nmodel = Patches(" + "+".join(["1"] * 60_000) + ")\n"


def project(root: Path, own_test: bool = True) -> Path:
    root.mkdir()
    # A worker that reads /dev/zero stops at its memory cap: a small one, for the machine.
    (root / "pyproject.toml").write_text(
        '[project]\nname = "nets"\n\n[tool.fx-lsp]\nmemory-limit-mb = 2048\n')
    (root / "nets.py").write_text(NETS)
    (root / "tests").mkdir()
    if own_test:
        (root / "tests" / "test_nets.py").write_text(TEST_NETS)
    return root


def export_report(root: Path, *paths: str) -> dict[str, Any]:
    done = fx_lsp("check", "--mode", "export", "--output-format", "json", "--no-cache",
                  *(paths or (".",)), cwd=root)
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def verdict(report: dict[str, Any], name: str) -> dict[str, Any]:
    [module] = [module for module in report["modules"] if module["class"] == name]
    return module


def assert_judged_on_its_own_test(report: dict[str, Any]) -> None:
    codes = {diagnostic["code"] for diagnostic in report["diagnostics"]}
    assert not codes & {"FX102", "FX199"}, report["diagnostics"]
    patches = verdict(report, "Patches")
    assert patches["status"] == "traceable", patches["reason"]
    assert patches["inputs"]["tensors"] == {"image": "float32[3, 3, 48, 48]"}
    assert patches["inputs"]["note"] == OWN_CALL


def refusals(report: dict[str, Any], path: str) -> list[str]:
    """The messages of the diagnostics on ``path``: one FX100 for a refused file."""
    found = [diagnostic for diagnostic in report["diagnostics"] if diagnostic["path"] == path]
    assert [diagnostic["code"] for diagnostic in found] == ["FX100"], found
    return [diagnostic["message"] for diagnostic in found]


def test_a_test_file_linked_to_dev_zero_is_refused_not_read(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    os.symlink("/dev/zero", root / "tests" / "test_zero.py")
    report = export_report(root)
    assert_judged_on_its_own_test(report)
    [message] = refusals(report, "tests/test_zero.py")
    assert "leads out of the workspace" in message and "(to /dev/zero)" in message


@pytest.mark.usefixtures("unscaled_timeouts")  # a wait on the pipe ends at the time-out
def test_a_named_pipe_among_the_tests_is_not_waited_on(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    os.mkfifo(root / "tests" / "test_fifo.py")
    report = export_report(root)
    assert_judged_on_its_own_test(report)
    assert refusals(report, "tests/test_fifo.py") == [
        "This file is not a regular file but a named pipe (FIFO)."]


def test_a_test_file_too_deep_for_the_parser_is_skipped(tmp_path: Path) -> None:
    root = project(tmp_path / "ws")
    # Named so that it is read before the class's own test.
    (root / "tests" / "test_deep.py").write_text(DEEP_TEST)
    report = export_report(root)
    assert_judged_on_its_own_test(report)
    [message] = refusals(report, "tests/test_deep.py")
    assert "too deeply nested or too long for Python's parser" in message


def test_a_test_file_linked_out_of_the_workspace_gives_no_inputs(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    # The very call the class's own test would make, out of the workspace.
    (outside / "test_nets.py").write_text(TEST_NETS)
    root = project(tmp_path / "ws", own_test=False)
    os.symlink(outside / "test_nets.py", root / "tests" / "test_link.py")
    report = export_report(root)
    [message] = refusals(report, "tests/test_link.py")
    assert message == (
        f"This file is a symbolic link, or lies in a linked folder, that leads out of the "
        f"workspace {root} (to {outside / 'test_nets.py'}): fx-lsp does not read or import it.")
    patches = verdict(report, "Patches")
    assert patches["inputs"] is None
    assert patches["status"] == "not-traced"
    assert "no example inputs" in patches["reason"]
    assert "test_link" not in json.dumps(report["modules"])


def test_a_test_file_with_a_byte_order_mark_gives_its_call(tmp_path: Path) -> None:
    root = project(tmp_path / "ws", own_test=False)
    (root / "tests" / "test_nets.py").write_bytes(b"\xef\xbb\xbf" + TEST_NETS.encode())
    report = export_report(root, "nets.py")
    assert_judged_on_its_own_test(report)


#: A class no test calls, whose name every large test file holds: its search reads and parses
#: files until the harvest's time is spent, then it gets a guess that fits.
PLAIN = '''

class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, x):
        return self.linear(x)
'''

#: About 380 KB naming both classes and calling neither on a tensor; a second or so to parse
#: and walk, which a search that is not bounded does for each of them, class by class.
LARGE_TEST = ("from nets import Patches, Plain\n" + "VALUE = 1\n" * 38_000
              + "models = [Patches(), Plain()]\n")


@pytest.mark.slow
@pytest.mark.usefixtures("unscaled_timeouts")
def test_many_large_test_files_neither_hold_up_nor_stop_the_check(tmp_path: Path) -> None:
    # The default time-out at its own size, which a class's whole search of these files
    # outlasts.
    root = project(tmp_path / "ws")
    (root / "nets.py").write_text(NETS + PLAIN)
    # Walked after tests/test_nets.py: Patches' search stops at its own test's call.
    (root / "tests" / "large").mkdir()
    for number in range(24):
        (root / "tests" / "large" / f"test_large_{number:03}.py").write_text(LARGE_TEST)
    report = export_report(root, "nets.py")
    assert_judged_on_its_own_test(report)
    plain = verdict(report, "Plain")
    assert plain["status"] == "traceable", plain["reason"]
    assert plain["inputs"]["tensors"]["x"].endswith(", 8]")
    assert plain["inputs"]["from"] != "example"  # a guess, not a call
