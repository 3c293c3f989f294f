"""A data set of real camera photos for the pixel comparison: the synthetic set with every camera image
replaced by a real 1600x900 nuScenes JPEG of the pinned mmdetection3d checkout, in turn.

``python -m equivalence.real_photos --out DIR`` prints the data root for ``--data-root``.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from .original import CHECKOUT

MMDET3D = CHECKOUT / "mmdetection3d"


def camera_photos(mmdet3d: Path = MMDET3D) -> list[Path]:
    """The 1600x900 nuScenes camera JPEGs of the checkout (sorted); a named error if there are none."""
    from PIL import Image

    photos = []
    for path in sorted(mmdet3d.glob("**/nuscenes/**/*CAM_*.jpg")):
        with Image.open(path) as img:
            if img.size == (1600, 900) and img.format == "JPEG":
                photos.append(path)
    if not photos:
        raise FileNotFoundError(f"no 1600x900 nuScenes camera JPEG under {mmdet3d}; run `nox -s apply`")
    return photos


def real_photo_root(out: Path, photos: list[Path]) -> Path:
    """The synthetic set made at ``out`` with its camera images overwritten by ``photos`` in turn."""
    from synthdata import ensure_dataset

    root = ensure_dataset(out)
    images = sorted((root / "samples").glob("CAM_*/*.jpg"))
    for i, image in enumerate(images):
        shutil.copyfile(photos[i % len(photos)], image)
    return root


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m equivalence.real_photos", description=__doc__.split("\n\n")[0]
    )
    ap.add_argument("--out", type=Path, required=True, help="data root to write (a synthetic set, re-imaged)")
    args = ap.parse_args(argv)
    photos = camera_photos()
    root = real_photo_root(args.out.resolve(), photos)
    print(f"{len(photos)} real camera photos: {', '.join(p.name for p in photos)}", file=sys.stderr)
    print(root)
    return 0


if __name__ == "__main__":
    sys.exit(main())
