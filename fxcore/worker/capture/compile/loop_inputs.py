"""What the compile mode's loop of calls (``recompile_loop``) changes between calls, and how a
guard about it is told apart: a ``Subject`` (a dimension, a number argument, a container's
length), the calls with new sizes of each dimension (``new_sizes``) and new values of each
number (``new_values``)."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch

from fxcore.model.results import RecompileSubject
from fxcore.worker.source.locate import RawPosition


class Observer(Protocol):
    """What ``new_sizes`` reads of ``recompile_loop.Observer``: the graphs compiled so far,
    where each compile pinned a size, and whether a resumed frame was compiled."""

    compiles: int
    specialised: dict[str, list[RawPosition]]
    other_frames: bool


@dataclass
class Subject:
    """What a phase changes: as the message names it, as dynamo names its source, and the
    patterns a guard about it matches (``'x'`` and ``index 1``; ``steps`` and ``==``, which
    torch 2.10 words ``___as_tensor(steps).item() == 3``)."""

    described: str
    source: str
    patterns: tuple[str, ...]
    #: What changes, as a hint tells the quick fixes (``Hint.recompile``).
    about: RecompileSubject
    #: Where the code uses what changes, if known: the place when the guard names none.
    used: list[RawPosition] = field(default_factory=list)
    #: The sources of what changes with it (the same dimension of other tensors of its size).
    together: tuple[str, ...] = ()

    def guarded(self, reason: str) -> bool:
        first = reason.split("\n", 1)[0]
        return any(source in first for source in (self.source, *self.together)) or all(
            re.search(pattern, first) for pattern in self.patterns)

    def pinned(self, specialised: dict[str, list[RawPosition]]) -> list[RawPosition] | None:
        """Where a compile pinned what changes (``Observer.specialised``), if it did."""
        return next((specialised[source] for source in (self.source, *self.together)
                     if source in specialised), None)


def new_sizes(tensors: dict[str, Any], values: dict[str, Any], observer: Observer
               ) -> Iterator[tuple[Subject, list[tuple[dict[str, Any], dict[str, Any]]]]]:
    """For the batch (dimension 0 of the first tensor and of every tensor of its size there)
    and then each other dimension of each tensor (dimension 0 of one of another size: the
    steps of ``for step in x`` beside a state; with the same dimension of the others of the
    same size): three calls with new sizes.

    The first new batch also has every other dimension marked dynamic
    (``torch._dynamo.maybe_mark_dynamic``, which lets torch specialise those the code needs
    fixed): where that call compiled, a dimension it left symbolic is not specialised by the
    code, a new size of it costs one recompilation at most, and its three calls are not made.
    Only the dimensions it pinned (``Eq(s, n)``) are tried."""
    plain = {name: tensor for name, tensor in tensors.items()
             if isinstance(tensor, torch.Tensor) and tensor.dim() > 0}
    mark = getattr(torch._dynamo, "maybe_mark_dynamic", None)
    batch = next(((name, 0) for name in plain), None)
    places = [batch] if batch is not None else []
    places += [(name, dim) for name, tensor in plain.items() for dim in range(tensor.dim())
               if (name, dim) != batch]
    marked_compile: int | None = None
    tried: set[tuple[str, int]] = set()
    for name, dim in places:
        source = f"L['{name}'].size()[{dim}]"
        if (name, dim) in tried or ((name, dim) != batch and marked_compile is not None
                                    and observer.compiles > marked_compile
                                    and source not in observer.specialised
                                    and not observer.other_frames):
            continue
        size = plain[name].shape[dim]
        together = [other for other, tensor in plain.items()
                    if tensor.dim() > dim and tensor.shape[dim] == size]
        tried.update((other, dim) for other in together)
        calls = []
        # Where a frame resumed after a break may take a number computed from the size (a
        # grid of ``size // 4``), steps of a whole size change it as an image size does.
        step = max(size, 1) if (name, dim) != batch and observer.other_frames else 1
        for new in (size + step, size + 2 * step, size + 3 * step):
            changed = dict(tensors)
            for other, tensor in plain.items():
                shape = list(tensor.shape)
                if other in together:
                    shape[dim] = new
                if other in together or ((name, dim) == batch and not calls and mark):
                    changed[other] = torch.ones(shape, dtype=tensor.dtype, device=tensor.device)
            if (name, dim) == batch and not calls and mark is not None:
                for other in plain:
                    for marked in range(0 if other not in together else 1, changed[other].dim()):
                        mark(changed[other], marked)
                marked_compile = observer.compiles
            calls.append((changed, dict(values)))
        # Named by its place, not its role: dimension 0 is not always the batch (the steps of
        # ``for step in x``).
        others = ", ".join(f"`{other}`" for other in together if other != name)
        what = f"dimension {dim} of `{name}`" + (f" (and of {others})" if others else "")
        # A guard about any of the tensors changed together (dynamo checks them in its order).
        names = "|".join(re.escape(other) for other in together)
        yield Subject(what, source, (f"'(?:{names})'", rf"index {dim}\b"),
                      RecompileSubject("size", name, dim), together=tuple(
                          f"L['{other}'].size()[{dim}]" for other in together
                          if other != name)), calls


def number_arguments(model: torch.nn.Module, given: dict[str, Any]) -> dict[str, int | float]:
    """``forward``'s Python numbers (not booleans): those given, and the defaults of the rest."""
    numbers = {name: value for name, value in given.items()
               if isinstance(value, (int, float)) and not isinstance(value, bool)}
    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return numbers
    for parameter in parameters:
        default = parameter.default
        if (parameter.name not in numbers and isinstance(default, (int, float))
                and not isinstance(default, bool)):
            numbers[parameter.name] = default
    return numbers


def new_values(value: int | float) -> list[int | float]:
    """Three new values of a number (ints stay ints, past 0 and 1, which torch always
    specialises)."""
    if isinstance(value, int):
        return [max(value, 1) + step for step in (1, 2, 3)]
    return [value * factor + 0.25 for factor in (1.5, 2.5, 3.5)]


def number_subject(name: str) -> Subject:
    return Subject(f"argument `{name}`", f"L['{name}']",
                   (rf"(?<![\w.]){re.escape(name)}\b", "=="), RecompileSubject("number", name))


def length_subject(name: str, used: list[RawPosition]) -> Subject:
    return Subject(f"`{name}`", f"len(L['{name}'])",
                   (rf"len\((?:L\['{re.escape(name)}'\]|{re.escape(name)})\)",),
                   RecompileSubject("length", name), used)


def loader_calls(tensors: dict[str, Any], values: dict[str, Any],
                 numbers: dict[str, int | float], containers: dict[str, list[RawPosition]]
                 ) -> tuple[list[tuple[str, Subject]], list[tuple[dict[str, Any], dict[str, Any]]]]:
    """Three calls as a loader of variable-length batches makes them: each a new batch size and,
    together, a new value of each size that a number argument or a container's length shares
    with a dimension of a tensor or with each other (``forward(x, length)`` with ``x`` of
    ``length`` steps; a list of steps beside a mask of as many columns), which the loop's other
    phases, changing one at a time, give ``forward`` in combinations it refuses. With the
    subjects whose guards tell a recompilation apart, numbers first, then lengths, then
    dimensions (kinds ``every-number``, ``every-length``, ``every-size``); none where no
    number or container shares its size."""
    lengths = {name: len(tensors[name]) for name in containers
               if isinstance(tensors.get(name), (list, tuple))}
    shared = {value for value in [*numbers.values(), *lengths.values()]
              if isinstance(value, int) and value >= 2}
    plain = {name: tensor for name, tensor in tensors.items()
             if isinstance(tensor, torch.Tensor) and tensor.dim() > 0}
    dims = {(name, dim): tensor.shape[dim] for name, tensor in plain.items()
            for dim in range(1, tensor.dim()) if tensor.shape[dim] in shared}
    sizes = [*numbers.values(), *lengths.values(), *dims.values()]
    groups = {size for size in shared if sizes.count(size) >= 2}
    if not groups:
        return [], []
    batch = next((tensor.shape[0] for tensor in plain.values()), None)
    subjects = [("every-number", number_subject(name)) for name, value in numbers.items()
                if value in groups]
    subjects += [("every-length", length_subject(name, containers[name]))
                 for name, length in lengths.items() if length in groups]
    subjects += [("every-size", Subject(f"dimension {dim} of `{name}`",
                                        f"L['{name}'].size()[{dim}]",
                                        (re.escape(f"'{name}'"), rf"index {dim}\b"),
                                        RecompileSubject("size", name, dim)))
                 for (name, dim), size in dims.items() if size in groups]
    calls = []
    for step in (1, 2, 3):
        def resized(tensor: torch.Tensor, step: int = step) -> torch.Tensor:
            shape = [size + step if (dim == 0 and size == batch) or (
                dim > 0 and size in groups) else size for dim, size in enumerate(tensor.shape)]
            return torch.ones(shape, dtype=tensor.dtype, device=tensor.device)

        changed = {name: resized(tensor) if isinstance(tensor, torch.Tensor) else tensor
                   for name, tensor in tensors.items()}
        for name, length in lengths.items():
            items = [resized(item) for item in tensors[name]]
            grown = [*items, *(items[-1].clone() for _ in range(step))] \
                if length in groups else items
            changed[name] = type(tensors[name])(grown)
        numbered = {name: value + step if value in groups else value
                    for name, value in numbers.items()}
        calls.append((changed, {**values, **numbered}))
    return subjects, calls
