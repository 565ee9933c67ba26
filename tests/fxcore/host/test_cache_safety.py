"""The cache vouches only for the text that was traced, and never unpickles its entries:
through the real CLI, with the cache on."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

from fxcore.host.cache import CACHE_FOLDER

from cli_support import fx_lsp

TRACEABLE = "from torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n" \
            "        return x + 1\n"
UNTRACEABLE = "from torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n" \
              "        return x + len(x)\n"


def check(cwd: Path) -> dict[str, Any]:
    completed = fx_lsp("check", "--format", "json", "model.py", cwd=cwd)
    assert "Traceback" not in completed.stderr, completed.stderr
    return json.loads(completed.stdout)


def test_a_file_that_rewrites_itself_is_not_cached_under_its_new_text(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    model = tmp_path / "model.py"
    model.write_text(f"open(__file__, 'w').write({UNTRACEABLE!r})\n" + TRACEABLE)
    assert check(tmp_path)["modules"][0]["status"] == "traceable"
    assert model.read_text() == UNTRACEABLE
    second = check(tmp_path)
    assert second["summary"]["cached"] == 0
    assert second["modules"][0]["status"] == "failed"


class _Planted:
    """Unpickling this writes a marker: proof that an entry was unpickled."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.system, (f"touch {self.marker}",))


def test_corrupt_or_planted_entries_are_misses_and_never_unpickled(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "model.py").write_text(TRACEABLE)
    assert check(tmp_path)["summary"]["cached"] == 0
    assert check(tmp_path)["summary"]["cached"] == 1
    marker = tmp_path / "unpickled"
    entries = [path for path in (tmp_path / CACHE_FOLDER).glob("*/*") if path.is_file()]
    assert len(entries) == 1
    for content in (pickle.dumps(_Planted(str(marker))), pickle.dumps({"dependencies": 1}),
                    b"{not json", b'{"key": 1}', b"[]"):
        entries[0].write_bytes(content)
        report = check(tmp_path)
        assert report["summary"]["cached"] == 0
        assert report["modules"][0]["status"] == "traceable"
        assert not marker.exists()
