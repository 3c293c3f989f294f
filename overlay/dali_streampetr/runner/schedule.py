"""What a run's schedule means in epochs (StreamPETR configs derive it from a hard-coded GPU count)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RunSchedule:
    """The numbers a training run's epochs depend on."""

    frames: int  # frames in the training info file
    world_size: int
    samples_per_gpu: int
    replicate: bool = False  # data_loading_config.replicate_dataset_per_gpu
    max_iters: int | None = None  # runner.max_iters
    config_num_gpus: int | None = None  # the config's num_gpus (StreamPETR configs: 8)
    config_iters_per_epoch: int | None = None  # the config's num_iters_per_epoch

    @property
    def frames_per_step(self) -> int:
        """Distinct frames one iteration covers: the global batch when sharding, one rank's when
        replicating (every rank walks the whole data set)."""
        return self.samples_per_gpu * (1 if self.replicate else self.world_size)

    @property
    def iters_per_epoch(self) -> float:
        """Iterations for one pass over the data (per rank in replicate mode)."""
        return self.frames / self.frames_per_step

    def epochs(self, iters: int) -> float:
        return iters / self.iters_per_epoch

    def report(self) -> list[str]:
        """One summary line, plus the effective epochs when max_iters is known."""
        lines = [
            f"DALI loader: {self.frames} frames, world size {self.world_size}, batch {self.samples_per_gpu} "
            f"per rank, {'replicate' if self.replicate else 'shard'}: {self.iters_per_epoch:.1f} iterations "
            "per epoch" + (" (per rank: every rank walks the whole data set)" if self.replicate else "")
        ]
        if self.max_iters is not None:
            lines.append(f"this run: {self.max_iters} iterations = {self.epochs(self.max_iters):.3f} epochs")
        return lines

    def gpu_count_warning(self) -> str | None:
        """A warning when the config's assumed GPU count is not the real world size, else None."""
        if self.config_num_gpus is None or self.config_num_gpus == self.world_size:
            return None
        text = f"the config assumes num_gpus={self.config_num_gpus}, the world size is {self.world_size}"
        if self.config_iters_per_epoch:
            real = self.epochs(self.config_iters_per_epoch)
            text += (
                f": its num_iters_per_epoch={self.config_iters_per_epoch} (and runner.max_iters, the "
                f"lr schedule and the evaluation interval derived from it) is {real:.3f} real epochs here"
            )
        return (
            text + f". Set num_gpus = {self.world_size} in the config (or a child config that restates "
            "num_iters_per_epoch and what derives from it) to train the config's number of epochs."
        )
