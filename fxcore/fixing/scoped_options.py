"""A ``torch._dynamo.config`` option set for one class's compiled calls only, with libcst;
idempotent.

``capture_scalar_outputs`` and ``capture_dynamic_output_shape_ops`` are read when dynamo starts
compiling a frame (the symbolic shapes of the frame's graph are set up then), so the option has
to hold before the class's ``forward`` is compiled, not be set while it is traced
(``torch._dynamo.patch_dynamo_config`` is traced, but too late for these two). The class's
``forward`` gets two decorators::

    @torch.compiler.disable(recursive=False)
    @torch._dynamo.config.patch(capture_scalar_outputs=True)
    def forward(self, x):

``torch.compile(model)`` then skips the two wrappers' frames (the first by its own mark, the
second because dynamo skips ``contextlib``'s frames it is not inlining), which run eagerly and
set the option, and compiles ``forward`` as a frame of its own, with the option, in one graph;
the option is back as it was once the call returns, for every other model in the process.
The costs, which make the fix unsafe: torch.export refuses a non-recursive
``torch.compiler.disable`` (the class no longer exports), and a parent class compiled whole
breaks its graph at the call of this one.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import libcst as cst

from fxcore.fixing.libcst_edits import dotted_name, parse_source
from fxcore.fixing.pt2_fixes import torch_spelling


def torch_text(*parts: str) -> str | None:
    """The text of a file of the torch this interpreter finds (the one the workers import),
    read so that the host never imports torch; None when there is none."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    try:
        with open(os.path.join(os.path.dirname(spec.origin), *parts), encoding="utf-8") as file:
            return file.read()
    except OSError:
        return None


@functools.cache
def why_not_scoped(option: str) -> str | None:
    """Why this torch cannot set ``option`` (``torch._dynamo.config.capture_scalar_outputs``)
    for one class's compiled calls; None when it can: its ``torch.compiler.disable`` takes
    ``recursive=False`` (frames skipped, the frames they call compiled) and its config module
    has the option."""
    utils, config = torch_text("_dynamo", "external_utils.py"), \
        torch_text("_dynamo", "config.py")
    name = option.rsplit(".", 1)[-1]
    if utils is None or "def get_nonrecursive_disable_wrapper(" not in utils:
        return ("this torch has no non-recursive torch.compiler.disable to set it for one "
                "class's compiled calls")
    if config is None or f"\n{name}" not in config:
        return f"this torch's torch._dynamo.config has no {name}"
    return None


def _is_disable(decorator: cst.Decorator, torch: str) -> bool:
    """``@torch.compiler.disable(recursive=False)``."""
    call = decorator.decorator
    return isinstance(call, cst.Call) and dotted_name(call.func) == f"{torch}.compiler.disable" \
        and [(arg.keyword.value if arg.keyword else None, dotted_name(arg.value))
             for arg in call.args] == [("recursive", "False")]


def _is_patch(decorator: cst.Decorator, torch: str) -> bool:
    """``@torch._dynamo.config.patch(...)``, keywords only."""
    call = decorator.decorator
    return isinstance(call, cst.Call) and \
        dotted_name(call.func) == f"{torch}._dynamo.config.patch" and \
        all(arg.keyword is not None for arg in call.args)


class _ScopeOption(cst.CSTTransformer):
    def __init__(self, torch: str, class_name: str, name: str) -> None:
        super().__init__()
        self.torch, self.class_name, self.name = torch, class_name, name
        self.depth = 0  # classes entered: only a top-level class's own forward is edited

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.depth += 1
        return self.depth == 1 and node.name.value == self.class_name

    def leave_ClassDef(self, original_node: cst.ClassDef, updated_node: cst.ClassDef
                       ) -> cst.ClassDef:
        self.depth -= 1
        return updated_node

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a forward nested in a method is not the class's

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        if self.depth != 1 or updated_node.name.value != "forward":
            return updated_node
        decorators = list(updated_node.decorators)
        patches = [index for index, item in enumerate(decorators)
                   if _is_patch(item, self.torch)]
        keyword = cst.Arg(keyword=cst.Name(self.name), value=cst.Name("True"),
                          equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                                whitespace_after=cst.SimpleWhitespace("")))
        if patches:
            call = decorators[patches[0]].decorator
            assert isinstance(call, cst.Call)
            if self.name not in {arg.keyword.value for arg in call.args if arg.keyword}:
                arguments = [*call.args[:-1], call.args[-1].with_changes(
                    comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), keyword] \
                    if call.args else [keyword]
                decorators[patches[0]] = decorators[patches[0]].with_changes(
                    decorator=call.with_changes(args=arguments))
        else:
            decorators.insert(0, cst.Decorator(cst.parse_expression(
                f"{self.torch}._dynamo.config.patch({self.name}=True)")))
        if not any(_is_disable(item, self.torch) for item in decorators):
            decorators.insert(0, cst.Decorator(cst.parse_expression(
                f"{self.torch}.compiler.disable(recursive=False)")))
        return updated_node.with_changes(decorators=decorators)


def has_forward(source: str, class_name: str) -> bool:
    """Whether the top-level class ``class_name`` defines ``forward`` in its own body."""
    for statement in parse_source(source).body:
        if isinstance(statement, cst.ClassDef) and statement.name.value == class_name:
            body = statement.body.body if isinstance(statement.body, cst.IndentedBlock) else ()
            return any(isinstance(item, cst.FunctionDef) and item.name.value == "forward"
                       for item in body)
    return False


def scope_config_option(source: str, class_name: str, option: str) -> str:
    """``source`` with ``option`` (``torch._dynamo.config.capture_scalar_outputs``, as torch's
    hint spells it) set to True for ``class_name``'s compiled calls only, by decorating its
    ``forward``; ``source`` itself when it is set there already or the class defines no
    ``forward``."""
    module = parse_source(source)
    torch = torch_spelling(module) or "torch"
    name = option.rsplit(".", 1)[-1]
    return module.visit(_ScopeOption(torch, class_name, name)).code
