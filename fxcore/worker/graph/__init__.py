"""Facts read from a ``CaptureRecord``, whatever mode captured it: nodes per source line, the
graph for drawing, unused members (``facts``), shapes (``shapes``, ``shape_facts``)."""
