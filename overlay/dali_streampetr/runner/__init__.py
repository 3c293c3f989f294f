"""The mmcv side: what the patched ``tools/train.py``, ``tools/test.py`` and the evaluation hook call
(:mod:`.dataloader`), the collated batches (:mod:`.collate`) and the hooks. Imports mmcv, except
:mod:`.schedule`.

The patched plugin files call the logic their hooks need through this package's names
(:data:`__all__`), each imported on first use (PEP 562), so a hook imports only the module that
defines it (none of them DALI).
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
