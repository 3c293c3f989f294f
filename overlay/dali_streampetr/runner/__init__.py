"""The mmcv side: what the patched ``tools/train.py`` calls, the DataContainer wrap and the hooks.
Imports mmcv, except :mod:`.schedule`."""
