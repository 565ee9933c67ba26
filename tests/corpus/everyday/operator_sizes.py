import torch
from torch import nn


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
        # Called as torchvision's region proposals call its nms: through torch.ops, on
        # scores detached from the graph.
        keep = torch.ops.fxlsp_everyday.kept_rows(self.score(x).flatten().detach(), 0.0)
        return self.fc(x[keep])
