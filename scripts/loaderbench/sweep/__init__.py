"""The side-by-side sweep: the configurations (:mod:`.cases`), one measured in its own process
(:mod:`.runcase`), the decode floor (:mod:`.floor`) and the GPU check's
sweep of DALI on the GPU vs the CPU (:mod:`.kit`)."""
