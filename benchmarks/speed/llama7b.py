"""Time and peak memory to trace a Llama-2-7B-sized decoder through the real engine.

``benchmarks/models/llama.py`` defines a plain-PyTorch Llama with Llama-2-7B's dimensions
(about 6.74e9 parameters). The engine builds it under ``torch.device("meta")``, so no
weight is ever allocated; eagerly in float32 it would need about 27 GB (this script never
builds it eagerly). Memory is the resident set of the zygote (the process that imported
torch) plus the forked child that imports, builds and traces the file, sampled from /proc
while the job runs; the kernel's own per-process peaks (VmHWM, ru_maxrss) are printed too.

    python3 -m benchmarks run speed llama7b -- [--runs 3]

Targets: under 5 s and under 1.5 GB peak RSS. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import threading
import time
from dataclasses import dataclass, field

from benchmarks.paths import EXAMPLES, MODELS
from benchmarks.procfs import children_of, pss_kib, stat_cpu_seconds, status_kib
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown, met
from fxcore.checking.pipeline import Pipeline
from fxcore.host.engine import Engine
from fxcore.model.job_spec import TraceJob

LLAMA_FILE = os.path.join(MODELS, "llama.py")
WARM_UP_FILE = os.path.join(EXAMPLES, "models", "mlp.py")
TARGET_SECONDS = 5.0
TARGET_PEAK_BYTES = 1.5 * 1024**3
MIB = 1024 * 1024
GIB = 1024**3


@dataclass
class TreeMemory:
    """Peaks seen while sampling a zygote and its forked children."""

    zygote_pid: int
    peak_rss_sum_kib: int = 0
    peak_pss_sum_kib: int = 0
    zygote_rss_kib: int = 0
    #: Kernel-recorded peak RSS (VmHWM) of each child seen: exact even between samples.
    child_hwm_kib: dict[int, int] = field(default_factory=dict)
    #: CPU time of each child at its last sample (misses at most one interval at the end).
    child_cpu_seconds: dict[int, float] = field(default_factory=dict)
    samples: int = 0

    def sample(self) -> None:
        zygote = status_kib(self.zygote_pid, ("VmRSS",)).get("VmRSS", 0)
        self.zygote_rss_kib = max(self.zygote_rss_kib, zygote)
        rss_sum, pss_sum = zygote, pss_kib(self.zygote_pid)
        pending = children_of(self.zygote_pid)
        while pending:  # the child and anything it started
            pid = pending.pop()
            fields = status_kib(pid, ("VmRSS", "VmHWM"))
            rss_sum += fields.get("VmRSS", 0)
            pss_sum += pss_kib(pid)
            if "VmHWM" in fields:
                self.child_hwm_kib[pid] = max(self.child_hwm_kib.get(pid, 0), fields["VmHWM"])
            cpu = stat_cpu_seconds(pid)
            if cpu is not None:
                self.child_cpu_seconds[pid] = cpu
            pending.extend(children_of(pid))
        self.peak_rss_sum_kib = max(self.peak_rss_sum_kib, rss_sum)
        self.peak_pss_sum_kib = max(self.peak_pss_sum_kib, pss_sum)
        self.samples += 1


class Sampler:
    """Samples a process tree every ``interval`` seconds on a thread."""

    def __init__(self, memory: TreeMemory, interval: float = 0.02) -> None:
        self.memory = memory
        self.interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.memory.sample()
            self._stop.wait(self.interval)

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *_exception: object) -> None:
        self._stop.set()
        self._thread.join()


def zygote_pid() -> int:
    """The engine's zygote: this process's only child (the engine starts it with Popen)."""
    children = children_of(os.getpid())
    if len(children) != 1:
        raise RuntimeError(f"expected one child process (the zygote), found {children}")
    return children[0]


def parameter_count() -> tuple[int, int]:
    """Parameters of the model as built (on meta, no weights), and Llama-2-7B's count from
    its dimensions, as a cross-check."""
    import sys

    import torch

    sys.path.insert(0, MODELS)
    import llama

    with torch.device("meta"):
        model = llama.Llama()
    built = sum(parameter.numel() for parameter in model.parameters())
    vocab, dim, layers, hidden = 32000, 4096, 32, 11008
    per_layer = 4 * dim * dim + 3 * dim * hidden + 2 * dim
    return built, 2 * vocab * dim + layers * per_layer + dim


#: The rotary lookup rewritten as a slice with ``narrow(0, 0, seq_len)``: plain
#: ``torch.fx.symbolic_trace`` traces it (the length stays a Proxy), so the engine should too.
#: Run once as an overlay to show whether the engine agrees with plain tracing there.
NARROW_VARIANT = [
    ("return F.embedding(positions, self.cos), F.embedding(positions, self.sin)",
     "return self.cos.narrow(0, 0, positions), self.sin.narrow(0, 0, positions)"),
    ("cos.unsqueeze(1), sin.unsqueeze(1)", "cos, sin"),
    ("positions = torch.ones_like(tokens).cumsum(-1) - 1", "positions = tokens.shape[1]"),
]


def narrow_variant_text() -> str | None:
    with open(LLAMA_FILE, encoding="utf-8") as handle:
        text = handle.read()
    for old, new in NARROW_VARIANT:
        if old not in text:
            return None
        text = text.replace(old, new)
    return text


def run_narrow_variant(pipeline: Pipeline) -> str:
    """Prints the variant's verdict and failures; returns the verdict."""
    text = narrow_variant_text()
    if text is None:
        print("\nnarrow variant: skipped (llama.py changed; update NARROW_VARIANT)")
        return "skipped: llama.py changed (update NARROW_VARIANT)"
    job = TraceJob(path=LLAMA_FILE, workspace_root=MODELS, overlays={LLAMA_FILE: text})
    started = time.perf_counter()
    result = pipeline.result_of(job)
    wall = time.perf_counter() - started
    [module] = [m for m in result.modules if m.class_name == "Llama"]
    print(f"\nnarrow variant (rotary tables sliced with narrow(0, 0, seq_len); plain "
          f"torch.fx traces it): {module.status}, {module.node_count} nodes, "
          f"{len(module.failures)} failures, wall {wall:.2f} s")
    for failure in module.failures:
        print(f"    {failure.code} line {failure.line}:{failure.column}: "
              f"{failure.message[:120]}...")
    return (f"{module.status}, {module.node_count} nodes, {len(module.failures)} failures"
            + "".join(f"; {failure.code} line {failure.line}" for failure in module.failures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    print(f"llama 7B trace: {machine_line()}")

    engine = Engine(workers=1)
    pipeline = Pipeline(engine)
    walls: list[float] = []
    peaks: list[float] = []
    cpus: list[float] = []
    pss: list[float] = []
    verdicts: set[str] = set()
    try:
        started = time.perf_counter()
        pipeline.result_of(TraceJob(path=WARM_UP_FILE,
                                    workspace_root=os.path.dirname(WARM_UP_FILE)))
        print(f"zygote start + first small job: {time.perf_counter() - started:.2f} s "
              "(not counted)")
        pid = zygote_pid()
        for run in range(arguments.runs):
            memory = TreeMemory(pid)
            job = TraceJob(path=LLAMA_FILE, workspace_root=MODELS)
            with Sampler(memory):
                started = time.perf_counter()
                result = pipeline.result_of(job)
                wall = time.perf_counter() - started
            walls.append(wall)
            [module] = [m for m in result.modules if m.class_name == "Llama"]
            child_hwm = max(memory.child_hwm_kib.values(), default=0)
            # Conservative: counts pages the child shares with the zygote twice.
            peak = (memory.zygote_rss_kib + child_hwm) * 1024
            peaks.append(peak)
            pss.append(memory.peak_pss_sum_kib * 1024)
            verdicts.add(f"{module.status}, {module.node_count} graph nodes, on "
                         f"{module.instantiated_on}, {len(module.failures)} failures")
            print(f"\nrun {run + 1}: wall {wall:.2f} s (engine's FileResult.seconds "
                  f"{result.seconds:.2f} s, of which tracer.trace {module.trace_seconds:.2f} s)")
            child_cpu = sum(memory.child_cpu_seconds.values())
            cpus.append(child_cpu)
            # On a shared machine the wall time includes waiting for a core; the child's
            # CPU time is roughly what the wall time would be on an idle core.
            print(f"  child CPU time (user + sys, sampled): {child_cpu:.2f} s")
            print(f"  Llama: {module.status}, {module.node_count} graph nodes, "
                  f"instantiated on {module.instantiated_on}; "
                  f"{len(module.failures)} failures, {len(result.errors)} file errors")
            for failure in module.failures + result.errors:
                print(f"    {failure.code} line {failure.line}: {failure.message[:200]}")
            print(f"  zygote RSS {memory.zygote_rss_kib / 1024:.0f} MiB + child peak RSS "
                  f"(VmHWM) {child_hwm / 1024:.0f} MiB = {peak / MIB:.0f} MiB")
            print(f"  sampled peaks ({memory.samples} samples): sum of RSS "
                  f"{memory.peak_rss_sum_kib / 1024:.0f} MiB, sum of PSS "
                  f"{memory.peak_pss_sum_kib / 1024:.0f} MiB (shared pages counted once)")
        narrow = run_narrow_variant(pipeline)
    finally:
        engine.close()
        pipeline.close()
    # After close() the zygote is reaped: ru_maxrss is then the largest peak RSS of any
    # single process in its tree (Linux propagates children's peaks when they are waited).
    largest_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"\nkernel ru_maxrss (largest single process of the tree): {largest_kib / 1024:.0f} MiB")

    built, expected = parameter_count()
    wall_median, peak_max = statistics.median(walls), max(peaks)
    print(f"parameters: {built:,} ({built / 1e9:.2f}e9; Llama-2-7B from its dimensions: "
          f"{expected:,})")
    print(f"eager float32 size it would need: {built * 4 / GIB:.1f} GiB "
          f"({built * 4 / 1e9:.1f} GB) - not built")
    print(f"\nsummary: median wall {wall_median:.2f} s over {len(walls)} runs "
          f"(median child CPU time {statistics.median(cpus):.2f} s) "
          f"[target < {TARGET_SECONDS:g} s: {'met' if wall_median < TARGET_SECONDS else 'MISSED'}]"
          f"; peak zygote + child RSS {peak_max / GIB:.2f} GiB "
          f"[target < 1.5 GiB: {'met' if peak_max < TARGET_PEAK_BYTES else 'MISSED'}]")
    emit("llama7b", markdown(["Llama-2-7B dimensions, on meta", "figure", "target"], [
        ["parameters", f"{built:,} (Llama-2-7B from its dimensions: {expected:,}); eager "
         f"float32 would need {built * 4 / GIB:.1f} GiB", ""],
        ["verdict", "; ".join(sorted(verdicts)), ""],
        [f"wall, warm zygote (median of {len(walls)})",
         f"**{wall_median:.2f} s** ({' / '.join(f'{wall:.2f}' for wall in walls)} s)",
         met(f"< {TARGET_SECONDS:g} s", wall_median < TARGET_SECONDS)],
        ["child CPU time (median)", f"{statistics.median(cpus):.2f} s", ""],
        ["peak memory: zygote RSS + child VmHWM (largest)", f"**{peak_max / GIB:.2f} GiB** "
         f"(sum of PSS {max(pss) / GIB:.2f} GiB)",
         met("< 1.5 GiB", peak_max < TARGET_PEAK_BYTES)],
        ["`narrow` variant (plain torch.fx traces it)", narrow, "the same verdict"],
    ]))


if __name__ == "__main__":
    main()
