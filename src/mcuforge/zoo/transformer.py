"""A tiny pre-norm transformer encoder block on (1, 16 tokens, 32 dims) (random weights).

Attention is written out as users write it (batched matmul, scale, softmax over the last dim,
matmul) rather than with ``F.scaled_dot_product_attention``, which exports as one fused op.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


class EncoderBlock(nn.Module):
    def __init__(self, dim: int = 32, heads: int = 2, mlp: int = 64) -> None:
        super().__init__()
        self.heads = heads
        self.scale = 1.0 / math.sqrt(dim // heads)
        self.norm1 = nn.LayerNorm(dim)
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, mlp)
        self.fc2 = nn.Linear(mlp, dim)

    def _split(self, x: torch.Tensor) -> torch.Tensor:
        n, t, d = x.shape
        return x.view(n, t, self.heads, d // self.heads).transpose(1, 2)  # N, heads, T, d_head

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self._split(self.q(x)), self._split(self.k(x)), self._split(self.v(x))
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        y = torch.matmul(torch.softmax(scores, dim=-1), v)
        n, h, t, dh = y.shape
        return self.out(y.transpose(1, 2).reshape(n, t, h * dh))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


def make_transformer_block() -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    torch.manual_seed(11)
    return EncoderBlock().eval(), (torch.randn(1, 16, 32),)
