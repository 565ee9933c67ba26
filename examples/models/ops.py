"""Helper functions used by several models."""

import torch


def clamp_norm(x: torch.Tensor, max_norm: float = 1.0) -> torch.Tensor:
    norm = x.norm(dim=-1, keepdim=True)
    if norm.max() > max_norm:
        x = x * (max_norm / norm.clamp(min=max_norm))
    return x
