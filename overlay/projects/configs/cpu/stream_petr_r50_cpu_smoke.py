# CPU smoke run of StreamPETR r50 (streaming, seq mode) -- derived from
# projects/configs/StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py, changed only where a CPU
# run needs it (./parts/cpu_changes.py says what and why). Used by `nox -s train_torch`; a few
# iterations prove the training path works. PETRMultiheadFlashAttention stays: without flash-attn it
# runs on torch SDPA in fp32 (patch make-flash-attn-optional); see *_plain_attn.py for
# nn.MultiheadAttention.
import runpy

_base_ = ["../StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py"]

globals().update(runpy.run_path("{{ fileDirname }}/parts/cpu_changes.py"))
runner = dict(type="IterBasedRunner", max_iters=num_iters)  # noqa: F821 (num_iters: cpu_changes.py)
