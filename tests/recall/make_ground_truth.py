"""Ground truth for the multi-failure recall corpus (tests/recall/models), by plain torch.fx.

For every model file and every ``nn.Module`` class in it that builds with its constructor
defaults, the script traces the class with plain ``torch.fx.symbolic_trace``. When that fails, it
records the failure (line and kind of the innermost frame in the model file), applies the one
fixing edit listed for that line in :data:`FIXES` (a single-line replacement that removes only
that failure), and traces again, until the class traces. The failures of a file are the union,
over its classes, of the (line, kind) pairs found this way. Nothing is typed by hand but the
fixing edits; the order and the locations come from torch.fx.

A failure on a line with no (unused) edit left is an error: the corpus and its fixes disagree.
An edit never used is an error too: it means its line does not fail under plain torch.fx.

Usage::

    python tests/recall/make_ground_truth.py          # writes tests/recall/ground_truth/*.json
    python tests/recall/make_ground_truth.py --check  # exit 1 if the files are out of date
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import sys
import tempfile
import traceback
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = HERE / "models"
OUT = HERE / "ground_truth"

# (old, new), single-line replacements. When a failure is found on line L, the first edit not yet
# applied whose `old` occurs exactly once in the source as edited so far, on line L, is applied.
# Several edits on one line apply in list order (fix the iteration, then the int() it hid).
FIXES: dict[str, list[tuple[str, str]]] = {
    "attention_block.py": [
        ("b = len(x)", "b = x.size(0)"),
        ("float(x.shape[-1]) ** -0.5", "32**-0.5"),
        ("if attn.max() > 50:", "if False:"),
    ],
    "detector_head.py": [
        ("for s in scores:", "for s in (scores,):"),
        ("if n % 4 != 0:", "if False:"),
        ("boxes[:, 0] = boxes[:, 0].clamp(min=0)", "boxes = boxes.clamp(min=0)"),
        ("level = int(features.shape[2])", "level = features.shape[2]"),
    ],
    "text_encoder.py": [
        ('if "attention_mask" in batch:', "if False:"),
        ("steps = range(ids.size(0))", "steps = range(2)"),
        ('assert pooled.dim() == 2, "pooled must be 2-d"', "pass"),
    ],
    "unet_like.py": [
        ("if x.shape[-1] != skip.shape[-1]:", "if False:"),
        ("channels = len(h)", "channels = h.size(0)"),
        ("while h.abs().max() > 10:", "while False:"),
        ("logits[:, 1] = 0.0", "logits = logits * 1.0"),
    ],
    "mixture_of_experts.py": [
        ("if (top == i).any():", "if True:"),
        ("load = float(scores.sum())", "load = scores.sum()"),
        ("tokens = [t for t in top]", "tokens = [top]"),
        ("capacity = max(x.size(0) // 2, 1)", "capacity = (x.size(0) // 2).clamp(min=1)"),
    ],
    "video_classifier.py": [
        ("if frames.size(1) > size:", "if False:"),
        ("for t in range(video.shape[1]):", "for t in range(2):"),
        ("num_frames = len(video[0])", "num_frames = video.size(1)"),
    ],
    "graph_net.py": [
        ("if num_nodes == 0:", "if False:"),
        ("minlength=int(num_nodes)", "minlength=8"),
        ("agg[degree == 0] = 0", "agg = agg * 1"),
    ],
    "resnet_variants.py": [
        ("pad = max(k - x.shape[-1] % k, 0)", "pad = 0"),
        ("if out.shape != x.shape:", "if False:"),
        ("if x.dim() == 3:", "if False:"),
        ("shape = list(x.shape)", "shape = x.shape"),
    ],
    "seq2seq.py": [
        ("for _ in range(max_len):", "for _ in range(3):"),
        ("if token.eq(1).all():", "if False:"),
        ("lengths = [len(o) for o in outputs]", "lengths = [o.size(0) for o in outputs]"),
    ],
    "multiscale_fusion.py": [
        ("resized = self.fuse(*maps)", "resized = self.fuse(maps[0], maps[1], maps[2])"),
        ("for s in target)", "for s in (target[0], target[1]))"),
        ("tuple(int(s) for s", "tuple(s for s"),
        ("if out.isnan().any():", "if False:"),
    ],
    "loss_module.py": [
        ("if pred.shape[0] != target.shape[0]:", "if False:"),
        ("n_pos = int(target.gt(0).sum())", "n_pos = 1"),
        ("diff[target < 0] = 0", "diff = diff * 1"),
        ("for c in target.unique():", "for c in (0, 1):"),
    ],
    "vision_transformer.py": [
        ("self.cls.expand(len(tokens), -1, -1)", "self.cls.expand(tokens.size(0), -1, -1)"),
        ("grid = int(n**0.5)", "grid = n**0.5"),
    ],
}

MAX_ROUNDS = 40


def _thirdparty_helpers():
    """``classify`` and ``frame_category`` of tests/thirdparty/ground_truth.py (same rules)."""
    path = HERE.parent / "thirdparty" / "ground_truth.py"
    spec = importlib.util.spec_from_file_location("_fx_ground_truth", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CorpusError(Exception):
    pass


def _check_edits(name: str) -> list[tuple[str, str]]:
    edits = FIXES.get(name, [])
    for old, new in edits:
        if "\n" in old or "\n" in new:
            raise CorpusError(f"{name}: edits must stay on one line: {old!r}")
    return edits


def _edit_line(source: str, old: str) -> int | None:
    """The line of ``old`` in ``source`` when it occurs there exactly once."""
    if source.count(old) != 1:
        return None
    return source[: source.index(old)].count("\n") + 1


def _load(path: Path, tag: str):
    spec = importlib.util.spec_from_file_location(f"_recall_{path.stem}_{tag}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # inspect (and torch.fx) look modules up there
    spec.loader.exec_module(module)
    return module


def _classes(module) -> list[str]:
    import torch

    names = []
    for name, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ != module.__name__ or not issubclass(cls, torch.nn.Module):
            continue
        if cls.forward is torch.nn.Module.forward:
            continue
        names.append((inspect.getsourcelines(cls)[1], name))
    return [n for _, n in sorted(names)]


def trace_file(path: Path, helpers) -> dict:
    """Find the failures of one model file by fixing the first one and re-tracing."""
    import torch
    import torch.fx

    source = path.read_text(encoding="utf-8")
    edits = _check_edits(path.name)
    used: set[int] = set()
    per_class: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / path.name
        work.write_text(source, encoding="utf-8")
        classes = _classes(_load(work, "probe"))
        for cls_name in classes:
            current = source
            applied: list[int] = []
            sequence: list[dict] = []
            for round_no in range(MAX_ROUNDS):
                work.write_text(current, encoding="utf-8")
                module = _load(work, f"{cls_name}_{round_no}")
                cls = getattr(module, cls_name)
                try:
                    model = cls()
                except TypeError:
                    break  # needs constructor arguments: not traced on its own
                try:
                    torch.fx.symbolic_trace(model)
                except Exception as exc:
                    frames = [
                        f
                        for f in traceback.extract_tb(exc.__traceback__)
                        if Path(f.filename).resolve() == work.resolve()
                    ]
                    if not frames:
                        raise CorpusError(
                            f"{path.name}:{cls_name}: failure outside the file: "
                            f"{type(exc).__name__}: {exc}"
                        ) from exc
                    innermost = frames[-1]
                    kind = helpers.classify(exc, innermost)
                    line = innermost.lineno
                    # The first edit not yet applied whose text is (once) on the failing line
                    # of the source as edited so far; edits of one line apply in list order.
                    candidates = [
                        i
                        for i, (old, _) in enumerate(edits)
                        if i not in applied and _edit_line(current, old) == line
                    ]
                    if not candidates:
                        raise CorpusError(
                            f"{path.name}:{line}: {kind} failure in {cls_name} has no fix left "
                            f"({type(exc).__name__}: {str(exc).splitlines()[0][:120]})"
                        ) from exc
                    i = candidates[0]
                    old, new = edits[i]
                    current = current.replace(old, new, 1)
                    applied.append(i)
                    used.add(i)
                    sequence.append(
                        {
                            "line": line,
                            "kind": kind,
                            "exception": type(exc).__name__,
                            "message": str(exc).splitlines()[0][:200],
                            "fix": {"old": old, "new": new},
                        }
                    )
                    continue
                break
            else:
                raise CorpusError(f"{path.name}:{cls_name}: still failing after {MAX_ROUNDS} fixes")
            per_class[cls_name] = sequence
    unused = [edits[i][0] for i in range(len(edits)) if i not in used]
    if unused:
        raise CorpusError(f"{path.name}: edits never needed: {unused}")
    failures: dict[tuple[int, str], dict] = {}
    for cls_name, sequence in per_class.items():
        for item in sequence:
            key = (item["line"], item["kind"])
            entry = failures.setdefault(
                key,
                {
                    "line": item["line"],
                    "kind": item["kind"],
                    "classes": [],
                    "fix": item["fix"],
                    "message": item["message"],
                },
            )
            entry["classes"].append(cls_name)
    return {
        "file": path.name,
        "failures": sorted(failures.values(), key=lambda f: (f["line"], f["kind"])),
        "classes": {
            name: [{"line": s["line"], "kind": s["kind"]} for s in seq]
            for name, seq in per_class.items()
        },
    }


def build_all() -> dict[str, dict]:
    warnings.filterwarnings("ignore")
    helpers = _thirdparty_helpers()
    return {p.stem: trace_file(p, helpers) for p in sorted(MODELS.glob("*.py"))}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the stored files")
    args = ap.parse_args(argv)
    try:
        results = build_all()
    except CorpusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    stale = []
    OUT.mkdir(exist_ok=True)
    for stem, doc in results.items():
        text = json.dumps(doc, indent=1) + "\n"
        target = OUT / f"{stem}.json"
        if args.check:
            if not target.exists() or target.read_text() != text:
                stale.append(target.name)
        else:
            target.write_text(text)
        kinds = ", ".join(f"{f['line']}:{f['kind']}" for f in doc["failures"])
        print(f"{doc['file']:24} {len(doc['failures']):2} failures  {kinds}")
    total = sum(len(d["failures"]) for d in results.values())
    print(f"{len(results)} files, {total} failures")
    if stale:
        print(f"out of date: {stale}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
