"""What the inputs stage decides for one instance, as one value (``InputsDecision``): the
stage returns it (``fxcore.worker.inputs.deciding``), the pipeline keeps it per target
(``fxcore.worker.pipeline.capturing``) and passes it to each capture and to the readers after
it (the verdict, the graph's shapes, the check of fx-lsp's own choices). Nothing sets it on a
``CaptureTarget`` but the pipeline."""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field
from typing import Any

from fxcore.model.container_spec import InputSpec
from fxcore.model.results import InputsOrigin
from fxcore.worker.job.input_refusals import RaisedEverywhere


@dataclass(frozen=True)
class InputsDecision:
    """Example inputs decided for an instance, where they came from, and what runs beside
    them; or, where none were decided, what the likeliest candidate met."""

    #: Example inputs by ``forward`` argument, a container spec for a dict, list or tuple
    #: of tensors; None when none were decided (``{}``: a forward that takes no tensor).
    specs: dict[str, InputSpec] | None = None
    #: Where ``specs`` came from.
    origin: InputsOrigin | None = None
    #: How their inferred sizes were chosen (``ExampleInputs.note``).
    note: str | None = None
    #: Literal arguments other than tensors passed beside ``specs`` (a parent's, as it
    #: passes them; those annotated as literals, ``inputs.from_forward.literal_arguments``), by
    #: ``forward`` argument. Runs take ``fresh_values()``: forward may append to a list.
    values: dict[str, Any] = field(default_factory=dict)
    #: Where no example inputs were found: what the most likely candidate raised when the
    #: module ran on it (``fxcore.worker.inputs.from_layers.first_layer``).
    refused: str | None = None
    #: Where no example inputs were found because ``forward`` raised the same error on every
    #: input tried (``input_refusals``): that error, the class's verdict in the modes that
    #: run forward.
    raised: RaisedEverywhere | None = None
    #: Other input sets each capture that runs ``forward`` takes too, its problems merged
    #: with those of ``specs`` (``pipeline.capturing``): a dict argument's keys ``forward``
    #: reads only where present, given in ``specs`` and left out in the other set
    #: (``inputs.from_forward.container``).
    alternatives: tuple[InputsDecision, ...] = ()
    #: Where there are alternatives, what sets this set apart from the others ("with 'mask'
    #: given", "with 'mask' left out").
    key_set: str | None = None
    #: How each argument was found (``ExampleInputs.found_by``).
    found_by: dict[str, str] = field(default_factory=dict)

    def fresh_values(self) -> dict[str, Any]:
        """A copy of ``values`` for one run, which the report's still show as given."""
        return copy.deepcopy(self.values)


#: A refusal that names the meta device (its tensors, its backend), not the inputs.
_NAMES_META = re.compile(r"\bmeta\b", re.IGNORECASE)

#: No inputs decided: what a capture that needs none gets before any mode searched.
UNDECIDED = InputsDecision()


def no_inputs_reason(reason: str, inputs: InputsDecision) -> str:
    """A mode's "no example inputs" reason, with what the most likely input met."""
    if inputs.refused is None:
        return reason
    if _NAMES_META.search(inputs.refused):
        # The inputs may well fit: the class refuses the device fx-lsp runs it on.
        head = reason.split(": no example inputs")[0]
        return (f"{head}: the class refuses the meta tensors fx-lsp runs it on, on every "
                f"input tried: {inputs.refused}")
    return f"{reason}; none fx-lsp tried runs: {inputs.refused}"
