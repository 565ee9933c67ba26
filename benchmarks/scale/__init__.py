"""The scale suite: `fx-lsp check` over many files and workers (``benchmarks.suites``)."""
