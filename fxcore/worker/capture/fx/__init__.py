"""The ``fx`` capture mode: ``torch.fx`` symbolic tracing with a tracer that records each
failure and recovers (``tracer``), its checks of a complete graph (``mistraces``,
FX201-FX205; ``random_draws``, FX206), and the mode itself (``capture``)."""
