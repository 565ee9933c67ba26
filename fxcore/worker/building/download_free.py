"""Building a class again without the pretrained weights its constructor downloads.

Segmentation and detection libraries default to pretrained weights
(``Unet(encoder_weights="imagenet")``, ``Net(pretrained=True)``) and fetch them with their own
client (``huggingface_hub.hf_hub_download``, ``requests``, ``urllib``), not through
``torch.hub``, which ``fxcore.worker.building.weights`` answers with an empty checkpoint. A
worker has no network, so such a constructor raises. When the error says a download was tried,
the class is built again with the parameters that choose pretrained weights set to none
(``encoder_weights=None``, ``pretrained=False``), every other argument kept; the verdict says
the weights were skipped, and its arguments show the override, so anyone rebuilds that
instance without a network.

Why not answer the Hub's download with an empty file instead, as ``torch.hub``'s: what a
library does with the file it asked for is its own (a JSON config, a safetensors header,
timm's renaming of a classifier's keys), and an empty one fails in each a different way; and
the instance so built would say it was built from its defaults, which download again wherever
it is rebuilt. A parameter the constructor has for it is the library's own way to build
without weights.
"""

from __future__ import annotations

import enum
import inspect
import os
import re
import socket
import urllib.error
from collections.abc import Iterator
from typing import Any

from fxcore.model.job_spec import ModuleConfig
from fxcore.worker.building.weights import EMPTY_CHECKPOINT_USED

#: Packages whose exceptions mean a download was tried: the Hub's client and HTTP clients.
_DOWNLOADERS = ("huggingface_hub", "requests", "urllib3", "httpx", "httpcore", "aiohttp",
                "gdown")
#: Exceptions a connection attempt raises, whatever made it (``NetworkBlocked`` is a
#: ``ConnectionError``; a network namespace without routes gives ``gaierror`` or a time-out).
_NETWORK_ERRORS = (ConnectionError, TimeoutError, socket.gaierror, socket.herror,
                   urllib.error.URLError)
#: Names of parameters that switch pretraining on (``pretrained``, ``pretrained_backbone``,
#: ``use_pretrained``) and of those that name the weights to load (``weights``,
#: ``encoder_weights``, ``checkpoint``, ``ckpt_path``). ``init_weights=True`` or
#: ``use_checkpoint=True`` are flags of the architecture, not weights: only a name or path
#: default is taken from the second kind.
_PRETRAINED_NAME = re.compile(r"(^|_)pretrain(ed)?($|_)", re.IGNORECASE)
_WEIGHTS_NAME = re.compile(r"(^|_)(weights?|checkpoint|ckpt)($|_)", re.IGNORECASE)


def weights_off(cls: type, call: ModuleConfig, error: BaseException) -> dict[str, Any]:
    """The arguments that build ``cls`` without pretrained weights, when building it with
    ``call`` raised ``error`` because it tried to download them (or to read a checkpoint file
    a weights parameter's default names that is not there); empty when the error is another,
    the call is a factory's, or no weights parameter is left that ``call`` does not give."""
    if call.factory:
        return {}
    chosen = _weights_parameters(cls, len(call.args), set(call.kwargs))
    if not chosen or not (tried_download(error) or _missing_default_file(error, chosen)):
        return {}
    return {name: (False if default is True else None) for name, default in chosen.items()}


def tried_download(error: BaseException) -> bool:
    """Whether ``error``, or an exception it was raised from, is a failed download, or
    came from using the empty checkpoint a download was given (``weights``)."""
    for cause in _chain(error):
        if getattr(cause, EMPTY_CHECKPOINT_USED, False):
            return True
        if isinstance(cause, _NETWORK_ERRORS) or any(
                kind.__module__.split(".")[0] in _DOWNLOADERS for kind in type(cause).__mro__):
            return True
    return False


def download_note(cls: type, key: str, error: BaseException,
                  overrides: dict[str, Any]) -> str:
    """For a class whose build failed on a download: that workers make none, and what to
    configure instead; for one whose build without weights (``overrides``) failed otherwise,
    that ``error`` is that build's; empty for any other error."""
    if not tried_download(error):
        return "" if not overrides else (
            f" (That is the error of {cls.__name__}({_call(overrides)}): its defaults "
            "download pretrained weights, which fx-lsp's workers never do.)")
    names = _weights_parameters(cls, 0, set())
    call = _call({name: False if default is True else None for name, default in names.items()}) \
        if names else "..."
    return (f" Building {cls.__name__} needs a download, which fx-lsp's workers never make "
            f"(they have no network, by design). Give arguments that download nothing in "
            f'pyproject.toml: [tool.fx-lsp.modules."{key}"] call = "{cls.__name__}({call})", '
            f"or name a factory there that builds it without downloading.")


def offline_note(overrides: dict[str, Any]) -> str:
    """The capture note of an instance built with ``overrides`` instead of downloading."""
    return (f"Built with {_call(overrides)}: building it as called downloads pretrained "
            "weights, which fx-lsp's workers never do (they have no network); the "
            "instance checked has no pretrained weights.")


def _call(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{name}={value!r}" for name, value in kwargs.items())


def _weights_parameters(cls: type, positional: int, given: set[str]) -> dict[str, Any]:
    """Parameter -> default, for the constructor's parameters that choose pretrained weights
    and default to some, leaving out the first ``positional`` and those in ``given``."""
    try:
        parameters = list(inspect.signature(cls).parameters.values())
    except (TypeError, ValueError):
        return {}
    chosen = {}
    for index, parameter in enumerate(parameters):
        default = parameter.default
        if parameter.name in given or parameter.kind in (
                inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD) or (
                index < positional and parameter.kind != inspect.Parameter.KEYWORD_ONLY):
            continue
        switch = _PRETRAINED_NAME.search(parameter.name) and (
            default is True or _names_weights(default))
        if switch or (_WEIGHTS_NAME.search(parameter.name) and _names_weights(default)):
            chosen[parameter.name] = default
    return chosen


def _names_weights(default: Any) -> bool:
    """A default that names weights to load: a non-empty name or path, or an enum member
    (torchvision's ``ResNet18_Weights.DEFAULT``)."""
    return (isinstance(default, (str, os.PathLike)) and bool(os.fspath(default))) \
        or isinstance(default, enum.Enum)


def _missing_default_file(error: BaseException, chosen: dict[str, Any]) -> bool:
    """Whether ``error`` says a file a weights parameter's default names is not there."""
    paths = {os.fspath(default) for default in chosen.values()
             if isinstance(default, (str, os.PathLike))}
    return any(isinstance(cause, FileNotFoundError) and any(
        path and (path in str(cause.filename or "") or path in str(cause)) for path in paths)
        for cause in _chain(error))


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and the exceptions it was raised from or while handling, each once."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [error]
    while pending:
        cause = pending.pop()
        if cause is None or id(cause) in seen:
            continue
        seen.add(id(cause))
        yield cause
        pending += [cause.__cause__, cause.__context__]
