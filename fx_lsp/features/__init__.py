"""The editor features, one module per LSP feature over a document snapshot: diagnostics, hover,
code actions, code lenses, inlay hints, the graph view, baseline hints."""
