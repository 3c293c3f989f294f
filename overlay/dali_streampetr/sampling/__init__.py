"""Which frames each iteration's batch holds, and their augmentation draws: the sampling modes
(:mod:`.modes`), upstream's samplers and queues as pure functions of the iteration."""
