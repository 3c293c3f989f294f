"""Stack tier: the CPU smoke configs, read by mmcv's Config from the applied checkout, carry the shared
CPU changes and 352 pipeline of overlay/projects/configs/cpu/parts/ on top of their upstream config,
and the DALI loader reads each DALI variant in the training mode of its upstream config."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKOUT = REPO_ROOT / "upstream" / "StreamPETR"
pytestmark = [pytest.mark.stack, pytest.mark.upstream]

SEQ = "StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e"
# config -> (upstream config it derives from, samples_per_gpu, final_dim, the loader's training mode)
SMOKE = {
    "stream_petr_r50_cpu_smoke": (SEQ, 1, (256, 704), "streaming"),
    "stream_petr_r50_cpu_smoke_352": (SEQ, 1, (128, 352), "streaming"),
    "petrv1_r50_cpu_smoke": ("PETRv1/petrv1_r50_flash_704_24e", 1, (256, 704), "single_frame"),
    "stream_petr_r50_8key_cpu_smoke_352": (
        "StreamPETR/stream_petr_r50_flash_704_bs1_8key_2grad_24e",
        2,
        (128, 352),
        "sliding_window",
    ),
}


@pytest.fixture(scope="module")
def load():
    from mmcv import Config

    sys.path.insert(0, str(CHECKOUT))  # custom_imports and the loader, as tools/train.py sees them
    yield lambda rel: Config.fromfile(str(CHECKOUT / "projects" / "configs" / f"{rel}.py"))
    sys.path.remove(str(CHECKOUT))


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_a_smoke_config_is_its_upstream_config_with_the_cpu_changes(load, name: str) -> None:
    parent, batch, final_dim, _ = SMOKE[name]
    cfg, upstream = load(f"cpu/{name}"), load(parent)
    assert cfg.model.img_backbone.pretrained is None and not cfg.model.img_backbone.with_cp
    assert cfg.optimizer_config == {"grad_clip": {"max_norm": 35, "norm_type": 2}}  # fp32 OptimizerHook
    assert cfg.runner == {**cfg.runner, "type": "IterBasedRunner", "max_iters": 5}
    assert cfg.checkpoint_config.interval == cfg.evaluation.interval == 5
    assert cfg.dist_params == {"backend": "gloo"} and cfg.log_config.interval == 1
    assert (cfg.data.samples_per_gpu, cfg.data.workers_per_gpu) == (batch, 1)
    assert tuple(cfg.ida_aug_conf["final_dim"]) == final_dim
    assert cfg.data.train.pipeline[4].data_aug_conf == cfg.ida_aug_conf  # the pipeline uses that size
    # everything the dataset and the model's frame counts come from is the upstream config's
    assert {k: v for k, v in cfg.data.train.items() if k != "pipeline"} == {
        k: v for k, v in upstream.data.train.items() if k != "pipeline"
    }
    assert cfg.model.num_frame_losses == upstream.model.num_frame_losses
    assert cfg.model.pts_bbox_head.type == upstream.model.pts_bbox_head.type
    assert not [k for k in cfg if k.startswith("_") or k in ("runpy", "pathlib")]  # no helper names


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_the_dali_variant_is_read_in_the_upstream_mode(load, name: str) -> None:
    from dali_streampetr.config.reader import loader_config_from

    _, batch, final_dim, mode = SMOKE[name]
    settings = loader_config_from(load(f"dali/{name}_dali"))
    assert (settings.mode.name, settings.samples_per_gpu, settings.aug.final_dim) == (mode, batch, final_dim)
    assert settings.log_slots
