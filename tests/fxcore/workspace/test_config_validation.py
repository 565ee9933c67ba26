"""Bad configuration gives a clear message, never a traceback or a run where every class
"times out": through the real CLI."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from cli_support import fx_lsp

MODEL = "from torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n" \
        "        return x + 1\n"


def run_cli(cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return fx_lsp("check", "--no-cache", *arguments, "model.py", cwd=cwd)


@pytest.mark.parametrize("value", ["inf", "-1", "0", "nan", "1e300"])
def test_bad_timeout_flag_is_a_usage_error(tmp_path: Path, value: str) -> None:
    (tmp_path / "model.py").write_text(MODEL)
    completed = run_cli(tmp_path, "--timeout", value)
    assert completed.returncode == 2
    assert "--timeout must be a number of seconds" in completed.stderr
    assert "Traceback" not in completed.stderr


# A file that cannot be parsed at all (not UTF-8, not TOML) stops the check instead:
# tests/fx_lsp/cli/test_bad_input_messages.py.
PYPROJECTS = {
    "tool-string": (b'tool = "x"\n', "'tool' must be a table"),
    "fx-lsp-number": (b"[tool]\nfx-lsp = 3\n", "expected a table"),
    "timeout-inf": (b"[tool.fx-lsp]\ntimeout = inf\n", "'timeout' must be"),
    "timeout-nan": (b"[tool.fx-lsp]\ntimeout = nan\n", "'timeout' must be"),
    "memory-huge": (b"[tool.fx-lsp]\nmemory-limit-mb = 9223372036854775807\n",
                    "'memory-limit-mb' must be"),
    "export-strict-string": (b'[tool.fx-lsp]\nexport-strict = "yes"\n',
                             "'export-strict' must be true or false; ignored"),
    "module-mode-unknown": (b'[tool.fx-lsp]\nmodule-mode = "inference"\n',
                            "'module-mode' must be one of 'auto', 'train', 'eval'; ignored"),
}


@pytest.mark.parametrize("case", sorted(PYPROJECTS))
def test_bad_pyproject_is_a_config_problem_and_the_check_still_runs(tmp_path: Path,
                                                                    case: str) -> None:
    content, message = PYPROJECTS[case]
    (tmp_path / "pyproject.toml").write_bytes(content)
    (tmp_path / "model.py").write_text(MODEL)
    completed = run_cli(tmp_path)
    output = completed.stdout + completed.stderr
    assert "Traceback" not in output
    assert message in output
    assert "1 traceable" in output, output
