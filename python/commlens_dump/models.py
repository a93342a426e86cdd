"""Small models for the demo and the tests: an MLP, an MLP with frozen/unused parameters,
and a Llama-style transformer (embedding, RoPE attention, SwiGLU MLP, RMSNorm, head)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    """Two linear layers with a ReLU; the loss is the sum of the output."""

    def __init__(self, dim: int = 8, hidden: int = 8, out: int = 4):
        super().__init__()
        self.l1 = nn.Linear(dim, hidden)
        self.l2 = nn.Linear(hidden, out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.l2(torch.relu(self.l1(x))).sum()


class FrozenMLP(nn.Module):
    """A frozen embedding (not sharded), two trainable layers and an unused layer."""

    def __init__(self, vocab: int = 16, dim: int = 8, out: int = 4):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.embed.weight.requires_grad_(False)
        self.l1 = nn.Linear(dim, dim)
        self.l2 = nn.Linear(dim, out)
        self.unused = nn.Linear(dim, dim)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.l2(torch.relu(self.l1(self.embed(tokens)))).sum()


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)


class Attention(nn.Module):
    def __init__(self, dim: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.head_dim = dim // n_heads
        self.wq = nn.Linear(dim, dim, bias=False)
        self.wk = nn.Linear(dim, dim, bias=False)
        self.wv = nn.Linear(dim, dim, bias=False)
        self.wo = nn.Linear(dim, dim, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        bsz, seq, dim = x.shape
        q = self.wq(x).view(bsz, seq, self.n_heads, self.head_dim)
        k = self.wk(x).view(bsz, seq, self.n_heads, self.head_dim)
        v = self.wv(x).view(bsz, seq, self.n_heads, self.head_dim)
        q, k = _rope(q, cos, sin), _rope(k, cos, sin)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                             is_causal=True)
        return self.wo(out.transpose(1, 2).reshape(bsz, seq, dim))


class FeedForward(nn.Module):
    """SwiGLU: ``w2(silu(w1(x)) * w3(x))``."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class TransformerBlock(nn.Module):
    def __init__(self, dim: int, n_heads: int, hidden: int):
        super().__init__()
        self.attention_norm = RMSNorm(dim)
        self.attention = Attention(dim, n_heads)
        self.ffn_norm = RMSNorm(dim)
        self.feed_forward = FeedForward(dim, hidden)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        h = x + self.attention(self.attention_norm(x), cos, sin)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    """A Llama-style decoder; ``forward(tokens, targets)`` returns the cross-entropy loss."""

    def __init__(self, vocab: int = 64, dim: int = 32, n_layers: int = 2, n_heads: int = 4,
                 hidden: int = 64, seq: int = 8):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleDict({str(i): TransformerBlock(dim, n_heads, hidden) for i in range(n_layers)})
        self.norm = RMSNorm(dim)
        self.output = nn.Linear(dim, vocab, bias=False)
        head_dim = dim // n_heads
        freqs = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
        angles = torch.outer(torch.arange(seq, dtype=torch.float32), freqs)
        self.register_buffer("rope_cos", angles.cos()[:, None, :], persistent=False)
        self.register_buffer("rope_sin", angles.sin()[:, None, :], persistent=False)
        self.vocab = vocab

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        h = self.tok_embeddings(tokens)
        for layer in self.layers.values():
            h = layer(h, self.rope_cos, self.rope_sin)
        logits = self.output(self.norm(h))
        return F.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1))
