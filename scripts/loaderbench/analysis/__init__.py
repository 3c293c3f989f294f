"""Where the time goes: CPU time per thread and transform (:mod:`.cpu_split`), and the loader stall
inside real training (:mod:`.stall`) against the cached-batch bound (:mod:`.cachedbound`)."""
