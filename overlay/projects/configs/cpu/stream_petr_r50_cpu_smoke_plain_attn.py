# The CPU smoke run with torch's nn.MultiheadAttention (PETRMultiheadAttention, fp32) as the
# decoder's cross-attention instead of PETRMultiheadFlashAttention (StreamPETR's docs/training_inference.md).
_base_ = ["./stream_petr_r50_cpu_smoke.py"]

model = dict(
    pts_bbox_head=dict(
        transformer=dict(
            decoder=dict(
                transformerlayers=dict(
                    attn_cfgs=[
                        dict(type="MultiheadAttention", embed_dims=256, num_heads=8, dropout=0.1),
                        dict(type="PETRMultiheadAttention", embed_dims=256, num_heads=8, dropout=0.1),
                    ],
                )
            )
        )
    )
)
