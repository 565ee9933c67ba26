"""Wrapper modules around real torchvision, timm and transformers models.

The shim is imported first: it lets ``import torchvision`` work next to the CPU torch and sets
the Hugging Face offline variables, in fx-lsp's worker processes as well as in the tests.
"""

from . import _shim  # noqa: F401  (must come before any torchvision/timm/transformers import)
