import torch
import torch.nn.functional as F
from torch import nn


class MultiheadCausal(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x):
        n = x.shape[1]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool), diagonal=1)
        h = self.proj(x)
        out, _ = self.attn(h, h, h, attn_mask=mask, need_weights=False)
        return out


class SubsequentMaskEncoder(nn.Module):
    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, dim_feedforward=32, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=1)

    def forward(self, x):
        mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1])
        return self.encoder(self.proj(x), mask=mask, is_causal=True)


class SdpaBoolMask(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        keep = torch.ones(n, n, dtype=torch.bool).tril()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=keep)


class RandomTargetsLoss(nn.Module):
    def __init__(self, dim=8, classes=5):
        super().__init__()
        self.head = nn.Linear(dim, classes)
        self.classes = classes

    def forward(self, x):
        targets = torch.randint(0, self.classes, (x.shape[0],))
        return F.cross_entropy(self.head(x), targets)


class LastTokenPooling(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.proj(x)
        last = (x.abs().sum(-1) > 0).sum(-1) - 1
        return h[torch.arange(h.shape[0]), last]


class StackWithZeros(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.fc(x)
        return torch.stack([torch.zeros(h.shape), h], dim=1)
