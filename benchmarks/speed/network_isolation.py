"""What a network namespace costs each forked job, and what the ``--version`` probe costs.

From a process that has imported torch (as the zygote has), forks children alternately
(so both kinds see the same machine load): a plain one that exits at once, and one that
first calls ``fxcore.host.network_isolation.isolate()``, as every job child does. Prints the time
from fork to reaping each kind, the time of ``isolate()`` measured inside the child, and the
difference of medians: the per-job cost. Then times ``network_isolation.describe()`` (the
probe behind ``fx-lsp --version`` and the server's start-up log line) against a bare
``python -I -S -c pass``.

It measures the mechanism in force (printed first): a user + network namespace wherever
user namespaces are allowed. For a network namespace alone, run it where they are not:

    unshare --user --map-root-user sh -c \
        'echo 0 > /proc/sys/user/max_user_namespaces && exec python3 -m "$0"' \
        benchmarks.speed.network_isolation

    python3 -m benchmarks run speed network_isolation -- [--children 200] [--probes 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import struct
import subprocess
import sys
import time

from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown
from benchmarks.timing import describe, percentile
from fxcore.host import network_isolation

_SECONDS = struct.Struct("d")


def fork_and_reap(isolated: bool) -> tuple[float, float]:
    """(fork to reaped, time of isolate() inside the child) in seconds."""
    reader, writer = os.pipe()
    started = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        before = time.perf_counter()
        if isolated:
            network_isolation.isolate()
        os.write(writer, _SECONDS.pack(time.perf_counter() - before))
        os._exit(0)
    os.close(writer)
    _, status = os.waitpid(pid, 0)
    reaped = time.perf_counter() - started
    inside = _SECONDS.unpack(os.read(reader, _SECONDS.size))[0]
    os.close(reader)
    assert status == 0, status
    return reaped, inside


def timed_run(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--children", type=int, default=200)
    parser.add_argument("--probes", type=int, default=10)
    options = parser.parse_args()

    import torch  # noqa: F401  (a zygote-sized parent makes fork itself realistic)

    print(machine_line())
    mechanism = network_isolation.describe()
    print(f"mechanism: {mechanism}")
    plain: list[float] = []
    isolated: list[float] = []
    inside: list[float] = []
    for _ in range(options.children):
        plain.append(fork_and_reap(False)[0])
        reaped, spent = fork_and_reap(True)
        isolated.append(reaped)
        inside.append(spent)
    print(f"fork + exit             {describe(plain)}")
    print(f"fork + isolate() + exit {describe(isolated)}")
    print(f"isolate() in the child  {describe(inside)}")
    extra = statistics.median(isolated) - statistics.median(plain)
    print(f"per-job cost (difference of medians): {extra * 1e3:.2f} ms, "
          f"ratio {statistics.median(isolated) / statistics.median(plain):.2f}")

    probe, bare = [], []
    for _ in range(options.probes):
        bare.append(timed_run([sys.executable, "-I", "-S", "-c", "pass"]))
        started = time.perf_counter()
        network_isolation.describe()
        probe.append(time.perf_counter() - started)
    print(f"python -I -S -c pass    {describe(bare)}")
    print(f"describe() (the probe)  {describe(probe)}")
    emit("network_isolation", markdown(["", mechanism], [
        ["`isolate()` inside the child", f"median {statistics.median(inside) * 1e3:.1f} ms "
         f"(p95 {percentile(inside, 0.95) * 1e3:.1f})"],
        ["fork to reaped, plain / isolated", f"{statistics.median(plain) * 1e3:.1f} / "
         f"{statistics.median(isolated) * 1e3:.1f} ms (n={options.children} each)"],
        ["**per-job cost** (difference of medians)", f"**{extra * 1e3:.1f} ms**"],
        ["probe (`describe()`) / bare interpreter", f"{statistics.median(probe) * 1e3:.1f} / "
         f"{statistics.median(bare) * 1e3:.1f} ms (n={options.probes})"],
    ]))


if __name__ == "__main__":
    main()
