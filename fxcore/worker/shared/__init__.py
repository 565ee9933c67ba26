"""The room below the worker's stages: what two of them share, importing nothing of the worker's
other folders.

The job's context (``job_context``: configuration, parsed sources, located failures), the
capture target each stage reads and the record a capture makes (``capture_target``), what the
inputs stage decides, as the one value the pipeline passes to each capture
(``inputs_decision``), source locations (``locate``, ``consequences``), the user's objects and
functions as read safely (``user_objects``, ``function_trees``), the import paths of the user's
workspace (``import_overlay``), the seeded generators (``seeding``), the time limit of a run of
user code and the worker's CPU-time budgets (``time_limit``, ``budget_clock``); and what runs on
tensors without data: the limits of the meta device (``meta_limits``), kernels it refuses and
that run on the CPU instead (``refused_kernels``, ``eager_code_mode``), tensors swapped for a
run (``swapped_tensors``), literal tensors and the values read from tensors without data
(``literal_values``, ``values_read``, ``to_arguments``), and shape propagation over a graph
(``shapes``, ``layer_shapes``, ``lazy_meta``), which the inputs stage chooses sizes with and the
graph stage reports."""
