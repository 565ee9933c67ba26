"""The user's code as the worker reads it, beside ``running`` at the bottom of the worker:
importing it with the workspace's paths and unsaved buffers (``import_overlay``), Python frames
turned into source ranges (``locate``), the user's line a compiled graph's operation came from
(``graph_places``), a function's own ``ast`` (``function_trees``) and the user's objects read
without running their properties' code by surprise (``user_objects``)."""
