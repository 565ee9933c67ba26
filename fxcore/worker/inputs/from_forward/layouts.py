"""Example inputs laid out as ``forward``'s code says, where the first layer's own layout fits
none: a series ``[batch, length, channels]`` that ``forward`` transposes (``x.transpose(1,
2)``, ``x.permute(0, 2, 1)``) before its ``Conv1d``. Each required tensor argument gets the
shape the first layer it reaches takes, worked back through what the code does to it on the
way (``keyed_batch.argument_template``), its free sizes those of ``first_layer.SIZES_TRIED``;
in a video block (a module holding 3-d layers), an image's shape taken by its first layer (a
``GroupNorm``) also as a clip's, with a depth.
Tried after the first layers and related tensors (``deciding``); a candidate is accepted only
when the model runs on it eagerly.
"""

from __future__ import annotations

import itertools

from torch import nn

from fxcore.model.results import InstantiatedOn
from fxcore.worker.inputs.eager_runs.candidates import first_running
from fxcore.worker.inputs.from_forward.forward_relations import forward_tree
from fxcore.worker.inputs.from_forward.keyed_batch import argument_template
from fxcore.worker.inputs.from_layers.first_layer import (
    SIZES_TRIED,
    LayerInputs,
    required_arguments,
)
from fxcore.worker.inputs.from_layers.graph_layers import DEPTH, HEIGHT, WIDTH, InputTemplate
from fxcore.worker.running.budget_clock import Budget


def layout_inputs(cls: type, model: nn.Module, instantiated_on: InstantiatedOn,
                  concrete_args: dict[str, object], seconds: float) -> LayerInputs | None:
    """Inputs each laid out as the code makes it for the layer it reaches, the first sizes the
    model runs on; None where it runs on none (what the first layer's own layout raised says
    more), an argument reaches no layer whose input size is known, or the search outlasts
    ``seconds``."""
    required = required_arguments(cls, concrete_args)
    tree = forward_tree(cls)
    if not required or tree is None:
        return None
    templates = {name: argument_template(tree, model, name) for name in required}
    if None in templates.values():
        return None
    # A video block whose first layer takes images (a GroupNorm) before its 3-d layers: the
    # images are frames of a clip.
    ranks = [templates, {name: _with_depth(template) for name, template in templates.items()}] \
        if any(_is_volumetric(module) for module in model.modules()) else [templates]
    candidates = (({name: template.spec(sizes) for name, template in ranked.items()
                    if template is not None}, ranked is not templates)
                  for sizes, ranked in itertools.product(SIZES_TRIED, ranks))
    found = first_running(candidates, model, instantiated_on, concrete_args, Budget(seconds),
                          [])
    if not found:
        return None
    specs, as_clip = found
    spelled = ", ".join(f"{name}: {spec}" for name, spec in specs.items())
    clip = ", with a depth for its 3-d layers" if as_clip else ""
    return LayerInputs(specs, (
        f"laid out as {cls.__name__}.forward makes each argument for the first layer "
        f"it reaches (its permutes and transposes undone){clip}, which it runs on: "
        f"{spelled}"))


def _is_volumetric(module: nn.Module) -> bool:
    """A layer of 3-d inputs: a 3-d convolution, norm or pooling."""
    if isinstance(module, nn.modules.conv._ConvNd):
        return len(module.kernel_size) == 3
    return isinstance(module, (nn.BatchNorm3d, nn.InstanceNorm3d, nn.MaxPool3d, nn.AvgPool3d,
                               nn.AdaptiveAvgPool3d, nn.AdaptiveMaxPool3d))


def _with_depth(template: InputTemplate | None) -> InputTemplate | None:
    """An image template ``(batch, channels, height, width)`` as a clip's, with a depth."""
    if template is None or template.dims[2:] != (HEIGHT, WIDTH):
        return template
    return InputTemplate(template.dtype, (*template.dims[:2], DEPTH, HEIGHT, WIDTH))
