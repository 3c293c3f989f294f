"""``python -m batchview`` (``nox -s inspect``): one DALI batch, summarised key by key and sample by
sample, and the six augmented images of its busiest sample with the projected 3D boxes drawn in."""
