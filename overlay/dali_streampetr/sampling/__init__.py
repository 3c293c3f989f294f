"""Which frames each iteration's batch holds, and their augmentation draws: upstream's samplers and
queues as pure functions of the iteration."""
