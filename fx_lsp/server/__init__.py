"""The language server: the session's state (documents, workspace texts, settings, the trace
engine, publishing), its handlers and notebooks."""
