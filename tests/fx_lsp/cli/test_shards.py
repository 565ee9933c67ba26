"""``fx-lsp check --shard I/N`` and ``fx-lsp merge``: a 60-file workspace split over shards gives
the same files and the same report as one run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from fxcore.api.check import check_jobs
from fxcore.api.shards import cached_seconds, parse_shard, split
from fxcore.host.cache import ResultCache

from cli_support import fx_lsp, process_state

SHARDS = 3


def cli(*arguments: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return fx_lsp(*arguments, cwd=cwd)


@pytest.fixture(scope="module")
def monorepo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("monorepo")
    (root / "pyproject.toml").write_text("[project]\nname = 'mono'\n")
    for index in range(62):
        package = root / f"team{index % 4}"
        package.mkdir(exist_ok=True)
        body = ("return x * len(x)" if index % 3 == 0 else
                "return x + 1" if index % 3 == 1 else "return [r for r in x][0]")
        extra = "\n\ndef helper():\n    return 1\n" * (index % 5)
        (package / f"model_{index:02}.py").write_text(
            f"from torch import nn\n\n\nclass Model{index}(nn.Module):\n"
            f"    def forward(self, x):\n        {body}\n{extra}")
    return root


def without_timings(report: dict) -> dict:
    report = json.loads(json.dumps(report))
    report.pop("shard", None)
    report["summary"].pop("cached", None)
    for module in report["modules"]:
        module.pop("trace_seconds")
        module.pop("loop_seconds")
    for file in report["files"]:
        file.pop("seconds")
        file.pop("loop_seconds")
    return report


def test_parse_and_split_are_deterministic() -> None:
    assert parse_shard("2/3") == (2, 3) and parse_shard("0/3") is None
    assert parse_shard("4/3") is None and parse_shard("a/b") is None
    costs = {f"f{i}.py": float(i % 7) for i in range(30)}
    parts = split(costs, 4)
    assert parts == split(dict(reversed(list(costs.items()))), 4)
    assert sorted(path for part in parts for path in part) == sorted(costs)
    loads = [sum(costs[path] for path in part) for part in parts]
    assert max(loads) - min(loads) <= max(costs.values())
    # Files that cost nothing (fast traces, rounded to 0.0 s) are shared out among the shards
    # the one costly file leaves lightest, not all given to the first of them.
    free = split({"slow.py": 0.1, **{f"f{i}.py": 0.0 for i in range(9)}}, 3)
    assert [len(part) for part in free] == [1, 5, 4]


@pytest.mark.slow
@pytest.mark.parametrize("output_format", ["json", "sarif"])
def test_shards_cover_the_workspace_and_merge_into_the_unsharded_report(
        monorepo: Path, output_format: str) -> None:
    whole = cli("check", "--output-format", output_format, ".", cwd=monorepo)
    assert whole.returncode == 1, whole.stderr
    names = []
    for index in range(1, SHARDS + 1):
        name = f"shard{index}.{output_format}"
        shard = cli("check", "--shard", f"{index}/{SHARDS}", "--output-format", output_format,
                    "--output-file", name, ".", cwd=monorepo)
        assert shard.returncode in (0, 1), shard.stderr
        names.append(name)
    reports = [json.loads((monorepo / name).read_text()) for name in names]
    merged = cli("merge", *names, cwd=monorepo)
    assert merged.returncode == 1, merged.stderr
    if output_format == "json":
        files = [[file["path"] for file in report["files"]] for report in reports]
        assert all(files) and sum(map(len, files)) == 62
        assert sorted(path for part in files for path in part) == \
            sorted(file["path"] for file in json.loads(whole.stdout)["files"])
        assert without_timings(json.loads(merged.stdout)) == \
            without_timings(json.loads(whole.stdout))
    else:
        assert json.loads(merged.stdout) == json.loads(whole.stdout)


@pytest.mark.slow
def test_merge_refuses_missing_or_disagreeing_shards(monorepo: Path) -> None:
    # Every shard is split by the same cache, as the shards of a CI job are: one whole run
    # fills it first (a shard's own run adds its files' costs, which would split the next
    # shard run here differently).
    cli("check", "--format", "json", ".", cwd=monorepo)
    for index in (1, 2):
        cli("check", "--shard", f"{index}/{SHARDS}", "--format", "json", "--output-file",
            f"part{index}.json", ".", cwd=monorepo)
    missing = cli("merge", "part1.json", "part2.json", cwd=monorepo)
    assert missing.returncode == 2 and "expected shards 1 to 3" in missing.stderr
    report = json.loads((monorepo / "part2.json").read_text())
    report["shard"]["partition"] = "another"
    (monorepo / "part2.json").write_text(json.dumps(report))
    cli("check", "--shard", f"3/{SHARDS}", "--format", "json", "--output-file", "part3.json",
        ".", cwd=monorepo)
    disagreeing = cli("merge", "part1.json", "part2.json", "part3.json", cwd=monorepo)
    assert disagreeing.returncode == 2 and "split differently" in disagreeing.stderr
    unsharded = cli("check", "--format", "json", "--output-file", "all.json", ".",
                    cwd=monorepo)
    assert unsharded.returncode == 1
    assert cli("merge", "all.json", cwd=monorepo).returncode == 2



def test_a_class_built_by_a_call_site_is_split_by_its_cached_cost(tmp_path: Path) -> None:
    """A file whose class the workspace builds (here a literal call in another file) is
    costed by its own cached trace, not by the median of the others."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (tmp_path / "model.py").write_text(
        "from torch import nn\n\n\nclass Wide(nn.Module):\n"
        "    def __init__(self, width):\n        super().__init__()\n"
        "        self.layer = nn.Linear(width, width)\n\n"
        "    def forward(self, x):\n        return self.layer(x)\n")
    (tmp_path / "train.py").write_text("from model import Wide\n\nmodel = Wide(8)\n")
    assert cli("check", "--output-format", "json", "model.py", cwd=tmp_path).returncode == 0
    with process_state(tmp_path, None):
        jobs, _ = check_jobs(["model.py"], None)
        # The job as the command line makes it, before the pipeline adds the call site: no
        # entry is stored under that key.
        assert ResultCache().seconds(jobs[0]) is None
        assert cached_seconds(jobs, ResultCache())["model.py"] is not None
