"""A Llama-style decoder in plain PyTorch with the dimensions of Llama-2-7B.

Written for the memory/time benchmark (``benchmarks/speed/llama7b.py``): about 6.74e9 parameters,
which is 27 GB in float32, so it must only ever be built on the meta device. Everything in
``forward`` is traceable by torch.fx: shapes are read with ``.shape`` and only passed to
Proxy methods (``view``, ``reshape``), rotary positions are a tensor computed from the tokens,
the causal mask comes from ``scaled_dot_product_attention(is_causal=True)`` rather than a
tensor built from the sequence length, and there is no data-dependent control flow.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        normalized = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return normalized.type_as(x) * self.weight


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


class RotaryEmbedding(nn.Module):
    """Cosine and sine tables for rotary position embeddings, looked up by position."""

    def __init__(self, head_dim: int, max_positions: int = 4096, base: float = 10000.0) -> None:
        super().__init__()
        inverse_frequencies = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        positions = torch.arange(max_positions).float()
        angles = torch.outer(positions, inverse_frequencies)
        angles = torch.cat((angles, angles), dim=-1)
        # Buffers, not parameters: they are not trained and not counted as weights.
        self.register_buffer("cos", angles.cos(), persistent=False)
        self.register_buffer("sin", angles.sin(), persistent=False)

    def forward(self, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        # A lookup by position ids, as RoBERTa-style models do: slicing the tables with the
        # sequence length would need that length as an int, which tracing does not have.
        return F.embedding(positions, self.cos), F.embedding(positions, self.sin)


def apply_rotary(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    # q, k: (batch, heads, seq, head_dim); cos, sin: (batch, seq, head_dim).
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # broadcast over heads
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class Attention(nn.Module):
    def __init__(self, dim: int, n_heads: int) -> None:
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        batch, seq_len, dim = x.shape
        q = self.wq(x).view(batch, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(batch, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(batch, seq_len, self.n_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary(q, k, cos, sin)
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.wo(attended.transpose(1, 2).reshape(batch, seq_len, dim))


class FeedForward(nn.Module):
    """SwiGLU: w2(silu(w1 x) * w3 x)."""

    def __init__(self, dim: int, hidden_dim: int) -> None:
        super().__init__()
        self.w1 = nn.Linear(dim, hidden_dim, bias=False)
        self.w2 = nn.Linear(hidden_dim, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden_dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class DecoderLayer(nn.Module):
    def __init__(self, dim: int, n_heads: int, hidden_dim: int, eps: float) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(dim, eps)
        self.attention = Attention(dim, n_heads)
        self.ffn_norm = RMSNorm(dim, eps)
        self.feed_forward = FeedForward(dim, hidden_dim)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    """Defaults are Llama-2-7B's: 32000 tokens, width 4096, 32 layers of 32 heads, SwiGLU
    width 11008, untied input and output embeddings."""

    def __init__(
        self,
        vocab_size: int = 32000,
        dim: int = 4096,
        n_layers: int = 32,
        n_heads: int = 32,
        hidden_dim: int = 11008,
        max_positions: int = 4096,
        eps: float = 1e-5,
    ) -> None:
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, dim)
        self.rotary = RotaryEmbedding(dim // n_heads, max_positions)
        self.layers = nn.ModuleList(
            DecoderLayer(dim, n_heads, hidden_dim, eps) for _ in range(n_layers)
        )
        self.norm = RMSNorm(dim, eps)
        self.output = nn.Linear(dim, vocab_size, bias=False)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed_tokens(tokens)
        # Positions 0..seq_len-1 from the tokens themselves: a tensor, never a Python int.
        positions = torch.ones_like(tokens).cumsum(-1) - 1
        cos, sin = self.rotary(positions)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.output(self.norm(x))
