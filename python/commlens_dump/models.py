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


class GPT2Block(nn.Module):
    """Pre-LayerNorm block: causal self-attention (fused qkv projection) and a GELU MLP."""

    def __init__(self, dim: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.ln_1 = nn.LayerNorm(dim)
        self.c_attn = nn.Linear(dim, 3 * dim)
        self.c_proj = nn.Linear(dim, dim)
        self.ln_2 = nn.LayerNorm(dim)
        self.c_fc = nn.Linear(dim, 4 * dim)
        self.mlp_proj = nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bsz, seq, dim = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(dim, dim=2)
        q, k, v = (t.view(bsz, seq, self.n_heads, dim // self.n_heads).transpose(1, 2) for t in (q, k, v))
        att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.c_proj(att.transpose(1, 2).reshape(bsz, seq, dim))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT2(nn.Module):
    """A GPT-2-style decoder (learned positions, LayerNorm, GELU); ``forward(tokens, targets)``
    returns the cross-entropy loss."""

    def __init__(self, vocab: int = 64, dim: int = 32, n_layers: int = 2, n_heads: int = 4, seq: int = 8):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(seq, dim)
        self.h = nn.ModuleList([GPT2Block(dim, n_heads) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.vocab = vocab

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(positions)
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.reshape(-1, self.vocab), targets.reshape(-1))


class ConvNet(nn.Module):
    """Convolutions (strided, grouped and transposed), batch norm and a linear head."""

    def __init__(self, channels: int = 8, classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, channels, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, 2 * channels, 3, stride=2, padding=1, groups=2)
        self.up = nn.ConvTranspose2d(2 * channels, channels, 2, stride=2)
        self.conv3 = nn.Conv2d(channels, 2 * channels, 3, stride=2, bias=False)
        self.head = nn.Linear(2 * channels, classes)

    def forward(self, images: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(images)))
        x = F.relu(self.up(F.relu(self.conv2(x))))
        x = F.adaptive_avg_pool2d(F.relu(self.conv3(x)), 1).flatten(1)
        return F.cross_entropy(self.head(x), labels)


class MoE(nn.Module):
    """Top-1 mixture of experts with expert parallelism: tokens go to their experts' ranks by
    ``all_to_all_single`` on process group ``ep_group`` and come back the same way; the local
    experts run as batched matmuls."""

    def __init__(self, vocab: int = 32, dim: int = 16, hidden: int = 32, local_experts: int = 2,
                 ep_group: str = "ep", ep_degree: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.router = nn.Linear(dim, local_experts * ep_degree, bias=False)
        self.w1 = nn.Parameter(torch.randn(local_experts, dim, hidden) * 0.1)
        self.b1 = nn.Parameter(torch.zeros(local_experts, 1, hidden))
        self.w2 = nn.Parameter(torch.randn(local_experts, hidden, dim) * 0.1)
        self.out = nn.Linear(dim, vocab, bias=False)
        self.local_experts, self.ep_group, self.ep_degree = local_experts, ep_group, ep_degree
        self.vocab = vocab

    def _all_to_all(self, x: torch.Tensor) -> torch.Tensor:
        splits = [x.shape[0] // self.ep_degree] * self.ep_degree
        out = torch.ops._c10d_functional_autograd.all_to_all_single(x, splits, splits, self.ep_group)
        return torch.ops._c10d_functional.wait_tensor(out)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens).reshape(-1, self.embed.embedding_dim)
        gate = torch.softmax(self.router(x), dim=-1).max(dim=-1, keepdim=True).values
        routed = self._all_to_all(x * gate)
        per_expert = routed.reshape(self.local_experts, -1, x.shape[-1])
        hidden = F.relu(torch.baddbmm(self.b1, per_expert, self.w1))
        y = self._all_to_all(torch.bmm(hidden, self.w2).reshape(x.shape))
        logits = self.out(x + y)
        return F.cross_entropy(logits, targets.reshape(-1))
