"""Whether ``model.train()`` and ``model.eval()`` change anything in a model but the
``training`` flags.

``nn.Module.train`` sets each module's flag and nothing else, but a class may override it (a
``train`` that keeps a frozen encoder's norm layers in eval mode, or that sets a noise level
``forward`` reads). The captures set a mode as a user does, through those overrides
(``judging.in_mode``), so a model whose code reads ``training`` nowhere a call runs can
still compute otherwise in the two modes if an override sets other state. This module looks:
it sets both modes, takes a fingerprint of every module's attributes (and of the plain objects
they hold, one level down) after each, and compares them. It errs towards "changed": an
override that raises, or a value that compares unequal to itself, counts as a change.
"""

from __future__ import annotations

from typing import Any

import torch

#: Values compared by what they are, not by identity.
_PLAIN = (int, float, complex, str, bytes, bool, type(None))


def only_flags_change(model: torch.nn.Module) -> bool:
    """Whether ``model.eval()`` and then ``model.train()`` leave every attribute of every
    module (``training`` aside) as the other left it; the flags are put back as they were."""
    flags = [(module, module.training) for module in model.modules()]
    try:
        model.eval()
        in_eval = _fingerprint(model)
        model.train()  # last, as built
        in_train = _fingerprint(model)
    except Exception:  # user code: an override that fails is not one to trust
        return False
    finally:
        for module, training in flags:
            module.training = training
    return in_eval == in_train


def _fingerprint(model: torch.nn.Module) -> list[tuple[Any, ...]]:
    return [(id(module), name, _value(value, deep=True))
            for module in model.modules()
            for name, value in sorted(vars(module).items()) if name != "training"]


def _value(value: Any, deep: bool) -> Any:
    if isinstance(value, _PLAIN):
        return (type(value).__name__, value)
    if isinstance(value, dict):
        return ("dict", id(value), tuple((key, id(item)) for key, item in value.items()))
    if isinstance(value, (list, tuple, set, frozenset)):
        return (type(value).__name__, id(value), tuple(id(item) for item in value))
    if deep and not isinstance(value, (torch.nn.Module, torch.Tensor)) and hasattr(
            value, "__dict__"):
        return ("object", id(value), tuple((name, _value(item, deep=False))
                                           for name, item in sorted(vars(value).items())))
    return ("object", id(value))
