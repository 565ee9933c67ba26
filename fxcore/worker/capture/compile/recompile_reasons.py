"""What dynamo says about a recompilation, read from its own texts: the reason a cached frame's
guards failed (``guard_fail_fn``'s ``GuardFail.reason``, as ``TORCH_LOGS=recompiles`` prints it:
``0/3: self.step == 3  # self.step += 1  # m.py:9 in forward (HINT: ...)`` and, where torch
has it, ``User stack trace:`` with the user's frames), and the line where a compile specialised
a dimension or a number (the ``Eq(s1, 9)`` guards of its ``ShapeEnv``, each with the user's
line, which the ``dynamic`` log prints as ``[guard added]``)."""

from __future__ import annotations

import re
import sys
from typing import Any

from fxcore.worker.source.locate import RawPosition

_COMPILE_ID = re.compile(r"^\[?(\d+)/(\d+)\]?: ")
_USER_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')
#: ``code  # file:line in function`` (the user location of a ``ShapeEnv`` guard; torch shortens
#: the file's path to its end; a resumed frame's guard adds torch's own place after it).
_SHORT_LOCATION = re.compile(r"#\s*(\S+\.py):(\d+) in (\S+)(?:\s|$)")


def compile_id(reason: str) -> tuple[int, int] | None:
    """``(frame, recompile)`` of the cache entry a reason is about (``0/3`` -> ``(0, 3)``)."""
    match = _COMPILE_ID.match(reason)
    return (int(match[1]), int(match[2])) if match else None


def guard_words(reason: str) -> str:
    """The failed guard as PyTorch words it, its hint included, without the cache entry's id,
    the source comment (the diagnostic is at that line) or the stack."""
    first = _COMPILE_ID.sub("", reason.split("\nUser stack trace:", 1)[0]).strip()
    guard, _, rest = first.partition("#")
    hint = re.search(r"\(HINT: .*\)\s*$", rest)
    return " ".join(guard.split()) + (f" {hint[0].strip()}" if hint else "")


#: A path of submodules from ``self`` as dynamo words it across torch 2.10-2.15
#: (``self._modules['block']._modules['head']``, ``L['self'].head``).
_PATH = r"(?:L\['self'\]|self)((?:\._modules\['\w+'\]|\.\w+)+)"
#: A type or identity guard on a submodule attribute (``___check_type_id(self._modules['head'],
#: ...)``, ``___check_obj_id(L['self'].head, ...)``): the variants differ in type, or are
#: modules dynamo guards by identity.
_TYPE_OR_ID = re.compile(rf"___check_(?:type|obj)_id\(\s*{_PATH}\s*,")
#: The guard of an identity test on a submodule (``self._modules['head'] is
#: self._modules['shallow']``, from ``self.head is self.shallow`` in ``forward``): variants of
#: one type, whatever their structure, fail it first.
_IS = re.compile(r"^\s*(?:L\['self'\]|self)((?:\._modules\['\w+'\])+)\s+is\s+(?:not\s+)?"
                 r"(?:L\['self'\]|self)\._modules\[")
_STEP = re.compile(r"\._modules\['(\w+)'\]|\.(\w+)")


def swapped_module(reason: str) -> str | None:
    """The submodule attribute (``head``, ``block.head`` for one of a submodule's) whose type
    or identity guard ``reason`` is, if any."""
    first = _COMPILE_ID.sub("", reason.split("\n", 1)[0])
    match = _TYPE_OR_ID.search(first) or _IS.match(first)
    if match is None:
        return None
    return ".".join(step[0] or step[1] for step in _STEP.findall(match[1]))


def user_stack(reason: str) -> list[RawPosition]:
    """The user's frames torch gives with a reason, outermost first (none for a guard on a
    tensor's sizes or type, which has no line of its own). A torch that gives no ``User stack
    trace`` (2.10) names the guard's line in its comment (``# self.step += 1  # m.py:9 in
    forward``): that one frame."""
    first, _, stack = reason.partition("User stack trace:")
    frames = [RawPosition(file, function, int(line), None, None, None)
              for file, line, function in _USER_FRAME.findall(stack)]
    if frames:
        return frames
    located = _short_location(first.split("(HINT:", 1)[0].strip())
    return [located] if located is not None else []


def specialisations(shape_env: Any) -> dict[str, list[RawPosition]]:
    """Source (``L['x'].size()[1]``, ``L['steps']``) -> the user's line where this compile
    pinned its symbol to one value; empty where ``ShapeEnv`` lacks what is read here."""
    found: dict[str, list[RawPosition]] = {}
    sources = getattr(shape_env, "var_to_sources", None) or {}
    for guard in getattr(shape_env, "guards", None) or ():
        expr, location = getattr(guard, "expr", None), getattr(
            getattr(guard, "sloc", None), "maybe_user_loc", None)
        if not (getattr(expr, "is_Equality", False) and isinstance(location, str)):
            continue
        symbols = [arg for arg in expr.args if getattr(arg, "is_Symbol", False)]
        if len(symbols) != 1 or not any(getattr(arg, "is_Number", False) for arg in expr.args):
            continue
        position = _short_location(location)
        for source in sources.get(symbols[0], ()) if position is not None else ():
            # ``Source.name`` is a property in torch 2.13, a method before.
            name = getattr(source, "name", str(source))
            found.setdefault(name() if callable(name) else str(name), [position])
    return found


def _short_location(location: str) -> RawPosition | None:
    """The frame a shortened ``file:line in function`` names: the loaded module's file that
    ends so (torch keeps only the end of the path)."""
    match = _SHORT_LOCATION.search(location)
    if match is None:
        return None
    tail, line, function = match[1], int(match[2]), match[3]
    files = {getattr(module, "__file__", None) for module in list(sys.modules.values())}
    path = next((file for file in files if isinstance(file, str) and file.endswith(tail)), None)
    return RawPosition(path, function, line, None, None, None) if path else None
