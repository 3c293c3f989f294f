"""``tools/test.py`` on the CPU when CUDA is unavailable (upstream's paths assert or call CUDA): one
process runs ``single_gpu_test``, several (gloo) ``custom_multi_gpu_test``, on a CPU ``MMDataParallel``.
"""

from __future__ import annotations

import tempfile
from typing import Any

import mmcv
import torch
from mmcv.parallel import MMDataParallel
from mmcv.runner import get_dist_info


def evaluate_on_cpu(model: Any, data_loader: Any, distributed: bool, args: Any) -> list:
    """The outputs of ``model`` over ``data_loader`` on the CPU (``args``: tools/test.py's
    ``show``, ``show_dir`` and ``tmpdir``)."""
    model = MMDataParallel(model)  # CPU: mmcv's scatter unpacks the DataContainers
    if not distributed:
        from mmdet3d.apis import single_gpu_test

        return single_gpu_test(model, data_loader, args.show, args.show_dir)
    from projects.mmdet3d_plugin.core.apis.test import custom_multi_gpu_test

    tmpdir = [args.tmpdir]
    if tmpdir[0] is None:  # upstream's default sends the folder name in a CUDA tensor
        mmcv.mkdir_or_exist(".dist_test")
        tmpdir = [tempfile.mkdtemp(dir=".dist_test") if get_dist_info()[0] == 0 else None]
        torch.distributed.broadcast_object_list(tmpdir, src=0)
    return custom_multi_gpu_test(model, data_loader, tmpdir[0])
