"""What the terminal shows of a run, through the real CLI: the report and the progress bar,
never the workers' noise (torch's warnings on import, the models' prints and warnings), which
``-v`` shows; and Ctrl+C or SIGTERM during a run is one line, exit status 130 or 143, and no
process left behind.

The Quick start environment has torch without numpy, where torch warns "Failed to initialize
NumPy" on import. Here numpy is made unimportable for every process of the run by a
``sitecustomize`` on PYTHONPATH, which the zygote and its workers inherit."""

from __future__ import annotations

import contextlib
import os
import pty
import re
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest
from no_numpy import NO_NUMPY

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.model.results import CODES

from engine_support import REPO_ROOT, is_running

#: A model whose code prints and warns, at import and in forward: its own noise, and a warning
#: torch raises in its frame.
NOISY = """
import warnings

import torch
from torch import nn

print("importing the noisy model")
warnings.warn("the noisy model's own warning at import")


class Noisy(nn.Module):
    def forward(self, x):
        print("in forward")
        warnings.warn("the noisy model's own warning in forward")
        return x + 1


class Copying(nn.Module):
    def __init__(self):
        super().__init__()
        self.copy = torch.tensor(torch.ones(2))  # torch warns: copy construct from a tensor

    def forward(self, x):
        return x + self.copy
"""

PLAIN = """
import torch
from torch import nn


class Plain(nn.Module):
    def forward(self, x):
        return x.relu()
"""

#: Graph breaks that run a meta tensor's tolist() and numpy() eagerly (compile mode).
EAGER_VALUES = """
import torch
from torch import nn


class ToList(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return self.linear(x) * len(x.tolist())


class ToNumpy(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)

    def forward(self, x):
        return self.linear(x) * x.numpy().shape[0]
"""

#: One bar frame (``check.Progress``), and the line that clears it.
PROGRESS = re.compile(r"\r\[[= ]{30}\] \d+/\d+ files|\r {60}\r")


def codes(module: dict[str, Any]) -> list[str]:
    return [failure["code"] for failure in module["failures"]]


def environment(tmp_path: Path, numpy: bool = True) -> dict[str, str]:
    entries = [str(REPO_ROOT)]
    if not numpy:
        site = tmp_path / "no-numpy-site"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(NO_NUMPY)
        entries.insert(0, str(site))
    return dict(os.environ, PYTHONPATH=os.pathsep.join(entries))


def workspace(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())
    return root


def cli(root: Path, env: dict[str, str], *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fx_lsp", *arguments], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)


def run_on_a_terminal(root: Path, env: dict[str, str], *arguments: str) -> tuple[str, str]:
    """Run the CLI with stderr on a pseudo-terminal (so it draws its progress bar) and stdout
    to a file; what the terminal got, and the report."""
    leader, follower = pty.openpty()
    report = root.parent / "report.txt"
    with open(report, "w") as stdout:
        process = subprocess.Popen([sys.executable, "-m", "fx_lsp", *arguments], cwd=root,
                                   env=env, stdin=subprocess.DEVNULL, stdout=stdout,
                                   stderr=follower)
    os.close(follower)
    shown = bytearray()
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # EIO: every copy of the terminal's other end is closed
            break
        if not data:
            break
        shown += data
    os.close(leader)
    process.wait(timeout=600)
    return shown.decode("utf-8", errors="replace"), report.read_text()


def test_a_run_without_numpy_shows_only_the_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"noisy.py": NOISY, "plain.py": PLAIN})
    shown, report = run_on_a_terminal(root, environment(tmp_path, numpy=False),
                                      "check", "--no-cache", "--output-format", "concise", ".")
    assert "Checked 2 files: 3 modules traced, 3 traceable" in report, report
    assert PROGRESS.search(shown), f"no progress bar: {shown!r}"
    assert PROGRESS.sub("", shown) == "", f"more than the progress bar: {shown!r}"


def test_verbose_shows_what_the_workers_printed(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"noisy.py": NOISY})
    env = environment(tmp_path, numpy=False)
    quiet = cli(root, env, "check", "--no-cache", ".")
    assert quiet.stderr == "", quiet.stderr
    verbose = cli(root, env, "check", "--no-cache", "-v", ".")
    assert verbose.stdout == quiet.stdout
    lines = verbose.stderr.splitlines()
    assert any(line.startswith("fx-lsp worker: ") and "UserWarning: Failed to initialize "
               "NumPy: No module named 'numpy'" in line for line in lines), verbose.stderr
    printed = lines.index(f"fx-lsp worker: {root / 'noisy.py'} printed:")
    assert "  | importing the noisy model" in lines[printed:]
    assert "  | in forward" in lines[printed:]
    assert any("UserWarning: the noisy model's own warning in forward" in line
               for line in lines[printed:])
    assert any("UserWarning: To copy construct from a tensor" in line
               for line in lines[printed:])


def test_quiet_prints_the_report_only(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"lengths.py": """
        import torch
        from torch import nn


        class Lengths(nn.Module):
            def forward(self, x):
                return x[: len(x)]
        """})
    env = environment(tmp_path)
    fixed = cli(root, env, "check", "--no-cache", "--fix", "-q", ".")
    assert "torch.fx.wrap" in (root / "lengths.py").read_text()
    assert fixed.stderr == "", fixed.stderr
    assert "1 traceable" in fixed.stdout


def test_the_compile_mode_runs_without_numpy(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"eager_values.py": EAGER_VALUES})
    arguments = ("check", "--no-cache", "--mode", "compile", "--output-format", "json", ".")
    without = cli(root, environment(tmp_path, numpy=False), *arguments)
    assert without.stderr == "", without.stderr
    verdicts = {module["class"]: module for module in parse_report(without.stdout)["modules"]}
    with_numpy = cli(root, environment(tmp_path), *arguments)
    expected = {module["class"]: module for module in parse_report(with_numpy.stdout)["modules"]}
    # After the break, tolist() runs eagerly on a meta tensor, which gets its stand-in with or
    # without numpy; numpy() breaks the graph for want of numpy, as dynamo says on real data.
    assert verdicts["ToList"]["status"] == "failed"
    assert codes(verdicts["ToList"]) == codes(expected["ToList"])
    assert verdicts["ToNumpy"]["status"] == "failed"
    assert expected["ToNumpy"]["status"] == "traceable"
    assert "NumPy" in verdicts["ToNumpy"]["failures"][0]["message"]


# -- Ctrl+C and SIGTERM ----------------------------------------------------------------------

#: A model that stops the run where the test interrupts it: it starts a grandchild, writes its
#: own pid and the grandchild's, and sleeps, unless the release file exists.
HANGING = """
import os
import subprocess
import time

import torch
from torch import nn


def hang():
    if os.path.exists({release!r}):
        return
    sleeper = subprocess.Popen(["sleep", "600"])
    with open({pids!r} + ".tmp", "w") as handle:
        handle.write(f"{{os.getpid()}} {{sleeper.pid}}")
    os.replace({pids!r} + ".tmp", {pids!r})
    time.sleep(600)


{at_import}


class Slow(nn.Module):
    def forward(self, x):
        {in_forward}
        return x[: len(x)]
"""

#: At import, but only once --fix wrote its fix (torch.fx.wrap("len")) into the file.
AFTER_THE_FIX = 'if "torch.fx." + "wrap(" in open(__file__).read():\n    hang()'


def _parents() -> dict[int, int]:
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as stat:
                    parents[int(name)] = int(stat.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return parents


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (from /proc)."""
    children: dict[int, list[int]] = {}
    for child, parent in _parents().items():
        children.setdefault(parent, []).append(child)
    found: set[int] = set()
    waiting = [pid]
    while waiting:
        for child in children.get(waiting.pop(), []):
            found.add(child)
            waiting.append(child)
    return found


def wait_for_file(path: Path, process: subprocess.Popen[str]) -> str:
    deadline = time.monotonic() + 300
    while not path.exists():
        if process.poll() is not None:
            pytest.fail(f"the CLI ended before the model ran: {process.communicate()}")
        if time.monotonic() > deadline:
            process.kill()
            pytest.fail("the model never ran")
        time.sleep(0.1)
    return path.read_text()


def still_there(pids: set[int]) -> set[int]:
    """Of ``pids``, those that do not go within a few seconds (a SIGKILL takes effect
    asynchronously): running, or zombies nobody reaped (in a container, init may never)."""
    deadline = time.monotonic() + 10
    there = {pid for pid in pids if os.path.exists(f"/proc/{pid}")}
    while there and time.monotonic() < deadline:
        time.sleep(0.1)
        there = {pid for pid in there if os.path.exists(f"/proc/{pid}")}
    return there


def _interruptible() -> None:
    """SIGINT as a terminal's shell leaves it to the command it starts: a test run started in
    the background of a non-interactive shell (``bash .ci/run &``) ignores SIGINT, which its
    children inherit, and Python then installs no KeyboardInterrupt for it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.parametrize(("command", "stop", "to_group", "at", "then_again"), [
    ("check", signal.SIGINT, False, "forward", True),
    ("check", signal.SIGINT, True, "import", False),
    ("check", signal.SIGTERM, False, "forward", False),
    ("graph", signal.SIGINT, True, "forward", False),
    ("fix", signal.SIGINT, True, "after the fix", False),
])
def test_a_stopped_run_says_one_line_and_leaves_nothing_running(
        tmp_path: Path, command: str, stop: signal.Signals, to_group: bool, at: str,
        then_again: bool) -> None:
    pids, release = tmp_path / "pids", tmp_path / "release"
    model = HANGING.format(
        pids=str(pids), release=str(release),
        at_import={"import": "hang()", "after the fix": AFTER_THE_FIX}.get(at, ""),
        in_forward="hang()" if at == "forward" else "pass")
    root = workspace(tmp_path, {"slow.py": model, "plain.py": PLAIN})
    arguments = {"check": ["check", "."], "fix": ["check", "--fix", "."],
                 "graph": ["graph", "slow.py::Slow"]}[command]
    # Its own process group, as a terminal gives each command it runs.
    process = subprocess.Popen([sys.executable, "-m", "fx_lsp", *arguments], cwd=root,
                               env=environment(tmp_path), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=_interruptible)
    worker, grandchild = map(int, wait_for_file(pids, process).split())
    started = descendants(process.pid) | {worker, grandchild}
    (os.killpg if to_group else os.kill)(process.pid, stop)
    stdout, stderr = process.communicate(timeout=120)
    word = "interrupted" if stop == signal.SIGINT else "terminated"
    assert stderr.splitlines() == [f"fx-lsp: {word}"], stderr
    assert process.returncode == 128 + stop
    assert stdout == ""
    assert {pid for pid in still_there(started) if is_running(pid)} == set()
    assert still_there(started) == set(), "zombies left for init"
    if not then_again:
        return
    # The cache holds what finished and nothing of what was stopped: the next run traces the
    # stopped class, and reads every entry.
    release.touch()
    again = cli(root, environment(tmp_path), "check", "--output-format", "json", ".")
    assert again.stderr == "", again.stderr
    modules = {module["class"]: module for module in parse_report(again.stdout)["modules"]}
    assert modules["Plain"]["status"] == "traceable"
    assert CODES["crash"] not in codes(modules["Slow"]), modules["Slow"]
    assert CODES["timeout"] not in codes(modules["Slow"]), modules["Slow"]


def test_ctrl_c_on_a_terminal_leaves_one_line(tmp_path: Path) -> None:
    """Ctrl+C typed on the terminal the run is in: its driver sends SIGINT to the foreground
    process group, and echoes ^C."""
    pids, release = tmp_path / "pids", tmp_path / "release"
    model = HANGING.format(pids=str(pids), release=str(release), at_import="",
                           in_forward="hang()")
    root = workspace(tmp_path, {"slow.py": model, "plain.py": PLAIN})
    environment_of_run = environment(tmp_path, numpy=False)
    pid, terminal = pty.fork()
    if pid == 0:  # the new session's leader, the terminal its controlling one
        try:
            os.chdir(root)
            _interruptible()
            os.execve(sys.executable, [sys.executable, "-m", "fx_lsp", "check", "--no-cache",
                                       "--output-format", "json", "--output-file",
                                       str(tmp_path / "report.json"), "."],
                      environment_of_run)
        finally:
            os._exit(127)
    shown = bytearray()
    deadline = time.monotonic() + 300
    while not pids.exists():
        ended = False
        if select.select([terminal], [], [], 0.1)[0]:
            try:
                shown += os.read(terminal, 4096)
            except OSError:  # EIO: the session ended
                ended = True
        if ended or time.monotonic() > deadline or os.waitpid(pid, os.WNOHANG)[0]:
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            pytest.fail(f"the model never ran: {shown.decode(errors='replace')}")
    worker, grandchild = map(int, pids.read_text().split())
    started = descendants(pid) | {worker, grandchild}
    os.write(terminal, b"\x03")
    while True:
        try:
            data = os.read(terminal, 4096)
        except OSError:  # EIO: the session ended
            break
        if not data:
            break
        shown += data
    os.close(terminal)
    _, status = os.waitpid(pid, 0)
    text = shown.decode("utf-8", errors="replace")
    assert PROGRESS.sub("", text).replace("^C", "") == "fx-lsp: interrupted\r\n", text
    assert os.waitstatus_to_exitcode(status) == 130
    assert still_there(started) == set()
