"""The gpu suite: benchmarks run where an NVIDIA GPU is (none yet; see ``benchmarks.suites``)."""
