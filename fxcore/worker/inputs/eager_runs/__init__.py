"""The eager runs on tensors without data that accept or refuse a candidate, the CPU's checks
that meta kernels lack, a last run on real CPU tensors, and whether an error comes from
fx-lsp's own choices rather than from the class."""
