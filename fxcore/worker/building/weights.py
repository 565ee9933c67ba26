"""Building a model without its pretrained weights.

Constructors such as ``resnet18(weights="DEFAULT")`` or ``Net(pretrained=True)`` download a
checkpoint and load it. A worker opens no network connection (``fxcore.host.sandbox``) and builds
on the meta device, where weights mean nothing, so it keeps the architecture and skips the
weights instead of failing:

- ``torch.hub`` downloads (``load_state_dict_from_url``, ``torch.utils.model_zoo.load_url``,
  which torchvision and most libraries use) go to a private hub folder and yield an empty
  checkpoint instead of fetching anything;
- loading an empty checkpoint into a model while it is being built is a no-op that reports
  no missing key.

Either marks the build as ``weights = "skipped"``.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Mapping
from typing import Any

import torch
import torch.hub
from torch.nn.modules.module import _IncompatibleKeys

#: The attribute set on an error raised while building after an empty checkpoint was given.
EMPTY_CHECKPOINT_USED = "fx_lsp_empty_checkpoint_used"


class WeightsSkipped:
    """Whether the current build asked for pretrained weights (and got none)."""

    def __init__(self) -> None:
        self.skipped = False


def _empty_checkpoint(record: WeightsSkipped) -> Any:
    def download_url_to_file(url: str, dst: str, *_args: Any, **_kwargs: Any) -> None:
        record.skipped = True
        torch.save({}, dst)

    return download_url_to_file


@contextlib.contextmanager
def without_weights() -> Iterator[WeightsSkipped]:
    """Within this block, downloads of checkpoints give empty ones and loading an empty
    checkpoint into a module does nothing."""
    record = WeightsSkipped()
    original_download = torch.hub.download_url_to_file
    original_load = torch.nn.Module.load_state_dict
    original_hub_dir = torch.hub.get_dir()

    def load_state_dict(self: torch.nn.Module, state_dict: Mapping[str, Any],
                        *args: Any, **kwargs: Any) -> Any:
        if isinstance(state_dict, Mapping) and not state_dict:
            record.skipped = True
            # As a checkpoint that fits would: a library that checks every weight was
            # loaded (``assert not ret.missing_keys``) builds the architecture all the same.
            return _IncompatibleKeys([], [])
        return original_load(self, state_dict, *args, **kwargs)

    with tempfile.TemporaryDirectory(prefix="fx-lsp-hub-") as hub_dir:
        # A private hub folder: a checkpoint already in the user's cache is not read either.
        torch.hub.set_dir(hub_dir)
        torch.hub.download_url_to_file = _empty_checkpoint(record)
        torch.nn.Module.load_state_dict = load_state_dict  # type: ignore[method-assign]
        try:
            yield record
        except Exception as error:
            if record.skipped:
                # A constructor that uses what it downloaded (``state_dict.float()``) fails
                # on the empty checkpoint: a failed download all the same (``download_free``).
                setattr(error, EMPTY_CHECKPOINT_USED, True)
            raise
        finally:
            torch.hub.download_url_to_file = original_download
            torch.nn.Module.load_state_dict = original_load  # type: ignore[method-assign]
            torch.hub.set_dir(original_hub_dir)
