"""The onnx capture mode: what torch.onnx.export(dynamo=True) refuses, without weights
(``converting``)."""
