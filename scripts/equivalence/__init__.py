"""Equivalence harness: the DALI loader vs the original StreamPETR training pipeline, same config,
data and seed (docs/equivalence.md). In the OpenMMLab env: `python -m equivalence --help`."""
