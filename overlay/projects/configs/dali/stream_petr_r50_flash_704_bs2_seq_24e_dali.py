# StreamPETR r50 704x256 streaming training with the DALI loader: the upstream config unchanged
# except that the batches come from dali_streampetr, for training and (use_dali_test_pipeline
# defaults to use_dali_pipeline) for tools/test.py and the --validate hook.
# ../slurm/checkpoint_on_signal.py: checkpoint and requeue on SLURM's warning signal (docs/slurm.md)
_base_ = ["../StreamPETR/stream_petr_r50_flash_704_bs2_seq_24e.py", "../slurm/checkpoint_on_signal.py"]

use_dali_pipeline = True
# Every knob; all but device and num_threads are the defaults (docs/loader.md; checked by
# tests/test_docs_settings_table.py).
data_loading_config = dict(
    device="gpu",  # decode with nvJPEG ("mixed") and resize/normalise on the GPU of this rank
    num_threads=4,  # DALI CPU threads per rank (default 2)
    py_num_workers=1,  # processes reading JPEG bytes for the parallel external source
    prefetch_queue_depth=2,
    roi_decode=True,  # decode only the image rows that survive the bottom crop
    image_path="exact",  # "fast": linear resampling, fewer CPU-s per image, other pixels, same targets
    replicate_dataset_per_gpu=False,  # True: every rank samples the whole data set
    offset_order_per_rank=False,  # with replicate: rank r streams with seed + r
    on_bad_image="raise",  # or "skip": an unreadable/undecodable image is served black, logged
    max_bad_images=10,  # with skip: more distinct bad files than this stop the run
    batch_timeout_s=30.0,  # next() raises when no batch comes within this (a dead worker: at once)
    start_timeout_s=300.0,  # the pipeline build (forking, starting the python workers) raises after this
    trusted_pickle=False,  # True: plain pickle.load of the info file (a pickle can run code)
    log_slots=False,  # True: <work_dir>/slots_rank<r>.jsonl, the (scene, frame) of every batch slot
    test_sharding="scenes",  # the test set split between ranks by whole scenes; "upstream": its chunks
)
