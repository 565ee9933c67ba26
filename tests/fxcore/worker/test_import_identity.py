"""A file is traced only as itself: when it cannot be imported under its own name, or its
exception messages cannot be formatted, the CLI says so clearly (real CLI, real torch)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fx_lsp.cli.output_formats.json_report import parse_report

from cli_support import fx_lsp

MODEL = "import torch\nfrom torch import nn\n\n\nclass {name}(nn.Module):\n" \
        "    def forward(self, x):\n        return x + 1\n"


def check_json(cwd: Path) -> dict[str, Any]:
    completed = fx_lsp("check", "--no-cache", "--format", "json", ".", cwd=cwd)
    assert "Traceback" not in completed.stdout + completed.stderr
    return parse_report(completed.stdout)


def file_errors(report: dict[str, Any], name: str) -> list[str]:
    return [error["message"] for file in report["files"] if file["path"] == name
            for error in file["errors"]]


def test_files_that_cannot_be_imported_under_their_own_name(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "shadow").mkdir()
    (tmp_path / "shadow" / "__init__.py").write_text(MODEL.format(name="FromPackage"))
    (tmp_path / "shadow.py").write_text(MODEL.format(name="FromFile"))
    (tmp_path / "random.py").write_text(MODEL.format(name="Random"))
    (tmp_path / "__main__.py").write_text(MODEL.format(name="Main"))
    (tmp_path / "model.v2.py").write_text(MODEL.format(name="Dotted"))
    os.symlink(tmp_path / "gone.py", tmp_path / "dangling.py")
    report = check_json(tmp_path)
    assert [m["class"] for m in report["modules"] if m["path"] == "shadow.py"] == []
    assert "cannot be imported under its own name" in " ".join(file_errors(report,
                                                                           "shadow.py"))
    assert "already loaded" in " ".join(file_errors(report, "random.py"))
    assert "__main__.py file runs as a script" in " ".join(file_errors(report, "__main__.py"))
    assert "not an importable module name" in " ".join(file_errors(report, "model.v2.py"))
    assert "symbolic link" in " ".join(file_errors(report, "dangling.py"))
    assert all(error["code"] == "FX100" for file in report["files"] for error in file["errors"])


def test_an_exception_whose_str_raises_loses_no_later_class(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass Unprintable(Exception):\n"
        "    def __str__(self):\n        raise RuntimeError('no message')\n\n\n"
        "class First(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        "        raise Unprintable()\n\n    def forward(self, x):\n        return x\n\n\n"
        "class Second(nn.Module):\n    def forward(self, x):\n"
        "        raise Unprintable()\n\n\n" + MODEL.format(name="Third").split("\n\n\n")[1])
    report = check_json(tmp_path)
    statuses = {m["class"]: m["status"] for m in report["modules"]}
    assert statuses == {"First": "failed", "Second": "failed", "Third": "traceable"}
    first = next(m for m in report["modules"] if m["class"] == "First")
    assert "its __str__ raised RuntimeError" in first["failures"][0]["message"]
