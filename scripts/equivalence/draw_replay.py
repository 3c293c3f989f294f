"""Replay recorded augmentation draws into upstream's own transforms (harness process only): for
one frame, upstream's ``numpy.random`` calls are answered from a script of expected calls with the
DALI loader's values; any other call, or one left over, is a :class:`ReplayError`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

GUARDED = ("uniform", "normal", "choice", "rand", "randn", "randint", "random", "random_sample",
           "shuffle", "permutation", "binomial", "beta", "random_integers")  # fmt: skip


class ReplayError(AssertionError):
    """Upstream's transforms did not consume the recorded draws exactly as expected."""


@dataclass
class Call:
    """One expected ``np.random.<name>(...)`` call and the value it returns."""

    name: str
    check: Callable[[tuple, dict], bool]
    value: Any
    what: str


def _uniform(lo: float, hi: float, value: float, what: str) -> Call:
    def check(args: tuple, kwargs: dict) -> bool:
        got = (*args, *kwargs.values())
        return len(got) == 2 and float(got[0]) == float(lo) and float(got[1]) == float(hi)

    if not (min(lo, hi) <= value <= max(lo, hi)):
        raise ReplayError(f"recorded {what}={value} is outside upstream's range [{lo}, {hi}]")
    return Call("uniform", check, float(value), f"uniform({lo}, {hi}) -> {what}")


@dataclass
class Script:
    """The calls expected for one transform of one frame; ``log`` collects what was returned."""

    calls: list[Call]
    log: list[tuple[str, Any]] = field(default_factory=list)

    def fake(self, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if not self.calls:
                raise ReplayError(f"unexpected extra np.random.{name}{args} (all recorded draws used)")
            nxt = self.calls[0]
            if nxt.name != name or not nxt.check(args, kwargs):
                raise ReplayError(f"np.random.{name}(args={args}, kwargs={kwargs}) but expected {nxt.what}")
            self.calls.pop(0)
            self.log.append((nxt.what, nxt.value))
            return nxt.value

        return call


@contextlib.contextmanager
def patched_random(
    make: Callable[[str, Callable], Callable], names: tuple[str, ...] = GUARDED
) -> Iterator[None]:
    """``numpy.random.<name>`` swapped for ``make(name, the real one)`` inside the block (single-threaded)."""
    saved = {name: getattr(np.random, name) for name in names}
    for name in names:
        setattr(np.random, name, make(name, saved[name]))
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(np.random, name, fn)


@contextlib.contextmanager
def replaying(script: Script) -> Iterator[Script]:
    """Swap the ``numpy.random`` module functions for ``script``."""
    with patched_random(lambda name, _real: script.fake(name)):
        yield script
    if script.calls:
        raise ReplayError(f"recorded draws not consumed by upstream: {[c.what for c in script.calls]}")


def ida_script(draw: Any, conf: dict) -> Script:
    """``_sample_augmentation`` (training): resize, bottom crop fraction, crop x, flip, rotation."""
    fH, fW = conf["final_dim"]
    new_w, new_h = draw.resize_dims
    crop_w, crop_h = draw.crop[:2]
    lo, hi = conf["bot_pct_lim"]
    # any u with int((1 - u) * newH) - fH == crop_h; the only one when lo == hi (the configs: 0, 0)
    bot = float(lo) if lo == hi else 1.0 - (crop_h + fH + 0.5) / new_h
    calls = [
        _uniform(*conf["resize_lim"], draw.resize, "resize"),
        _uniform(lo, hi, bot, "bot_pct"),
        _uniform(0, max(0, new_w - fW), float(crop_w), "crop_w"),
    ]
    if conf["rand_flip"]:
        calls.append(
            Call("choice", lambda a, k: list(a[0]) == [0, 1], int(draw.flip), "choice([0, 1]) -> flip")
        )
    elif draw.flip:
        raise ReplayError("recorded flip=True but rand_flip is off")
    calls.append(_uniform(*conf["rot_lim"], draw.rotate, "rotate"))
    return Script(calls)


def bev_script(draw: Any, transform: Any) -> Script:
    """``GlobalRotScaleTransImage.__call__``: rotation angle, scale ratio, translation (normal)."""
    std = np.array(transform.translation_std, dtype=np.float32)

    def normal_check(args: tuple, kwargs: dict) -> bool:
        return (
            not args
            and set(kwargs) == {"scale", "size"}
            and np.array_equal(kwargs["scale"], std)
            and (kwargs["size"] == 3)
        )

    trans = np.array(draw.translation, dtype=np.float64)
    if np.any((std == 0) & (trans != 0)):
        raise ReplayError(f"recorded translation {draw.translation} with translation_std {list(std)}")
    return Script(
        [
            _uniform(*transform.rot_range, draw.rot_angle, "rot_angle"),
            _uniform(*transform.scale_ratio_range, draw.scale_ratio, "scale_ratio"),
            Call("normal", normal_check, trans, f"normal(scale={list(std)}, size=3) -> translation"),
        ]
    )


class BevReplay:
    """Stands in for a ``GlobalRotScaleTransImage`` in ``Compose.transforms``: runs the real one with
    the armed frame's draws replayed."""

    def __init__(self, transform: Any, owner: DrawReplayer) -> None:
        self.transform, self.owner = transform, owner

    def __call__(self, results: dict) -> dict:
        script = bev_script(self.owner.current(), self.transform)
        with replaying(script):
            out = self.transform(results)
        self.owner.used["bev"] = script.log
        return out

    def __repr__(self) -> str:
        return f"BevReplay({self.transform!r})"


class DrawReplayer:
    """Hooks one dataset's pipeline: ``arm(draw)`` before a frame, ``finish()`` after it."""

    def __init__(self, dataset: Any) -> None:
        transforms = dataset.pipeline.transforms
        idas = [t for t in transforms if type(t).__name__ == "ResizeCropFlipRotImage"]
        bevs = [i for i, t in enumerate(transforms) if type(t).__name__ == "GlobalRotScaleTransImage"]
        if len(idas) != 1 or len(bevs) != 1:
            raise ReplayError(
                "train pipeline must have one ResizeCropFlipRotImage and one GlobalRotScaleTransImage"
            )
        self.ida = idas[0]
        if not self.ida.training:
            raise ReplayError("ResizeCropFlipRotImage runs with training=False: nothing to replay")
        self._sample = self.ida._sample_augmentation
        self.ida._sample_augmentation = self._sample_augmentation
        transforms[bevs[0]] = BevReplay(transforms[bevs[0]], self)
        self._draw: Any = None
        self.used: dict[str, Any] = {}

    def current(self) -> Any:
        if self._draw is None:
            raise ReplayError("upstream drew augmentation for a frame the harness did not arm")
        return self._draw

    def arm(self, draw: Any) -> None:
        self._draw, self.used = draw, {}

    def finish(self) -> dict[str, Any]:
        """The values upstream used for the armed frame; both transforms must have run."""
        if set(self.used) != {"ida", "bev"}:
            raise ReplayError(f"replayed only {sorted(self.used)} for this frame")
        used, self._draw, self.used = self.used, None, {}
        return used

    def _sample_augmentation(self) -> tuple:
        draw = self.current()
        script = ida_script(draw, self.ida.data_aug_conf)
        with replaying(script):
            out = self._sample()
        resize, dims, crop, flip, rotate = out
        got = (
            float(resize),
            tuple(int(v) for v in dims),
            tuple(int(v) for v in crop),
            bool(flip),
            float(rotate),
        )
        want = (draw.resize, tuple(draw.resize_dims), tuple(draw.crop), draw.flip, draw.rotate)
        if got != want:
            raise ReplayError(
                f"upstream derived {got} from the replayed draws, the DALI loader recorded {want}"
            )
        self.used["ida"] = script.log
        return out
