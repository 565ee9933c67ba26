"""One pipeline from files to a report, for the command line and the server alike: jobs prepared
with what the workspace knows (call sites, builders), run on the host's engine or answered from
the cache, given parent verdicts and reported."""
