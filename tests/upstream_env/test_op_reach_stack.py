"""Stack tier: the reduced CUDA op set (`op_set.KEPT_CUDA`) holds every `mmcv._ext` function the
CUDA path of every supported config reaches (`upstream_env.op_reach`: each config's model,
pipelines and dataset built on the CPU, their code followed statically), and the check fails, naming
the config and the op, on a config that reaches one outside the set. Needs the OpenMMLab env, no GPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from stack_runs import CHECKOUT
from upstream_env import op_set

pytestmark = pytest.mark.stack


def _op_reach(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    """``python -m upstream_env.op_reach --check ARGS``, run in this process (the OpenMMLab env's: torch,
    mmcv and the plugin imported once for the module's tests); exit code, stdout, stderr."""
    from upstream_env import op_reach

    capsys.readouterr()
    code = op_reach.main(["--check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_every_supported_config_stays_inside_the_cuda_op_set(capsys: pytest.CaptureFixture) -> None:
    code, out, err = _op_reach(capsys)
    assert code == 0, f"exit {code}\n{err[-4000:]}"
    reached = json.loads(out)
    configs = {str(Path(c).relative_to(CHECKOUT / "projects" / "configs")) for c in reached}
    assert {
        "StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py",
        "StreamPETR/stream_petr_vov_flash_800_bs2_seq_24e.py",
        "StreamPETR/stream_petr_r50_flash_704_bs1_8key_2grad_24e.py",
        "PETRv1/petrv1_r50_flash_704_24e.py",
        "RepDETR3D/repdetr3d_vov_800_bs2_seq_24e.py",
        "dali/stream_petr_r50_cpu_smoke_352_dali.py",
    } <= configs, "the pin's configs and the overlay's are all analysed"
    kept = set(op_set.kept_names(cuda=True))
    for config, ops in reached.items():
        assert set(ops) <= kept, config
        # The analysis finds what every run calls: the losses' CUDA branch and collect_env.
        assert {"sigmoid_focal_loss_forward", "sigmoid_focal_loss_backward", "get_compiler_version"} <= set(
            ops
        )
        if "RepDETR3D" in config:
            assert {"ms_deform_attn_forward", "ms_deform_attn_backward"} <= set(ops), config


def test_a_config_reaching_an_op_outside_the_set_fails_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """A DCNv2 backbone (mmcv's ModulatedDeformConv2dPack): a config change that needs an op the
    reduced CUDA set does not compile."""
    base = CHECKOUT / "projects" / "configs" / "cpu" / "stream_petr_r50_cpu_smoke.py"
    fixture = tmp_path / "stream_petr_r50_dcn.py"
    fixture.write_text(
        f"_base_ = [{str(base)!r}]\n"
        "model = dict(img_backbone=dict(dcn=dict(type='DCNv2', deform_groups=1, fallback_on_stride=False),\n"
        "                               stage_with_dcn=(False, False, True, True)))\n"
    )
    code, _, err = _op_reach(capsys, str(fixture))
    assert code == 1, err[-4000:]
    assert f"OUTSIDE THE CUDA OP SET: {fixture}: modulated_deform_conv_forward, reached by" in err
    assert "ModulatedDeformConv2dPack" in err and "add them there" in err
