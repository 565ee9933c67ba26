"""An instance put back as it was built after fx-lsp's own runs of its ``forward``.

A module may keep state from its first call: torchvision's ``MultiScaleRoIAlign`` works out
its scales on the first call and keeps them (``self.scales``), a cache or a counter is set,
a lazy module takes its shapes. A user's ``torch.compile(model)(x)`` meets that first call
under compile; fx-lsp's search for inputs, and each capture before the next (export before
compile, eval before train), would otherwise leave it done, so that a later capture never
meets the code real torch compiles (a fresh Faster R-CNN breaks its graph three times in the
scales' set-up). ``as_built`` keeps every submodule's attributes, parameters, buffers,
children and class as they are and puts them back, and the entries of the plain dicts, lists
and sets an attribute holds (a cache keyed by a size, filled on the first call: filled by a
trace, it would hold a torch.fx Proxy as a key, which compile then meets); what a call changes
deeper inside a value (a tensor written in place, an object's own attributes) stays as it was
changed, but for the data fx-lsp keeps of a meta tensor made from Python data (a flag buffer,
``literal_values.kept_literals``), which reads as it was again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch

from fxcore.worker.meta.literal_values import kept_literals

#: The dicts of ``nn.Module.__dict__`` whose entries a call may replace (kept by copy).
_OWN_DICTS = ("_parameters", "_buffers", "_modules")
#: The containers, exactly these types, whose entries an attribute's value is put back with.
_PLAIN_CONTAINERS = (dict, list, set)


def _state(module: torch.nn.Module) -> tuple[type, dict[str, Any], list[tuple[Any, Any]]]:
    attributes = dict(module.__dict__)
    for name in _OWN_DICTS:
        if isinstance(attributes.get(name), dict):
            attributes[name] = dict(attributes[name])
    entries = [(value, value.copy()) for name, value in attributes.items()
               if name not in _OWN_DICTS and type(value) in _PLAIN_CONTAINERS]
    return type(module), attributes, entries


def _refill(container: Any, entries: Any) -> None:
    """``container`` (a dict, list or set) holding ``entries`` again, as the same object:
    the module's other references to it (a method bound over it, a view) stay valid. Never
    compared first: a key a trace left may be a Proxy, whose ``==`` cannot be asked."""
    container.clear()
    if type(container) is list:
        container.extend(entries)
    else:
        container.update(entries)


def _put_back(module: torch.nn.Module, kind: type, attributes: dict[str, Any],
              entries: list[tuple[Any, Any]]) -> None:
    for container, kept in entries:
        _refill(container, kept)
    if type(module) is not kind:  # a lazy module becomes its class once shaped
        module.__class__ = kind
    for name in _OWN_DICTS:  # the same dict objects: hooks and views may hold them
        own = module.__dict__.get(name)
        if isinstance(own, dict) and isinstance(attributes.get(name), dict):
            own.clear()
            own.update(attributes[name])
            attributes = {**attributes, name: own}
    module.__dict__.clear()
    module.__dict__.update(attributes)


def snapshot(model: torch.nn.Module) -> Callable[[], None]:
    """A function that puts ``model``'s module tree back as it is now (see the module's
    docstring), as often as it is called."""
    try:
        kept = [(module, *_state(module)) for module in model.modules()]
    except Exception:  # a module tree that breaks modules(): the capture says so itself
        kept = []
    # A flag buffer fx-lsp's run set in place (``self.initialized.fill_(1)``) reads as built
    # again: on meta its data is only what ``literal_values`` keeps of it.
    literals = kept_literals([value for _, _, attributes, _ in kept
                              for value in (*attributes.get("_buffers", {}).values(),
                                            *attributes.values())
                              if isinstance(value, torch.Tensor)])

    def put_back() -> None:
        for module, kind, attributes, entries in kept:  # _put_back leaves what was kept
            _put_back(module, kind, attributes, entries)
        literals()

    return put_back


@contextlib.contextmanager
def as_built(model: torch.nn.Module) -> Iterator[Callable[[], None]]:
    """Run the block, then put ``model``'s module tree back as it was before it (see the
    module's docstring); the block may put it back sooner, as often as it needs, with the
    function it is given."""
    put_back = snapshot(model)
    try:
        yield put_back
    finally:
        put_back()
