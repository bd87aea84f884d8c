#!/usr/bin/python3
"""Bundled example: torchvision's ResNet-18 (10 classes) on 8x3x112x112
images, scripted and saved for memopt-compile.

    /usr/bin/python3 examples/resnet.py --out resnet18.pt
    # prints the --input-shape arguments: --input-shape x:8x3x112x112

The model comes from python/memopt/zoo.py (seeded: the same weights every
time); examples/train.py rebuilds the same eager model to compare against.
"""
import sys

from _example import main

MODEL = "resnet18"
KWARGS = dict(batch=8, image=112)

if __name__ == "__main__":
    sys.exit(main(MODEL, KWARGS, __doc__))
