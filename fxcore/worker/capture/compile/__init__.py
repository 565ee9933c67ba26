"""The ``compile`` capture mode: torch.compile graph breaks (``compiling``)."""
