"""fx-lsp's version, from the installed package's metadata (``pyproject.toml``'s ``version``)."""

from __future__ import annotations

import importlib.metadata

try:
    VERSION = importlib.metadata.version("fx-lsp")
except importlib.metadata.PackageNotFoundError:  # a source checkout that was never installed
    VERSION = "0+unknown"
