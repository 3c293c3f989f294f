"""What a benchmark measures with: CPU time and memory of a process tree (:mod:`.proctree`)."""
