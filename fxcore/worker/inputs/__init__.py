"""Example inputs a class is captured on, by where they come from: the order of the sources
(``deciding``: configuration, ``forward``'s annotations, a graph, the first layer), the first
layers a graph feeds each argument to (``graph_layers``) and the sizes they leave free
(``sizes``), the module's own first layer (``first_layer``), worked back through a layer that
only rearranges (``reshape``), containers of tensors (``container``), the inputs a built parent
passes its submodules (``parent``); the eager runs that accept a candidate (``eager_run``,
which the compile capture's plan of read values runs too); and whether an error comes from
these choices rather than from the capture (``own_choices``). The values those runs read from
tensors without data are the ``meta`` room's (``meta.values_read``), as the compile capture
stands them in too."""
