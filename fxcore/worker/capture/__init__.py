"""Capture modes: each turns a built ``nn.Module`` instance into a ``CaptureRecord``
(``base``); ``modes`` names them."""
