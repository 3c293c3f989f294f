"""Run upstream's own tools inside the OpenMMLab env (`upstream_env` builds it) and check the result.

`python -m upstream_run {train,evaluate,create_data} ...` (`<command> --help` for each) is what
`nox -s train_dali`/`train_torch`, `nox -s evaluate` and `nox -s create_data` run: `train` wraps
`tools/train.py` (then `check_run` and, on DALI, the slot-split check `slots`), `evaluate` wraps
`tools/test.py --eval bbox`, `create_data` StreamPETR's info-pickle converter. Stdlib only.
"""
