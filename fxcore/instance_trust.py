"""How far a verdict's instance stands for the real model: the one place that says which
sources of constructor arguments give a real instance and which a guessed one.

The sources, most trusted first (``Arguments.origin``, ``"from"`` in the JSON):
configuration (``config``), the class's own defaults (``defaults``), builder functions
(``builder``), instances a traced root built (``parent``: as trusted as the root's own
source), literal call sites (``call-site``), configuration classes (``config-class``), and
guesses from parameter names (``guessed``). Every source but the last is code its authors or
users wrote, so the verdict is on a *real instance*; a *guessed instance* (its own arguments
guessed, or built by a parent whose arguments were) stands for the guess only: its problems
may be the guess's, its shape problems above all. Pure data: no torch, no user code.
"""

from __future__ import annotations

from fxcore.results import Arguments

#: Sources whose arguments fx-lsp made up. Any other source, one added later included, is
#: the workspace's own or its user's.
GUESSED_ORIGINS: frozenset[str] = frozenset({"guessed"})


def instance_source(arguments: Arguments) -> str:
    """The source the instance's arguments came from: a parent-built instance's is its
    parent's own (``parent_from``)."""
    if arguments.origin == "parent" and arguments.parent_origin is not None:
        return arguments.parent_origin
    return arguments.origin


def on_guessed_arguments(arguments: Arguments | None) -> bool:
    """True when the verdict's instance was built from guessed arguments, its own or its
    parent's; False for a real instance and for a verdict that built none."""
    return arguments is not None and instance_source(arguments) in GUESSED_ORIGINS


def guessed_instance(class_name: str, arguments: Arguments | None) -> str | None:
    """The guessed instance as Python that rebuilds it: ``Net(in_dim=64, out_dim=64)``, or
    ``ViT(dim=64).blocks.0`` for one a guessed parent built; None for a real instance."""
    if arguments is None or not on_guessed_arguments(arguments):
        return None
    call = ", ".join([*arguments.args, *(f"{name}={value}"
                                         for name, value in arguments.kwargs.items())])
    if arguments.origin == "parent" and arguments.parent:
        parent_class = arguments.parent.rpartition(":")[2]
        path = f".{arguments.path}" if arguments.path else ""
        return f"{parent_class}({call}){path}"
    return f"{class_name}({call})"
