"""No merge conflict left in a tracked file: a rebase that stops on a conflict and is
continued with its markers committed leaves them in the changelog or the docs, where nothing
else fails on them."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.M)


def test_no_tracked_file_holds_conflict_markers() -> None:
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                             check=True).stdout.decode().split("\0")
    marked = []
    for name in filter(None, tracked):
        path = REPO / name
        if path.suffix not in {".py", ".md", ".toml", ".sh", ".ts", ".json", ".yml", ".txt"} \
                or not path.is_file():
            continue
        if MARKER.search(path.read_text(encoding="utf-8", errors="replace")):
            marked.append(name)
    assert marked == []
