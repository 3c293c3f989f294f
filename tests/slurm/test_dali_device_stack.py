"""Stack tier: under `--launcher slurm` the DALI loader decodes on the task's local GPU: the
device id it is given is LOCAL_RANK, which tools/tool_hooks/slurm_env.py sets from SLURM_LOCALID (and mmcv's
init_dist('slurm') sets to the GPU it binds the task to)."""

from __future__ import annotations

from types import ModuleType

import pytest

pytestmark = pytest.mark.stack


def test_the_dali_device_is_the_local_rank_slurm_gives(slurm_env: ModuleType, monkeypatch) -> None:
    from dali_streampetr import loader_config_from
    from dali_streampetr.runner.dataloader import distributed_args

    task = {"SLURM_PROCID": "11", "SLURM_NTASKS": "16", "SLURM_LOCALID": "3", "SLURM_JOB_ID": "7"}
    for key, value in {**task, "SLURM_NODELIST": "gpu[01-02]", "PATH": ""}.items():
        monkeypatch.setenv(key, value)
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT", "SLURM_STEP_NODELIST"):
        monkeypatch.setenv(key, "")  # recorded, so the values the export writes are undone after the test
        monkeypatch.delenv(key)
    slurm_env.export_slurm_dist_env()
    on_gpu = loader_config_from({"data_loading_config": {"device": "gpu"}})
    assert distributed_args(on_gpu)["device_id"] == 3
    on_cpu = loader_config_from({"data_loading_config": {"device": "cpu"}})
    assert distributed_args(on_cpu)["device_id"] is None
