"""Recording stand-ins for ``forward``'s arguments (``probes``): each use of one says what the
argument is. Read by string keys (``batch["ids"]``, ``batch.get("mask")``, ``"ids" in batch``)
it is a dict; indexed by integers, sliced, iterated or measured with ``len`` a sequence; read
by an attribute a tensor lacks (``batch.pixel_values``) an object; reached by a tensor
operation (a layer, ``torch.cat``, ``x.shape``, arithmetic, an index by a tuple) a tensor,
with the rank and dtype the operation says where it does (``conv2d``: 4; ``embedding``:
indices). A stand-in returns a stand-in for each item it gives, so one run learns a whole
container; reaching a tensor operation ends the run (``Learned``), as nothing can stand in
for a tensor's values.

What is learned is kept by path, from the argument's name (``("batch", "ids")``); once a path
is known to be a container it is given as one whose unknown items are stand-ins again
(``ProbeDict``, ``ProbeList``, ``ProbeObject``), so a later run learns the keys it reads
after the first. Nothing here runs ``forward``: ``probes`` does.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

#: One argument's path: its name, then the keys, indices and attributes that lead inside it.
Path = tuple[Any, ...]
Kind = Literal["tensor", "dict", "list", "object"]
#: Items a sequence gives before any index says how many it holds.
DEFAULT_ITEMS = 2
#: The rank a tensor operation takes its first argument at, by the operation's name.
RANK_OF_OPERATION = {"conv1d": 3, "conv2d": 4, "conv3d": 5, "conv_transpose1d": 3,
                     "conv_transpose2d": 4, "conv_transpose3d": 5, "max_pool1d": 3,
                     "max_pool2d": 4, "avg_pool1d": 3, "avg_pool2d": 4, "embedding": 2, "linear": 2}
#: Operations whose first argument holds indices.
INDEX_OPERATIONS = frozenset({"embedding", "embedding_bag", "one_hot"})
#: A dict's methods that read it by key or as a whole.
DICT_METHODS = frozenset({"get", "keys", "items", "values", "pop"})


class Learned(BaseException):
    """A stand-in reached a tensor operation: the run ends, its path now known a tensor.
    A BaseException so that ``forward``'s own ``except Exception`` does not swallow it."""


@dataclass
class Known:
    """What a path is known to be."""

    kind: Kind
    #: A dict's keys or an object's attributes, in the order read.
    keys: list[str] = field(default_factory=list)
    #: How many items a sequence holds.
    count: int = DEFAULT_ITEMS
    #: A tensor's rank as an operation took it (None: no operation said), and its dtype.
    rank: int | None = None
    dtype: torch.dtype = torch.float32
    #: The use it was learned from, in words.
    use: str = ""


@dataclass
class Recorder:
    """Everything learned so far, and how many facts (``version`` grows with each)."""

    known: dict[Path, Known] = field(default_factory=dict)
    version: int = 0

    def learn(self, path: Path, kind: Kind, use: str) -> Known:
        """``path`` is of ``kind``: a tensor overrides a sequence (a tensor has a length and
        items too), any other kind stays as first learned."""
        current = self.known.get(path)
        if current is None or (kind == "tensor" and current.kind == "list"):
            current = self.known[path] = Known(kind, use=use)
            self.version += 1
        return current

    def key(self, path: Path, kind: Kind, key: str, use: str) -> None:
        known = self.learn(path, kind, use)
        if known.kind == kind and key not in known.keys:
            known.keys.append(key)
            self.version += 1

    def items(self, path: Path, count: int, use: str) -> Known:
        known = self.learn(path, "list", use)
        if known.kind == "list" and count > known.count:
            known.count = count
            self.version += 1
        return known

    def tensor(self, path: Path, use: str, rank: int | None = None,
               dtype: torch.dtype | None = None) -> Learned:
        """Record ``path`` as a tensor, and the end of the run that found it."""
        known = self.learn(path, "tensor", use)
        if known.kind == "tensor":
            if rank is not None and known.rank is None:
                known.rank = rank
                self.version += 1
            if dtype is not None and known.dtype != dtype:
                known.dtype = dtype
                self.version += 1
        return Learned(path)


class Probe:
    """A stand-in for the value at ``path``, recording each use to ``recorder``."""

    def __init__(self, path: Path, recorder: Recorder) -> None:
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_recorder", recorder)

    def __repr__(self) -> str:
        return f"<stand-in for {'.'.join(map(str, self._path))}>"

    def _child(self, key: Any) -> Probe:
        return Probe((*self._path, key), self._recorder)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        if name in DICT_METHODS:
            self._recorder.learn(self._path, "dict", f"its .{name}()")
            return getattr(ProbeDict(self._path, self._recorder, {}), name)
        if hasattr(torch.Tensor, name):
            raise self._recorder.tensor(self._path, f"its tensor attribute .{name}")
        self._recorder.key(self._path, "object", name, f"its attribute .{name}")
        return self._child(name)

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            self._recorder.key(self._path, "dict", key, f"its key {key!r}")
            return self._child(key)
        if isinstance(key, int) and not isinstance(key, bool):
            count = key + 1 if key >= 0 else -key
            self._recorder.items(self._path, count, f"its index [{key}]")
            return self._child(key % max(count, DEFAULT_ITEMS) if key < 0 else key)
        if isinstance(key, slice):
            known = self._recorder.items(self._path, DEFAULT_ITEMS, "a slice of it")
            return [self._child(index) for index in range(known.count)][key]
        raise self._recorder.tensor(self._path, f"an index by {type(key).__name__}")

    def __iter__(self) -> Any:
        known = self._recorder.items(self._path, DEFAULT_ITEMS, "iterating it")
        return iter([self._child(index) for index in range(known.count)])

    def __len__(self) -> int:
        return self._recorder.items(self._path, DEFAULT_ITEMS, "its len()").count

    def __bool__(self) -> bool:
        return True  # ``if mask:`` of a given argument: says nothing of its kind

    def __contains__(self, key: Any) -> bool:
        self._recorder.learn(self._path, "dict", f"a test of {key!r} in it")
        return False

    @classmethod
    def __torch_function__(cls, func: Any, types_: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", str(func))
        leaves = torch.utils._pytree.tree_leaves((args, kwargs or {}))
        probes = [leaf for leaf in leaves if isinstance(leaf, Probe)]
        first = args[0] if args else None
        for probe in probes:
            taken_first = probe is first
            raise probe._recorder.tensor(
                probe._path, f"torch's {name}",
                RANK_OF_OPERATION.get(name) if taken_first else None,
                torch.int64 if taken_first and name in INDEX_OPERATIONS else None)
        return NotImplemented


def _arithmetic(name: str) -> Any:
    def used(self: Probe, *_: Any) -> Any:
        raise self._recorder.tensor(self._path, f"arithmetic ({name})")
    return used


for _name in ("add", "radd", "sub", "rsub", "mul", "rmul", "truediv", "rtruediv", "matmul",
              "rmatmul", "pow", "neg", "floordiv", "lt", "gt", "le", "ge"):
    setattr(Probe, f"__{_name}__", _arithmetic(_name))


class ProbeDict(dict):  # type: ignore[type-arg]
    """A dict known by the keys read so far: a key not yet given is learned, and a stand-in
    for its value returned."""

    def __init__(self, path: Path, recorder: Recorder, items: dict[str, Any]) -> None:
        super().__init__(items)
        self._path, self._recorder = path, recorder

    def __missing__(self, key: Any) -> Any:
        if not isinstance(key, str):
            raise KeyError(key)
        self._recorder.key(self._path, "dict", key, f"its key {key!r}")
        return Probe((*self._path, key), self._recorder)

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if isinstance(key, str) else default


class ProbeList(list):  # type: ignore[type-arg]
    """A sequence of the items known so far: an index past them is learned."""

    def __init__(self, path: Path, recorder: Recorder, items: list[Any]) -> None:
        super().__init__(items)
        self._path, self._recorder = path, recorder

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, int) and not (-len(self) <= key < len(self)):
            self._recorder.items(self._path, key + 1 if key >= 0 else -key, f"its index [{key}]")
            return Probe((*self._path, key), self._recorder)
        return super().__getitem__(key)


class ProbeObject(types.SimpleNamespace):
    """An object of the attributes known so far: one not yet given is learned."""

    def __init__(self, path: Path, recorder: Recorder, items: dict[str, Any]) -> None:
        super().__init__(**items)
        object.__setattr__(self, "_probe_path", (path, recorder))

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_probe_path":
            raise AttributeError(name)
        path, recorder = object.__getattribute__(self, "_probe_path")
        recorder.key(path, "object", name, f"its attribute .{name}")
        return Probe((*path, name), recorder)
