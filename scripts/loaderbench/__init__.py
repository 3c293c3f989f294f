"""Loader benchmark: StreamPETR's PyTorch DataLoader vs the DALI loader, one run, side by side.

``python -m loaderbench`` (``nox -s bench``) sweeps both loaders on the same config and data, measures
the decode floor, writes ``bench.json`` + ``bench.png`` and prints the ratios. Modules:

- :mod:`.proctree`  CPU seconds and peak memory of a whole process tree (Linux ``/proc``)
- :mod:`.cases`     the configurations (profiles r50 / accv, loader, workers / threads)
- :mod:`.runcase`   one configuration in its own process: warm-up, repeats, measurements
- :mod:`.spawn`     run each configuration in its own process; its timed batches, result, progress line
- :mod:`.floor`     decode-only floor with DALI's decoder (full image and region of interest)
- :mod:`.summary`   summary statistics over the repeats, merged rounds, ratios against their targets
- :mod:`.report`    the printed tables, the PNG chart, the JSON file
- :mod:`.runinfo`   what a run ran on: machine, cores, package versions, arguments
- :mod:`.stall`     loader stall inside real training (log analysis + cached-batch bound)
"""
