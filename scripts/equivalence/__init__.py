"""Equivalence harness: the DALI loader vs the original StreamPETR training pipeline.

Same config, data and seed, the original's draws replaced by the DALI loader's (:mod:`.draw_replay`):
every field of the collated batches within docs/tolerances.md (:mod:`.compare`), the sequence order
(:mod:`.sequence`) and the draw distributions (:mod:`.draws`). In the OpenMMLab env: `python -m
equivalence --help`.
"""
