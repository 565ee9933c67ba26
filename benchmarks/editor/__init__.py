"""The editor suite: the language server's latency in an editor (``benchmarks.suites``)."""
