"""Loader benchmark: StreamPETR's PyTorch DataLoader vs the DALI loader, one run, side by side.

``python -m loaderbench`` (``nox -s bench``) sweeps both loaders on the same config and data, measures
the decode floor, writes ``bench.json`` + ``bench.png`` and prints the ratios. Subpackages, by job:

- :mod:`.sweep`          the configurations, each measured in its own process; the decode floor; the GPU kit
- :mod:`.measure`        CPU seconds and memory of a process tree
- :mod:`.results`        the figures over the repeats and ratios; the printed tables, PNG chart and JSON
- :mod:`.nuscenes_size`  the loaders and the test shards at nuScenes size (``--case scale`` / ``shards``)
- :mod:`.analysis`       where the time goes: CPU per thread, stall
"""
