"""Example inputs a class is captured on, grouped by where they come from; ``deciding`` tries
the sources in order of trust and returns one decision:

- ``given``: inputs the user or the code gives: an example beside the model and the calls of
  the class in the workspace's tests and examples (``declared``, ``workspace_calls``,
  ``calling_files``), the shape ``forward`` documents (``documented``), the inputs a built
  parent passes its submodules (``parent``);
- ``from_forward``: read from ``forward``'s code: how its arguments relate to each other and to
  the layers that take them (``forward_relations``, ``related``), layouts it transposes
  (``layouts``), containers and keyed batches it reads (``container``, ``container_items``,
  ``keyed_batch``), the optional arguments it needs (``needed_optional``), literal values
  (``literal_arguments``) and sizes its operations fix (``symbolic_sizes``);
- ``from_layers``: read from the module's layers: its first layer (``first_layer``), the layers
  a graph feeds each argument to (``graph_layers``) and the sizes they leave free (``sizes``),
  worked back through a layer that only rearranges (``reshape``), a waveform (``waveform``);
- ``eager_runs``: the runs that accept a candidate (``eager_run``, ``candidates``, which the
  compile capture's plan of read values runs too), the CPU's own checks and a last run on real
  CPU tensors (``cpu_checks``, ``cpu_run``), the lines a run reached (``lines_reached``), one
  verdict from several input sets (``key_sets``) and whether an error comes from these choices
  rather than from the capture (``own_choices``).

The values those runs read from tensors without data are the ``meta`` room's
(``meta.values_read``), as the compile capture stands them in too."""
