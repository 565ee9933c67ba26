"""Tensors without data, under the stages that run code on them: the limits of the meta device
(``meta_limits``), kernels it refuses that run on the CPU instead (``refused_kernels``,
``eager_code_mode``), tensors swapped for a run (``swapped_tensors``), literal tensors and the
values read from tensors without data (``literal_values``, ``values_read``, ``to_arguments``),
and shape propagation over a graph (``shapes``, ``layer_shapes``, ``lazy_meta``), which the
inputs stage chooses sizes with and the graph stage reports."""
