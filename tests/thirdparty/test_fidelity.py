"""fx-lsp agrees with plain ``torch.fx.symbolic_trace`` on real torchvision, timm and
transformers models (issue 5).

For every wrapper class of ``tests/thirdparty/workspace``: the same verdict; for a failure, the
first failure fx-lsp reports has the same kind as plain torch.fx's exception, and the innermost
third-party frame of that exception (file and line) appears in the failure's ``frames``.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"
PACKAGE_DIR = WORKSPACE / "tpmodels"

pytestmark = pytest.mark.thirdparty


def _wrapper_ids() -> list[str]:
    """``file.py:Class`` of every class defined in the workspace files (found without imports)."""
    ids = []
    for path in sorted(PACKAGE_DIR.glob("*.py")):
        if path.name.startswith("_"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        ids += [f"{path.name}:{node.name}" for node in tree.body if isinstance(node, ast.ClassDef)]
    return ids


WRAPPERS = _wrapper_ids()


def _real(path: str, base: Path = WORKSPACE) -> str:
    return os.path.realpath(path if os.path.isabs(path) else os.path.join(base, path))


def _short(path: str) -> str:
    return path.split("site-packages" + os.sep, 1)[-1]


@pytest.fixture(scope="module")
def by_class(thirdparty_runs) -> dict[str, tuple[dict | None, dict | None]]:
    truth, report = thirdparty_runs
    got = {}
    for module in report["modules"]:
        # Paths are absolute or relative to where fx-lsp ran (this folder).
        got[f"{Path(module['path']).name}:{module['class']}"] = module
    want = {f"{Path(r['path']).name}:{r['class']}": r for r in truth["modules"]}
    return {key: (want.get(key), got.get(key)) for key in set(want) | set(got)}


def test_workspace_size() -> None:
    """The sample the issue asks for: torchvision task families, timm, 20+ transformers."""
    files = {w.split(":")[0] for w in WRAPPERS}
    for family in (
        "tv_classification",
        "tv_detection",
        "tv_segmentation",
        "tv_video",
        "tv_optical_flow",
        "timm_same_padding",
    ):
        assert f"{family}.py" in files
    assert sum(w.startswith("timm_") for w in WRAPPERS) >= 30
    assert sum(w.startswith("hf_models.py:") for w in WRAPPERS) >= 20


def test_every_wrapper_is_reported(by_class) -> None:
    missing = sorted(k for k, (want, got) in by_class.items() if want and not got)
    extra = sorted(k for k, (want, got) in by_class.items() if got and not want)
    assert not missing, f"fx-lsp did not report: {missing}"
    assert not extra, f"fx-lsp reported classes the ground truth has not: {extra}"
    assert set(by_class) == set(WRAPPERS)


@pytest.mark.parametrize("wrapper", WRAPPERS)
def test_fidelity(by_class, wrapper: str) -> None:
    want, got = by_class.get(wrapper, (None, None))
    assert want is not None, f"{wrapper}: no ground truth"
    assert got is not None, f"{wrapper}: not in fx-lsp's report"
    if want["verdict"] == "build-error":
        pytest.fail(f"{wrapper}: the model does not build on CPU: {want['message']}")
    if want["verdict"] == "traceable":
        first = got["failures"][0] if got["failures"] else {}
        assert got["status"] == "traceable", (
            f"{wrapper}: plain torch.fx traces it, fx-lsp says {got['status']}: "
            f"{first.get('kind')} at {first.get('path')}:{first.get('line')}: "
            f"{first.get('message', got.get('reason'))}"
        )
        return
    assert got["status"] == "failed", (
        f"{wrapper}: plain torch.fx fails ({want['exception']}: {want['message']}), "
        f"fx-lsp says {got['status']} {got.get('reason') or ''}"
    )
    first = got["failures"][0]
    frames = [(_real(f["path"]), f["line"]) for f in first.get("frames", [])]
    third = want["third_party_frame"]
    where = f"{_short(third['path'])}:{third['line']}" if third else "no third-party frame"
    assert first["kind"] == want["kind"], (
        f"{wrapper}: kind {first['kind']!r}, plain torch.fx: {want['kind']!r} "
        f"({want['exception']}: {want['message'][:120]} at {where}); "
        f"fx-lsp message: {first['message'][:160]}"
    )
    if third is not None:
        assert (third["path"], third["line"]) in frames, (
            f"{wrapper}: innermost third-party frame {where} of plain torch.fx "
            f"({want['exception']}) is not in fx-lsp's frames "
            f"{[f'{_short(p)}:{n}' for p, n in frames]}"
        )
