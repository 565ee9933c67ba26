"""Everything that runs inside a worker child, next to the user's code.

Nothing in this package is imported by the CLI or the language server: the engine
(``fxcore.host.engine``) forks children from the zygote, and only those import it. A child runs one
``TraceJob`` (``job``): it imports the file, and for each ``nn.Module`` class builds an
instance (``building``), decides its example inputs (``inputs``), captures it (``capture``,
one module per capture mode), reads the facts of the captured graph (``graph_facts``,
``shape_facts``) and reports a ``ModuleResult`` to the engine as data
(``fxcore.protocol.worker_messages``).
"""
