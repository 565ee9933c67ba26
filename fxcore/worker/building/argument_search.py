"""The search for constructor arguments a class accepts, after the name table's sets
(``fxcore.worker.building.arguments.candidate_calls``) were all rejected; and the argument
sets to try when an instance built on guesses does not fit the class.

Each rejection is read: the rules ``__init__`` checks and those the error's message states
(``fxcore.worker.building.init_checks``) are solved (``check_solver``), an ``'int' object is
not iterable`` asks for a tuple where an int was given (``annotation_values``), and the sets
that keep like arguments equal (every channel argument one value, every width one value) come
last. The sets are built one at a time, each rejection read again, at most ``MAX_SEARCHED``
of them and for at most ``SEARCH_SECONDS``. What was tried and why each was rejected is kept
for the class's note (``tried_text``).
"""

from __future__ import annotations

import inspect
import re
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from fxcore.worker.building.annotation_values import (
    CHANNEL_NAMES,
    WIDTH_NAMES,
    factory_values,
    init_calls,
    sequence_values,
    spatial_dims,
)
from fxcore.worker.building.arguments import annotation_of, config_instance, value_source
from fxcore.worker.building.check_solver import solutions
from fxcore.worker.building.init_checks import init_checks, message_rules
from fxcore.worker.job.job_context import describe_exception
from fxcore.worker.running.budget_clock import Budget

#: How many argument sets the search builds after the table's, and for how long at most (in
#: CPU time: ``fxcore.worker.running.budget_clock``).
MAX_SEARCHED = 6
SEARCH_SECONDS = 5.0
#: How many rejected sets a note lists.
MAX_LISTED = 4

_NONE_REFUSED = re.compile(r"'NoneType'|\bNone\b")
_NOT_A_SEQUENCE = re.compile(r"'(int|float|NoneType)' object (is not (iterable|subscriptable)"
                             r"|has no len)")

Instance = TypeVar("Instance")
Tried = list[tuple[dict[str, Any], BaseException]]


def searched_instance(cls: type, tried: Tried,
                      build: Callable[[dict[str, Any]], Instance | BaseException]
                      ) -> Instance | None:
    """The first instance ``build`` makes of the sets the search finds from the rejected
    sets ``tried`` (keyword arguments and the error, the table's first set first), or None;
    each set it builds and the constructor rejects is added to ``tried``."""
    if not tried:
        return None
    checks = init_checks(cls)
    fixed = constructor_defaults(cls)
    queue: list[dict[str, Any]] = []
    seen = [_spelled(kwargs) for kwargs, _ in tried]

    def read(kwargs: dict[str, Any], error: BaseException) -> None:
        found = solutions(checks, kwargs, fixed,
                          message_rules(describe_exception(error), kwargs),
                          [spatial_dims(kwargs)])
        found += _sequences_for(kwargs, error)
        found += _none_defaults_for(cls, kwargs, error)
        queue[:0] = found  # what the newest rejection asks for first
        queue.extend(consistent_sets(kwargs))

    read(*tried[0])
    searching = Budget(SEARCH_SECONDS)
    built = 0
    while queue and built < MAX_SEARCHED and not searching.over():
        kwargs = queue.pop(0)
        if _spelled(kwargs) in seen:
            continue
        seen.append(_spelled(kwargs))
        built += 1
        result = build(kwargs)
        if not isinstance(result, BaseException):
            return result
        tried.append((kwargs, result))
        read(kwargs, result)
    return None


#: A lone channel argument under this is tried at 32 and 64 too (``consistent_sets``).
LONE_CHANNELS_BELOW = 16


def consistent_sets(kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    """``kwargs`` with every channel argument made one value and every width one value
    (the largest of each), then both at 32 and at 64; a lone channel argument under 16 too
    (``in_channels=3``: a block that divides it, ``in_channels // reduction``, has a layer of
    no channel there); empty when there is nothing to make consistent."""
    channels = [n for n, v in kwargs.items() if CHANNEL_NAMES.fullmatch(n) and type(v) is int]
    widths = [n for n, v in kwargs.items() if WIDTH_NAMES.fullmatch(n) and type(v) is int]
    groups = [group for group in (channels, widths) if len(group) > 1]
    if len(channels) == 1 and kwargs[channels[0]] < LONE_CHANNELS_BELOW:
        groups.append(channels)
    if not groups:
        return []
    sets = []
    for value in (None, 32, 64):
        made = dict(kwargs)
        for group in groups:
            made.update(dict.fromkeys(group, value or max(kwargs[n] for n in group)))
        if made != kwargs and made not in sets:
            sets.append(made)
    return sets


def tried_text(class_name: str, tried: Tried) -> str:
    """The rejected sets, at most ``MAX_LISTED``, as calls with their errors."""
    shown = [f"{class_name}({_call(kwargs)}): {describe_exception(error)}"
             for kwargs, error in tried[:MAX_LISTED]]
    more = f"; and {len(tried) - MAX_LISTED} more" if len(tried) > MAX_LISTED else ""
    return "; ".join(shown) + more


def _sequences_for(kwargs: dict[str, Any], error: BaseException) -> list[dict[str, Any]]:
    """Where the error says a number is no sequence: each number argument in turn made a
    tuple (names that take one per dimension or stage first)."""
    if not _NOT_A_SEQUENCE.search(describe_exception(error)):
        return []
    names = [n for n, v in kwargs.items() if v is None or type(v) in (int, float)]
    names.sort(key=lambda n: not re.search(r"s$|size|shape|dims?$|levels|kernel", n))
    return [{**kwargs, name: sequence_values(name, kwargs[name], int, kwargs)[0]}
            for name in names]


def _none_defaults_for(cls: type, kwargs: dict[str, Any],
                       error: BaseException) -> list[dict[str, Any]]:
    """Where the error is about ``None`` (it was called, or an ``assert``/check refused it):
    the parameters left at a ``None`` default, given all at once a value the constructor
    needs there: a torch module class taking the sizes ``__init__`` calls it with
    (``norm_layer(planes)``: ``annotation_values.factory_values``), else an instance of the
    configuration class its annotation names (``layers: LayerFn = None`` then ``assert
    layers is not None``: ``arguments.config_instance``)."""
    if not (_NONE_REFUSED.search(describe_exception(error))
            or isinstance(error, AssertionError)):
        return []
    calls = init_calls(cls)
    try:
        parameters = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        return []
    namespace = dict(vars(sys.modules[cls.__module__])) if cls.__module__ in sys.modules \
        else {}
    given: dict[str, Any] = {}
    for name, parameter in parameters.items():
        if name in kwargs or parameter.default is not None:
            continue
        if name in calls:
            given[name] = factory_values(calls[name], kwargs)[0]
        elif (config := config_instance(annotation_of(parameter, namespace), "",
                                        namespace)) is not None:
            given[name] = config
    return [{**kwargs, **given}] if given else []


def constructor_defaults(cls: type) -> dict[str, Any]:
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


def _spelled(kwargs: dict[str, Any]) -> dict[str, str]:
    return {name: value_source(value) for name, value in kwargs.items()}


def _call(kwargs: dict[str, Any]) -> str:
    return ", ".join(f"{name}={source}" for name, source in _spelled(kwargs).items())
