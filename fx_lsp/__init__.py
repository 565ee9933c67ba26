"""fx-lsp's CLI and language server (``fxcore`` is the engine underneath)."""


def __getattr__(name: str) -> str:
    # ``__version__`` is looked up on demand: ``python -m fx_lsp`` imports this package before
    # it drops the working folder from sys.path (fx_lsp/__main__.py), and reading the metadata
    # imports modules a workspace file could shadow until then.
    if name == "__version__":
        from fxcore.model.version import VERSION  # pyproject.toml's version, from the metadata

        return VERSION
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
