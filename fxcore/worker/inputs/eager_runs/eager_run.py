"""Running a model eagerly on example inputs without computing anything: on meta tensors for
meta weights, on fake tensors for real ones, under a time limit. What the parent's run
(``parent``), the search for inputs a model runs on (``first_layer``) and the check of
fx-lsp's own choices (``own_choices``) share; it runs user code, so it is only ever called
inside a worker child.

An operator whose meta kernel refuses what the CPU kernel accepts (a grouped matmul in
float32, an operator without a meta kernel) runs on the CPU (``refused_kernels``), as real
torch runs it; one whose meta kernel accepts what the CPU refuses (an interpolation to an
empty size) raises as on the CPU (``cpu_checks``).

Values the code reads from those tensors (``.item()``, ``.tolist()``, ``int(t)``, ``float(t)``,
``if t:``) are stood in as the compile capture stands them in on meta (``values_read``: one,
true the first time at a line): real data has them, so a forward that reads one runs, where
otherwise every input tried would be refused for want of data. Which inputs' own elements were
read so (``sizes[0][0]`` of a tensor fx-lsp gave where the code indexes a list of sizes) is
told apart: the code may take Python numbers there, which need no data."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Mapping
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from fxcore.model.container_spec import ContainerSpec, InputSpec, materialized
from fxcore.model.results import InstantiatedOn
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.devices.data_sized_outputs import data_sized_outputs
from fxcore.worker.devices.fake_device import judged_device, on_fake_device
from fxcore.worker.inputs.eager_runs.cpu_checks import cpu_checks
from fxcore.worker.meta import meta_limits
from fxcore.worker.meta.literal_values import kept_module_literals, literal_tensors
from fxcore.worker.meta.refused_kernels import real_kernels
from fxcore.worker.meta.values_read import Place, has_no_data, meta_values
from fxcore.worker.running.time_limit import time_limit

CPU = torch.device("cpu")


def run_eagerly(model: torch.nn.Module, instantiated_on: InstantiatedOn,
                specs: Mapping[str, InputSpec], concrete_args: dict[str, Any],
                seconds: float, fake: bool = False, read: list[Place] | None = None,
                elements_read: set[str] | None = None) -> list[Place]:
    """Call ``model`` once with empty tensors of ``specs`` (by ``forward`` argument; a
    container spec gives its container of them) and
    ``concrete_args`` (a spec among them a tensor too); the lines whose values read from
    tensor data were stood in. Raises
    ``OutOfTime`` after ``seconds`` of CPU time (``time_limit``), or what the model raises.
    ``fake``: meta weights too run under a fake tensor mode, as torch.export and
    torch.compile run them, whose checks a meta kernel may lack (a convolution with no output
    channel runs on meta and fails on fake tensors as on the CPU). ``read``, where given,
    gets the lines whose values were stood in even when the model raises: an error after
    them may be the stand-ins' rather than the inputs'. ``elements_read``, where given, gets
    the ``forward`` arguments a value was read from an element of (the input itself, or a
    view of it: an index, a row of it iterated)."""
    # Each run meets the flags the instance was built with (a buffer the last run set in
    # place, ``self.initialized.fill_(1)``, reads as built again), as each input a user tries
    # meets a fresh instance.
    put_back = kept_module_literals(model)
    try:
        return _run(model, instantiated_on, specs, concrete_args, seconds, fake, read=read,
                    elements_read=elements_read)
    except Exception as error:
        # Tensors the code makes itself are CPU tensors beside meta weights; real torch runs
        # them on the CPU, and so does a run on fake CPU tensors.
        if judged_device() is not None or not meta_limits.collides_with_cpu(error):
            raise
        put_back()
        return _run(model, instantiated_on, specs, concrete_args, seconds, fake, CPU, read,
                    elements_read)
    finally:
        put_back()


def _run(model: torch.nn.Module, instantiated_on: InstantiatedOn,
         specs: Mapping[str, InputSpec], concrete_args: dict[str, Any], seconds: float,
         fake: bool, device: torch.device | None = None,
         read: list[Place] | None = None, elements_read: set[str] | None = None
         ) -> list[Place]:
    # By id: each input's name, and the input, kept alive so that no other tensor takes its id.
    made: dict[int, tuple[str, torch.Tensor]] = {}

    def input_of(name: str, spec: InputSpec) -> Any:
        def make(leaf: Any) -> torch.Tensor:
            tensor = torch.empty(leaf.shape, dtype=getattr(torch, leaf.dtype), device=on)
            made[id(tensor)] = (name, tensor)
            return tensor
        return materialized(spec, make)

    # The timer innermost: it is disarmed before any of these is put back (torch's methods,
    # the tensor modes), so that no alarm, repeated until then, lands in their clean-up.
    with meta_values(answers=has_no_data) as stand_ins, \
            tensor_mode(model, instantiated_on, fake, device) as on, real_kernels(), \
            cpu_checks(), literal_tensors(), torch.no_grad(), time_limit(seconds):
        try:
            # A copy of the literals each run: forward may append to a list it is given.
            # A spec among the fixed arguments is a tensor too: an optional argument forward
            # needs, given beside the required ones searched (``needed_optional``).
            model(**{name: input_of(name, spec) for name, spec in specs.items()},
                  **{name: input_of(name, value) if isinstance(value, (TensorSpec, ContainerSpec))
                     else value for name, value in copy.deepcopy(concrete_args).items()})
        finally:
            if read is not None:
                read.extend(stand_ins.read)
            if elements_read is not None:
                elements_read.update(made[base][0] for base in stand_ins.bases if base in made)
            made.clear()  # the inputs go inside the tensor mode, as before
    return stand_ins.read


@contextlib.contextmanager
def tensor_mode(root: torch.nn.Module, instantiated_on: InstantiatedOn,
                fake: bool = False, device: torch.device | None = None
                ) -> Iterator[torch.device]:
    """The device to make inputs on: meta for a root with meta weights (under a fake tensor
    mode if ``fake``); for one with real weights, CPU under a fake tensor mode, so that
    nothing is computed; for a class judged for a GPU, or given a ``device``, fake tensors of
    that device, weights too."""
    device = device or judged_device()
    if device is not None:
        with on_fake_device(root, device), data_sized_outputs():
            yield device
        return
    weights = [*root.parameters(), *root.buffers()]
    on_meta = weights[0].is_meta if weights else instantiated_on != "cpu"
    if on_meta and not fake:
        yield torch.device("meta")
        return
    with FakeTensorMode(allow_non_fake_inputs=True):
        yield torch.device("meta" if on_meta else "cpu")


