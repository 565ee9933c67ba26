"""Constructor calls with literal arguments written anywhere in a workspace.

READMEs, docs, docstrings, doctests, tests, examples and ``if __name__ == "__main__":``
blocks usually show how a model is built: ``ViT(image_size=256, patch_size=32, dim=1024)``.
This module reads them statically, with ``ast`` only: the file holding a call is never run,
so it is safe in the CLI and server processes. A call counts when every argument is a literal
(``ast.literal_eval``) or a call of the same kind (``GPT(GPTConfig(n_layer=2))``), or a bare
name last bound in the same scope to one of those (``model = GPT(...).cuda()`` then
``Wrapper(model)``: ``bindings``), or a parameter of a test that pytest parametrizes with
literal values, read as each of them (``parametrize``). A README's code blocks, and a
notebook's code cells, are read in order as one scope (``calls``, ``documents``). The worker
evaluates the nested calls with the names of the class's module and packages
(``fxcore.worker.building.arguments.class_namespace``); ``index`` keeps a workspace's calls current.
"""

from fxcore.workspace.call_sites.bindings import MAX_SUBSTITUTED_DEPTH, MAX_SUBSTITUTED_NODES
from fxcore.workspace.call_sites.calls import calls_in_source
from fxcore.workspace.call_sites.documents import (
    calls_in_markdown,
    calls_in_notebook,
    markdown_python_blocks,
)
from fxcore.workspace.call_sites.index import (
    CallSiteIndex,
    CallSiteIndexes,
    build_index,
    most_varied,
)
from fxcore.workspace.call_sites.literals import is_literal_call_argument
from fxcore.workspace.call_sites.parametrize import MAX_PARAMETER_COMBINATIONS

__all__ = [
    "MAX_PARAMETER_COMBINATIONS",
    "MAX_SUBSTITUTED_DEPTH",
    "MAX_SUBSTITUTED_NODES",
    "CallSiteIndex",
    "CallSiteIndexes",
    "build_index",
    "calls_in_markdown",
    "calls_in_notebook",
    "calls_in_source",
    "is_literal_call_argument",
    "markdown_python_blocks",
    "most_varied",
]
