"""The mmcv side: what the patched ``tools/train.py``, ``tools/test.py`` and the evaluation hook call
(:mod:`.dataloader`), the collated batches (:mod:`.collate`) and the hooks. Imports mmcv, except
:mod:`.schedule`.

The patched plugin files (``mmdet_train.py``, ``core/apis/test.py``, ``datasets/builder.py``,
the samplers, ``attention.py``) call the logic their hooks need through this package's names
(:data:`__all__`): ``from dali_streampetr.runner import X``. Each name is imported on first use
(PEP 562), so a hook imports only the module that defines it (none of them DALI):
:mod:`.devices` (the model on the CPU), :mod:`.checkpoints` (atomic writes, resume),
:mod:`.upstream_loaders` (the evaluation loader of ``--validate`` and ``tools/test.py``, scene
shards, sampler options, loader hooks),
:mod:`.eval_gather` (results in dataset order), :mod:`.attention` (attention without flash-attn).
"""

from __future__ import annotations

from .. import _lazy_face

# public name -> the module (under this package) that defines it
_EXPORTS = {
    "wrap_on_cpu": "devices",
    "write_checkpoints_atomically": "checkpoints",
    "resume_training": "checkpoints",
    "build_val_loader": "upstream_loaders",
    "scene_shard": "upstream_loaders",
    "loading_options": "upstream_loaders",
    "register_loader_hooks": "upstream_loaders",
    "gather_results": "eval_gather",
    "sdpa_attention": "attention",
}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = _lazy_face(__name__, _EXPORTS)
