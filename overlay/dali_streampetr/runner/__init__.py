"""The mmcv side: what the patched ``tools/train.py``, ``tools/test.py`` and the evaluation hook call
(:mod:`.dataloader`), the collated batches (:mod:`.collate`) and the hooks. Imports mmcv, except
:mod:`.schedule`."""
