"""Facts read from a ``CaptureRecord``, whatever mode captured it: nodes per source line, the
graph for drawing, unused members (``facts``), shapes (``shape_facts``, propagated by
``meta.shapes``). The last stage: it reads what the capture recorded, and the inputs stage's
decision."""
