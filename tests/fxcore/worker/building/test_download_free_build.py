"""A constructor that downloads pretrained weights with its own client (the Hugging Face Hub,
urllib), not torch.hub: a worker has no network, so it is built again with its weights
parameters set to none, and the verdict says the weights were skipped and shows the override
(``fxcore.worker.building.download_free``)."""

from __future__ import annotations

import importlib.util

import pytest

from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig

from engine_support import Workspace

MODES = ("fx", "export", "compile")

#: Each downloader raises as its library does offline; ``{download_error}`` is filled in.
DOWNLOADING = """
    import torch
    from torch import nn

    {imports}


    def fetch_weights(name):
        # Where a library asks its hub for a checkpoint; offline it raises.
        raise {download_error}


    class Encoder(nn.Module):
        def __init__(self, in_channels, weights):
            super().__init__()
            self.conv = nn.Conv2d(in_channels, 16, 3, padding=1)
            if weights is not None:
                self.load_state_dict(fetch_weights(weights))


    class Segmenter(nn.Module):
        def __init__(self, encoder_name="tiny", encoder_weights="imagenet", in_channels=3,
                     classes=2):
            super().__init__()
            self.encoder = Encoder(in_channels, encoder_weights)
            self.head = nn.Conv2d(16, classes, 1)

        def forward(self, x):
            return self.head(torch.relu(self.encoder.conv(x)))


    class Backboned(nn.Module):
        # Arguments to guess, and a switch for pretraining.
        def __init__(self, channels: int, pretrained_backbone=True):
            super().__init__()
            if pretrained_backbone:
                fetch_weights("backbone")
            self.conv = nn.Conv2d(channels, channels, 1)

        def forward(self, x):
            return self.conv(x) + x


    class FromCheckpoint(nn.Module):
        # A checkpoint file the default names, not in the workspace.
        def __init__(self, width=8, checkpoint="checkpoints/model.pth"):
            super().__init__()
            self.linear = nn.Linear(width, width)
            if checkpoint:
                self.load_state_dict(torch.load(checkpoint))

        def forward(self, x):
            return self.linear(x)


    class AlwaysDownloads(nn.Module):
        # No parameter avoids the download.
        def __init__(self):
            super().__init__()
            fetch_weights("config")

        def forward(self, x):
            return x


    class Rejects(nn.Module):
        # Fails for another reason than a download: nothing is overridden.
        def __init__(self, weights="imagenet"):
            super().__init__()
            raise ValueError("unsupported")

        def forward(self, x):
            return x
    """

DOWNLOADERS = {
    "huggingface_hub": (
        "from huggingface_hub.errors import LocalEntryNotFoundError",
        'LocalEntryNotFoundError("Cannot find the requested files in the local cache; '
        'check your connection")'),
    "urllib": ("from urllib.error import URLError",
               'URLError(ConnectionRefusedError(111, "Connection refused"))'),
}


@pytest.mark.parametrize("downloader", list(DOWNLOADERS))
def test_a_constructor_that_downloads_weights_is_built_without_them(
        engine: Engine, workspace: Workspace, downloader: str) -> None:
    if downloader == "huggingface_hub" and importlib.util.find_spec("huggingface_hub") is None:
        pytest.skip("huggingface_hub is not installed")
    imports, download_error = DOWNLOADERS[downloader]
    workspace.write("segmenter.py", DOWNLOADING.format(imports=imports,
                                                       download_error=download_error))
    result = workspace.check(engine, "segmenter.py", EngineConfig(modes=MODES))
    assert not result.errors, [error.message for error in result.errors]
    verdicts = {(module.class_name, module.mode): module for module in result.modules}

    for mode in MODES:
        # From its defaults, all kept but the weights.
        segmenter = verdicts["Segmenter", mode]
        assert segmenter.status == "traceable", (mode, segmenter.reason,
                                                 [f.message for f in segmenter.failures])
        assert segmenter.weights == "skipped"
        assert segmenter.arguments is not None
        assert segmenter.arguments.origin == "defaults"
        assert segmenter.arguments.kwargs == {"encoder_weights": "None"}
        assert any(note.startswith("Built with encoder_weights=None: building it as called "
                                   "downloads pretrained weights")
                   for note in segmenter.capture_notes), segmenter.capture_notes

        # Guessed arguments, and the pretraining switch turned off.
        backboned = verdicts["Backboned", mode]
        assert backboned.status == "traceable", (mode, backboned.reason,
                                                 [f.message for f in backboned.failures])
        assert backboned.weights == "skipped"
        assert backboned.arguments is not None and backboned.arguments.origin == "guessed"
        assert backboned.arguments.kwargs["pretrained_backbone"] == "False"

        # A missing checkpoint file the default names: the same, without a download.
        from_checkpoint = verdicts["FromCheckpoint", mode]
        assert from_checkpoint.status == "traceable", from_checkpoint.failures
        assert from_checkpoint.weights == "skipped"
        assert from_checkpoint.arguments is not None
        assert from_checkpoint.arguments.kwargs == {"checkpoint": "None"}

        # Nothing avoids the download: FX101 says workers make none, and what to give.
        always = verdicts["AlwaysDownloads", mode]
        assert always.status == "failed"
        message = always.failures[0].message
        assert always.failures[0].code == "FX101", message
        assert "needs a download" in message and "no network" in message, message
        assert 'call = "AlwaysDownloads(...)"' in message, message

        # Another error: no retry, no note.
        rejects = verdicts["Rejects", mode]
        assert rejects.status == "failed" and rejects.weights is None
        assert "ValueError: unsupported" in rejects.failures[0].message
        assert "download" not in rejects.failures[0].message


USES_DOWNLOAD = """
    import torch
    from torch import nn


    class UsesDownload(nn.Module):
        # Uses what torch.hub gave it (in a worker an empty checkpoint, a dict): fails on it.
        def __init__(self, width: int = 8, pretrained: bool = True):
            super().__init__()
            self.register_buffer("embedding", torch.randn(width, width))
            if pretrained:
                state = torch.hub.load_state_dict_from_url(
                    "https://example.invalid/embedding.pth", map_location="cpu")
                self.embedding.data = state.float()

        def forward(self, x):
            return x @ self.embedding
    """


def test_a_constructor_failing_on_the_empty_checkpoint_is_built_without_weights(
        engine: Engine, workspace: Workspace) -> None:
    workspace.write("embedding.py", USES_DOWNLOAD)
    result = workspace.check(engine, "embedding.py", EngineConfig(modes=("fx",)))
    assert not result.errors, [error.message for error in result.errors]
    module = result.modules[0]
    assert module.status == "traceable", (module.reason, [f.message for f in module.failures])
    assert module.weights == "skipped"
    assert module.arguments is not None
    assert module.arguments.kwargs == {"pretrained": "False"}
