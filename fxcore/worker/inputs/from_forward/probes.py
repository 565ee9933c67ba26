"""Example inputs learned by running ``forward`` on recording stand-ins, where no other
source gives any: each argument starts as a stand-in (``probe_values``) that records how it
is used, a dict for one read by string keys, a sequence for one indexed by integers, iterated
or measured, an object for one whose attributes are read, a tensor for one that reaches a
tensor operation. Tensors are then given as fake tensors whose every size is a symbol
(``symbolic_sizes.solved_sizes``), so that the operations that take them fix their sizes, as
for plain tensor arguments; an embedding that takes one (after a slice too) makes it indices.

The run repeats while it learns something (at most ``MAX_ROUNDS`` runs, ``MAX_SECONDS``
seconds): a new key, item or tensor; where it learns nothing and fails, the next ranks of its
tensors are tried (those an operation said first, then 4, 3, 2). The inputs found are
accepted only when the model runs on them eagerly, as every inferred input is. Each
argument's way of being found is kept (``LayerInputs.found_by``) for the report.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from fxcore.model.container_spec import ContainerSpec, InputSpec
from fxcore.model.results import InstantiatedOn
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.from_forward.probe_values import (
    INDEX_OPERATIONS,
    Known,
    Learned,
    Path,
    Probe,
    ProbeDict,
    ProbeList,
    ProbeObject,
    Recorder,
)
from fxcore.worker.inputs.from_forward.symbolic_sizes import solved_sizes, unavailable
from fxcore.worker.inputs.from_layers.first_layer import (
    LayerInputs,
    eager_error_before,
    required_arguments,
)
from fxcore.worker.meta.values_read import read_note
from fxcore.worker.running.budget_clock import Budget

#: The most seconds the search takes, and the most runs of ``forward`` it makes.
MAX_SECONDS = 10.0
MAX_ROUNDS = 24
#: Ranks tried for a tensor no operation said the rank of, in order.
RANKS = (4, 3, 2)
#: The most rank layouts tried once the structure is learned.
MAX_LAYOUTS = 12


def probed_inputs(cls: type, model: nn.Module, instantiated_on: InstantiatedOn,
                  concrete_args: dict[str, object], seconds: float) -> LayerInputs | None:
    """Inputs for ``forward``'s required arguments learned from how it uses stand-ins for
    them, which the model runs on; None where none are found within the bounds."""
    required = required_arguments(cls, concrete_args)
    if not required or unavailable() is not None:
        return None
    deadline = Budget(min(seconds, MAX_SECONDS))
    recorder = Recorder()
    tried: set[tuple[tuple[Path, int], ...]] = set()
    ranks: dict[Path, int] = {}
    watched = _Watched(model, recorder)
    for _ in range(MAX_ROUNDS):
        if deadline.left() <= 0:
            return None
        version = recorder.version
        ranks = _ranks(recorder, ranks, tried)
        leaves: dict[int, Path] = {}
        watched.leaves = leaves
        try:
            sizes = solved_sizes(watched, instantiated_on, concrete_args, deadline,
                                 lambda size, device, shown=dict(ranks), kept=leaves: {
                                     name: _value((name,), recorder, shown, size, device, kept)
                                     for name in required})
        except Learned:
            continue
        if recorder.version != version:
            continue  # a key, an item or a dtype learned: run again with it
        tried.add(_layout(ranks))
        if sizes is None:
            if _next_layout(recorder, tried) is None:
                return None
            continue
        specs = _specs(required, recorder, ranks, sizes)
        if specs is None:
            return None  # deeper than a container of tensors: no spec spells it
        ran = eager_error_before(deadline, model, instantiated_on, specs, concrete_args)
        if ran is None:
            return None
        if not isinstance(ran, Exception):
            found_by = {name: _how(recorder, (name,)) for name in required}
            said = "; ".join(f"{name} {how}" for name, how in found_by.items())
            return LayerInputs(specs, f"learned by running forward on recording stand-ins "
                                      f"({said}), sizes solved over symbolic sizes, which "
                                      f"{cls.__name__} runs on{read_note(ran)}",
                               found_by=found_by)
        if _next_layout(recorder, tried) is None:
            return None
    return None


class _Watched(nn.Module):
    """The model, run under a mode that turns a float tensor an index operation takes (an
    embedding's input, after a slice too) into indices where it is one of the leaves given."""

    def __init__(self, model: nn.Module, recorder: Recorder) -> None:
        super().__init__()
        self.model = model
        self.recorder = recorder
        self.leaves: dict[int, Path] = {}

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        with _IndexWatch(self.recorder, self.leaves):
            return self.model(*args, **kwargs)


class _IndexWatch(TorchFunctionMode):
    def __init__(self, recorder: Recorder, leaves: dict[int, Path]) -> None:
        super().__init__()
        self.recorder, self.leaves = recorder, leaves

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", "")
        first = args[0] if args else None
        if name in INDEX_OPERATIONS and isinstance(first, torch.Tensor) \
                and first.is_floating_point():
            base = first._base if first._base is not None else first
            path = self.leaves.get(id(base))
            if path is not None:
                self.recorder.tensor(path, f"torch's {name}", dtype=torch.int64)
        return func(*args, **(kwargs or {}))


def _value(path: Path, recorder: Recorder, ranks: dict[Path, int],
           size: Callable[[Any], Any], device: torch.device, leaves: dict[int, Path]) -> Any:
    """What stands for ``path`` in a run: a stand-in while nothing is known of it, else the
    container or the fake tensor of symbolic sizes it is known to be."""
    known = recorder.known.get(path)
    if known is None:
        return Probe(path, recorder)
    if known.kind == "tensor":
        made = torch.empty([size((*path, dim)) for dim in range(ranks[path])],
                           dtype=known.dtype, device=device)
        leaves[id(made)] = path
        return made
    if known.kind == "list":
        return ProbeList(path, recorder, [_value((*path, index), recorder, ranks, size, device,
                                                 leaves) for index in range(known.count)])
    items = {key: _value((*path, key), recorder, ranks, size, device, leaves)
             for key in known.keys}
    return (ProbeDict if known.kind == "dict" else ProbeObject)(path, recorder, items)


def _choices(known: Known) -> list[int]:
    return list(dict.fromkeys([*([known.rank] if known.rank else []), *RANKS]))


def _tensors(recorder: Recorder) -> list[Path]:
    return [path for path, known in recorder.known.items() if known.kind == "tensor"]


def _layout(ranks: dict[Path, int]) -> tuple[tuple[Path, int], ...]:
    return tuple(sorted(ranks.items(), key=repr))


def _next_layout(recorder: Recorder, tried: set[tuple[tuple[Path, int], ...]]
                 ) -> dict[Path, int] | None:
    """The likeliest ranks for the tensors learned not yet tried: those with the fewest
    departures from each one's first choice first."""
    paths = _tensors(recorder)
    rows = itertools.product(*(list(enumerate(_choices(recorder.known[p]))) for p in paths))
    for row in sorted(itertools.islice(rows, 256), key=lambda r: sum(i for i, _ in r)):
        ranks = {path: rank for path, (_, rank) in zip(paths, row, strict=True)}
        if _layout(ranks) not in tried:
            return ranks if len(tried) < MAX_LAYOUTS else None
    return None


def _ranks(recorder: Recorder, ranks: dict[Path, int],
           tried: set[tuple[tuple[Path, int], ...]]) -> dict[Path, int]:
    """The ranks of the next run: those kept, a new tensor's first choice (an operation's
    rank, learned after its first run, replacing the default), the next layout after a
    layout failed."""
    current = {path: (ranks[path] if path in ranks and recorder.known[path].rank in
                      (None, ranks[path]) else _choices(recorder.known[path])[0])
               for path in _tensors(recorder)}
    if _layout(current) in tried:
        return _next_layout(recorder, tried) or current
    return current


def _specs(names: list[str], recorder: Recorder, ranks: dict[Path, int],
           sizes: dict[Any, int]) -> dict[str, InputSpec] | None:
    """Each argument's spec: a tensor, or a dict, list or tuple of tensors; None where an
    argument is something else (an object, a container of containers)."""
    specs: dict[str, InputSpec] = {}
    for name in names:
        known = recorder.known.get((name,))
        if known is None:
            return None  # never used: nothing tells what it is
        if known.kind == "tensor":
            specs[name] = _tensor((name,), known, ranks, sizes)
            continue
        if known.kind == "object":
            return None
        keys = known.keys if known.kind == "dict" else list(range(known.count))
        items = [((name, key), recorder.known.get((name, key))) for key in keys]
        if any(item is None or item.kind != "tensor" for _, item in items):
            return None
        specs[name] = ContainerSpec("dict" if known.kind == "dict" else "list", tuple(
            (str(path[-1]), _tensor(path, item, ranks, sizes)) for path, item in items
            if item is not None))
    return specs


def _tensor(path: Path, known: Known, ranks: dict[Path, int], sizes: dict[Any, int]
            ) -> TensorSpec:
    return TensorSpec(str(known.dtype).removeprefix("torch."),
                      tuple(sizes[(*path, dim)] for dim in range(ranks[path])))


def _how(recorder: Recorder, path: Path) -> str:
    """How ``path`` was found, in words."""
    known = recorder.known[path]
    if known.kind == "tensor":
        return f"a tensor (from {known.use})"
    if known.kind == "list":
        return f"a list of {known.count} (from {known.use}) of " + ", ".join(
            _how(recorder, (*path, index)) for index in range(known.count))
    if not known.keys:
        return f"an empty dict (from {known.use})"
    return (f"a dict read by keys {', '.join(map(repr, known.keys))}" + ": " + ", ".join(
        f"{key!r} {_how(recorder, (*path, key))}" for key in known.keys))
