"""Text that crosses the worker→host boundary is bounded: workspace code that raises or prints
30 MB reaches no report, cache entry or log whole, and what was cut is said."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from fxcore.host.zygote_host import bounded_lines
from fxcore.model.results import Failure, ModuleResult
from fxcore.protocol.result_codec import (
    MAX_TEXT_CHARACTERS,
    bounded_text,
    decode_module_result,
    dumps,
    loads,
)

from cli_support import fx_lsp

LOUD = """\
import torch
from torch import nn

print("B" * 20_000_000)


class Loud(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("A" * 30_000_000)
"""


def test_a_30_mb_error_gives_a_bounded_report_and_cache(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(LOUD)
    done = fx_lsp("check", "--output-format", "json", "-v", ".", cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-2000:]
    assert len(done.stdout) < 100_000
    report = json.loads(done.stdout)
    (problem,) = report["diagnostics"]
    assert problem["code"] == "FX199"
    assert len(problem["message"]) < MAX_TEXT_CHARACTERS + 200
    assert problem["message"].endswith("more characters cut by fx-lsp]")
    cut = int(problem["message"].rsplit("[", 1)[1].split()[0].replace(",", ""))
    assert problem["message"].count("A") + cut == 30_000_000
    # The failure's text appears once: the class's entry points at the diagnostic.
    assert done.stdout.count("more characters cut by fx-lsp]") == 1
    (failure,) = report["modules"][0]["failures"]
    assert failure["reported"] is True and "message" not in failure
    # What the worker printed is logged (-v), cut likewise.
    assert len(done.stderr) < 100_000 and "earlier bytes of output cut by fx-lsp" in done.stderr
    cache = tmp_path / ".fx-lsp-cache"
    assert sum(entry.stat().st_size for entry in cache.rglob("*") if entry.is_file()) < 200_000


def test_strings_and_keys_are_cut_when_decoded() -> None:
    """Whatever a child sends: the engine's decoding is the bound that holds."""
    place = {"path": "/w/m.py", "line": 1, "column": 1, "end_line": 1, "end_column": 2}
    module = ModuleResult(**place, class_name="Net", qualified_name="m:Net", status="failed",
                          failures=[Failure(**place, code="FX199", kind="error", message="x")])
    data = json.loads(dumps(module))
    data["failures"][0]["message"] = "m" * 1_000_000
    data["scope_types"] = {"k" * 1_000_000: "v" * 1_000_000}
    data["generated_code"] = "c" * 3_000_000
    result = decode_module_result(loads(json.dumps(data)))
    assert len(result.failures[0].message) < MAX_TEXT_CHARACTERS + 100
    ((key, value),) = result.scope_types.items()
    assert len(key) < MAX_TEXT_CHARACTERS + 100 and len(value) < MAX_TEXT_CHARACTERS + 100
    # Generated code has its own, larger bound: a whole forward.
    assert MAX_TEXT_CHARACTERS < len(result.generated_code) < 1_100_000


@pytest.mark.parametrize("length", [0, 10, MAX_TEXT_CHARACTERS, MAX_TEXT_CHARACTERS + 1])
def test_bounded_text_keeps_what_fits(length: int) -> None:
    text = "t" * length
    bounded = bounded_text(text)
    assert (bounded == text) == (length <= MAX_TEXT_CHARACTERS)
    # Cutting twice (a cut message quoted in another) keeps one marker with the total.
    assert bounded_text("prefix: " + bounded_text("a" * 100, 10), 10) == \
        "prefix: aa… [98 more characters cut by fx-lsp]"


def test_the_zygotes_lines_are_cut_as_they_are_read() -> None:
    stream = io.BytesIO(b"short\n" + b"L" * 100_000 + b"\nlast")
    assert list(bounded_lines(stream, 1_000)) == [
        (b"short\n", 0), (b"L" * 1_000, 99_001), (b"last", 0)]
