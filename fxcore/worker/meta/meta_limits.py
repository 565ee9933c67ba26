"""Where a capture on the meta device meets what only real data answers (FX404 under export,
FX503 under compile): fx-lsp builds a class without its weights, on the meta device, and runs
``forward`` on tensors without data, where real torch runs the class on the CPU with real
weights and inputs. An error that says the meta device lacks something real CPU tensors have
is no verdict about the code: the class is "not checked" from that line.

What counts, as torch 2.13 says it (each found by running the operator on meta tensors, and on
the CPU with real tensors, where it runs):

- an operator without a meta kernel: ``NotImplementedError`` "aten::geqrf: attempted to run
  this operator with Meta tensors, but there was no fake impl or Meta kernel registered"
  (torch's ``MetaFallbackKernel``; older releases said "Could not run 'aten::geqrf' with
  arguments from the 'Meta' backend"), when the dispatcher has a CPU kernel for it: on the
  CPU it runs, and dynamo's and torch.export's fake CPU tensors run that kernel too. Without a
  CPU kernel (a CUDA-only operator) real CPU torch fails as well.
- a meta tensor's values, which a meta tensor does not have: ``int(t)``/``float(t)`` ("Tensor.
  item() cannot be called on meta tensors"), a copy to the CPU ("Cannot copy out of meta
  tensor; no data!"), ``repeat_interleave`` of counts ("cannot repeat_interleave a meta tensor
  without output_size"), ``nonzero`` ("The register_meta function for torch.nonzero() raises
  unimplemented").
- a meta tensor beside CPU ones ("Expected all tensors to be on the same device, but found at
  least two devices, cpu and meta!"): one fx-lsp could not fake as a CPU tensor (held in a
  list, say), or a CPU tensor the code makes meeting meta inputs.

Not counted, because real torch on the CPU raises them too (so they stay FX499/FX502): a
``torch.library.custom_op`` without ``register_fake`` ("There was no fake impl registered"),
fake tensors' ``UnsupportedOperatorException`` (an operator outside torch's namespaces without
a fake implementation, or any operator without a meta kernel on symbolic sizes),
``DataDependentOutputException`` and ``DynamicOutputShapeException`` (torch.export raises them
on the fake CPU tensors it makes of real inputs; dynamo makes them graph breaks on either
device). None of these needs torch's private exception classes: the messages and the
dispatcher's kernel table decide.

The messages are torch's own and may change between releases: an error no pattern matches
stays FX499/FX502, as before this module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import torch

from fxcore.model.results import Failure
from fxcore.worker.job.capture_target import CaptureTarget

#: torch's error when an operator has no meta kernel, naming the operator.
_NO_META_KERNEL = (
    re.compile(r"^(?P<op>[\w.]+::[\w.]+): attempted to run this operator with Meta tensors"),
    re.compile(r"Could not run '(?P<op>[\w.]+::[\w.]+)' with arguments from the 'Meta' backend"),
)
#: torch's error where an operation needs a meta tensor's values -> what the line does.
_NO_DATA = {
    "Tensor.item() cannot be called on meta tensors":
        "reads a tensor's value as a Python number",
    "Cannot copy out of meta tensor; no data!": "copies a tensor's data to the CPU",
    "cannot repeat_interleave a meta tensor without output_size":
        "repeats elements by counts held in a tensor",
    "register_meta function for torch.nonzero()": "finds the nonzero elements of a tensor",
}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
#: A device mismatch, and the meta device named in it: not "metadata", nor the address of
#: dynamo's graph-break pages (meta-pytorch.github.io), which every dynamo error of torch 2.11
#: on carries, so that a CUDA tensor beside a CPU one in the GPU view read as a meta limit.
_DEVICES = re.compile(r"same device|different devices")
_META = re.compile(r"(?<![\w./-])meta(?![\w.-])")
#: How far ``__cause__`` is followed: dynamo raises its own error (a graph break's
#: ``Unsupported``, a ``TorchRuntimeError``) from torch's. Not ``__context__``: an error torch
#: raised while handling another (fake tensors' ``UnsupportedOperatorException`` after a meta
#: kernel's ``NotImplementedError``) is about something else.
_CHAIN_LIMIT = 8


def _kernel_lookup() -> Callable[[str, str], bool] | None:
    """The dispatcher's "has this operator a kernel for this key", private to torch."""
    lookup = getattr(torch._C, "_dispatch_has_kernel_for_dispatch_key", None)
    return lookup if callable(lookup) else None


def built_on_meta(target: CaptureTarget) -> bool:
    """Built on the meta device (by its constructor or a factory): a class its constructor
    built on the CPU runs on real tensors, where a meta tensor is the code's own."""
    return target.instantiated_on in ("meta", "factory")


def _chain(error: BaseException) -> Iterator[BaseException]:
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen and len(seen) < _CHAIN_LIMIT:
        seen.add(id(current))
        yield current
        current = current.__cause__


def _text(error: BaseException) -> str:
    try:
        return str(error).strip()
    except BaseException:  # a user exception's __str__ may raise anything
        return ""


def _first_sentence(text: str) -> str:
    """torch's first sentence: the meta fallback's message goes on to advise a fake
    implementation for custom operators, which is no advice for a class checked on meta."""
    return _SENTENCE_END.split(text.splitlines()[0], maxsplit=1)[0]


def _operator_without_meta_kernel(error: BaseException, text: str) -> str | None:
    """The operator torch says has no meta kernel, or None."""
    if not isinstance(error, NotImplementedError):
        return None
    for pattern in _NO_META_KERNEL:
        match = pattern.search(text)
        if match:
            return match.group("op")
    return None


#: The tags of operators whose output their data decides (feature-detected).
DATA_DECIDES_TAGS = tuple(getattr(torch.Tag, name) for name in (
    "dynamic_output_shape", "data_dependent_output") if hasattr(torch.Tag, name))


def _data_decides(op: str) -> bool:
    """Whether an overload of ``op`` has an output its data decides (``bincount``): fake CPU
    tensors break the graph there as real torch does, but cannot run it eagerly after."""
    namespace, _, name = op.partition("::")
    packet = getattr(getattr(torch.ops, namespace, None), name.split(".")[0], None)
    tags = {tag for overload in getattr(packet, "overloads", list)()
            for tag in getattr(getattr(packet, overload, None), "tags", ())}
    return any(tag in tags for tag in DATA_DECIDES_TAGS)


def _runs_on_cpu(op: str, lookup: Callable[[str, str], bool]) -> bool:
    try:
        return bool(lookup(op, "CPU"))
    except RuntimeError:  # "operator ... does not exist": a name the pattern misread
        return False


@dataclass(frozen=True)
class MetaLimit:
    """What the failing line does that only real data answers, and torch's words for it."""

    what: str
    torch_says: str
    #: The operator with a CPU kernel and no meta one that the line runs: fake CPU tensors
    #: run the CPU's, as real torch does, so the class is captured on them.
    operator: str | None = None

    def detail(self) -> str:
        """The message of an FX404/FX503 after its rule's prefix."""
        return (f"this line {self.what}. fx-lsp runs forward on the meta device, without "
                f"weights or data; real torch on the CPU runs this line, so this is no "
                f"verdict, and the class is not checked from here. (torch: {self.torch_says})")

    def reason(self, capture: str, failure: Failure) -> str:
        """The class's reason for "not checked" under ``capture`` (``torch.export``), with
        the line of ``failure``, its FX404 or FX503."""
        return (f"not checkable under {capture} on meta: line {failure.line} {self.what} "
                f"({failure.code}; torch: {self.torch_says})")


#: Fake tensors' refusal to resize a tensor they did not make: a meta buffer fx-lsp built,
#: which on the CPU is a CPU tensor, resized in place (``self.v.resize_(n)``).
_RESIZED_UNFAKED = re.compile(r"metadata mutating ops on non-Fake Tensor inputs.*device='meta'",
                              re.DOTALL)


def _limit(error: BaseException) -> MetaLimit | None:
    text = _text(error)
    if isinstance(error, AssertionError) and _RESIZED_UNFAKED.search(text):
        return MetaLimit("resizes a tensor fx-lsp built on meta in place, which fake tensors "
                         "refuse of a tensor they did not make", _first_sentence(text))
    if not text or not isinstance(error, RuntimeError):  # NotImplementedError is one
        return None
    first = _first_sentence(text)
    op = _operator_without_meta_kernel(error, text)
    if op is not None:
        lookup = _kernel_lookup()
        if lookup is not None and _runs_on_cpu(op, lookup):
            return MetaLimit(f"runs `{op}`, which has no meta kernel", first,
                             operator=None if _data_decides(op) else op)
        return None
    for message, what in _NO_DATA.items():
        if message in text:
            return MetaLimit(what, first)
    if _DEVICES.search(text) and _META.search(text):
        return MetaLimit(f"{BESIDE_CPU} (one fx-lsp could "
                         "not fake as a CPU tensor, held outside parameters, buffers and tensor "
                         "attributes, or a CPU tensor the code makes)", first)
    return None


#: What a line does where a meta tensor meets a CPU tensor.
BESIDE_CPU = "uses a tensor on the meta device beside CPU tensors"
#: torch's words for a tensor on one device where another's was expected.
_EXPECTED_DEVICE = re.compile(r"is not on the expected device")


#: torch's words for a tensor that reached a fake tensor mode without being made fake.
_NOT_FAKE = re.compile(r"convert all Tensors to FakeTensors first.*device='meta'", re.DOTALL)


def unfaked_meta_tensor(error: BaseException) -> bool:
    """Whether ``error`` is a meta tensor torch made from Python data inside a binding (an
    index list, ``x[..., [1, 0]]``) that reached dynamo's fake tensors unfaked: on the CPU
    that tensor is a CPU one, which torch's fake tensors take in."""
    return any(_NOT_FAKE.search(_text(link)) for link in _chain(error))


def collides_with_cpu(error: BaseException) -> bool:
    """Whether ``error`` (or an error it wraps) is a meta tensor meeting a CPU tensor that the
    code made (``torch.zeros(8)``, ``torch.randn(x.shape)``): what a run on fake CPU tensors,
    as real torch's on the CPU, does not meet."""
    for link in _chain(error):
        text = _text(link)
        if (_DEVICES.search(text) or _EXPECTED_DEVICE.search(text)) and _META.search(text) \
                and "cpu" in text:
            return True
    return False


def needs_real_data(error: BaseException) -> MetaLimit | None:
    """What the failing line does that only real data answers, when ``error`` (or an error it
    wraps) is one of this module's; None for any other error. Call it only for a class built
    on meta (``built_on_meta``)."""
    for link in _chain(error):
        found = _limit(link)
        if found is not None:
            return found
    return None


def wants_data(error: BaseException) -> bool:
    """True for fake tensors' own refusal of what only data answers (a mask's count:
    ``DynamicOutputShapeException``; a value: ``DataDependentOutputException``; a guard on
    one): real data has what they lack, so it says nothing of the inputs."""
    name = type(error).__name__
    return "DataDependent" in name or "DynamicOutputShape" in name \
        or "data-dependent" in str(error).lower()


def undecided(error: BaseException) -> str | None:
    """Why an operator without a meta kernel in ``error`` stays a failure in this torch (it
    cannot say whether the operator runs on the CPU), or None."""
    if _kernel_lookup() is not None:
        return None
    for link in _chain(error):
        op = _operator_without_meta_kernel(link, _text(link))
        if op is not None:
            return (f"`{op}` has no meta kernel, and this torch cannot say whether it runs on "
                    f"the CPU (torch._C._dispatch_has_kernel_for_dispatch_key is missing): "
                    f"reported as a failure")
    return None
