"""Example inputs from the shape ``forward`` documents for its tensor: its docstring ("S:
Spectrogram of the shape ``(batch, n_fft//2+1, timesteps)``") or the message of an
``assert`` in it ("make sure our tensor is in the shape of (batch, freq_bins, timesteps,
2)"), tried where neither the first layers nor related tensors fit, before a waveform (an
inverse transform that takes a spectrogram, with no layer to tell its size).

Each size of the documented tuple is read as an expression over the module's own int
attributes (``n_fft//2+1``, the instance's ``n_fft``), a batch word (``batch``, ``b``, ``n``)
or a number (a batch word, and a sequence word such as ``seq_len`` or ``timesteps``, also say
which dimension is the batch and which the sequence: ``tensor_spec.with_roles``); a name the
module does not have is free, and free sizes take, in turn, a small size and each of the
module's window-like lengths (``waveform.KERNEL_LENGTH_NAMES``), as a frequency axis of
``n_fft`` bins. At most ``MAX_CANDIDATES`` runs; one is accepted only when
the model runs on it eagerly, as every inferred input is.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import re
import typing
from collections.abc import Callable

from torch import nn

from fxcore.model.results import InstantiatedOn
from fxcore.model.tensor_spec import BATCH_WORDS, with_roles
from fxcore.worker.inputs.from_forward.forward_relations import forward_tree
from fxcore.worker.inputs.from_layers.first_layer import (
    LayerInputs,
    eager_error_before,
    raised,
    required_arguments,
)
from fxcore.worker.inputs.from_layers.waveform import KERNEL_LENGTH_NAMES
from fxcore.worker.job.input_refusals import inputs_from_code
from fxcore.worker.running.budget_clock import Budget

#: "shape (a, b, c)", "shape of (a, b)", "shaped ``(a, b)``": a documented shape.
_SHAPE = re.compile(r"shaped?\s*(?:of|is|=|:)?\s*`*\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
BATCH = 2
#: The sizes a free axis takes first, before the module's window-like lengths.
FREE_SIZES = (16,)
MAX_CANDIDATES = 12
MAX_SIZE = 1 << 14


def documented_inputs(cls: type, model: nn.Module, instantiated_on: InstantiatedOn,
                      concrete_args: dict[str, object], seconds: float,
                      is_workspace_path: Callable[[str], bool]) -> LayerInputs | str | None:
    """Inputs of the documented shape for a ``forward`` with one required argument, the
    first candidate the model runs on; where it runs on none, what the first raised (a
    library that no longer runs on this torch says so there); None when nothing is
    documented or the search outlasts ``seconds``."""
    required = required_arguments(cls, concrete_args)
    if not required or len(required) != 1:
        return None
    name = required[0]
    deadline = Budget(seconds)
    refusal = None
    specs = (with_roles("float32", shape, _words(text))
             for text in _documented_shapes(cls, name) for shape in _shapes(text, model))
    for spec in itertools.islice(specs, MAX_CANDIDATES):
        with inputs_from_code():
            ran = eager_error_before(deadline, model, instantiated_on, {name: spec},
                                     concrete_args)
        if ran is None:
            return None
        if not isinstance(ran, Exception):
            return LayerInputs({name: spec}, (
                f"{spec}, the shape {cls.__name__}.forward documents for {name}, read with "
                "the instance's sizes"))
        refusal = refusal or (f"{spec}, the shape {cls.__name__}.forward documents for "
                              f"{name}, {raised(ran, is_workspace_path)}")
    return refusal


def _documented_shapes(cls: type, name: str) -> list[str]:
    """The shape tuples' texts, docstring first, then ``assert`` messages of ``forward``."""
    doc = inspect.getdoc(cls.forward) or ""
    # The argument's own entry, where the docstring has one per argument.
    entry = re.search(rf"^\s*{re.escape(name)}\b.*?(?=^\s*\w+\s*(?::|\()|\Z)", doc,
                      re.MULTILINE | re.DOTALL)
    texts = _SHAPE.findall(entry.group(0) if entry else doc)
    tree = forward_tree(cls)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Assert) and node.msg is not None:
            message = " ".join(part.value for part in ast.walk(node.msg)
                               if isinstance(part, ast.Constant) and isinstance(part.value, str))
            texts += _SHAPE.findall(message)
    return list(dict.fromkeys(text.strip() for text in texts if "," in text))


def _words(text: str) -> list[str]:
    """The sizes of a documented shape tuple, as written."""
    return [word for word in (part.strip(" `'\"") for part in text.split(",")) if word]


def _shapes(text: str, model: nn.Module) -> typing.Iterator[tuple[int, ...]]:
    """The shapes ``text`` spells, its free sizes taking ``_free_sizes`` in turn."""
    sizes: list[int | None] = []
    for word in _words(text):
        size = _size(word, model)
        if size is False:
            return
        sizes.append(size)
    free = [index for index, size in enumerate(sizes) if size is None]
    for picked in itertools.product(_free_sizes(model), repeat=len(free)):
        shape: list[int | None] = list(sizes)
        for index, size in zip(free, picked, strict=True):
            shape[index] = size
        yield tuple(shape)


def _size(word: str, model: nn.Module) -> int | bool | None:
    """A size's value; None when free (a name the module lacks); False when unreadable."""
    if word.lower() in BATCH_WORDS:
        return BATCH
    try:
        expression = ast.parse(word, mode="eval").body
    except SyntaxError:
        return False
    names = {}
    for node in ast.walk(expression):
        if isinstance(node, ast.Name):
            value = getattr(model, node.id, None)
            if type(value) is not int:
                # A free size: only a bare name may be one (``timesteps``, not ``2*t``).
                return None if isinstance(expression, ast.Name) else False
            names[node.id] = value
        elif not isinstance(node, (ast.Constant, ast.BinOp, ast.Add, ast.Sub, ast.Mult,
                                   ast.FloorDiv, ast.Load)):
            return False
    try:
        value = eval(compile(ast.Expression(expression), "<shape>", "eval"),
                     {"__builtins__": {}}, names)  # numbers and + - * // only
    except Exception:
        return False
    return value if type(value) is int and 0 < value <= MAX_SIZE else False


def _free_sizes(model: nn.Module) -> list[int]:
    lengths = [value for name in sorted(KERNEL_LENGTH_NAMES)
               if type(value := getattr(model, name, None)) is int and 0 < value <= MAX_SIZE]
    return list(dict.fromkeys([*FREE_SIZES, *lengths]))
