"""Fix-all on real models: the graph breaks real ``torch.compile`` meets on the CPU before and
after ``fx-lsp check --mode compile --fix --unsafe-fixes``, with the outputs compared.

The models' own source files (transformers' and timm's modeling modules) are copied into a
workspace package, their relative imports made absolute, so that the fixes can edit the code
the breaks are in; a ``models.py`` there builds each model with a small configuration and
seeded weights (``INPUTS``: the example inputs of each wrapper, fx-lsp's ``inputs`` option).
``tests/fxcore/fixing/corpus_measure.py`` measures that file in a process of its own before
and after (the break corpus's measure): each break as dynamo's own ``graph_breaks`` log gives
it (its registry's GB code), the eager and the compiled output.

Prints, and writes into docs/benchmarks/fix-all.md, the breaks before and after by GB code,
one row per class: breaks before, after, and whether the eager and compiled outputs are the
same, and one row per break left with why (from fx-lsp's last check: where it reports it,
whether a config option was tried and undone, or that no fix fits its code).

    python3 -m benchmarks run fidelity fix_all_breaks -- [--only CLASS ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from benchmarks.paths import REPOSITORY, TORCHVISION_SHIM, child_environment
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown

MEASURE = Path(REPOSITORY) / "tests" / "fxcore" / "fixing" / "corpus_measure.py"
PACKAGE = "fixbench"
_RELATIVE = re.compile(r"^(\s*from\s+)(\.+[\w.]*)(\s+import\b)", re.MULTILINE)
TINY_TRANSFORMER = ("vocab_size=99, hidden_size=32, num_hidden_layers=2, "
                    "num_attention_heads=2, num_key_value_heads=2, head_dim=16, "
                    "intermediate_size=64, max_position_embeddings=64")


@dataclass(frozen=True)
class Model:
    library: str
    name: str
    #: The library module whose file is copied into the workspace.
    source: str
    #: Statements building ``self.model`` from the copied module ``copied``.
    build: str
    #: ``forward``'s body: what the wrapper returns of ``self.model`` called on ``x``.
    call: str
    inputs: str
    #: Measured in training mode (where its breaks are: random layer drop, time masks).
    training: bool = False


#: Small configurations of classes that break the graph (transformers' Mixtral and timm's
#: LeViT, EfficientFormer, CrossViT, CoaT, TNT, XCiT, MobileViT, EdgeNeXt and NaFlexViT compile
#: whole with torch 2.13, so they have nothing to fix).
_WAV2VEC2 = (f"{TINY_TRANSFORMER}, conv_dim=(32, 32), conv_stride=(5, 2), conv_kernel=(10, 3), "
             "num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=2, mask_time_prob=0.5, "
             "layerdrop=0.5")
MODELS = (
    Model("transformers", "TinyWav2Vec2", "transformers.models.wav2vec2.modeling_wav2vec2",
          "from transformers import Wav2Vec2Config\n"
          f"self.model = copied.Wav2Vec2Model(Wav2Vec2Config({_WAV2VEC2}))",
          "self.model(x).last_hidden_state", "float32[2, 400]", training=True),
    Model("transformers", "TinyHubert", "transformers.models.hubert.modeling_hubert",
          "from transformers import HubertConfig\n"
          f"self.model = copied.HubertModel(HubertConfig({_WAV2VEC2}))",
          "self.model(x).last_hidden_state", "float32[2, 400]", training=True),
    Model("timm", "TimmVoloMixToken", "timm.models.volo",
          "self.model = copied.volo_d1_224(num_classes=10, use_mix_token=True, "
          "global_pool='token')", "self.model.forward_train(x)[0]",
          "float32[2, 3, 224, 224]", training=True),
)


def _absolute_imports(text: str, package: str) -> str:
    return _RELATIVE.sub(lambda m: f"{m[1]}{importlib.util.resolve_name(m[2], package)}{m[3]}",
                         text)


def _source_file(module: str) -> Path:
    """The file of ``module``, found from its top package's folder: importing the package
    (timm's imports torchvision) is left to the workspace, after its shim."""
    top, *parts = module.split(".")
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin is None:
        raise SystemExit(f"{top} is not installed")
    return Path(spec.origin).parent.joinpath(*parts).with_suffix(".py")


def build_workspace(folder: Path, models: list[Model]) -> Path:
    """The workspace package: the shim, each model's copied module, ``models.py``."""
    package = folder / PACKAGE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("from . import _shim  # noqa: F401\n")
    shutil.copy(TORCHVISION_SHIM, package / "_shim.py")
    lines = [f"from {PACKAGE} import _shim  # noqa: F401", "import torch", "from torch import nn",
             ""]
    for model in models:
        stem = model.source.rsplit(".", 1)[-1]
        text = _source_file(model.source).read_text(encoding="utf-8")
        (package / f"{stem}.py").write_text(
            _absolute_imports(text, model.source.rsplit(".", 1)[0]), encoding="utf-8")
        build = "\n".join(f"        {line}" for line in model.build.splitlines())
        lines += ["", f"class {model.name}(nn.Module):", "    def __init__(self) -> None:",
                  "        super().__init__()", f"        from {PACKAGE} import {stem} as copied",
                  "", build, "", "    def forward(self, x):", f"        return {model.call}",
                  ""]
    inputs = {model.name: {"x": model.inputs} for model in models}
    training = tuple(model.name for model in models if model.training)
    lines += ["", f"INPUTS = {inputs!r}", f"TRAINING = {training!r}", ""]
    (package / "models.py").write_text("\n".join(lines), encoding="utf-8")
    # Whole speech models and a VOLO on a loaded machine take longer than the default 20 s.
    (folder / "pyproject.toml").write_text("[tool.fx-lsp]\ntimeout = 600\n\n" + "".join(
        f'[tool.fx-lsp.modules."{PACKAGE}.models:{model.name}"]\ninputs = {{x = '
        f'"{model.inputs}"}}\n' for model in models))
    return package / "models.py"


def measured(path: Path, out: Path) -> dict:
    done = subprocess.run([sys.executable, str(MEASURE), str(path), str(out)],
                          capture_output=True, text=True, env=child_environment(), check=False)
    if done.returncode != 0:
        raise SystemExit(f"{path} does not run:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def fix_all(folder: Path) -> tuple[str, list[dict]]:
    """What ``--fix`` said it fixed (and undid), and the diagnostics of its last check."""
    done = subprocess.run([sys.executable, "-m", "fx_lsp", "check", "--mode", "compile",
                           "--fix", "--unsafe-fixes", "--output-format", "json",
                           f"{PACKAGE}/models.py"], cwd=folder,
                          capture_output=True, text=True, env=child_environment(), check=False)
    try:
        diagnostics = json.loads(done.stdout)["diagnostics"]
    except (ValueError, KeyError):
        diagnostics = []
    return done.stderr, diagnostics


def why_left(name: str, line: int, code: str | None, diagnostics: list[dict], log: str) -> str:
    """Why a break real torch still meets after fix-all, from fx-lsp's last check: the code
    fx-lsp reports it with and where, and whether a fix was tried and undone."""
    found = [d for d in diagnostics if name in d.get("classes", ()) and d["code"] == code]
    at_line = [d for d in found if d["line"] == line]
    if at_line:
        where = at_line[0]["path"]
        undone = [said.strip() for said in log.splitlines()
                  if said.lstrip().startswith("Undid") and f"{where} (for {code})" in said]
        if undone:
            option = undone[0].split()[1].rsplit(".", 1)[-1]
            return (f"{where}:{line}: {option} was set, then undone: with it, "
                    f"{undone[0].split(': with it, ', 1)[-1]}")
        head = at_line[0]["message"].split(": ", 1)[0]
        return f"{where}:{line}: reported ({head}); no fix of fx-lsp fits this code"
    if any(d["path"].endswith("models.py") for d in found):
        return (f"line {line} of the library's own code (not copied into the workspace): "
                "fx-lsp reports it at the call in models.py, which no edit there removes")
    return f"line {line}: not reported by fx-lsp at this line"


def _same(a: object, b: object) -> bool:
    import torch

    if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor):
        return a.shape == b.shape and a.dtype == b.dtype and torch.equal(a, b)
    return a == b


def reasons(models: list[Model], after: dict, diagnostics: list[dict], log: str) -> str:
    """One row per break left: the class, its line and code, and why it is left."""
    rows = [[model.name, str(line), code or "outside the registry",
             why_left(model.name, line, code, diagnostics, log)]
            for model in models for line, code in after[model.name]["breaks"]]
    return markdown(["class", "line", "GB code", "why it is left"], rows) if rows else \
        "No break is left."


def tables(models: list[Model], before: dict, after: dict, outputs: list[dict]
           ) -> tuple[str, str]:
    by_kind: dict[str, Counter] = {}
    rows = []
    for model in models:
        was, now = before[model.name], after[model.name]
        for when, found in (("before", was), ("after", now)):
            for _, code in found["breaks"]:
                by_kind.setdefault(code or "outside the registry", Counter())[when] += 1
        same = all(_same(outputs[0][model.name][kind], outputs[1][model.name][kind])
                   for kind in ("eager", "compiled"))
        rows.append([model.library, model.name, str(len(was["breaks"])),
                     str(len(now["breaks"])), "yes" if same else "**no**",
                     now["error"] or ""])
    kinds = [[code, str(count["before"]), str(count["after"]),
              str(count["before"] - count["after"])] for code, count in sorted(by_kind.items())]
    total = [sum(int(row[column]) for row in kinds) for column in (1, 2, 3)]
    share = f" ({total[2] / total[0]:.0%})" if total[0] else ""
    kinds.append(["**all**", f"**{total[0]}**", f"**{total[1]}**", f"**{total[2]}{share}**"])
    return (markdown(["GB code", "breaks before", "after", "removed"], kinds),
            markdown(["library", "class", "breaks before", "after", "outputs the same",
                      "compile error after"], rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="class names (default: all)")
    parser.add_argument("--keep", help="folder to keep the workspace in")
    arguments = parser.parse_args()
    models = [model for model in MODELS if not arguments.only or model.name in arguments.only]
    folder = Path(arguments.keep or tempfile.mkdtemp(prefix="fix-all-"))
    started = time.perf_counter()
    path = build_workspace(folder / "workspace", models)
    before = measured(path, folder / "before.pt")
    log, diagnostics = fix_all(folder / "workspace")
    after = measured(path, folder / "after.pt")
    import torch

    outputs = [torch.load(folder / f"{when}.pt", weights_only=False)
               for when in ("before", "after")]
    kinds, classes = tables(models, before, after, outputs)
    left = reasons(models, after, diagnostics, log)
    print(log)
    emit("fix_all_breaks", f"{kinds}\n\n{classes}\n\n{left}\n\n{machine_line()}, "
         f"{time.perf_counter() - started:.0f} s")
    if not arguments.keep:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
