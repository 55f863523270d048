#!/usr/bin/env python3
"""The bundled digits as an image folder tree, the layout
torchvision's ImageFolder (and so pytorch_imagenet_resnet50.py) reads:

    OUT/train/<digit>/<n>.png    OUT/val/<digit>/<n>.png

    python3 examples/pytorch/digits_to_image_folder.py --out /tmp/digits \\
        --train 2000 --val 500
"""

import argparse
import os
import sys

import numpy as np
from PIL import Image

from mnist_idx import BUNDLED, read_idx


def write_split(images: np.ndarray, labels: np.ndarray, folder: str) -> None:
    for digit in sorted(set(int(v) for v in labels)):
        os.makedirs(os.path.join(folder, str(digit)), exist_ok=True)
    for n, (image, label) in enumerate(zip(images, labels)):
        Image.fromarray(image, mode="L").save(
            os.path.join(folder, str(int(label)), f"{n:05d}.png"))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="folder to write into")
    p.add_argument("--data-dir", default=BUNDLED,
                   help="folder of the four MNIST IDX files")
    p.add_argument("--train", type=int, default=0,
                   help="training images to write (0: all)")
    p.add_argument("--val", type=int, default=0,
                   help="validation images to write (0: all)")
    args = p.parse_args()
    for split, prefix, limit in (("train", "train", args.train),
                                 ("val", "t10k", args.val)):
        images = read_idx(os.path.join(args.data_dir,
                                       f"{prefix}-images-idx3-ubyte"))
        labels = read_idx(os.path.join(args.data_dir,
                                       f"{prefix}-labels-idx1-ubyte"))
        if limit:
            images, labels = images[:limit], labels[:limit]
        write_split(images, labels, os.path.join(args.out, split))
    return 0


if __name__ == "__main__":
    sys.exit(main())
