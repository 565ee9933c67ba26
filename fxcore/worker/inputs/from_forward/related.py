"""Example inputs for a ``forward`` that takes several tensors whose sizes are related (a
decoder block's ``inp`` and ``skip``, a spatial transformer's image and displacement field), or
one tensor joined with values the code makes (a CRF-like block's ``meshgrid`` of
coordinates): searched jointly, one candidate giving every argument a shape, where the first
layer's candidates and their companions (``first_layer``) fit none.

What ``forward``'s code says (``forward_relations``) decides each argument's candidates:

- an argument passed to a submodule takes the input of that submodule's first layer whose
  input size is known; the first such argument is the reference the others follow (without
  one, the model's first known layer, else an image of the rank a ``permute`` names, or, for
  a displacement field, 2-d then 3-d with one channel per spatial dimension);
- an argument joined by ``torch.cat`` into a layer takes that layer's channels less those of
  the other items (a submodule's output channels, another argument's; an equal share where
  they are arguments), else less the spatial rank (coordinates), less one, half, or all;
- another argument takes the reference's rank and, as channels, the sizes a submodule it is
  passed to in another place declares (a cross-attention's ``kdim``), the spatial rank first
  where its channels are moved last or its name says so (a displacement field), one where its
  name says mask, else the reference's, the spatial rank or one;
- spatial sizes follow the reference: scaled as the code scales one before they meet (a
  transposed convolution of stride 2 before a ``cat``: twice), then equal, doubled, halved.

Candidates are ordered by how far down each argument's list they go, the sizes of
``first_layer.SIZES_TRIED`` counted as one more list, and at most ``MAX_CANDIDATES`` are run, for
at most ``MAX_SECONDS``; one is accepted only when the model runs on it eagerly (meta or fake
tensors), as every inferred input is.
"""

from __future__ import annotations

import itertools
import typing
from dataclasses import dataclass

from torch import nn

from fxcore.model.container_spec import InputSpec
from fxcore.model.results import InstantiatedOn
from fxcore.worker.inputs.from_forward.container import scaled_sizes
from fxcore.worker.inputs.from_forward.container_items import container_kind
from fxcore.worker.inputs.from_forward.forward_relations import (
    ArgumentUse,
    argument_uses,
    declared_sizes,
    forward_tree,
)
from fxcore.worker.inputs.from_layers.first_layer import (
    SIZES_TRIED,
    LayerInputs,
    eager_error_before,
    known_layers,
    required_arguments,
)
from fxcore.worker.inputs.from_layers.graph_layers import (
    BATCH,
    DEPTH,
    HEIGHT,
    SEQUENCE,
    SIGNAL,
    WIDTH,
    InputTemplate,
)
from fxcore.worker.meta.values_read import read_note
from fxcore.worker.running.budget_clock import Budget

#: The most joint candidates run for one class, and the most seconds they take.
MAX_CANDIDATES = 64
MAX_SECONDS = 10.0
#: The most required arguments searched jointly.
MAX_ARGUMENTS = 4
#: How another argument's spatial sizes follow the reference's, after the code's own scale.
SCALES = (1.0, 2.0, 0.5)
#: How many of the sizes a submodule declares (``declared_sizes``) are tried as the channels
#: of an argument passed to it in another place than the first.
SIZES_DECLARED = 3
#: Words of an argument's name that say it holds a vector per position (a displacement field,
#: an optical flow, a sampling grid): as many channels as spatial dimensions, tried first.
DISPLACEMENT_WORDS = frozenset({"ddf", "dvf", "flow", "disp", "displacement", "deformation",
                                "grid", "offset", "offsets"})
#: Words of an argument's name that say it holds one value per position: one channel first.
MASK_WORDS = frozenset({"mask", "seg", "label", "labels", "weight", "weights"})
#: Annotations that say an argument is not a tensor: no tensor is tried for it.
VALUE_TYPES = (int, float, bool, str)
#: The channels of an image no layer tells.
IMAGE_CHANNELS = 3


@dataclass(frozen=True)
class _Choice:
    """One shape an argument may take: its template, its spatial scale against the
    reference's, and in words."""

    template: InputTemplate
    scale: float
    words: str


def related_inputs(cls: type, model: nn.Module, instantiated_on: InstantiatedOn,
                   concrete_args: dict[str, object], seconds: float) -> LayerInputs | None:
    """The first joint candidate for ``forward``'s required tensor arguments that the model
    runs on; None when there is nothing to relate (one argument not joined with anything, a
    container among them), or none runs within the bounds."""
    required = required_arguments(cls, concrete_args)
    tree = forward_tree(cls)
    if not required or tree is None or len(required) > MAX_ARGUMENTS \
            or any(container_kind(cls, name, tree) for name in required) \
            or _annotated_as_values(cls, required):
        return None
    uses = argument_uses(tree, model, required)
    if len(required) == 1 and not uses[required[0]].joined_into \
            and not _displacement(required[0], uses[required[0]]):
        return None  # one argument, which the first layer's candidates have covered
    choices = _all_choices(model, required, uses)
    if choices is None:
        return None
    deadline = Budget(min(seconds, MAX_SECONDS))
    for specs, picked in _ordered(required, choices):
        ran = eager_error_before(deadline, model, instantiated_on, specs, concrete_args)
        if ran is None:
            return None
        if not isinstance(ran, Exception):
            said = "; ".join(f"{name} {spec} {choice.words}" for (name, spec), choice
                             in zip(specs.items(), picked, strict=True))
            what = "related tensors searched jointly" if len(specs) > 1 else "a tensor"
            return LayerInputs(specs, f"{what}, from how forward uses them ({said}), which "
                                      f"{cls.__name__} runs on{read_note(ran)}")
    return None


def _annotated_as_values(cls: type, required: list[str]) -> bool:
    """Whether a required argument is annotated as a number, a flag or a string (or an
    optional one)."""
    try:
        hints = typing.get_type_hints(cls.forward)
    except Exception:  # an annotation that does not evaluate says nothing
        return False
    return any(hint in VALUE_TYPES or any(arg in VALUE_TYPES for arg in typing.get_args(hint))
               for hint in (hints.get(name) for name in required))


def _ordered(required: list[str], choices: list[list[_Choice]]
             ) -> list[tuple[dict[str, InputSpec], tuple[_Choice, ...]]]:
    """At most ``MAX_CANDIDATES`` different candidates (the specs, the choice of each
    argument), those nearest the head of every list first (the sizes tried one list more)."""
    lists = [list(enumerate(SIZES_TRIED)), *(list(enumerate(c)) for c in choices)]
    ranked = sorted(itertools.product(*lists), key=lambda row: sum(index for index, _ in row))
    candidates: dict[str, tuple[dict[str, InputSpec], tuple[_Choice, ...]]] = {}
    for (_, sizes), *row in ranked:
        picked = tuple(choice for _, choice in row)
        specs: dict[str, InputSpec] = {
            name: choice.template.spec(scaled_sizes(sizes, choice.scale))
            for name, choice in zip(required, picked, strict=True)}
        # A scale leaves a sequence as it is: the same specs twice are run once.
        candidates.setdefault(repr(specs), (specs, picked))
        if len(candidates) == MAX_CANDIDATES:
            break
    return list(candidates.values())


def _all_choices(model: nn.Module, required: list[str],
                 uses: dict[str, ArgumentUse]) -> list[list[_Choice]] | None:
    own = {name: _own_template(uses[name]) for name in required}
    reference = next((name for name in required if own[name] is not None), required[0])
    references = _reference_choices(model, own[reference], uses, reference)
    if not references:
        return None
    spatial = _spatial_rank(references[0].template)
    choices = []
    for name in required:
        if name == reference:
            choices.append(references)
            continue
        use = uses[name]
        scales = _scales(name, uses, reference)
        base = own[name] or references[0].template
        channels = [None] if own[name] is not None else _channels(
            use, spatial, own, references[0].template, name)
        # Nearest the head of both lists first: a likely channel count at a likely scale.
        pairs = sorted(itertools.product(enumerate(channels), enumerate(scales)),
                       key=lambda pair: pair[0][0] + pair[1][0])
        choices.append([_Choice(_with_channels(base, count, use.rank), scale,
                                _words(count, scale, reference, own[name] is not None))
                        for (_, count), (_, scale) in pairs])
    return choices


def _reference_choices(model: nn.Module, own: InputTemplate | None,
                       uses: dict[str, ArgumentUse], reference: str) -> list[_Choice]:
    if own is not None:
        return [_Choice(own, 1.0, "as the first layer it is passed to takes it")]
    use = uses[reference]
    joined = [_first_template(layer) for layer, _ in use.joined_into]
    if joined and joined[0] is not None:
        base = joined[0]
        counts = _channels(use, _spatial_rank(base), {}, base, reference)
        return [_Choice(_with_channels(base, count, None), 1.0,
                        f"with {count} channels, joined into the layer that takes it")
                for count in counts]
    layers = known_layers(model)
    rank = use.rank or next((u.rank for u in uses.values() if u.rank), None)
    if layers and (rank is None or len(layers[0][2].dims) == rank):
        return [_Choice(layers[0][2], 1.0, "as the model's first known layer takes it")]
    if _displacement(reference, use) and rank in (None, 4, 5):
        # A field with one vector per position of a free spatial rank: 2-d, then 3-d.
        return [_Choice(InputTemplate("float32", (BATCH, count - 2,
                                                  *_spatial_marks(count - 2))), 1.0,
                        f"a displacement field of rank {count}, one channel per spatial "
                        f"dimension") for count in ([rank] if rank else [4, 5])]
    rank = rank or 4
    if rank < 3:
        return []
    image = InputTemplate("float32", (BATCH, IMAGE_CHANNELS, *_spatial_marks(rank - 2)))
    return [_Choice(image, 1.0, f"an image of rank {rank}")]


def _own_template(use: ArgumentUse) -> InputTemplate | None:
    """The input of the first known layer of the first submodule the argument is passed to."""
    for taker in use.takers:
        found = _first_template(taker)
        if found is not None:
            return found
    return None


def _first_template(module: nn.Module) -> InputTemplate | None:
    layers = known_layers(module)
    return layers[0][2] if layers else None


def _channels(use: ArgumentUse, spatial: int, own: dict[str, InputTemplate | None],
              reference: InputTemplate, name: str) -> list[int]:
    """The channel counts an argument without a layer of its own is tried with, in order."""
    counts: list[int] = []
    for layer, others in use.joined_into:
        template = _first_template(layer)
        if template is None:
            continue
        total = _channel_count(template)
        known = [_other_channels(item, own) for item in others]
        rest = total - sum(count for count in known if count is not None)
        if all(count is not None for count in known):
            counts.append(rest)
        elif all(isinstance(item, str) for item in others):
            counts.append(rest // (len(others) + 1))  # arguments joined as equals
        counts += [rest - spatial, rest - 1, total // 2, total]
    for module in use.passed_to:
        counts += declared_sizes(module)[:SIZES_DECLARED]
    if _displacement(name, use):
        counts.append(spatial)
    if set(name.lower().split("_")) & MASK_WORDS:
        counts.append(1)
    counts += [_channel_count(reference), spatial, 1]
    return [count for count in dict.fromkeys(counts) if count > 0]


def _displacement(name: str, use: ArgumentUse) -> bool:
    """Whether the code or the name says the argument holds a vector per position (its
    channels moved last, ``ddf``, ``flow``)."""
    return use.channels_last or bool(set(name.lower().split("_")) & DISPLACEMENT_WORDS)


def _other_channels(item: int | str | None, own: dict[str, InputTemplate | None]) -> int | None:
    if isinstance(item, str):
        template = own.get(item)
        return _channel_count(template) if template is not None else None
    return item


def _scales(name: str, uses: dict[str, ArgumentUse], reference: str) -> list[float]:
    """The code's own scales of ``name`` against the reference first (they meet where
    ``name`` times its scale is the reference times its own), then ``SCALES``."""
    hinted = [other_scale / own_scale for other, other_scale, own_scale in uses[name].partners
              if other == reference and own_scale]
    return list(dict.fromkeys([*hinted, *SCALES]))


def _channel_axis(template: InputTemplate) -> int:
    """Where a template's channels are: after the batch for an image or signal, last for a
    sequence of features."""
    spatial = any(isinstance(d, str) and d != SEQUENCE for d in template.dims)
    return 1 if spatial or len(template.dims) < 3 else len(template.dims) - 1


def _channel_count(template: InputTemplate) -> int:
    value = template.dims[_channel_axis(template)]
    return value if isinstance(value, int) else IMAGE_CHANNELS


def _spatial_marks(count: int) -> tuple[str, ...]:
    return {1: (SIGNAL,), 2: (HEIGHT, WIDTH)}.get(count, (DEPTH, HEIGHT, WIDTH))


def _spatial_rank(template: InputTemplate) -> int:
    return sum(1 for d in template.dims if isinstance(d, str) and d != SEQUENCE) or 2


def _with_channels(template: InputTemplate, count: int | None,
                   rank: int | None) -> InputTemplate:
    if count is None:
        return template
    if rank is not None and rank != len(template.dims) and rank >= 3:
        return InputTemplate(template.dtype, (BATCH, count, *_spatial_marks(rank - 2)))
    dims = list(template.dims)
    dims[_channel_axis(template)] = count
    return InputTemplate(template.dtype, tuple(dims))


def _words(count: int | None, scale: float, reference: str, own: bool) -> str:
    where = "as the first layer it is passed to takes it" if own else f"with {count} channels"
    size = "" if scale == 1.0 else f", {scale:g} times {reference}'s spatial size"
    return where + size
