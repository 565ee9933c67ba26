"""What ``fx-lsp check`` prints in each output format, and what the server publishes, on the
golden workspaces, normalised only where two runs must differ, and the files under
``tests/golden/outputs/`` that hold it as recorded.

The recorded text is compared byte for byte
(``tests/fx_lsp/cli/output_formats/test_output_goldens.py``,
``tests/fx_lsp/server/test_diagnostics_goldens.py``): a refactor of the report or of its renderings
must not change a character. After an intended change, record again with
``FX_LSP_RECORD_GOLDEN=1`` and review the diff.

SARIF output holds a rule per code, and each rule's title and text are the registry's
documentation: kept in the goldens, they would make them nearly all documentation, rewritten
whole by a change to one code's text. The goldens keep each rule's id and link and leave out
its text (``SARIF_RULE_TEXT``); ``registry_sarif_rule`` is what a rule must say instead, checked
once against the output (``tests/fx_lsp/cli/output_formats/test_output_formats.py``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sysconfig
from pathlib import Path
from typing import Any

from fxcore import rules
from fxcore.model.version import VERSION
from fxcore.rules.documentation import help_url

from cli_support import fx_lsp
from engine_support import EXAMPLES, REPO_ROOT

GOLDEN = REPO_ROOT / "tests" / "golden"
OUTPUTS = GOLDEN / "outputs"
#: The workspaces, by the name their golden files start with: the bundled examples, the
#: language server's test workspace, notebooks, and one made for what those lack (classes
#: not traced, a constructor that raises, a file that cannot be imported, suppressions, a
#: parent-built instance, a second capture mode).
WORKSPACES = {
    "examples": EXAMPLES,
    "basic": REPO_ROOT / "tests" / "fx_lsp" / "server" / "workspaces" / "basic",
    "notebooks": REPO_ROOT / "tests" / "workspaces" / "notebooks",
    "variety": GOLDEN / "workspaces" / "variety",
}
#: Each recorded run: the golden file's suffix and the command line's options after
#: ``check .``. The first run of a workspace fills its cache (its JSON says ``cached: 0``);
#: the others read it.
RUNS = {
    "json": ("--output-format", "json"),
    "sarif.json": ("--output-format", "sarif"),
    "junit.xml": ("--output-format", "junit"),
    "full.txt": ("--output-format", "full"),
    "full-folded.txt": ("--output-format", "full", "--no-show-not-traced"),
    "concise.txt": ("--output-format", "concise"),
    "github.txt": ("--output-format", "github"),
    "statistics.txt": ("--statistics",),
}
#: JSON fields that measure time, which no two runs share.
TIMINGS = {"seconds", "trace_seconds", "loop_seconds", "shape_seconds"}
#: The fields of a SARIF rule that hold the registry's documentation of its code.
SARIF_RULE_TEXT = ("shortDescription", "fullDescription", "help")


def copy_workspace(name: str, parent: Path) -> Path:
    """A private copy of the workspace (its cache is written there), in ``parent``."""
    target = parent / name
    shutil.copytree(WORKSPACES[name], target,
                    ignore=shutil.ignore_patterns(".fx-lsp-cache", "__pycache__"))
    return target


def normalised(text: str, folder: Path) -> str:
    """``text`` with the copy's folder, installed packages' folder, the repository and
    fx-lsp's version written the same on every machine."""
    for real, shown in ((str(folder), "<workspace>"),
                        (sysconfig.get_paths()["purelib"], "<site-packages>"),
                        (str(REPO_ROOT), "<repository>")):
        text = text.replace(real, shown)
    return re.sub(rf'"{re.escape(VERSION)}"', '"<version>"', text)


def _without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _without_timings(item) for key, item in value.items()
                if key not in TIMINGS}
    if isinstance(value, list):
        return [_without_timings(item) for item in value]
    return value


def registry_sarif_rule(code: str) -> dict[str, Any]:
    """The rule SARIF output must hold for ``code``: its title and text exactly as the
    registry (``fxcore.rules``) has them, and its page."""
    rule = rules.BY_CODE[code]
    return {"id": code, "shortDescription": {"text": rule.title},
            "fullDescription": {"text": rule.docs},
            "help": {"text": rule.docs, "markdown": rule.docs}, "helpUri": help_url(code)}


def _without_rule_text(report: dict[str, Any]) -> dict[str, Any]:
    """A SARIF report whose rules keep their id and link but not the registry's text."""
    for run in report["runs"]:
        driver = run["tool"]["driver"]
        driver["rules"] = [{key: value for key, value in rule.items()
                            if key not in SARIF_RULE_TEXT} for rule in driver["rules"]]
    return report


def cli_outputs(name: str, parent: Path) -> dict[str, str]:
    """Each run's standard output on a copy of workspace ``name``, normalised; JSON with
    its keys sorted and without timings, SARIF without its rules' text."""
    folder = copy_workspace(name, parent)
    found = {}
    for suffix, options in RUNS.items():
        run = fx_lsp("check", ".", "--workers", "1", *options, cwd=folder,
                     env={**os.environ, "NO_COLOR": "1"})
        assert run.returncode in (0, 1), (suffix, run.returncode, run.stderr)
        text = run.stdout
        if suffix.endswith("json"):
            report = _without_timings(json.loads(text))
            if suffix == "sarif.json":
                report = _without_rule_text(report)
            text = json.dumps(report, indent=1, sort_keys=True) + "\n"
        found[f"{name}.{suffix}"] = normalised(text, folder)
    return found


def differences(found: dict[str, str]) -> list[str]:
    """The golden files whose text ``found`` changes (recording them instead when
    ``FX_LSP_RECORD_GOLDEN=1``)."""
    if os.environ.get("FX_LSP_RECORD_GOLDEN") == "1":
        OUTPUTS.mkdir(parents=True, exist_ok=True)
        for file_name, text in found.items():
            (OUTPUTS / file_name).write_text(text, encoding="utf-8")
    return [file_name for file_name, text in found.items()
            if not (OUTPUTS / file_name).is_file()
            or (OUTPUTS / file_name).read_text(encoding="utf-8") != text]
