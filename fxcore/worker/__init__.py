"""Everything that runs inside a worker child, next to the user's code.

Nothing in this package is imported by the CLI or the language server: the engine
(``fxcore.host.engine``) forks children from the zygote, and only those import it. A child runs one
``TraceJob`` (``pipeline.job``): it imports the file, and leads each ``nn.Module`` class
through the stages, in this order, each importing only the stages before it:

- ``building``: an instance of the class, built from its arguments' sources in order of trust;
- ``inputs``: the example inputs a capture mode that runs ``forward`` captures it on,
  decided once per instance and returned as one value (``job.inputs_decision``);
- ``capture``: the capture itself, one folder per mode (``fx``, ``export``, ``compile``,
  ``onnx``), each given the instance and that decision and making a ``CaptureRecord``;
- ``graph``: the facts of the captured graph (nodes per line, shapes, unused members).

Below the stages are the rooms they share, each one job: running user code (``running``:
budgets, time limits, seeds), reading it (``source``: imports, source locations), what the
stages of a job hand one another (``job``: its context, the capture target and record, the
inputs decision) and tensors without data (``meta``: the meta device's limits, values read
from tensors without data, shape propagation); the device views (``devices``) and the
``nn.Module`` train/eval modes (``module_modes``) stand on them. On top, ``pipeline`` leads
the classes through the stages (it alone keeps each instance's inputs decision, and passes it
on explicitly), makes each mode's verdict and reports a ``ModuleResult`` to the engine as data
(``fxcore.protocol.worker_messages``). ``tests/project/test_room_imports.py`` holds the order.
"""
