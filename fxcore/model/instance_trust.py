"""How far a verdict's instance stands for the real model: the one place that says which
sources of constructor arguments give a real instance and which a guessed one.

The sources, most trusted first (``Arguments.origin``, ``"from"`` in the JSON):
configuration (``config``), the class's own defaults (``defaults``), builder functions
(``builder``), instances a traced root built (``parent``: as trusted as the root's own
source), literal call sites (``call-site``), configuration classes (``config-class``), and
guesses from parameter names (``guessed``). Every source but the last is code its authors or
users wrote, so the verdict is on a *real instance*; a *guessed instance* (its own arguments
guessed, or built by a parent whose arguments were) stands for the guess only: its problems
may be the guess's, its shape problems above all. An error that involves no traced value on
an instance built from defaults or guesses says the instance does not fit (FX105): the class
then has no verdict of its own. Pure data: no torch, no user code.
"""

from __future__ import annotations

from fxcore.model.results import CODES, Arguments, ModuleResult

#: Sources whose arguments fx-lsp made up. Any other source, one added later included, is
#: the workspace's own or its user's.
GUESSED_ORIGINS: frozenset[str] = frozenset({"guessed"})
#: Sources of instances that may not fit the class: an error on one that involves no traced
#: value is the instance's, not torch.fx's (FX105). Configuration, builders and call sites
#: are the instances the code's users build: an error on those is the code's.
MADE_UP_ORIGINS: frozenset[str] = frozenset({"defaults", "guessed"})


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


def inputs_made_up_for_submodule(module: ModuleResult) -> bool:
    """True for a class traced as its parent built it, on inputs fx-lsp inferred for it alone:
    the parent passes it inputs of its own, and the parent's own check runs this code on
    them (a parent's graph holds its submodules' code), so a shape problem on the inferred
    ones may be the inference's."""
    arguments = module.arguments
    return arguments is not None and arguments.origin == "parent" \
        and module.inputs is not None and module.inputs.origin not in ("config", "parent")


def guessed_instance(class_name: str, arguments: Arguments | None) -> str | None:
    """The guessed instance as Python that rebuilds it: ``Net(in_dim=64, out_dim=64)``, or
    ``ViT(dim=64).blocks.0`` for one a guessed parent built; None for a real instance."""
    if arguments is None or not on_guessed_arguments(arguments):
        return None
    return instance_call(class_name, arguments)


def instance_call(class_name: str, arguments: Arguments) -> str:
    """The instance as Python that rebuilds it: ``Net()``, ``Net(in_dim=64)``,
    ``ViT(dim=64).blocks.0`` for one a parent built, ``resnet50()`` for a builder's."""
    call = call_text(arguments)
    if arguments.origin == "parent" and arguments.parent:
        parent_class = arguments.parent.rpartition(":")[2]
        path = f".{arguments.path}" if arguments.path else ""
        return f"{parent_class}({call}){path}"
    if arguments.origin in ("builder", "call-site") and arguments.builder:
        return f"{arguments.builder.rpartition(':')[2]}({call})"
    return f"{class_name}({call})"


def may_not_fit(arguments: Arguments | None) -> bool:
    """True when the instance was built from the class's defaults or guessed arguments (its
    own, or its parent's): an error on it that involves no traced value is the instance's."""
    return arguments is not None and instance_source(arguments) in MADE_UP_ORIGINS


def made_from(arguments: Arguments) -> str:
    """``built with its defaults``, ``built with guessed arguments``, ``built by its parent
    with guessed arguments``: how an instance that may not fit was made, in words."""
    source = "guessed arguments" if on_guessed_arguments(arguments) else "its defaults"
    return f"built by its parent with {source}" if arguments.origin == "parent" \
        else f"built with {source}"


#: The codes of "does not fit": torch.fx's (FX105), torch.export's (FX406), torch.compile's
#: (FX504, ``fxcore.worker.inputs.eager_runs.own_choices``).
DOES_NOT_FIT_CODES: frozenset[str] = frozenset(
    code for kind, code in CODES.items() if kind.endswith("does-not-fit"))


def does_not_fit(module: ModuleResult) -> bool:
    """True for the verdict of a class whose instance, or the inputs fx-lsp chose, do not fit
    it (FX105, FX406, FX504): no verdict on the class itself."""
    return module.status == "not-traced" and any(
        failure.code in DOES_NOT_FIT_CODES for failure in module.failures)


#: Parents whose own arguments came from earlier sources are preferred.
_PARENT_ORIGIN_RANK: dict[str | None, int] = {
    "config": 0, "defaults": 0, "builder": 1, "call-site": 2, "config-class": 3, "guessed": 4,
}


def parent_rank(origin: str | None) -> int:
    """How much an instance a root built is trusted, by where the root's own arguments came
    from: lower is more trusted (configuration and defaults first, guesses last)."""
    return _PARENT_ORIGIN_RANK.get(origin, len(_PARENT_ORIGIN_RANK))


def call_text(arguments: Arguments) -> str:
    """The arguments as they stand inside the call's parentheses: ``64, heads=4``."""
    return ", ".join([*arguments.args,
                      *(f"{name}={value}" for name, value in arguments.kwargs.items())])


def describe(arguments: Arguments | None) -> str | None:
    """In words, where a verdict's arguments came from when nobody configured them:
    ``guessed arguments: dim=64, heads=4``, ``the instance its builder function
    pkg.resnet:resnet50() returns``; ``None`` for configuration and defaults (and for
    parents: ``fxcore.reporting.parent_arguments.parent_description`` says those)."""
    if arguments is None:
        return None
    call = call_text(arguments)
    if arguments.origin == "guessed":
        return f"guessed arguments: {call}"
    if arguments.origin == "config-class":
        return f"arguments built from configuration classes: {call}"
    if arguments.origin == "call-site":
        method = f"{arguments.builder.rpartition(':')[2]}({call})" if arguments.builder \
            else call
        return f"the call at {arguments.site}: {method}"
    if arguments.origin == "builder" and arguments.builder:
        return f"the instance its builder function {arguments.builder}({call}) returns"
    return None


#: How each source of inputs stands, in the three words a user judges a verdict by: given by
#: the user, taken from the code (annotations, a parent's call, an example the code gives),
#: or guessed by fx-lsp (inferred).
_INPUTS_STANDING = {"config": "given", "annotation": "code", "parent": "code",
                    "example": "code", "inferred": "guessed"}
#: The same for the instance's arguments: the class's own defaults are the code's.
_INSTANCE_STANDING = {"config": "given", "guessed": "guessed"}


def judged_on(module: ModuleResult) -> dict[str, str | None]:
    """Whether the verdict's instance and inputs were given, taken from the code or guessed
    (None where the verdict has none: fx runs no inputs)."""
    arguments, inputs = module.arguments, module.inputs
    return {"instance": None if arguments is None
            else _INSTANCE_STANDING.get(instance_source(arguments), "code"),
            "inputs": None if inputs is None else _INPUTS_STANDING.get(inputs.origin, "code")}
