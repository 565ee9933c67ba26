"""Facts read from a ``CaptureRecord``, whatever mode captured it: nodes per source line, the
graph for drawing, unused members (``facts``), example inputs and shapes (``example_inputs``,
``shapes``, ``shape_facts``)."""
