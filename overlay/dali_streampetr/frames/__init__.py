"""The frames of an info file: the info pickle read without running code and checked, and the frame
store (one file per info file and node, mapped read-only by every rank)."""
