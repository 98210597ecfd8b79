"""Transformer models for converter tests, written the way such models usually are: a
BERT-style text encoder (token ids and an attention mask in, nn.TransformerEncoder), a
GPT-style decoder (causal F.scaled_dot_product_attention, tied output embedding), a
Whisper-style audio encoder (convolutional front end, nn.MultiheadAttention without
weights), and an encoder calling F.scaled_dot_product_attention with explicit masks; a
Whisper-style decoder step (cross-attention to that audio encoder's features)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class TextEncoder(nn.Module):
    """Token ids [B, T] and an attention mask [B, T] (1: token, 0: padding) -> class logits
    from the mean of the unpadded positions."""

    def __init__(self, vocab=120, dim=32, heads=4, layers=2, max_len=64, classes=3):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.0, batch_first=True,
                                           activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(dim, classes)

    def forward(self, ids, mask):
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.tokens(ids) + self.positions(positions)[None]
        x = self.encoder(x, src_key_padding_mask=mask == 0)
        weights = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * weights).sum(1) / weights.sum(1)
        return self.head(pooled)


class DecoderBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * dim, dim))

    def forward(self, x, allowed=None):
        """Causal attention, or where a [B, 1, Q, K] bool mask ``allowed`` allows."""
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        if allowed is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        x = x + self.out(y.transpose(1, 2).contiguous().view(b, t, d))
        return x + self.mlp(self.norm2(x))


class Decoder(nn.Module):
    """GPT-style: token ids [B, T] -> next-token logits [B, T, vocab]."""

    def __init__(self, vocab=100, dim=32, heads=4, layers=2, max_len=64):
        super().__init__()
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(DecoderBlock(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)

    def forward(self, ids):
        positions = torch.arange(0, ids.size(1), dtype=torch.long)
        x = self.tokens(ids) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        return self.norm(x) @ self.tokens.weight.t()


def sinusoids(length: int, channels: int) -> torch.Tensor:
    scales = torch.exp(-math.log(10000) * torch.arange(channels // 2) / (channels // 2 - 1))
    angles = torch.arange(length)[:, None] * scales[None, :]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


class AudioBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        y = self.norm1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class AudioEncoder(nn.Module):
    """Whisper-style: a log-mel spectrogram [B, mels, frames] -> features [B, frames/2, dim]."""

    positions: torch.Tensor  # a buffer

    def __init__(self, mels=16, dim=32, heads=4, layers=2, frames=40):
        super().__init__()
        self.conv1 = nn.Conv1d(mels, dim, 3, padding=1)
        self.conv2 = nn.Conv1d(dim, dim, 3, stride=2, padding=1)
        self.register_buffer("positions", sinusoids(frames // 2, dim))
        self.blocks = nn.ModuleList(AudioBlock(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)

    def forward(self, mel):
        x = F.gelu(self.conv1(mel))
        x = F.gelu(self.conv2(x)).permute(0, 2, 1)
        x = x + self.positions
        for block in self.blocks:
            x = block(x)
        return self.norm(x)


class MaskedAttention(nn.Module):
    """F.scaled_dot_product_attention with a float bias and a bool mask from the inputs."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)

    def forward(self, x, keep):
        b, t, d = x.shape
        qkv = self.qkv(x).reshape(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        bias = torch.linspace(-1.0, 1.0, t)[None, None, None, :]
        allowed = keep[:, None, None, :].bool()
        scaled = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=0.3)
        masked = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        return (scaled + masked).transpose(1, 2).reshape(b, t, d)


def indexed_attention_mask(padding: torch.Tensor, queries: int, causal: bool) -> torch.Tensor:
    """[B, 1, Q, K] bool, built the way widely used transformer libraries build it: index
    tensors for batch, head, query and key made by arange and broadcast against each other,
    the padding mask [B, K] indexed with the batch and key ones (advanced indexing with two
    index tensors), and the causal rule as a comparison of key and query positions."""
    batch, keys = padding.shape
    batch_index = torch.arange(batch)[:, None, None, None]
    head_index = torch.arange(1)[None, :, None, None]
    query_index = torch.arange(keys - queries, keys)[None, None, :, None]
    key_index = torch.arange(keys)[None, None, None, :]
    allowed = padding.bool()[batch_index, key_index] & (head_index >= 0)
    if causal:
        allowed = allowed & (key_index <= query_index)
    return allowed.expand(batch, 1, queries, keys)


class PaddedTransformer(nn.Module):
    """Token ids [B, T] and a padding mask [B, T] (1: token, 0: padding; padding at the end)
    -> a dict, as such libraries return: BERT-style (``causal=False``: the last hidden state
    and a pooled first token) or GPT-style (``causal=True``: next-token logits through the
    tied embedding, and the hidden states of every layer)."""

    def __init__(self, causal: bool, vocab=100, dim=32, heads=4, layers=2, max_len=64):
        super().__init__()
        self.causal = causal
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(DecoderBlock(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)
        self.pooler = nn.Linear(dim, dim)

    def forward(self, ids: torch.Tensor, padding: torch.Tensor) -> dict[str, object]:
        allowed = indexed_attention_mask(padding, ids.shape[1], self.causal)
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        states = [x]
        for block in self.blocks:
            x = block(x, allowed)
            states.append(x)
        x = self.norm(x)
        if self.causal:
            return {"logits": x @ self.tokens.weight.t(), "hidden_states": tuple(states)}
        return {"last_hidden_state": x, "pooler_output": torch.tanh(self.pooler(x[:, 0]))}


class CrossAttentionBlock(nn.Module):
    """Causal self-attention, then attention to the encoder's features (nn.MultiheadAttention);
    the self-attention, norms and MLP are an AudioBlock's."""

    def __init__(self, dim, heads):
        super().__init__()
        self.own = AudioBlock(dim, heads)
        self.cross_norm = nn.LayerNorm(dim)
        self.cross = nn.MultiheadAttention(dim, heads, batch_first=True)

    def forward(self, x, features):
        t = x.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)  # True: not allowed
        y = self.own.norm1(x)
        x = x + self.own.attn(y, y, y, attn_mask=causal, need_weights=False)[0]
        y = self.cross_norm(x)
        x = x + self.cross(y, features, features, need_weights=False)[0]
        return x + self.own.mlp(self.own.norm2(x))


class SpeechToText(nn.Module):
    """Whisper-style: the audio encoder, and one decoder step over the tokens so far
    (causal self-attention, cross-attention to the audio) -> the next token's logits."""

    def __init__(self, vocab=60, mels=16, dim=32, heads=4, layers=2, frames=40, max_len=16):
        super().__init__()
        self.encoder = AudioEncoder(mels, dim, heads, layers, frames)
        self.tokens = nn.Embedding(vocab, dim)
        self.positions = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(CrossAttentionBlock(dim, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(dim)

    def forward(self, mel, ids):
        features = self.encoder(mel)
        x = self.tokens(ids) + self.positions(torch.arange(ids.shape[1]))
        for block in self.blocks:
            x = block(x, features)
        return self.norm(x[:, -1]) @ self.tokens.weight.t()
