"""Example inputs laid out as ``forward``'s code says, where the first layer's own layout fits
none: a series ``[batch, length, channels]`` that ``forward`` transposes (``x.transpose(1,
2)``, ``x.permute(0, 2, 1)``) before its ``Conv1d``. Each required tensor argument gets the
shape the first layer it reaches takes, worked back through what the code does to it on the
way (``keyed_batch.argument_template``), its free sizes those of ``first_layer.SIZES_TRIED``.
Tried after the first layers and related tensors (``deciding``); a candidate is accepted only
when the model runs on it eagerly.
"""

from __future__ import annotations

from torch import nn

from fxcore.model.results import InstantiatedOn
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.first_layer import (
    SIZES_TRIED,
    LayerInputs,
    eager_error_before,
    required_arguments,
)
from fxcore.worker.inputs.forward_relations import forward_tree
from fxcore.worker.inputs.keyed_batch import argument_template
from fxcore.worker.shared.budget_clock import Budget


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
    deadline = Budget(seconds)
    tried: list[dict[str, TensorSpec]] = []
    for sizes in SIZES_TRIED:
        specs = {name: template.spec(sizes) for name, template in templates.items()
                 if template is not None}
        if specs in tried:
            continue
        tried.append(specs)
        ran = eager_error_before(deadline, model, instantiated_on, specs, concrete_args)
        if ran is None:
            return None
        if not isinstance(ran, Exception):
            spelled = ", ".join(f"{name}: {spec}" for name, spec in specs.items())
            return LayerInputs(specs, (
                f"laid out as {cls.__name__}.forward makes each argument for the first layer "
                f"it reaches (its permutes and transposes undone), which it runs on: {spelled}"))
    return None
