import math

import torch
from torch import nn


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class TrilCausalAttention(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.scale = dim ** -0.5

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        mask = torch.tril(torch.ones(n, n))
        scores = (q @ k.transpose(-2, -1)) * self.scale
        scores = scores.masked_fill(mask == 0, float("-inf"))
        return scores.softmax(dim=-1) @ v


class SlidingWindowAttention(nn.Module):
    def __init__(self, dim=16, window=2):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.window = window

    def forward(self, x):
        n = x.shape[1]
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        idx = torch.arange(n)
        too_far = (idx[:, None] - idx[None, :]).abs() > self.window
        scores = (q @ k.transpose(-2, -1)).masked_fill(too_far, -1e4)
        return scores.softmax(dim=-1) @ v


class PaddingMaskPool(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        lengths = (x.abs().sum(-1) > 0).sum(-1)
        positions = torch.arange(x.shape[1])
        keep = positions[None, :] < lengths[:, None]
        h = self.proj(x) * keep.unsqueeze(-1)
        return h.sum(1) / keep.sum(1, keepdim=True).clamp(min=1)


class SinusoidalPositionalEncoding(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.dim = dim
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        n = x.shape[1]
        position = torch.arange(n).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, self.dim, 2) * (-math.log(10000.0) / self.dim))
        pe = torch.zeros(n, self.dim)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        return self.proj(x) + pe


class RotaryInForward(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.dim = dim
        self.qk = nn.Linear(dim, 2 * dim)

    def forward(self, x):
        n = x.shape[1]
        inv_freq = 1.0 / (10000 ** (torch.arange(0, self.dim, 2).float() / self.dim))
        t = torch.arange(n, dtype=inv_freq.dtype)
        freqs = torch.outer(t, inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos(), emb.sin()
        q, k = self.qk(x).chunk(2, dim=-1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        return (q @ k.transpose(-2, -1)).softmax(-1)


class RotaryBufferDevice(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.qk = nn.Linear(dim, 2 * dim)
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x):
        n = x.shape[1]
        t = torch.arange(n, device=self.inv_freq.device, dtype=self.inv_freq.dtype)
        freqs = torch.einsum("i,j->ij", t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        q, k = self.qk(x).chunk(2, dim=-1)
        q = q * emb.cos() + rotate_half(q) * emb.sin()
        return q @ k.transpose(-2, -1)


class RelativePositionBias(nn.Module):
    def __init__(self, dim=16, window=4, heads=2):
        super().__init__()
        self.window = window
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.table = nn.Parameter(torch.zeros((2 * window - 1) ** 2, heads))

    def forward(self, x):
        b, n, c = x.shape
        w = self.window
        coords = torch.stack(torch.meshgrid(torch.arange(w), torch.arange(w), indexing="ij"))
        coords = torch.flatten(coords, 1)
        relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
        relative[:, :, 0] += w - 1
        relative[:, :, 1] += w - 1
        relative[:, :, 0] *= 2 * w - 1
        index = relative.sum(-1)
        bias = self.table[index.view(-1)].view(w * w, w * w, -1).permute(2, 0, 1)
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        attn = (q @ k.transpose(-2, -1)) + bias.unsqueeze(0)
        return (attn.softmax(-1) @ v).transpose(1, 2).reshape(b, n, c)


class AlibiBias(nn.Module):
    def __init__(self, dim=16, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        b, n, c = x.shape
        slopes = torch.tensor([2 ** (-8 * (i + 1) / self.heads) for i in range(self.heads)])
        pos = torch.arange(n)
        distance = (pos[None, :] - pos[:, None]).abs()
        bias = -slopes[:, None, None] * distance[None]
        q, k, v = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        attn = q @ k.transpose(-2, -1) + bias
        return attn.softmax(-1) @ v


class LearnedPositions(nn.Module):
    def __init__(self, dim=16, max_len=64):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.positions = nn.Embedding(max_len, dim)

    def forward(self, x):
        position_ids = torch.arange(x.shape[1]).unsqueeze(0)
        return self.proj(x) + self.positions(position_ids)


class PositionIdsOnInputDevice(nn.Module):
    def __init__(self, dim=16, max_len=64):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        self.positions = nn.Embedding(max_len, dim)

    def forward(self, x):
        position_ids = torch.arange(x.shape[1], device=x.device).unsqueeze(0)
        return self.proj(x) + self.positions(position_ids)


class GPTEmbeddingsCausal(nn.Module):
    def __init__(self, vocab=32, dim=16, max_len=64):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, input_ids):
        n = input_ids.shape[1]
        position_ids = torch.arange(0, n, dtype=torch.long).unsqueeze(0)
        h = self.tokens(input_ids) + self.positions(position_ids)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        causal = torch.full((n, n), float("-inf")).triu(1)
        return ((q @ k.transpose(-2, -1)) + causal).softmax(-1) @ v


class FinfoMinCausalMask(nn.Module):
    def __init__(self, dim=16):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        bsz, tgt_len, _ = x.shape
        mask = torch.full((tgt_len, tgt_len), torch.finfo(x.dtype).min)
        mask_cond = torch.arange(mask.size(-1))
        mask.masked_fill_(mask_cond < (mask_cond + 1).view(mask.size(-1), 1), 0)
        mask = mask[None, :, :].expand(bsz, tgt_len, tgt_len)
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return ((q @ k.transpose(-2, -1)) + mask).softmax(-1) @ v


class ShiftedWindowMask(nn.Module):
    def __init__(self, dim=16, window=4, shift=2):
        super().__init__()
        self.window = window
        self.shift = shift
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x):
        b, n, c = x.shape
        side = int(math.sqrt(n))
        w, s = self.window, self.shift
        img_mask = torch.zeros((1, side, side, 1))
        cnt = 0
        for hs in (slice(0, -w), slice(-w, -s), slice(-s, None)):
            for ws in (slice(0, -w), slice(-w, -s), slice(-s, None)):
                img_mask[:, hs, ws, :] = cnt
                cnt += 1
        windows = img_mask.view(1, side // w, w, side // w, w, 1).permute(0, 1, 3, 2, 4, 5)
        mask_windows = windows.reshape(-1, w * w)
        attn_mask = mask_windows.unsqueeze(1) - mask_windows.unsqueeze(2)
        attn_mask = attn_mask.masked_fill(attn_mask != 0, -100.0).masked_fill(attn_mask == 0, 0.0)
        h = x.view(b, side // w, w, side // w, w, c).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w, c)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        attn = (q @ k.transpose(-2, -1)).view(b, -1, w * w, w * w) + attn_mask.unsqueeze(0)
        return attn.softmax(-1).view(-1, w * w, w * w) @ v


class T5RelativeBuckets(nn.Module):
    def __init__(self, dim=16, heads=2, buckets=32, max_distance=128):
        super().__init__()
        self.buckets = buckets
        self.max_distance = max_distance
        self.bias = nn.Embedding(buckets, heads)
        self.q = nn.Linear(dim, dim)

    def bucket(self, relative_position):
        num_buckets = self.buckets // 2
        relative_buckets = (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        large = max_exact + (
            torch.log(relative_position.float() / max_exact)
            / math.log(self.max_distance / max_exact) * (num_buckets - max_exact)
        ).to(torch.long)
        large = torch.min(large, torch.full_like(large, num_buckets - 1))
        return relative_buckets + torch.where(is_small, relative_position, large)

    def forward(self, x):
        n = x.shape[1]
        context = torch.arange(n, dtype=torch.long)[:, None]
        memory = torch.arange(n, dtype=torch.long)[None, :]
        values = self.bias(self.bucket(memory - context)).permute(2, 0, 1)
        q = self.q(x)
        return (q @ q.transpose(-2, -1)).unsqueeze(1) + values.unsqueeze(0)


class ComplexRotary(nn.Module):
    def __init__(self, dim=16, theta=10000.0):
        super().__init__()
        self.dim = dim
        self.theta = theta
        self.wq = nn.Linear(dim, dim)

    def forward(self, x):
        n = x.shape[1]
        exponents = torch.arange(0, self.dim, 2)[: self.dim // 2].float() / self.dim
        freqs = 1.0 / (self.theta ** exponents)
        t = torch.arange(n)
        freqs_cis = torch.polar(torch.ones(n, self.dim // 2), torch.outer(t, freqs).float())
        q = self.wq(x)
        q_ = torch.view_as_complex(q.float().reshape(*q.shape[:-1], -1, 2))
        return torch.view_as_real(q_ * freqs_cis).flatten(2)
