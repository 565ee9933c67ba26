"""The ``fx`` capture mode: ``torch.fx`` symbolic tracing with a tracer that records each
failure and recovers (``tracer``), its checks of a complete graph (``mistraces``,
FX201-FX205; FX206 is ``capture.random_draws``), and the mode itself (``tracing``), which
the inputs stage's pre-trace also runs (``pre_trace``)."""
