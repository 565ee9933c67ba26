"""The fidelity suite: fx-lsp's verdicts against real torch (``benchmarks.suites``)."""
