"""Where the time goes: the DALI graph's stages (:mod:`.stages`), candidates for the fast image path
(:mod:`.candidates`), CPU time per thread and transform (:mod:`.cpu_split`), and the loader stall
inside real training (:mod:`.stall`) against the cached-batch bound (:mod:`.cachedbound`)."""
