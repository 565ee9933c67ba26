"""What a class is apart from its verdicts: a base left to its subclasses (abstract, a
``forward`` that only raises, or one that reads an attribute only subclasses set), a
submodule with arguments of its own or one only its parent can build, a root built from its
configuration or defaults."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

import torch

from fxcore.model.results import Arguments
from fxcore.worker.building.construction import missing_parameters
from fxcore.worker.job.job_context import JobContext
from fxcore.workspace.discovery import ClassSource


def root_arguments(context: JobContext, class_name: str) -> Arguments:
    """How a root was built, from its configuration (for results that do not say)."""
    module_config = context.module_config(class_name)
    if module_config.factory or module_config.args or module_config.kwargs:
        return Arguments(origin="config", args=[repr(a) for a in module_config.args],
                         kwargs={k: repr(v) for k, v in module_config.kwargs.items()})
    return Arguments(origin="defaults")


#: Containers that code fills after building them (``add_module``, ``append``, ``[key] =``).
_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)


def has_own_arguments(context: JobContext, cls: type, file: str,
                      built: torch.nn.Module | None = None) -> bool:
    """True when the class is configured or can be built without arguments, unless ``built``
    (an instance its parent built) is a container the parent filled: built from its defaults
    alone such a container is empty, so the parent's instance is the real one."""
    module_config = context.in_file(file).module_config(cls.__name__)
    if module_config.factory or module_config.args or module_config.kwargs \
            or module_config.call:
        return True
    if isinstance(built, _CONTAINERS) and len(built) > 0:
        return False
    return not missing_parameters(cls, [], {})


def not_a_model_reason(context: JobContext, cls: type, source: ClassSource) -> str | None:
    """Why a class is skipped before building it: it is abstract (``abc`` abstract methods
    left), or the ``forward`` it has only raises ``NotImplementedError``. Either is a base
    for subclasses, which are traced; an instance fx-lsp made of it would be an artefact."""
    if inspect.isabstract(cls):
        methods = ", ".join(sorted(getattr(cls, "__abstractmethods__", ())))
        return (f"Skipped: an abstract class (abstract methods: {methods}); its "
                "concrete subclasses are traced.")
    owner = next(k for k in cls.__mro__ if "forward" in vars(k))
    located = (context.path, source) if owner is cls else context.workspace_class_source(owner)
    if located is not None and located[1].forward_not_implemented:
        whose = "its" if owner is cls else f"{owner.__name__}'s"
        return (f"Skipped: {whose} forward only raises NotImplementedError; the subclasses "
                "that implement it are traced.")
    return None


#: "'SegmentationModel' object has no attribute 'encoder'": the class and the attribute.
_NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")
#: Reason texts of classes skipped as bases (``not_a_model_reason``, ``base_reason``).
BASE_PREFIX = "Skipped: a base class"


def base_reason(cls: type, error_text: str) -> str | None:
    """Why a class whose forward failed with ``error_text`` is a base left to its
    subclasses: forward read an attribute of its own instance that no code of the class or
    its bases ever sets (no ``self.name = ...``, no ``"name"`` given to ``setattr`` or
    ``register_buffer``), so only a subclass can (a segmentation library's base model reads
    ``self.encoder``, which each architecture sets). None otherwise, or where a base's
    source cannot be read or sets attributes by computed names."""
    found = _NO_ATTRIBUTE.search(error_text)
    if found is None or found[1] != cls.__name__ or hasattr(cls, found[2]):
        return None
    name = found[2]
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] in ("torch", "builtins"):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            return None
        if any(_may_set(node, name) for node in ast.walk(tree)):
            return None
    return (f"{BASE_PREFIX}: its forward reads self.{name}, which no code of {cls.__name__} "
            "or its bases sets, so only a subclass can; the subclasses are traced.")


#: Calls that set an attribute by a name given as their first argument (after the object,
#: for ``setattr``).
_SETTERS = ("setattr", "add_module", "register_module", "register_buffer", "register_parameter")


def _may_set(node: ast.AST, name: str) -> bool:
    """Whether ``node`` sets ``name`` on an object, or may (a name computed at run time):
    ``obj.name = ...``, ``setattr(obj, "name", ...)``, ``register_buffer("name", ...)``,
    ``obj._modules["name"] = ...``, a setter given a computed name, ``obj.__dict__``."""
    if isinstance(node, ast.Attribute):
        return (node.attr == name and isinstance(node.ctx, ast.Store)) \
            or node.attr == "__dict__"
    if isinstance(node, ast.Subscript):
        return isinstance(node.ctx, ast.Store) and isinstance(node.slice, ast.Constant) \
            and node.slice.value == name
    if not isinstance(node, ast.Call):
        return False
    function = node.func
    called = function.id if isinstance(function, ast.Name) else (
        function.attr if isinstance(function, ast.Attribute) else "")
    position = 1 if called == "setattr" else 0
    if called not in _SETTERS or len(node.args) <= position:
        return False
    given = node.args[position]
    return not isinstance(given, ast.Constant) or given.value == name
