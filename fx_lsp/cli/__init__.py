"""The command line: argument parsing, the check run, shards, fixes, baselines, noqa comments,
graph pages and diffs, and the output formats that render a run's report."""
