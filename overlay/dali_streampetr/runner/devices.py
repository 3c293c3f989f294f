"""The model on the CPU when CUDA is unavailable: what the patched ``custom_train_detector``
(``mmdet_train.py``) wraps the model in instead of moving it to a GPU.

``MMDataParallel`` without device ids is mmcv's CPU path; multi-process CPU (gloo) runs get
``MMDistributedDataParallel`` with ``device_ids=[-1]`` so mmcv 1.6's ``train_step`` scatters to the
CPU, and a forward that scatters the same way (torch 2's ``DDP.forward`` refuses device -1).
"""

from __future__ import annotations

import functools
from typing import Any

from mmcv.parallel import MMDataParallel, MMDistributedDataParallel


def _forward_on_cpu(ddp: MMDistributedDataParallel, *inputs: Any, **kwargs: Any) -> Any:
    """Forward of a CPU MMDistributedDataParallel: unpack DataContainers (mmcv's CPU scatter), call
    the module."""
    inputs, kwargs = ddp.scatter(inputs, kwargs, [-1])
    return ddp.module(*inputs[0], **kwargs[0])


def _on_cpu(model: Any, distributed: bool, find_unused_parameters: bool, scatter: bool) -> Any:
    if not distributed:
        return MMDataParallel(model, device_ids=[])
    wrapped = MMDistributedDataParallel(
        model, device_ids=None, broadcast_buffers=False, find_unused_parameters=find_unused_parameters
    )
    if not scatter:
        return wrapped
    wrapped.device_ids = [-1]  # mmcv 1.6 scatters DataContainers only with device ids; -1 means CPU
    wrapped.forward = functools.partial(_forward_on_cpu, wrapped)
    return wrapped


def wrap_on_cpu(model: Any, eval_model: Any, distributed: bool, cfg: Any) -> tuple[Any, Any]:
    """``model`` and ``eval_model`` (None stays None) in mmcv's CPU wrappers, as
    ``custom_train_detector`` wraps them on GPUs (``find_unused_parameters`` from ``cfg``); the
    CPU scatter of a distributed run is set up on ``model``."""
    find_unused = cfg.get("find_unused_parameters", False)
    return (
        _on_cpu(model, distributed, find_unused, scatter=True),
        None if eval_model is None else _on_cpu(eval_model, distributed, find_unused, scatter=False),
    )
