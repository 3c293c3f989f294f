"""DALI training loader for StreamPETR's training modes: streaming (``seq_mode=True``), single frame and
sliding window (:mod:`dali_streampetr.training_mode`).

Everything here imports without mmcv/mmdet3d except the mmcv side: :mod:`.mmdet_adapter`,
:mod:`.integration` and what it builds on (:mod:`.distributed`, :mod:`.stream_state_hook`,
:mod:`.schedule_log`), and :mod:`.requeue`.
Entry points: :func:`dali_streampetr.iterator.build_loader` (plain batches) and
:func:`dali_streampetr.mmdet_adapter.build_mmdet_loader` (the DataLoader drop-in).
"""
