"""Loader benchmark: StreamPETR's PyTorch DataLoader vs the DALI loader, side by side
(``python -m loaderbench``, ``nox -s bench``; docs/benchmark.md). Subpackages: :mod:`.sweep` (the
configurations), :mod:`.measure`, :mod:`.results`, :mod:`.nuscenes_size`, :mod:`.analysis`."""
