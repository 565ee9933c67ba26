"""The benchmark suites: each a sub-package of ``benchmarks`` named for what it measures,
and each benchmark in it a module with a ``main`` run as ``python3 -m benchmarks.SUITE.NAME``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Benchmark:
    name: str
    measures: str
    #: Arguments it cannot run without: such a benchmark runs only when named, with them.
    needs: str = ""
    #: The tables it emits, each a block of that name in one page of docs/benchmarks/; none:
    #: its name alone.
    tables: tuple[str, ...] = ()

    @property
    def emits(self) -> tuple[str, ...]:
        return self.tables or (self.name,)


@dataclass(frozen=True)
class Suite:
    name: str
    measures: str
    benchmarks: tuple[Benchmark, ...]
    #: Modules of the suite that its benchmarks (and tests) import or start as children.
    helpers: tuple[str, ...] = ()

    def benchmark(self, name: str) -> Benchmark | None:
        return next((found for found in self.benchmarks if found.name == name), None)


SUITES = (
    Suite("speed", "time and memory of one check, one capture, one page", (
        Benchmark("check_latency", "a warm worker's check of one edited file against a fresh "
                  "Python process (~2 min)"),
        Benchmark("llama7b", "time and peak memory to trace a Llama-2-7B-sized decoder (~1 min)"),
        Benchmark("export_capture", "the export capture of one class in a warm process, "
                  "against the fx capture"),
        Benchmark("compile_capture", "the compile capture of one class in a warm process, "
                  "against the fx capture"),
        Benchmark("recompile_loop", "the compile capture with its loop of calls against one "
                  "call, in CPU seconds; julius's compile check with the loop on and off",
                  tables=("recompile_loop", "recompile_loop_library")),
        Benchmark("module_modes_cost", "check --mode fx,export,compile on MONAI's blocks: "
                  "compile in both nn.Module modes only where code beside torch's layers "
                  "reads training, against the commit before (~5 min)"),
        Benchmark("pt2_whole_model", "a whole 7B model under fx, export and compile, against "
                  "real torch (~1.5 min)", tables=("pt2_whole_model", "pt2_whole_model_small")),
        Benchmark("network_isolation", "what a network namespace costs each forked job"),
        Benchmark("graph_page_cap", "the graph page of a 100,000-node class, whole and capped"),
        Benchmark("graph_diff", "fx-lsp diff of one changed file, first and cached, against a "
                  "cached check of the repository (--timm-layers: on timm's layers)",
                  tables=("graph_diff", "graph_diff_timm_layers")),
    ), helpers=("timm_layers_repository",)),
    Suite("scale", "fx-lsp check over many files, packages and workers", (
        Benchmark("parallel_speedup", "1 worker against 2 over 60 generated files (~1-2 min)"),
        Benchmark("check_scaling", "1,000 against 3,000 tiny files"),
        Benchmark("host_memory", "the command line's peak memory over 1,000, 3,000 and 10,000 "
                  "one-line files"),
        Benchmark("timm_scan", "timm's own models/ folder: time, CPU and memory (~7 min)"),
        Benchmark("package_scan", "a large package, cold and warm bytecode, 1 and 2 workers",
                  needs="WORKSPACE FOLDER..."),
    )),
    Suite("editor", "the language server's latency as an editor sees it", (
        Benchmark("lsp_latency", "didSave to diagnostics, and hover while a slow trace runs"),
        Benchmark("mode_latency", "fx diagnostics first with export and compile on",
                  tables=("mode_latency", "mode_latency_class_edits")),
        Benchmark("hover_under_code_actions", "hover while code actions hit a 20,000-line file",
                  tables=("hover_under_code_actions", "hover_under_code_actions_eager")),
        Benchmark("hover_during_graph", "hover while a 60,000-node graph answer is built"),
        Benchmark("shapes", "what shape propagation adds, and inlay hints after a save (~2 min)",
                  tables=("shapes", "shapes_after_save")),
        Benchmark("graph_view", "the graph view's open time (needs node, vscode-client's npm ci "
                  "and Chromium; ~1 min)"),
        Benchmark("agent_loop", "an edit, then fx-lsp mcp's check of the file, warm and cold, "
                  "against fx-lsp check as a process (needs the mcp extra)"),
    ), helpers=("class_edits", "loop_block", "save_profile")),
    Suite("fidelity", "fx-lsp's verdicts against real torch.fx, torch.export and torch.compile", (
        Benchmark("fx_fidelity", "the fx mode on real third-party models against plain "
                  "torch.fx (~5 min)"),
        Benchmark("export_fidelity", "the export mode on real third-party models against real "
                  "torch.export"),
        Benchmark("compile_fidelity", "the compile mode against real torch.compile runs"),
        Benchmark("onnx_fidelity", "the onnx mode on real third-party models against real "
                  "torch.onnx.export(dynamo=True), with each side's seconds",
                  needs="FILE..."),
        Benchmark("pt2_fidelity_table", "one row per third-party class, from the two above's "
                  "kept JSON", needs="--export DIR --compile DIR"),
        Benchmark("pt2_library_coverage", "fx, export and compile on libraries fx-lsp was not "
                  "tuned on, against real torch and plain torch.fx",
                  tables=("pt2_library_coverage", "pt2_library_coverage_before",
                          "pt2_library_coverage_after_monai",
                          "pt2_library_coverage_after_others",
                          "pt2_library_coverage_four_libraries",
                          "pt2_library_coverage_julius_loop",
                          "pt2_library_coverage_per_class",
                          "pt2_library_coverage_per_class_smp",
                          "pt2_library_coverage_loop_apart",
                          "pt2_library_coverage_loop_apart_smp",
                          "pt2_library_coverage_loop_apart_others",
                          "pt2_library_coverage_drawn")),
        Benchmark("repo_coverage", "coverage and plain torch.fx agreement on real libraries"),
        Benchmark("compare_tools", "plain torch.fx, dynamo's explain and fx-lsp on the same "
                  "failing models"),
        Benchmark("fix_all_breaks", "graph breaks real torch.compile meets on transformers' "
                  "and timm's models before and after fx-lsp check --fix --unsafe-fixes, "
                  "outputs compared (~10 min)"),
        Benchmark("torch_series_table", "agreement with real torch per torch series (~5 min a "
                  "series with --thirdparty)", tables=("torch_series", "torch_series_thirdparty")),
    ), helpers=("plain_fx_check", "pt2_real_check", "no_verdict_causes", "timed_check",
                "library_judging", "verdicts_apart", "false_errors")),
    # Measured where an NVIDIA GPU is: fx-lsp itself never uses one (its workers hide every
    # accelerator), so these compare its meta-device verdicts with real CUDA runs.
    Suite("gpu", "real CUDA runs, where an NVIDIA GPU is", (
        Benchmark("gpu_agreement", "compile verdicts and seconds against real cold "
                  "torch.compile (inductor) on CUDA, the GPU-written and compile corpora"),
        Benchmark("gpu_answers", "export and compile verdicts judged for a GPU against real "
                  "torch on CUDA (--record FILE), or against a record (--against FILE)"),
        Benchmark("build_agreement", "verdicts judged for a GPU on a CPU-only and a CUDA "
                  "build of torch, no GPU needed (~4 min)", needs="--other PYTHON"),
    )),
)


def suite_named(name: str) -> Suite | None:
    return next((suite for suite in SUITES if suite.name == name), None)
