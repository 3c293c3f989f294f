"""Stack tier: the patched StreamPETR plugin imports and computes attention without flash-attn.

The code runs in the upstream env's python (a subprocess in the applied checkout), not in pytest's.
"""

from __future__ import annotations

import pytest
from stack_runs import run_in_stack

pytestmark = pytest.mark.stack


def test_plugin_imports_and_its_sdpa_fallback_matches_reference_attention_without_flash_attn() -> None:
    """The plugin registers every module with flash-attn absent, and its fallback does the flash
    kernel's maths: softmax(q k^T / sqrt(d)) v over the unmasked keys, fp32 (one interpreter: its
    start, torch, mmcv and the plugin imported, is most of the cost)."""
    out = run_in_stack(
        """
        import projects.mmdet3d_plugin  # registers every module, imports attention.py
        from mmcv.cnn.bricks.registry import ATTENTION
        from projects.mmdet3d_plugin.models.utils import attention
        assert not attention.HAS_FLASH_ATTN
        assert ATTENTION.get('PETRMultiheadFlashAttention') is not None
        print('imports ok')

        import torch
        from projects.mmdet3d_plugin.models.utils.attention import FlashAttention, FlashMHA
        torch.manual_seed(0)
        b, t, s, h, d = 2, 5, 7, 8, 32
        q, kv = torch.randn(b, t, h, d), torch.randn(b, s, 2, h, d)
        mask = torch.ones(b, s, dtype=torch.bool)
        mask[1, 4:] = False  # padded keys of the second sample
        attn = FlashAttention().eval()
        out, weights = attn(q, kv, key_padding_mask=mask)
        assert weights is None and out.dtype == torch.float32 and out.shape == (b, t, h, d)
        logits = torch.einsum('bthd,bshd->bhts', q, kv[:, :, 0]) / d ** 0.5
        logits = logits.masked_fill(~mask[:, None, None, :], float('-inf'))
        ref = torch.einsum('bhts,bshd->bthd', logits.softmax(-1), kv[:, :, 1])
        # float32 bound (tests/float_tolerance.py), per side: a logit error e from d-term dots over
        # sqrt(d) (d + 2 roundings on |q| |k| / sqrt d) moves each softmax weight by <= 2 e relative;
        # exp (2 ulp: 4), the s-term sum, the division and the s-term weighted sum of |v| (2 s + 6)
        u = torch.finfo(torch.float32).eps / 2
        gamma = lambda n: n * u / (1 - n * u)
        terms = torch.einsum('bthd,bshd->bhts', q.abs(), kv[:, :, 0].abs()) / d ** 0.5
        e = gamma(d + 2) * terms.max().item()
        atol = 2 * kv[:, :, 1].abs().max().item() * (2 * e + gamma(2 * s + 6))
        torch.testing.assert_close(out, ref, rtol=0, atol=atol)
        mha = FlashMHA(256, 8)
        x = torch.randn(2, 9, 256, requires_grad=True)
        y, _ = mha(x, x, x)
        y.sum().backward()
        assert y.shape == (2, 9, 256) and torch.isfinite(x.grad).all()
        print('attention ok')
        """
    )
    assert "imports ok" in out and out.strip().endswith("attention ok"), out
