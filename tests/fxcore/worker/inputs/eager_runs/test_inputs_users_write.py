"""Classes whose forward takes what fx-lsp may guess wrong: a count with ``len()`` (of a 0-d
tensor too), a list of (H, W) sizes the code indexes, layers passed to forward and called,
class labels a loss takes, and a rank the code unpacks. Each verdict is either none
(not-traced, information, never an error diagnostic) or, on inputs that run, real torch's
on the CPU on those inputs; and real torch on inputs written here by hand never contradicts
an error fx-lsp shows. The losses need the CPU kernel's own checks of a target
(``cpu_checks``): meta and fake tensors take labels of another shape or dtype, which the CPU
refuses; the sizes need the reads of an input's own elements (``own_choices``)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
import torch
from source_modules import load_module

from fx_lsp.cli.output_formats.json_report import message_of, parse_report
from fxcore.model.container_spec import TensorSpec
from fxcore.worker.inputs.eager_runs.cpu_checks import cpu_checks
from fxcore.worker.inputs.eager_runs.cpu_run import cpu_copy, run_on_cpu

import cli_support

BLOCKS = '''
import torch
import torch.nn.functional as F
from torch import nn


class CountRows(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, scores):
        n = len(scores)
        return self.proj(x)[:n]


class CountTotal(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, 1)

    def forward(self, x):
        total = self.proj(x).sum()
        return x * len(total)


class FirstLevel(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, sizes):
        h, w = sizes[0][0], sizes[0][1]
        x = self.proj(x)
        return x.transpose(1, 2).reshape(x.shape[0], -1, h, w)


class SplitLevels(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, sizes):
        x = self.proj(x)
        levels, start = [], 0
        for h, w in sizes:
            levels.append(x[:, start:start + h * w].transpose(1, 2).reshape(x.shape[0], -1, h, w))
            start += h * w
        return levels


class RunLayers(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.norm = nn.LayerNorm(dim)

    def forward(self, x, layers):
        for layer in layers:
            x = layer(x)
        return self.norm(x)


class HeadLoss(nn.Module):
    def __init__(self, channels: int = 8, classes: int = 5):
        super().__init__()
        self.head = nn.Conv2d(channels, classes, 1)

    def forward(self, features, labels):
        loss = F.cross_entropy(self.head(features), labels, reduction="none")
        return loss.sum() / int((labels >= 0).sum())


class OneHotLoss(nn.Module):
    def __init__(self, dim: int = 16, classes: int = 10):
        super().__init__()
        self.head = nn.Linear(dim, classes)

    def forward(self, x, labels):
        loss = F.cross_entropy(self.head(x), labels)
        return loss * F.one_hot(labels).sum()


class PixelLoss(nn.Module):
    def __init__(self, ignore_index: int = 255):
        super().__init__()
        self.ignore_index = ignore_index

    def forward(self, logits, labels):
        loss = F.cross_entropy(logits, labels, ignore_index=self.ignore_index, reduction="none")
        count = int((labels != self.ignore_index).sum())
        return loss.sum() / max(count, 1)


class Tokens(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, n, c = x.shape
        return self.proj(x).reshape(b, n * c)


class RepeatToMap(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.conv = nn.Conv2d(dim, dim, 3, padding=1)

    def forward(self, x, counts):
        x = torch.repeat_interleave(x, counts, dim=0)
        b, n, c = x.shape
        side = int(n ** 0.5)
        return self.conv(x.transpose(1, 2).reshape(b, c, side, side))
'''


def _line(text: str) -> int:
    return next(number for number, line in enumerate(BLOCKS.splitlines(), 1) if text in line)


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[ModuleType, dict]:
    root = tmp_path_factory.mktemp("inputs_users_write")
    (root / "blocks.py").write_text(BLOCKS)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export",
                                   "--output-format", "json", ".", cwd=root)
    return load_module(root / "blocks.py", "inputs_users_write"), \
        parse_report(completed.stdout)


def _verdict(report: dict, name: str) -> dict:
    verdict = next(module for module in report["modules"] if module["class"] == name)
    errors = [d for d in report["diagnostics"]
              if name in d["classes"] and d["severity"] == "error"]
    if verdict["status"] == "not-traced":  # no verdict: never an error
        assert verdict["failures"] == [] or verdict["reason"].startswith(
            "The inputs fx-lsp inferred"), verdict
        assert errors == [], errors
    return verdict


def _inputs(verdict: dict, values: dict[str, int] | None = None) -> dict[str, torch.Tensor]:
    """Real CPU tensors of the inputs fx-lsp found: random floats, integers and masks of
    ``values`` (0 unless named), so that an index or a size they hold is one a class takes."""
    made = {}
    for name, spec in verdict["inputs"]["tensors"].items():
        dtype, sizes = spec[:-1].split("[")
        shape = [int(size) for size in sizes.split(", ") if size]
        if dtype.startswith("float"):
            made[name] = torch.randn(shape)
        else:
            made[name] = torch.full(shape, (values or {}).get(name, 0),
                                    dtype=getattr(torch, dtype))
    return made


def _exports(model: torch.nn.Module, inputs: dict) -> Exception | None:
    """What real torch.export (non-strict) raises on ``inputs`` (None: it exports)."""
    try:
        torch.export.export(model, (), inputs, strict=False)
    except Exception as error:  # real torch's verdict, whatever it raises
        return error
    return None


def test_len_of_a_tensor_fx_lsp_gave_runs_as_real_torch_runs(
        checked: tuple[ModuleType, dict]) -> None:
    module, report = checked
    verdict = _verdict(report, "CountRows")
    assert verdict["status"] == "traceable", verdict
    # Real torch: fx-lsp's inputs run and export; so do a user's (a 1-D tensor of scores).
    model = module.CountRows()
    found = _inputs(verdict)
    model(**found)
    assert _exports(model, found) is None
    written = {"x": torch.randn(4, 8, 16), "scores": torch.randn(3)}
    model(**written)
    assert _exports(model, written) is None


def test_len_of_a_0_d_tensor_is_no_error(checked: tuple[ModuleType, dict]) -> None:
    module, report = checked
    verdict = _verdict(report, "CountTotal")
    # The class's own fault on any input: the "does not fit" hint, never an error.
    assert verdict["status"] == "not-traced", verdict
    assert "len() of a 0-d tensor" in verdict["reason"], verdict["reason"]
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        module.CountTotal()(torch.randn(2, 8, 16))


@pytest.mark.parametrize("name", ["FirstLevel", "SplitLevels"])
def test_a_list_of_sizes_given_as_a_tensor_is_no_verdict(
        checked: tuple[ModuleType, dict], name: str) -> None:
    module, report = checked
    verdict = _verdict(report, name)
    assert verdict["status"] == "not-traced", verdict
    assert verdict["failures"] == [], verdict
    assert verdict["reason"].startswith("no inputs found that") \
        or "no example inputs" in verdict["reason"], verdict["reason"]
    # Real torch on what a user writes, a list of (H, W) pairs: it runs and exports.
    model = getattr(module, name)()
    written = {"x": torch.randn(2, 8, 16), "sizes": [(2, 4)]}
    model(**written)
    assert _exports(model, written) is None


def test_reading_sizes_from_a_tensor_fx_lsp_gave_is_why(
        checked: tuple[ModuleType, dict]) -> None:
    module, report = checked
    verdict = _verdict(report, "FirstLevel")
    assert verdict["inputs"]["tensors"]["sizes"].startswith("int64["), verdict["inputs"]
    assert "reads the values of sizes" in verdict["reason"], verdict["reason"]
    assert f"blocks.py:{_line('h, w = sizes[0][0]')}" in verdict["reason"] \
        or f"blocks.py:{_line('return x.transpose(1, 2).reshape(x.shape[0]')}" \
        in verdict["reason"], verdict["reason"]
    # Real torch on fx-lsp's tensor of sizes (ones, which run): export stops on the data, a
    # verdict of the guess, not of the class.
    model = module.FirstLevel()
    found = _inputs(verdict, {"sizes": 1})
    model(**found)
    assert "data-dependent" in str(_exports(model, found)).lower()


def test_layers_passed_to_forward_are_no_verdict(checked: tuple[ModuleType, dict]) -> None:
    module, report = checked
    verdict = _verdict(report, "RunLayers")
    assert verdict["status"] == "not-traced", verdict
    assert verdict["failures"] == [], verdict
    model = module.RunLayers()
    written = {"x": torch.randn(2, 8, 16),
               "layers": torch.nn.ModuleList([torch.nn.Linear(16, 16), torch.nn.GELU()])}
    model(**written)
    assert _exports(model, written) is None


@pytest.mark.parametrize("name", ["HeadLoss", "OneHotLoss"])
def test_labels_the_cpu_refuses_are_no_inputs(checked: tuple[ModuleType, dict],
                                              name: str) -> None:
    module, report = checked
    verdict = _verdict(report, name)
    if verdict["status"] != "not-traced":  # inputs found: they run on the CPU
        found = _inputs(verdict)
        getattr(module, name)()(**found)
    else:
        assert verdict["failures"] == [], verdict


def test_labels_that_run_give_real_torchs_verdict(checked: tuple[ModuleType, dict]) -> None:
    module, report = checked
    verdict = _verdict(report, "PixelLoss")
    count = _line("count = int(")
    assert [(f["code"], f["line"]) for f in verdict["failures"]] == [("FX402", count)], verdict
    assert message_of(report, verdict["failures"][0]).endswith(
        "(fx-lsp: found on inputs it guessed, which run forward eagerly up to here)")
    # Real torch: fx-lsp's inputs run on the CPU, and export stops on the count; so it does on
    # labels a user writes for a batch of images.
    model = module.PixelLoss()
    for inputs in (_inputs(verdict), {"logits": torch.randn(2, 5, 8, 8),
                                      "labels": torch.randint(0, 5, (2, 8, 8))}):
        model(**inputs)
        assert "data-dependent" in str(_exports(model, inputs)).lower()


def test_a_rank_the_code_unpacks_is_the_one_it_takes(checked: tuple[ModuleType, dict]) -> None:
    module, report = checked
    verdict = _verdict(report, "Tokens")
    assert verdict["status"] == "traceable", verdict
    model = module.Tokens()
    found = _inputs(verdict)
    model(**found)
    assert _exports(model, found) is None
    # Four dimensions fail eagerly on the CPU, as they do under export: no input of that rank
    # is the class's.
    with pytest.raises(ValueError, match="too many values to unpack"):
        model(torch.randn(2, 4, 8, 16))


def test_a_rank_from_a_later_layer_on_inputs_the_cpu_refuses_is_no_verdict(
        checked: tuple[ModuleType, dict]) -> None:
    module, report = checked
    verdict = _verdict(report, "RepeatToMap")
    assert verdict["status"] == "not-traced", verdict
    assert verdict["failures"] == [], verdict
    repeat = _line("x = torch.repeat_interleave(")
    if verdict.get("inputs"):  # found, and refused by the CPU before the unpacking
        assert verdict["reason"].startswith("no inputs found that run forward"), verdict
        assert f"blocks.py:{repeat} when run eagerly" in verdict["reason"], verdict["reason"]
        with pytest.raises(Exception):  # noqa: B017 (real torch's own refusal, any kind)
            module.RepeatToMap()(**_inputs(verdict))
    # Real torch on what a user writes: tokens and long counts run; an image does not.
    model = module.RepeatToMap()
    model(torch.randn(2, 16, 16), torch.tensor([1, 2]))
    with pytest.raises(ValueError, match="too many values to unpack"):
        model(torch.randn(2, 16, 4, 4), torch.tensor([1, 2]))


@pytest.mark.parametrize(("logits", "labels", "dtype"), [
    ((2, 5, 4, 4), (2, 4, 4), torch.int64), ((2, 5, 4, 4), (2, 4, 3), torch.int64),
    ((2, 5, 4, 4), (2, 4, 4), torch.bool), ((2, 5), (2,), torch.int32),
    ((2, 5), (2,), torch.int64), ((2, 5, 4, 4), (2, 5, 4), torch.int64)])
def test_the_cpu_kernels_checks_of_a_target_on_meta(logits: tuple, labels: tuple,
                                                    dtype: torch.dtype) -> None:
    def loss(device: str) -> str | None:
        try:
            torch.nn.functional.cross_entropy(torch.randn(logits, device=device),
                                              torch.zeros(labels, dtype=dtype, device=device))
        except RuntimeError as error:
            return str(error).split(" (the CPU kernel")[0]
        return None

    cpu = loss("cpu")
    with cpu_checks():
        assert loss("meta") == cpu


@pytest.mark.slow
def test_the_only_compile_error_is_one_real_torch_raises_on_any_input(
        checked: tuple[ModuleType, dict], tmp_path: Path) -> None:
    module, _ = checked
    (tmp_path / "blocks.py").write_text(BLOCKS)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "compile",
                                   "--output-format", "json", ".", cwd=tmp_path)
    report = parse_report(completed.stdout)
    errors = {name for d in report["diagnostics"] if d["severity"] == "error"
              for name in d["classes"]}
    assert errors == {"CountTotal"}, report["diagnostics"]
    verdict = next(m for m in report["modules"] if m["class"] == "CountTotal")
    assert [f["line"] for f in verdict["failures"]] == [_line("return x * len(total)")]
    # Real torch.compile raises there on fx-lsp's inputs and on a batch of vectors alike.
    model = module.CountTotal()
    for inputs in (_inputs(verdict), {"x": torch.randn(5, 16)}):
        torch._dynamo.reset()
        with pytest.raises(Exception, match=r"index|len"):
            torch.compile(model, fullgraph=False)(**inputs)


def test_only_a_small_model_is_copied_to_the_cpu_and_its_own_weights_stay() -> None:
    with torch.device("meta"):
        small = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.BatchNorm1d(4))
        large = torch.nn.Linear(2048, 1024)  # 2**21 weights: no real memory for them
    copied = cpu_copy(small)
    assert copied is not None
    assert all(not w.is_meta and not w.any() for w in copied.parameters()), copied
    assert all(w.is_meta for w in small.parameters())
    run_on_cpu(copied, {"input": TensorSpec("float32", (2, 4))}, {}, 10)
    assert cpu_copy(large) is None
