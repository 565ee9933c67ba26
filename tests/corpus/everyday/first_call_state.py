import torch
from torch import nn


class ScaleOnFirstCall(nn.Module):
    """Works its scale out on the first call and keeps it (torchvision's box pooler): under
    torch.compile that first call reads a value (a break), a later call does not."""

    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)
        self.scale = None

    def forward(self, x):
        if self.scale is None:
            self.scale = torch.tensor(float(x.shape[-1])).rsqrt().item()
        return self.fc(x) * self.scale


@torch.library.custom_op("fxlsp_everyday::kept_rows", mutates_args=())
def kept_rows(scores: torch.Tensor, threshold: float) -> torch.Tensor:
    return torch.nonzero(scores > threshold).flatten()


@kept_rows.register_fake
def _(scores, threshold):
    # As torchvision's nms: how many rows are kept is the data's.
    kept = torch.library.get_ctx().new_dynamic_size()
    return scores.new_empty(kept, dtype=torch.long)


class KeepScoredRows(nn.Module):
    """An operator of a library whose output size its data decides (a detector's nms)."""

    def __init__(self, dim=8):
        super().__init__()
        self.score = nn.Linear(dim, 1)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        # Called as torchvision calls its nms: through torch.ops.
        keep = torch.ops.fxlsp_everyday.kept_rows(self.score(x).flatten(), 0.0)
        return self.fc(x[keep])
