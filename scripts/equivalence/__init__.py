"""Equivalence harness: the DALI loader vs the original StreamPETR training pipeline.

Both loaders run on the same config, data and seed; the original's random draws are replaced by the
ones the DALI loader recorded (:mod:`.draw_replay`), and every field of the two collated batches is
compared with the tolerances of docs/tolerances.md (:mod:`.compare`), plus sequence order for
several world sizes (:mod:`.sequence`) and the draw distributions (:mod:`.draws`). Runs inside the
OpenMMLab env: `python -m equivalence --config r50 --data-root DIR --batches N --out DIR` (`--help`).
"""
