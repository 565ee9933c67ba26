"""Reading the attributes of the user's objects from fx-lsp's own worker code.

``getattr(owner, name, default)`` and ``hasattr`` swallow only ``AttributeError``, and an
object's ``__getattr__`` (a module's too, PEP 562) is the user's code: a library's lazy
optional-import stub raises its own error for every attribute (MONAI's ``optional_import``
for a package that is not installed), a lazy module in ``sys.modules`` may raise
``ImportError``. Where fx-lsp only looks (which values a constructor's code names, which
files the import loaded, what a callee is), such an error means the attribute is not there;
it must not end the worker and take every class of the file with it.
"""

from __future__ import annotations

from typing import Any


def user_attribute(owner: Any, name: str, default: Any = None) -> Any:
    """``getattr(owner, name, default)``, with ``default`` for any error ``owner`` raises."""
    try:
        return getattr(owner, name, default)
    except Exception:
        return default
