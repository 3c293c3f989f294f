"""A local single-node SLURM for the SLURM smoke run (`nox -s slurm_smoke`)."""
