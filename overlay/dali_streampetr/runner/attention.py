"""Attention without flash-attn: what the patched ``models/utils/attention.py`` computes when the
2022 flash-attn (0.2.x) API is missing (CPU, new CUDA, flash-attn 2.x)."""

from __future__ import annotations

import torch


def sdpa_attention(
    attention: torch.nn.Module,
    q: torch.Tensor,
    kv: torch.Tensor,
    causal: bool = False,
    key_padding_mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """``FlashAttention.forward``'s attention (softmax(q k^T * scale) v, key padding mask, causal
    flag, dropout in training) with torch's ``scaled_dot_product_attention``, on any device and dtype.
    ``q``: (B, T, H, D), ``kv``: (B, S, 2, H, D); ``attention``: the module (its ``softmax_scale``,
    ``dropout_p`` and ``training``)."""
    k, v = kv.unbind(dim=2)
    mask = None if key_padding_mask is None else key_padding_mask[:, None, None, :]
    output = torch.nn.functional.scaled_dot_product_attention(
        q.transpose(1, 2),
        k.transpose(1, 2),
        v.transpose(1, 2),
        attn_mask=mask,
        dropout_p=attention.dropout_p if attention.training else 0.0,
        is_causal=causal,
        scale=attention.softmax_scale,
    )
    return output.transpose(1, 2)
