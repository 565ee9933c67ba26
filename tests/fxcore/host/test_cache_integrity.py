"""The result cache cannot be made to lie, to write elsewhere or to hang: entries bound to the
user by an HMAC, fully checked, never read or written through links, dependencies hashed as
the import compiled them, import failures cached with the environment. Through the real CLI,
each run with its own user cache folder (``XDG_CACHE_HOME``); run in the test process
(``cli_support``) but where another ``PYTHONPATH`` installs a distribution."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from fxcore.host.cache import ResultCache
from fxcore.model.job_spec import TraceJob

from cli_support import fx_lsp, process_state
from engine_support import REPO_ROOT

CACHE_FOLDER = ".fx-lsp-cache"
#: The documented variable through which CI shards share the entries' key.
KEY_VARIABLE = "FX_LSP_CACHE_KEY"
SHARED_KEY = {KEY_VARIABLE: "a secret the workflow keeps, 32+ characters long"}

TRACEABLE = "from torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n" \
            "        return x + 1\n"
UNTRACEABLE = "from torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n" \
              "        return x + len(x)\n"


def cli_environment(user_cache: Path, environment: dict[str, str] | None) -> dict[str, str]:
    env = dict(os.environ, XDG_CACHE_HOME=str(user_cache))
    env.pop(KEY_VARIABLE, None)
    env.update(environment or {})
    return env


def run_check(workspace: Path, user_cache: Path, *extra: str,
              environment: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return fx_lsp("check", "--format", "json", *extra, ".", cwd=workspace,
                  env=cli_environment(user_cache, environment))


def cache_key(workspace: Path, path: Path, user_cache: Path) -> str:
    """The key the CLI computes for ``path``: anyone can, from the workspace alone."""
    with process_state(workspace, cli_environment(user_cache, None)):
        return ResultCache.key(TraceJob(path=str(path), workspace_root=str(workspace))) or ""


def check(workspace: Path, user_cache: Path, *extra: str,
          environment: dict[str, str] | None = None) -> dict[str, Any]:
    completed = run_check(workspace, user_cache, *extra, environment=environment)
    assert "Traceback" not in completed.stderr, completed.stderr
    return json.loads(completed.stdout)


def codes(report: dict[str, Any]) -> list[str]:
    return sorted(problem["code"] for problem in report["diagnostics"])


def entries(workspace: Path) -> list[Path]:
    return [path for path in (workspace / CACHE_FOLDER).glob("*/*") if path.is_file()]


def new_workspace(tmp_path: Path, name: str = "ws") -> Path:
    workspace = tmp_path / name
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("")
    return workspace


def test_an_entry_forged_without_the_users_key_is_a_miss(tmp_path: Path) -> None:
    """A crafted entry turned a real FX002 into "traceable" with exit 0."""
    workspace = new_workspace(tmp_path)
    user_cache = tmp_path / "user-cache"
    model = workspace / "model.py"
    model.write_text(TRACEABLE)
    assert check(workspace, user_cache)["summary"]["cached"] == 0
    [entry] = entries(workspace)
    traceable_key = cache_key(workspace, model, user_cache)
    assert entry.name == traceable_key
    model.write_text(UNTRACEABLE)
    # The forger knows everything but the user's key: the new text's key and hash.
    untraceable_key = cache_key(workspace, model, user_cache)
    forged = entry.read_text().replace(traceable_key, untraceable_key).replace(
        hashlib.sha256(TRACEABLE.encode()).hexdigest(),
        hashlib.sha256(UNTRACEABLE.encode()).hexdigest())
    target = workspace / CACHE_FOLDER / untraceable_key[:2] / untraceable_key
    target.parent.mkdir(exist_ok=True)
    target.write_text(forged)
    completed = run_check(workspace, user_cache)
    report = json.loads(completed.stdout)
    assert report["summary"]["cached"] == 0
    assert codes(report) == ["FX002"] and completed.returncode == 1
    # Only the key stood in the way: signed with it, the same entry would be believed.
    secret = (user_cache / "fx-lsp" / "cache-key").read_bytes()
    body = forged.partition("\n")[2]
    mac = hmac.new(secret, body.encode(), hashlib.sha256).hexdigest()
    target.write_text(f"{mac}\n{body}")
    assert check(workspace, user_cache)["summary"]["cached"] == 1


def test_entries_are_bound_to_the_user_or_to_the_shared_key(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path)
    (workspace / "model.py").write_text(UNTRACEABLE)
    mine, theirs = tmp_path / "mine", tmp_path / "theirs"
    assert check(workspace, mine)["summary"]["cached"] == 0
    key_file = mine / "fx-lsp" / "cache-key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert check(workspace, mine)["summary"]["cached"] == 1
    # Another user (a restored or committed cache): the entry is not theirs.
    other = check(workspace, theirs)
    assert other["summary"]["cached"] == 0 and codes(other) == ["FX002"]
    # CI shards that restore one cache share the key through the environment.
    assert check(workspace, mine, environment=SHARED_KEY)["summary"]["cached"] == 0
    assert check(workspace, theirs, environment=SHARED_KEY)["summary"]["cached"] == 1
    assert not list(workspace.rglob("cache-key"))


def signed(body: dict[str, Any], secret: str) -> str:
    data = json.dumps(body)
    mac = hmac.new(secret.encode(), data.encode(), hashlib.sha256).hexdigest()
    return f"{mac}\n{data}"


def test_an_entry_of_the_right_shape_and_wrong_types_is_a_miss(tmp_path: Path) -> None:
    """Signed with the right key, yet of wrong types: it crashed the CLI (TypeError in
    report.collect) and hid the file's diagnostics in the server."""
    workspace = new_workspace(tmp_path)
    user_cache = tmp_path / "user-cache"
    (workspace / "model.py").write_text(UNTRACEABLE)
    assert check(workspace, user_cache, environment=SHARED_KEY)["summary"]["cached"] == 0
    [entry] = entries(workspace)
    body = json.loads(entry.read_text().partition("\n")[2])
    failure = body["result"]["modules"][0]["failures"][0]

    def with_failure(**changes: Any) -> dict[str, Any]:
        changed = json.loads(json.dumps(body))
        changed["result"]["modules"][0]["failures"][0] = {**failure, **changes}
        return changed

    entry.write_text(signed(body, SHARED_KEY[KEY_VARIABLE]))  # the right types: a hit
    assert check(workspace, user_cache, environment=SHARED_KEY)["summary"]["cached"] == 1
    wrong_modules = json.loads(json.dumps(body))
    wrong_modules["result"]["modules"][0]["status"] = ["failed"]
    for wrong in (with_failure(line="3"), with_failure(frames=[{"path": 1}]),
                  with_failure(message=None), wrong_modules):
        entry.write_text(signed(wrong, SHARED_KEY[KEY_VARIABLE]))
        completed = run_check(workspace, user_cache, environment=SHARED_KEY)
        assert "Traceback" not in completed.stderr, completed.stderr
        report = json.loads(completed.stdout)
        assert report["summary"]["cached"] == 0 and codes(report) == ["FX002"]


def test_a_linked_cache_folder_is_never_written_through(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path)
    user_cache = tmp_path / "user-cache"
    (workspace / "model.py").write_text(UNTRACEABLE)
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / CACHE_FOLDER).symlink_to(outside)
    completed = run_check(workspace, user_cache)
    assert codes(json.loads(completed.stdout)) == ["FX002"] and completed.returncode == 1
    assert "is a symbolic link" in completed.stderr
    assert list(outside.iterdir()) == []
    # A real cache folder whose entry's subfolder is a link.
    (workspace / CACHE_FOLDER).unlink()
    check(workspace, user_cache)
    [entry] = entries(workspace)
    entry.unlink()
    entry.parent.rmdir()
    entry.parent.symlink_to(outside)
    report = check(workspace, user_cache)
    assert report["summary"]["cached"] == 0 and codes(report) == ["FX002"]
    assert list(outside.iterdir()) == []


def test_entries_that_are_links_fifos_or_devices_are_not_read(tmp_path: Path) -> None:
    """A cache entry linked to /dev/zero was read without bound; a FIFO blocked the read."""
    workspace = new_workspace(tmp_path)
    user_cache = tmp_path / "user-cache"
    (workspace / "model.py").write_text(UNTRACEABLE)
    assert check(workspace, user_cache)["summary"]["cached"] == 0
    [entry] = entries(workspace)
    entry.unlink()
    os.mkfifo(entry)
    report = check(workspace, user_cache)  # (a subprocess time-out if the FIFO is opened)
    assert report["summary"]["cached"] == 0 and codes(report) == ["FX002"]
    assert stat.S_ISREG(entry.lstat().st_mode)  # the new entry replaced the FIFO
    entry.unlink()
    entry.symlink_to("/dev/zero")
    report = check(workspace, user_cache)
    assert report["summary"]["cached"] == 0 and codes(report) == ["FX002"]


def test_a_dependency_edited_while_imported_does_not_vouch_for_the_old_result(
        tmp_path: Path) -> None:
    """helper.py gains a len(x) while its import runs: the result of the old text must not
    be served for the new one."""
    workspace = new_workspace(tmp_path)
    user_cache = tmp_path / "user-cache"
    importing, go = tmp_path / "importing", tmp_path / "go"
    helper_head = (f"import pathlib, time\npathlib.Path({str(importing)!r}).touch()\n"
                   f"for _ in range(600):\n    if pathlib.Path({str(go)!r}).exists():\n"
                   "        break\n    time.sleep(0.1)\n\n\n")
    helper = workspace / "helper.py"
    helper.write_text(helper_head + "def act(x):\n    return x.relu()\n")
    (workspace / "model.py").write_text(
        "from torch import nn\n\nfrom helper import act\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n        return act(x)\n")

    def edit_while_imported() -> None:
        # Sequencing, not timing: the import has read helper.py once it touches the marker.
        for _ in range(6000):
            if importing.exists():
                break
            threading.Event().wait(0.05)
        helper.write_text(helper_head + "def act(x):\n    return x.relu() * len(x)\n")
        go.touch()

    editor = threading.Thread(target=edit_while_imported)
    editor.start()
    first = check(workspace, user_cache)
    editor.join()
    assert codes(first) == []  # the text that was imported
    assert codes(check(workspace, user_cache, "--no-cache")) == ["FX002"]
    second = check(workspace, user_cache)
    assert codes(second) == ["FX002"] and second["summary"]["cached"] == 0
    assert check(workspace, user_cache)["summary"]["cached"] == 2


def fake_distribution(site: Path, name: str, version: str) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")


@pytest.mark.slow  # over 12 s in the loaded fast tier
def test_import_failures_are_cached_until_the_environment_or_workspace_changes(
        tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path)
    user_cache = tmp_path / "user-cache"
    (workspace / "missing_package.py").write_text("import fx_lsp_not_installed\n" + TRACEABLE)
    (workspace / "missing_helper.py").write_text("import helperz\n" + TRACEABLE)
    first = check(workspace, user_cache)
    assert codes(first) == ["FX100", "FX100"] and first["summary"]["cached"] == 0
    assert check(workspace, user_cache)["summary"]["cached"] == 2
    # A distribution installed (here: one more on the path): both are checked again.
    site = tmp_path / "site"
    fake_distribution(site, "fx_lsp_not_installed", "1.0")
    installed = {"PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(site)])}
    assert check(workspace, user_cache, environment=installed)["summary"]["cached"] == 0
    assert check(workspace, user_cache, environment=installed)["summary"]["cached"] == 2
    # The missing workspace module appears: that file is checked again, and imports now.
    (workspace / "helperz.py").write_text("")
    report = check(workspace, user_cache, environment=installed)
    assert report["summary"]["cached"] == 1 and codes(report) == ["FX100"]


def test_workspace_code_does_not_get_the_shared_key(tmp_path: Path) -> None:
    workspace = new_workspace(tmp_path)
    seen = tmp_path / "seen"
    (workspace / "model.py").write_text(
        f"import os, pathlib\npathlib.Path({str(seen)!r}).write_text("
        f"os.environ.get({KEY_VARIABLE!r}, 'absent'))\n" + TRACEABLE)
    check(workspace, tmp_path / "user-cache", environment=SHARED_KEY)
    assert seen.read_text() == "absent"
