"""``fx-lsp check`` prints what it printed when ``tests/golden/outputs/`` was recorded, byte
for byte, in every output format (full, concise, json, github, sarif, junit, statistics), on
the bundled examples and the test workspaces (``output_goldens``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from output_goldens import WORKSPACES, cli_outputs, differences


@pytest.mark.parametrize("name", sorted(WORKSPACES))
def test_each_output_format_prints_what_it_printed(name: str, tmp_path: Path) -> None:
    assert differences(cli_outputs(name, tmp_path)) == []
