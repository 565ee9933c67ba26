"""The capture stage: each mode turns a built ``nn.Module`` instance, on the example inputs
the inputs stage decided, into a ``CaptureRecord`` (``base``: the protocol; ``modes``: the
registry that names them). One folder per mode (``fx``, ``export``, ``compile``, ``onnx``),
and the few modules the modes share beside them (``dynamo_errors``, ``random_draws``). A
mode's folder imports no other mode's but export's: onnx converts the program export made, and
compile's plan of read values runs ``forward`` on export's fake tensors."""
