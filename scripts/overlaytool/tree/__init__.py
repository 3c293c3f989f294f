"""The checkout `apply` writes: the series index, the write plan and its journal, the files, the
checkout lock, and where StreamPETR's code sits in it (layout)."""
