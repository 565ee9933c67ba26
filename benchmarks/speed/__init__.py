"""The speed suite: time and memory of one check, capture or page (``benchmarks.suites``)."""
