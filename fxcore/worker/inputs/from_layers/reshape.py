"""The input of a layer that only rearranges its input (einops' ``Rearrange``, ``nn.Unfold``),
worked back from what the layer after it takes: a patch embedding ``Rearrange('b c (h p1) (w p2)
-> b (h w) (p1 p2 c)', p1=16, p2=16)`` before ``LayerNorm(768)`` takes images of ``768 / (16 *
16) = 3`` channels whose height and width are multiples of 16. The pattern says the input's rank
and how its axes group; the layer's ``axes_lengths`` and the next layer's known sizes give the
lengths of some axes; the others are free, and each candidate gives them one size (the same for
all), to be accepted only where the model runs on it (``first_layer``).

Read from the layer's own ``pattern`` and ``axes_lengths`` with einops' own parser
(feature-detected: without it, or for a pattern with ``...``, nothing is worked back).

An ``nn.Unfold`` (PiT's and T2T-ViT's patch embeddings: ``Unfold(14, stride=7)``, then
``Rearrange('b c n -> b n c')`` and ``Linear(3 * 14 * 14, dim)``) turns images of ``C``
channels into ``C * kh * kw`` features per patch: its input has the features over the kernel's
area as channels, and square sides of ``UNFOLDED_SIDES``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from torch import nn

from fxcore.model.tensor_spec import TensorSpec

#: The sizes given to the free axes, in order: the patch grid of small and of usual images
#: (a model whose position table fixes the number of patches runs on one of them only).
FREE_AXIS_SIZES = (2, 4, 8, 14, 16, 1, 7, 32)
#: The image sides tried before an ``nn.Unfold``, in order: small images first (a position
#: table sliced to the number of patches takes any), then the usual 224.
UNFOLDED_SIDES = (32, 64, 224)


def is_unfold(module: nn.Module) -> bool:
    return isinstance(module, nn.Unfold)


def unfolded_inputs(layer: nn.Unfold, output: TensorSpec) -> list[TensorSpec]:
    """Specs of the images that ``layer`` turns into ``output`` (``[batch, C * kh * kw,
    patches]``), one per ``UNFOLDED_SIDES`` the kernel fits in; empty where the features are
    not a whole number of channels over the kernel's area."""
    if len(output.shape) != 3:
        return []
    kernel = layer.kernel_size if isinstance(layer.kernel_size, tuple) \
        else (layer.kernel_size, layer.kernel_size)
    area = math.prod(int(side) for side in kernel)
    batch, features = output.shape[0], output.shape[1]
    if area == 0 or features % area:
        return []
    return [TensorSpec(output.dtype, (batch, features // area, side, side))
            for side in UNFOLDED_SIDES if side >= max(int(k) for k in kernel)]


def is_rearrange(module: nn.Module) -> bool:
    """An einops ``Rearrange`` layer (or one of its subclasses)."""
    return any(kind.__name__ == "Rearrange" and kind.__module__.startswith("einops")
               for kind in type(module).__mro__)


def rearranged_inputs(layer: nn.Module, output: Sequence[int | str],
                      dtype: str) -> list[TensorSpec]:
    """Specs of the inputs that ``layer`` (a ``Rearrange``) turns into an output whose
    dimensions are ``output`` (sizes, or a mark for a size left free), one per
    ``FREE_AXIS_SIZES``; empty where the pattern cannot be worked back."""
    parsed = _parsed(getattr(layer, "pattern", None))
    if parsed is None:
        return []
    left, right = parsed
    if len(right) != len(output):
        if len(right) < 2 or len(output) < 2:
            return []
        # A norm or linear layer reads the last dimension only (``b h w (p1 p2 c)`` before a
        # LayerNorm): the batch and the last size hold, the sizes between are free.
        output = (output[0], *["free"] * (len(right) - 2), output[-1])
    lengths: dict[str, int] = {name: int(value) for name, value
                               in dict(getattr(layer, "axes_lengths", None) or {}).items()}
    for group, size in zip(right, output, strict=True):
        unknown = [axis for axis in group if axis not in lengths]
        if isinstance(size, int) and len(unknown) == 1:
            known = math.prod(lengths[axis] for axis in group if axis in lengths)
            if known == 0 or size % known:
                return []
            lengths[unknown[0]] = size // known
    specs = []
    for free in FREE_AXIS_SIZES:
        shape = tuple(math.prod(lengths.get(axis, free) for axis in group) for group in left)
        specs.append(TensorSpec(dtype, shape))
    return list(dict.fromkeys(specs))


def _parsed(pattern: Any) -> tuple[list[list[str]], list[list[str]]] | None:
    """The axis names of each dimension of a pattern's two sides (``[["b"], ["h", "p1"]]``),
    an anonymous axis (``1``) as no name; None for a pattern with ``...`` or einops' parser
    missing."""
    if not isinstance(pattern, str) or "->" not in pattern:
        return None
    try:
        from einops.parsing import ParsedExpression
    except ImportError:  # an einops without its parser: nothing is worked back
        return None
    sides = []
    for text in pattern.split("->"):
        try:
            expression = ParsedExpression(text.strip())
        except Exception:  # einops' own error for a pattern it would refuse too
            return None
        if expression.has_ellipsis:
            return None
        sides.append([[axis for axis in group if isinstance(axis, str)]
                      for group in expression.composition])
    return sides[0], sides[1]
