"""Builder functions: module-level functions that return an instance of one of the module's
classes and can be called with no arguments, such as a model zoo's entry points::

    def get_resnet(blocks, pretrained=False, **kwargs):
        ...
        net = ResNet(channels=channels, init_block_channels=64, **kwargs)
        return net

    def resnet50(**kwargs):
        return get_resnet(blocks=50, model_name="resnet50", **kwargs)

``resnet50`` builds a ``ResNet`` with the channel lists a real model has, which no guess
would find. Builders are found here with ``ast`` only (the host never runs workspace code);
a worker calls one (``fxcore.worker.building.instances``) when the class's constructor needs
arguments, or its defaults fail, and checks that it returned an instance of the class.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

from fxcore.model.job_spec import Builder

#: How many calls of other module functions are followed from a builder to the class it
#: builds (``resnet50`` -> ``get_resnet`` -> ``ResNet(...)`` follows one).
MAX_FOLLOWED_CALLS = 2
#: A worker tries a class's builders in file order and keeps the first that builds it: a
#: generic ``get_model(**kwargs)`` that needs its caller's arguments fails and the next is
#: tried; past this many the class's other sources are.
MAX_BUILDERS_PER_CLASS = 3


def builder_functions(tree: ast.Module,
                      class_names: Iterable[str]) -> dict[str, tuple[Builder, ...]]:
    """Class name -> its builders in file order, at most ``MAX_BUILDERS_PER_CLASS``: the
    module-level functions whose every parameter has a default and whose every ``return``
    gives an instance of that class (directly, through a local name, or through other
    functions of the module)."""
    classes = set(class_names)
    functions = {node.name: node for node in tree.body
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    found: dict[str, list[Builder]] = {}
    for function in functions.values():  # in file order
        if isinstance(function, ast.AsyncFunctionDef) or not _callable_without_arguments(
                function.args):
            continue
        built = _built_class(function, classes, functions, MAX_FOLLOWED_CALLS)
        if built is None:
            continue
        builders = found.setdefault(built, [])
        if len(builders) < MAX_BUILDERS_PER_CLASS:
            builders.append(Builder(function=function.name, line=function.lineno,
                                    passes_pretrained=_has_parameter(function.args,
                                                                     "pretrained")))
    return {name: tuple(builders) for name, builders in found.items()}


def _callable_without_arguments(arguments: ast.arguments) -> bool:
    positional = [*arguments.posonlyargs, *arguments.args]
    return (len(arguments.defaults) == len(positional)
            and all(default is not None for default in arguments.kw_defaults))


def _has_parameter(arguments: ast.arguments, name: str) -> bool:
    return any(parameter.arg == name for parameter in
               [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs])


def _own_statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    """The nodes of a function's body, without those of functions, lambdas and classes
    defined inside it (their ``return`` is not the function's)."""
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield node
        pending += ast.iter_child_nodes(node)


def _built_class(function: ast.FunctionDef | ast.AsyncFunctionDef, classes: set[str],
                 functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
                 calls_left: int) -> str | None:
    """The one class every ``return`` of ``function`` gives an instance of, if there is one."""
    statements = list(_own_statements(function))
    assigned: dict[str, list[ast.expr]] = {}
    for node in statements:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            assigned.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.value is not None:
            assigned.setdefault(node.target.id, []).append(node.value)
    returned = [node.value for node in statements
                if isinstance(node, ast.Return) and node.value is not None]
    if not returned:
        return None
    built: set[str | None] = set()
    for value in returned:
        if isinstance(value, ast.Name):
            # `net = ResNet(...)`; ...; `return net`: every assignment must build the class.
            built |= {_called_class(source, classes, functions, calls_left)
                      for source in assigned.get(value.id, [value])}
        else:
            built.add(_called_class(value, classes, functions, calls_left))
    if len(built) != 1:
        return None
    return built.pop()


def _called_class(value: ast.expr, classes: set[str],
                  functions: dict[str, ast.FunctionDef | ast.AsyncFunctionDef],
                  calls_left: int) -> str | None:
    """The class ``value`` (a call of a class or of a builder of the module) builds."""
    if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)):
        return None
    name = value.func.id
    if name in classes:
        return name
    if name in functions and calls_left > 0:
        return _built_class(functions[name], classes, functions, calls_left - 1)
    return None
