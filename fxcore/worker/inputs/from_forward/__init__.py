"""Inputs read from ``forward``'s code (with ``ast``, nothing runs): how its arguments relate to
one another and to the layers that take them, the layouts, containers, keyed batches, optional
arguments and literal values it uses, and the sizes its own operations fix."""
