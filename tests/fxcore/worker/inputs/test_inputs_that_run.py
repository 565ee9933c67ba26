"""An export or compile error on inputs or an instance fx-lsp chose is shown only where those
run ``forward`` eagerly up to the failing line: where they fail before it, the class has no
verdict in that mode (information: "no inputs found that run forward"); where the capture's
last error only followed a value fx-lsp assumed for tensor data (a dims list read with
``.tolist()``), the data-dependent failure at its line is the verdict, not "does not fit".
Each error says what it was found on, and the JSON says whether the instance and the inputs
were given, taken from the code or guessed. Every case is run with real torch on the CPU, on
fx-lsp's inputs and on inputs written here."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from source_modules import load_module

from fx_lsp.cli.output_formats.json_report import message_of, parse_report

import cli_support

BLOCKS = '''
import torch
from torch import nn


class ChannelDimsNorm(nn.Module):
    """Normalises over every dimension but the batch, listed with tolist()."""

    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)

    def forward(self, x):
        x = self.conv(x)
        dims = torch.arange(1, x.dim()).tolist()
        var = x.var(dim=dims, keepdim=True)
        return x / (var + 1e-5).sqrt()


class EagerCheck(nn.Module):
    """Probes its input only when run eagerly (0 channels with its defaults), then reads a
    count from the data."""

    def __init__(self, channels: int = 8, reduction: int = 16):
        super().__init__()
        self.probe = nn.Conv2d(channels, channels // reduction, 1)
        self.proj = nn.Conv2d(channels, channels, 1)

    def forward(self, x):
        if not (torch.compiler.is_compiling() or torch.compiler.is_exporting()):
            self.probe(x)
        count = int((x > 0).sum())
        return self.proj(x) * count
'''


def _line(text: str) -> int:
    return next(number for number, line in enumerate(BLOCKS.splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("inputs_that_run")
    (root / "blocks.py").write_text(BLOCKS)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export",
                                   "--output-format", "json", ".", cwd=root)
    return root, parse_report(completed.stdout)


def _verdict(report: dict, name: str) -> dict:
    return next(module for module in report["modules"] if module["class"] == name)


def test_an_assumed_value_that_breaks_the_code_is_the_data_dependent_failure(
        checked: tuple[Path, dict]) -> None:
    root, report = checked
    verdict = _verdict(report, "ChannelDimsNorm")
    tolist = _line("var = x.var(")
    assert verdict["status"] == "failed", verdict
    assert [(f["code"], f["line"]) for f in verdict["failures"]] == [("FX402", tolist)]
    message = message_of(report, verdict["failures"][0])
    assert message.endswith(" (fx-lsp: found on inputs it guessed, which run forward eagerly "
                            "up to here)"), message
    assert verdict["judged_on"] == {"instance": "code", "inputs": "guessed"}
    # Real torch: the class runs on fx-lsp's inputs, and torch.export stops on the data.
    module = load_module(root / "blocks.py", "inputs_that_run_norm")
    shape = [int(size) for size in verdict["inputs"]["tensors"]["x"][8:-1].split(", ")]
    model, x = module.ChannelDimsNorm(), torch.randn(*shape)
    model(x)
    with pytest.raises(Exception, match=r"(?i)data.dependent"):
        torch.export.export(model, (x,), strict=False)


def test_inputs_that_fail_before_the_capture_s_error_give_no_verdict(
        checked: tuple[Path, dict]) -> None:
    root, report = checked
    verdict = _verdict(report, "EagerCheck")
    assert verdict["status"] == "not-traced", verdict
    assert verdict["failures"] == []
    assert verdict["reason"].startswith("no inputs found that run forward"), verdict["reason"]
    assert f"blocks.py:{_line('self.probe(x)')}" in verdict["reason"]
    assert not [d for d in report["diagnostics"]
                if "EagerCheck" in d["classes"] and d["severity"] == "error"]
    # Real torch: fx-lsp's instance fails eagerly before the count (a probe of 0 channels);
    # one a user would build runs, and only then does export stop on the data.
    module = load_module(root / "blocks.py", "inputs_that_run_check")
    with pytest.raises(RuntimeError, match="weight"):
        module.EagerCheck()(torch.randn(2, 8, 32, 32))
    model, x = module.EagerCheck(reduction=2), torch.randn(2, 8, 32, 32)
    model(x)
    with pytest.raises(Exception, match=r"(?i)data.dependent"):
        torch.export.export(model, (x,), strict=False)
