"""``fx-lsp diff BASE [HEAD]`` through the real command line on real git repositories: the
classes whose graphs a commit changed, in each format, its exit status, and its cache."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

from cli_support import fx_lsp

MODELS = '''
import torch
from torch import nn


class Good(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


class Bad(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        return x


class Same(nn.Module):
    def forward(self, x):
        return x - 1
'''
#: The second commit: a graph break (and an FX failure) in Good, Bad's FX failure fixed.
BREAK = ("        return torch.relu(x) * 2\n",
         "        if x.abs().mean() > 1.0:\n            x = x / 2\n"
         "        return torch.relu(x) * 2\n")
FIX = ("        if x.sum() > 0:\n            x = x + 1\n        return x\n",
       "        return torch.where(x.sum() > 0, x + 1, x)\n")
OTHER = '''
from torch import nn


class Untouched(nn.Module):
    def forward(self, x):
        return x + 3
'''
WRAPPER = '''
from torch import nn

from models import Good


class Wrapper(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Good()

    def forward(self, x):
        return self.inner(x) + 1
'''


def git(root: Path, *arguments: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                    *arguments], check=True, capture_output=True)


def repository(root: Path, modes: str, files: dict[str, str]) -> Path:
    """Two commits: ``files`` as they are, then models.py with BREAK and FIX."""
    git(root, "init", "-q")
    (root / "pyproject.toml").write_text(f"[project]\nname = 'ws'\n[tool.fx-lsp]\n"
                                         f"modes = {modes}\n")
    for name, text in {"models.py": MODELS, **files}.items():
        (root / name).parent.mkdir(exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    text = (root / "models.py").read_text()
    (root / "models.py").write_text(text.replace(*BREAK).replace(*FIX))
    git(root, "commit", "-qam", "two")
    return root


def diff_json(root: Path, *extra: str) -> tuple[dict, subprocess.CompletedProcess[str]]:
    completed = fx_lsp("diff", "HEAD~1", "HEAD", "--output-format", "json", *extra, cwd=root)
    assert completed.returncode in (0, 1), completed.stderr
    return json.loads(completed.stdout), completed


def test_a_commit_s_graph_changes_in_each_format_and_from_the_cache(tmp_path: Path) -> None:
    root = repository(tmp_path, '["fx", "compile"]', {"other.py": OTHER})
    report, completed = diff_json(root)
    assert completed.returncode == 0
    changes = {(c["class"], c["mode"]): c for c in report["changes"]}
    assert set(changes) == {("Good", "fx"), ("Good", "compile"), ("Bad", "fx"),
                            ("Bad", "compile")}
    good, bad = changes["Good", "compile"], changes["Bad", "fx"]
    assert (good["before"]["verdict"], good["after"]["verdict"]) == ("traceable",
                                                                     "graph breaks")
    assert [(p["code"], p["line"]) for p in good["new_problems"]] == [("GB0170", 7)]
    assert good["before"]["graphs"] < good["after"]["graphs"] and good["regression"]
    # The nodes of all its graphs: the break's comparison adds some.
    assert 0 < good["before"]["nodes"] < good["after"]["nodes"]
    assert [(p["code"], p["line"]) for p in changes["Good", "fx"]["new_problems"]] == [
        ("FX001", 7)]
    assert (bad["before"]["verdict"], bad["after"]["verdict"]) == ("failed", "traceable")
    assert [(p["code"], p["line"]) for p in bad["fixed_problems"]] == [("FX001", 12)]
    assert "torch.where" in bad["operators_added"] and not bad["regression"]
    assert report["regressions"] == 2
    # A second run traces nothing again: both revisions' results come from the cache.
    markdown = fx_lsp("diff", "HEAD~1", "HEAD", "--output-format", "markdown", cwd=root)
    assert markdown.stderr.splitlines() == [
        "BASE (HEAD~1): 1 files checked, 1 from the cache",
        "HEAD (HEAD): 1 files checked, 1 from the cache"], markdown.stderr
    rows = [line for line in markdown.stdout.splitlines() if line.startswith("| models.py")]
    assert len(rows) == 4
    assert "\n2 classes changed, 2 regressions (4 rows, one per class and capture mode).\n" \
        in markdown.stdout
    assert any("Good (regression) | compile | traceable → graph breaks" in row
               and "+ GB0170 line 7" in row for row in rows)
    assert any("Bad | fx | failed → traceable" in row and "- FX001 line 12" in row
               for row in rows)
    table = fx_lsp("diff", "HEAD~1", "HEAD", "--fail-on", "regression", cwd=root)
    assert table.returncode == 1
    assert "models.py::Good (regression)" in table.stdout and "GB0170 line 7" in table.stdout
    assert "Same" not in table.stdout and "Untouched" not in table.stdout
    # The user's working tree and index are as they were.
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain"],
                            capture_output=True, text=True, check=True)
    assert status.stdout == ""
    # Of HEAD~1's checkout only its result cache is left. HEAD, which the working tree
    # holds, was checked in place: its results are in the working tree's cache.
    checkouts = list((root / ".fx-lsp-cache" / "diff").iterdir())
    assert [[entry.name for entry in checkout.iterdir()] for checkout in checkouts] == [
        [".fx-lsp-cache"]]
    check = fx_lsp("check", "--format", "json", "models.py", cwd=root)
    assert json.loads(check.stdout)["summary"]["cached"] == 1, check.stderr


def test_an_unchanged_tree_reports_and_traces_nothing(tmp_path: Path) -> None:
    root = repository(tmp_path, '["fx"]', {})
    completed = fx_lsp("diff", "HEAD", "--fail-on", "regression", cwd=root)
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip() == "No class's graphs changed."
    assert completed.stderr == ""  # no revision was checked
    # The working tree is HEAD when no HEAD is given: an edit not committed, and a file not
    # added, are compared with the last commit.
    models = root / "models.py"
    models.write_text(models.read_text().replace("return x - 1", "return x - len(x)"))
    (root / "new.py").write_text(textwrap.dedent(OTHER).replace("Untouched", "Added"))
    completed = fx_lsp("diff", "HEAD", "--output-format", "json", cwd=root)
    report = json.loads(completed.stdout)
    changes = {(c["class"], c["before"] is None) for c in report["changes"]}
    assert changes == {("Same", False), ("Added", True)}, report


def test_a_class_of_a_file_importing_the_changed_one_is_included(tmp_path: Path) -> None:
    # app.py imports Good from a package whose __init__ re-exports it, as models of a real
    # library import its layers (``from timm.layers import Mlp``).
    app = WRAPPER.replace("from models import Good", "from blocks import Good").replace(
        "Wrapper", "App")
    root = repository(tmp_path, '["fx"]', {"wrapper.py": WRAPPER, "other.py": OTHER,
                                           "blocks/__init__.py": "from models import Good\n",
                                           "app.py": app})
    report, _ = diff_json(root)
    changes = {(c["path"], c["class"]) for c in report["changes"]}
    assert ("wrapper.py", "Wrapper") in changes and ("app.py", "App") in changes
    assert ("other.py", "Untouched") not in changes
